from mr2.engine.distributed import launcher


rule train:
    """One run: dataset x method x variant x seed. A crashed job resumes from the run's
    checkpoint.pt (not a declared output, so Snakemake keeps it) when the workflow is rerun.
    With `gpus: N` > 1 in the config the run is one torchrun job of N processes (DDP, one GPU
    each, on one node; see mr2.engine.distributed)."""
    input:
        data=DATA,
        upsample=upsample_input,
    output:
        expand(f"{RUN_DIR}/{{file}}", file=RUN_FILES, allow_missing=True),
    params:
        args=train_args,
        launch=lambda wildcards: launcher(config.get("gpus", 0)),
        out=lambda wildcards, output: folder_of(output[0]),
    threads: config.get("threads", 1)
    resources:
        **gpu_resources(),
    log:
        f"{LOGS}/train/{{dataset}}/{{method}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV
    shell:
        "{params.launch} train {params.args} --threads {threads} --data {input.data} --out {params.out} > {log} 2>&1"

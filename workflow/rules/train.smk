rule train:
    """One run: dataset x method x variant x seed, from its run.yaml. A crashed job resumes from the
    run's checkpoint.pt (not a declared output, so Snakemake keeps it) when the workflow is rerun.
    With `gpus: N` > 1 the run is one torchrun job of N processes (DDP, one GPU each, one node;
    mr2.engine.distributed)."""
    input:
        config=RUN_CONFIG,
        data=DATA,
        upsample=upsample_input,
    output:
        expand(f"{RUN_DIR}/{{file}}", file=RUN_FILES, allow_missing=True),
    params:
        launch=launcher(),
        jtt=jtt_errors_args,
        device=device_args(),
        out=lambda wildcards, output: folder_of(output[0]),
    threads: config["threads"]
    resources:
        **gpu_resources(),
    log:
        f"{LOGS}/train/{{dataset}}/{{method}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV_TORCH
    shell:
        "{params.launch:q} train --config {input.config:q} {params.jtt:q} {params.device:q} --threads {threads}"
        " --data {input.data:q} --out {params.out:q} > {log:q} 2>&1"

rule train:
    """One run: dataset x method x variant x seed. A crashed job resumes from the run's
    checkpoint.pt (not a declared output, so Snakemake keeps it) when the workflow is rerun."""
    input:
        data=DATA,
    output:
        expand(f"{RUN_DIR}/{{file}}", file=RUN_FILES, allow_missing=True),
    params:
        args=train_args,
        out=lambda wildcards, output: folder_of(output[0]),
    threads: config.get("threads", 1)
    resources:
        **gpu_resources(),
    log:
        f"{LOGS}/train/{{dataset}}/{{method}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV
    shell:
        "python -m mr2 train {params.args} --threads {threads} --data {input.data} --out {params.out} > {log} 2>&1"

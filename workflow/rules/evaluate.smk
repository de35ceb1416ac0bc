rule evaluate:
    """Test-set evaluation of one run: per-class accuracy, confusion, per-class statistics."""
    input:
        data=DATA,
        model=f"{RUN_DIR}/model.pt",
    output:
        expand(f"{EVAL_DIR}/{{file}}", file=EVAL_FILES, allow_missing=True),
    params:
        run=lambda wildcards, input: folder_of(input.model),
        out=lambda wildcards, output: folder_of(output[0]),
        device=config.get("device", "auto"),
    threads: config.get("threads", 1)
    resources:
        **gpu_resources(),
    log:
        f"{LOGS}/evaluate/{{dataset}}/{{method}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV
    shell:
        "python -m mr2 evaluate --run {params.run} --data {input.data} --out {params.out}"
        " --device {params.device} --threads {threads} > {log} 2>&1"

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
        device=device_args(one_process=True),
    threads: config["threads"]
    resources:
        **gpu_resources(one_process=True),
    log:
        f"{LOGS}/evaluate/{{dataset}}/{{method}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV_TORCH
    shell:
        "python -m mr2 evaluate --run {params.run:q} --data {input.data:q} --out {params.out:q}"
        " {params.device:q} --threads {threads} > {log:q} 2>&1"

rule evaluate:
    """Test-set evaluation of one run: per-class accuracy, confusion, per-class statistics; with the
    CPU threads of the run's config (the job's `threads` only reserve cores)."""
    input:
        data=data_of_run,
        model=f"{RUN_DIR}/model.pt",
    output:
        expand(f"{EVAL_DIR}/{{file}}", file=EVAL_FILES, allow_missing=True),
    log:
        log_of("evaluate", RUN_KEY),
    benchmark:
        benchmark_of("evaluate", RUN_KEY)
    conda:
        ENV_TORCH
    threads: config["threads"]
    resources:
        **gpu_resources(config, one_process=True),
    params:
        repo=REPO,
        run=lambda wildcards, input: folder_of(input.model),
        out=lambda wildcards, output: folder_of(output[0]),
        device=lambda wildcards, output: device_args(
            config, locks_of(output[0], f"{EVAL_DIR}/{EVAL_FILES[0]}", wildcards), one_process=True
        ),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 evaluate --run {params.run:q} --data {input.data:q} --out {params.out:q}"
        " {params.device:q} > {log:q} 2>&1"

rule train:
    """One run: dataset x method x variant x seed, from its run.yaml. A crashed job resumes from the
    run's checkpoint.pt (not a declared output, so Snakemake keeps it) when the workflow is rerun.
    With `gpus: N` > 1 the run is one torchrun job of N processes (DDP, one GPU each, one node;
    mr2.engine.distributed). The job's `threads` (Snakemake's, or a profile's set-threads) only reserve
    cores: the run trains with its run.yaml's `threads`, so its bytes depend on its run.yaml alone."""
    input:
        config=RUN_CONFIG,
        data=data_of_run,
        upsample=lambda wildcards: upsample_input(config, wildcards),
    output:
        expand(f"{RUN_DIR}/{{file}}", file=RUN_FILES, allow_missing=True),
    log:
        log_of("train", RUN_KEY),
    benchmark:
        benchmark_of("train", RUN_KEY)
    conda:
        ENV_TORCH
    threads: config["threads"]
    resources:
        **gpu_resources(config),
    params:
        repo=REPO,
        launch=lambda wildcards, output: launcher(config, locks_of(output[0], f"{RUN_DIR}/{RUN_FILES[0]}", wildcards)),
        jtt=lambda wildcards, input: jtt_errors_args(wildcards.method, input.upsample),
        # a tuning trial whose options make training diverge is a failed draw of the search, not a failed job
        diverge=lambda wildcards: divergence_args(wildcards.variant),
        device=lambda wildcards, output: device_args(
            config, locks_of(output[0], f"{RUN_DIR}/{RUN_FILES[0]}", wildcards)
        ),
        out=lambda wildcards, output: folder_of(output[0]),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} {params.launch:q} train --config {input.config:q} {params.jtt:q} {params.diverge:q} {params.device:q}"
        " --data {input.data:q} --out {params.out:q} > {log:q} 2>&1"

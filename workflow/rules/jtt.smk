# JTT (Liu et al. 2021) as two steps before its run (mr2/engine/jtt.py): stage 1, an ERM run of
# `stage1_epochs` epochs derived from the jtt run's config by the engine, then its error set on the
# TRAINING split (never test); the `jtt` run itself (rule train) up-samples that set `upweight`
# times in every epoch. Their folders carry the jtt run's hash.


rule jtt_stage1:
    """JTT stage 1: an ERM run of the jtt run's `stage1_epochs` epochs, with the dataset's other
    settings. Not a result: it is not aggregated. Trained with the run.yaml's `threads` (the job's
    `threads` only reserve cores), as every run is."""
    input:
        config=RUN_CONFIG.replace("{method}", "jtt"),
        data=data_of_run,
    output:
        expand(f"{JTT_STAGE1_DIR}/{{file}}", file=RUN_FILES, allow_missing=True),
    log:
        log_of("jtt_stage1", JTT_KEY),
    benchmark:
        benchmark_of("jtt_stage1", JTT_KEY)
    conda:
        ENV_TORCH
    threads: config["threads"]
    resources:
        **gpu_resources(config),
    params:
        repo=REPO,
        launch=lambda wildcards, output: launcher(
            config, locks_of(output[0], f"{JTT_STAGE1_DIR}/{RUN_FILES[0]}", wildcards)
        ),
        device=lambda wildcards, output: device_args(
            config, locks_of(output[0], f"{JTT_STAGE1_DIR}/{RUN_FILES[0]}", wildcards)
        ),
        out=lambda wildcards, output: folder_of(output[0]),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} {params.launch:q} train --config {input.config:q} --jtt-stage1 {params.device:q}"
        " --data {input.data:q} --out {params.out:q} > {log:q} 2>&1"


rule jtt_errors:
    """JTT's error set: the training samples the stage-1 model misclassifies (CSV: index, label,
    predicted), predicted without augmentation."""
    input:
        data=data_of_run,
        model=f"{JTT_STAGE1_DIR}/model.pt",
    output:
        JTT_ERRORS,
    log:
        log_of("jtt_errors", JTT_KEY),
    benchmark:
        benchmark_of("jtt_errors", JTT_KEY)
    conda:
        ENV_TORCH
    threads: config["threads"]
    resources:
        **gpu_resources(config, one_process=True),
    params:
        repo=REPO,
        run=lambda wildcards, input: folder_of(input.model),
        device=lambda wildcards, output: device_args(
            config, locks_of(output[0], JTT_ERRORS, wildcards), one_process=True
        ),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 errors --run {params.run:q} --data {input.data:q} --out {output:q}"
        " {params.device:q} > {log:q} 2>&1"

# JTT (Liu et al. 2021) as two steps before its run (mr2/engine/jtt.py): stage 1, an ERM run of
# `stage1_epochs` epochs derived from the jtt run's config by the engine, then its error set on the
# TRAINING split (never test); the `jtt` run itself (rule train) up-samples that set `upweight`
# times in every epoch.


rule jtt_stage1:
    """JTT stage 1: an ERM run of the jtt run's `stage1_epochs` epochs, with the dataset's other
    settings. Not a result: it is not aggregated."""
    input:
        config=RUN_CONFIG.format(dataset="{dataset}", method="jtt", variant="{variant}", seed="{seed}"),
        data=DATA,
    output:
        expand(f"{JTT_STAGE1_DIR}/{{file}}", file=RUN_FILES, allow_missing=True),
    params:
        launch=launcher(),
        device=device_args(),
        out=lambda wildcards, output: folder_of(output[0]),
    threads: config["threads"]
    resources:
        **gpu_resources(),
    log:
        f"{LOGS}/jtt_stage1/{{dataset}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV_TORCH
    shell:
        "{params.launch:q} train --config {input.config:q} --jtt-stage1 {params.device:q} --threads {threads}"
        " --data {input.data:q} --out {params.out:q} > {log:q} 2>&1"


rule jtt_errors:
    """JTT's error set: the training samples the stage-1 model misclassifies (CSV: index, label,
    predicted), predicted without augmentation."""
    input:
        data=DATA,
        model=f"{JTT_STAGE1_DIR}/model.pt",
    output:
        JTT_ERRORS,
    params:
        run=lambda wildcards, input: folder_of(input.model),
        device=device_args(one_process=True),
    threads: config["threads"]
    resources:
        **gpu_resources(one_process=True),
    log:
        f"{LOGS}/jtt_errors/{{dataset}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV_TORCH
    shell:
        "python -m mr2 errors --run {params.run:q} --data {input.data:q} --out {output:q}"
        " {params.device:q} --threads {threads} > {log:q} 2>&1"

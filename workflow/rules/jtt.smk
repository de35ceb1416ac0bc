# JTT (Liu et al. 2021) as two steps before its run (mr2/jtt.py): stage 1, an ERM run of
# `stage1_epochs` epochs, then its error set on the TRAINING split (never test); the `jtt` run
# itself (rule train) up-samples that set `upweight` times in every epoch.
from mr2.engine.distributed import launcher


rule jtt_stage1:
    """JTT stage 1: an ERM run of the jtt run's `stage1_epochs` epochs, with the dataset's
    other settings. Not a result: it is not aggregated."""
    input:
        data=DATA,
    output:
        expand(f"{JTT_STAGE1_DIR}/{{file}}", file=RUN_FILES, allow_missing=True),
    params:
        args=jtt_stage1_args,
        launch=lambda wildcards: launcher(config.get("gpus", 0)),
        out=lambda wildcards, output: folder_of(output[0]),
    threads: config.get("threads", 1)
    resources:
        **gpu_resources(),
    log:
        f"{LOGS}/jtt_stage1/{{dataset}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV
    shell:
        "{params.launch} train {params.args} --threads {threads} --data {input.data} --out {params.out} > {log} 2>&1"


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
        device=config.get("device", "auto"),
    threads: config.get("threads", 1)
    resources:
        **gpu_resources(),
    log:
        f"{LOGS}/jtt_errors/{{dataset}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV
    shell:
        "python -m mr2 errors --run {params.run} --data {input.data} --out {output}"
        " --device {params.device} --threads {threads} > {log} 2>&1"

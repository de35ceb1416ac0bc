# The tuning stage (config key `tune`): every trial of every searched method and the reference's runs at
# the trials' seeds are trained like any run and scored on the validation split only; `tune` (a
# checkpoint: the final runs' folders are named after its choice) writes the chosen options that the
# final runs of the config then train with (mr2.pipeline.runs, `chosen_options`).


rule evaluate_val:
    """Validation-split evaluation of one run (a trial, or the reference at a trial seed): never the test set."""
    input:
        data=data_of_run,
        model=f"{RUN_DIR}/model.pt",
    output:
        expand(f"{RUN_DIR}/{{file}}", file=EVAL_VAL_FILES, allow_missing=True),
    log:
        log_of("evaluate_val", RUN_KEY),
    benchmark:
        benchmark_of("evaluate_val", RUN_KEY)
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
            config, locks_of(output[0], f"{RUN_DIR}/{EVAL_VAL_FILES[0]}", wildcards), one_process=True
        ),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 evaluate --split val --run {params.run:q} --data {input.data:q}"
        " --out {params.out:q} {params.device:q} > {log:q} 2>&1"


checkpoint tune:
    """The options of each searched method that the config's selection rule (`tune.criterion`) picks on
    validation (chosen.yaml, with the SHA-256 of tuning.csv that the final runs check), every trial's
    scores (tuning.csv), the reference's groups (reference_groups.csv), the expected best score against
    the budget (budget.csv, tuning.png/pdf) and the summary (tuning.md)."""
    input:
        trial_files,
    output:
        chosen=TUNE_CHOSEN,
        trials=f"{TUNE_DIR}/tuning.csv",
        budget=f"{TUNE_DIR}/budget.csv",
        md=f"{TUNE_DIR}/tuning.md",
        png=f"{TUNE_DIR}/tuning.png",
        pdf=f"{TUNE_DIR}/tuning.pdf",
        groups=f"{TUNE_DIR}/reference_groups.csv",
    log:
        log_of("tune", "{dataset}"),
    localrule: True
    conda:
        ENV_RESULTS
    params:
        repo=REPO,
        runs=lambda wildcards, input: run_dirs_of(input),
        reference=REFERENCE,
        criterion=TUNE.get("criterion", "hard"),
        effect=config["effect_of_interest"],
        out=lambda wildcards, output: folder_of(output.chosen),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 tune --runs {params.runs:q} --reference {params.reference:q}"
        " --criterion {params.criterion:q} --effect {params.effect:q} --out {params.out:q} > {log:q} 2>&1"

# The config of every run and dataset as one file each, written by the engine after it has checked
# it (defaults filled in, types, the method's options built into its loss, the dataset's files
# found), so a bad config fails in these first, short jobs, before any data is prepared or any run
# trains; and the pipeline config as run, recorded for the report.


localrules:
    run_config,
    data_config,
    pipeline_config,


rule run_config:
    """The resolved config of one run (results/runs/.../run.yaml): what `mr2 train --config` reads."""
    output:
        RUN_CONFIG,
    params:
        settings=run_config_yaml,
    priority: 100
    log:
        f"{LOGS}/run_config/{{dataset}}/{{method}}/{{variant}}/seed{{seed}}.log",
    conda:
        ENV_TORCH
    shell:
        "python -m mr2 configure --run {params.settings:q} --out {output:q} > {log:q} 2>&1"


rule data_config:
    """The resolved data section of one dataset block: what its prepared file is made from."""
    output:
        DATA_CONFIG,
    params:
        settings=data_config_yaml,
    priority: 100
    log:
        f"{LOGS}/data_config/{{dataset}}.log",
    conda:
        ENV_TORCH
    shell:
        "python -m mr2 configure --data {params.settings:q} --out {output:q} > {log:q} 2>&1"


rule pipeline_config:
    """The pipeline config as run (after the schema's defaults), recorded with the results."""
    output:
        PIPELINE_CONFIG,
    params:
        config=json.dumps(config, sort_keys=True, indent=2),
    log:
        f"{LOGS}/pipeline_config.log",
    conda:
        ENV_RESULTS
    shell:
        "printf '%s\\n' {params.config:q} > {output:q} 2> {log:q}"

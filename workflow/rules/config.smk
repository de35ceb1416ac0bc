# The config of every run and dataset as one file each, written by the engine after it has checked
# it (defaults filled in, types, the method's options built into its loss, the dataset's files
# found), so a bad config fails in these first, short jobs, before any data is prepared or any run
# trains; and the pipeline config as run, recorded for the report. Quick: they run where Snakemake
# runs (localrule), also under the SLURM profile.


# A target that no pattern of the config can be (seedabc, an unknown method, a name that is no
# safe name, a hash that is not one) has no rule to produce it: Snakemake says so, before any job.
wildcard_constraints:
    dataset=SAFE_NAME,
    method="|".join(map(re.escape, known_methods(SCHEMA))),
    variant=SAFE_NAME,
    seed=r"[0-9]+",
    run_hash=HASH,
    data_hash=HASH,


rule run_config:
    """The resolved config of one run (<root>/runs/.../run.yaml): what `mr2 train --config` reads."""
    output:
        RUN_CONFIG,
    log:
        log_of("run_config", RUN_KEY),
    priority: 100
    localrule: True
    conda:
        ENV_TORCH
    params:
        repo=REPO,
        settings=run_config_yaml,
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 configure --run {params.settings:q} --out {output:q} > {log:q} 2>&1"


rule data_config:
    """The resolved data section of one dataset block: what its prepared file is made from."""
    output:
        DATA_CONFIG,
    log:
        log_of("data_config", DATA_KEY),
    priority: 100
    localrule: True
    conda:
        ENV_TORCH
    params:
        repo=REPO,
        settings=data_config_yaml,
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 configure --data {params.settings:q} --out {output:q} > {log:q} 2>&1"


from snakemake_interface_executor_plugins.settings import ExecMode

from mr2.common.io import config_digest
from mr2.pipeline.root import check_owner, config_name, hold, release

# The pipeline config as run, as pipeline_config.json records it, and its digest: the results steps
# refuse an output root whose pipeline_config.json records another config (`mr2 aggregate
# --config-digest`), e.g. another working directory's with the same absolute `output_root`.
PIPELINE_CONFIG_JSON = json.dumps(config, sort_keys=True, indent=2)
CONFIG_DIGEST = config_digest(json.loads(PIPELINE_CONFIG_JSON))


rule pipeline_config:
    """The pipeline config as run (after the schema's defaults), recorded with the results. A changed
    config reruns it (its params), and with it every results step (aggregate reads it)."""
    output:
        PIPELINE_CONFIG,
    log:
        log_of("pipeline_config"),
    localrule: True
    conda:
        ENV_RESULTS
    params:
        config=PIPELINE_CONFIG_JSON,
    shell:
        "printf '%s\\n' {params.config:q} > {output:q} 2> {log:q}"


# One output root holds one config's results (mr2.pipeline.root): a root whose pipeline_config.json
# records another config is refused when the workflow is parsed, a dry run too, before any job (not in
# a cluster job's own parse: the workflow that sent it checked); and one workflow at a time writes it
# (the lock Snakemake's onstart takes, workflow/Snakefile). The root is where Snakemake placed the
# rule's output (a module's `prefix:` moves it).
CONFIG_NAME = config_name(workflow.configfiles, workflow.config_settings.config)
if workflow.exec_mode == ExecMode.DEFAULT:
    check_owner(rules.pipeline_config.output[0], config, CONFIG_NAME)


rule run_folders:
    """The run folder of every run of the config (dataset, method, variant, seed, folder relative to
    the output root): `snakemake --cores 1 run_folders [--configfile ...] [--config ...]`. With a tuning
    stage the final runs' folders are named after its choice, so it runs first. Made again with the
    config's record (an output root handed to another config lists that config's runs)."""
    input:
        tuned_inputs,
        cfg=PIPELINE_CONFIG,
    output:
        RUN_FOLDERS,
    log:
        log_of("run_folders"),
    localrule: True
    conda:
        ENV_RESULTS
    params:
        table=lambda wildcards: plan.run_folders_table(config, run_dir),
    shell:
        "printf '%s\\n' {params.table:q} > {output:q} 2> {log:q}"

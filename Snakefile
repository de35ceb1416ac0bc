# mr2: the MR² replication pipeline. Includes only; the rules live in workflow/rules/.
# workflow/Snakefile is the same workflow for the Snakemake workflow catalog (the same lines, paths
# relative to it; tests/test_pipeline.py checks both plan the same jobs).
#   snakemake --cores all                                    embedded default (config/config.yaml)
#   snakemake --cores all --configfile config/cifar100.yaml  the paper's CIFAR-100 setting (GPU)
#   snakemake --profile profiles/slurm --configfile config/cifar100.yaml   on a SLURM cluster
#   snakemake --cores 1 run_folders                          each run's folder: results/run_folders.tsv
# Works from any working directory (snakemake -s <repo>/Snakefile) and as a Snakemake module.
from snakemake.utils import min_version

min_version("9.0")


# The embedded default, unless another config file is given (--configfile replaces it rather than
# being merged into it; --config key=value overrides single keys of either, `datasets` included).
# As a module (`config: config`), Snakemake skips this and the including workflow's config is used.
if not workflow.overwrite_configfiles:

    configfile: workflow.source_path("config/config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/config.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/jtt.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/results.smk"
include: "workflow/rules/theory.smk"


# Every output of the results steps is a target of its own: a step interrupted while it wrote deletes
# its outputs, and one that no later step reads (a PDF, settings.csv, an analysis table) would
# otherwise never be made again.
rule all:
    default_target: True
    input:
        REPORT,
        RUN_FOLDERS,
        rules.aggregate.output,
        rules.results_table.output,
        rules.figures.output,
        rules.analysis.output,
        rules.theory_bound.output,

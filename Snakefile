# mr2: the MR² replication pipeline. The workflow is workflow/Snakefile (the entry the Snakemake workflow
# catalog looks for); this file only includes it, so the two entries are one workflow.
#   snakemake --cores all                                    embedded default (config/config.yaml)
#   snakemake --cores all --configfile config/cifar100.yaml  the paper's CIFAR-100 setting (GPU)
#   snakemake --profile profiles/slurm --configfile config/cifar100.yaml   on a SLURM cluster (docs/pipeline.md)
#   snakemake --cores 1 run_folders                          each run's folder: results/run_folders.tsv
# Works from any working directory (snakemake -s <repo>/Snakefile) and as a Snakemake module.


# The `include:` directive keeps the including file's default target (it has none): this one takes the
# workflow's (`rule all`, `default_target: True`), as Snakemake does for the file it is given or a module.
workflow.include("workflow/Snakefile", overwrite_default_target=True)

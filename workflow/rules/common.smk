# The config and the thin wrappers only Snakemake can hold (its config, the tune checkpoint, wildcards,
# where this workflow's source is). The logic is mr2.pipeline, tested as Python (tests/test_pipeline_logic.py):
# standard library, YAML and jsonschema, so a dry run needs neither torch nor any data. The engine's
# deeper checks run in the first, short jobs, `run_config` and `data_config`.

import functools
import json
import re
import sys
import types
from importlib.machinery import SourceFileLoader
from pathlib import Path

import yaml
from snakemake.sourcecache import HostingProviderFile, LocalGitFile, LocalSourceFile


def source_root():
    """This workflow's repository (mr2's code, the schemas, the report's captions) as its Snakefile was
    given, not the working directory nor workflow.basedir (an including workflow's folder): the
    repository itself when local; for a module read from git (`git+file://...@ref`, `github(...)`),
    that commit's tree, written once under .snakemake/mr2-source/<commit> (mr2.pipeline.source)."""
    base = workflow.current_basedir  # <repository>/workflow/rules
    if isinstance(base, LocalSourceFile):
        return Path(base.get_path_or_uri(secret_free=True)).resolve().parents[1]
    if isinstance(base, LocalGitFile):
        repository = base.repo_path
    elif isinstance(base, HostingProviderFile):
        base.fetch_if_required()
        repository = base.hosted_repo.repo.git_dir
    else:
        raise ValueError(f"workflow source {base}: neither a folder nor a git repository")
    loader = SourceFileLoader("mr2_source", workflow.source_path("../../mr2/pipeline/source.py"))  # a cached copy
    source = types.ModuleType(loader.name)
    loader.exec_module(source)  # standard library only: mr2 is not importable yet
    return source.checkout(repository, base.ref, Path(".snakemake", "mr2-source"))


ROOT = source_root()
# Every job runs this mr2: each command starts with PYTHONPATH={params.repo:q}... (not shell.prefix, which
# would also prefix the rules of a workflow that uses this one as a module).
REPO = str(ROOT)
if REPO not in sys.path:
    sys.path.insert(0, REPO)
from mr2 import KERNEL_ERROR

if KERNEL_ERROR is not None:  # MR2_CPU_ISA neither avx2 nor native: refused before any job
    raise KERNEL_ERROR
from mr2.pipeline import paths
from mr2.pipeline import runs as plan
from mr2.pipeline.config import CONFIG_SCHEMA, SAFE_NAME, checked, known_methods, load_schemas
from mr2.pipeline.config import sweep_variants, tune_section
from mr2.pipeline.configfiles import check_not_merged
from mr2.pipeline.jobs import device_args, divergence_args, gpu_resources, jtt_errors_args, launcher
from mr2.pipeline.jobs import theory_args, upsample_input
from mr2.pipeline.paths import DATA_KEY, EVAL_FILES, EVAL_VAL_FILES, HASH, JTT_KEY, RUN_FILES, RUN_KEY, TABLE_NAMES
from mr2.pipeline.paths import THEORY_FIGURE, folder_of, run_dirs_of
from mr2.results.figures.registry import ANALYSIS_FIGURES, ANALYSIS_TABLES, config_figures, figure_options

CAPTIONS = ROOT / "workflow" / "report"
ENV_TORCH = "../envs/torch.yml"  # configs, prepare, train, evaluate, theory (--sdm conda)
ENV_RESULTS = "../envs/results.yml"  # tables, figures, analysis, report: pandas and matplotlib, no torch
SCHEMAS = load_schemas(ROOT / "workflow" / "schemas")  # this workflow's own, wherever it was deployed from
SCHEMA = SCHEMAS[CONFIG_SCHEMA]

# a `configfile:` of an including workflow (snakedeploy's copy of config/config.yaml) merged under the
# user's --configfile would change the user's runs: refused, naming its keys (mr2.pipeline.configfiles)
check_not_merged(
    workflow.configfiles,
    workflow.overwrite_configfiles,
    workflow.config_settings.overwrite_config,
    workflow.config_settings.replace_workflow_config,
)
config.update(checked(config, SCHEMAS))  # typed, defaults filled in, checked: errors name the key
TUNE = tune_section(config)  # no tuning stage unless the config has a `tune` section
SWEEP_METHOD = config["sweeps"]["method"]
REFERENCE = config["reference"]
MR2_METHOD = figure_options(config).method  # the registry's reading, shared by `mr2 figures` and `mr2 report`
# the path patterns under the output root the rules use (mr2.pipeline.paths.patterns)
PATTERNS = paths.patterns(config["output_root"])
OUT = PATTERNS["OUT"]
DATA = PATTERNS["DATA"]
DATA_CONFIG = PATTERNS["DATA_CONFIG"]
RUN_DIR = PATTERNS["RUN_DIR"]
RUN_CONFIG = PATTERNS["RUN_CONFIG"]
JTT_STAGE1_DIR = PATTERNS["JTT_STAGE1_DIR"]
JTT_ERRORS = PATTERNS["JTT_ERRORS"]
EVAL_DIR = PATTERNS["EVAL_DIR"]
TUNE_DIR = PATTERNS["TUNE_DIR"]
TUNE_CHOSEN = PATTERNS["TUNE_CHOSEN"]
TABLES = PATTERNS["TABLES"]
FIGURES = PATTERNS["FIGURES"]
ANALYSIS = PATTERNS["ANALYSIS"]
THEORY = PATTERNS["THEORY"]
REPORT = PATTERNS["REPORT"]
REPORT_HTML = PATTERNS["REPORT_HTML"]
PIPELINE_CONFIG = PATTERNS["PIPELINE_CONFIG"]
RUN_FOLDERS = PATTERNS["RUN_FOLDERS"]
log_of = functools.partial(paths.log_of, OUT)
benchmark_of = functools.partial(paths.benchmark_of, OUT)
locks_of = functools.partial(paths.locks_of, OUT)


def figure_names():
    """The figures this config has data for (`mr2 figures` draws no placeholder), from the figures'
    registry (mr2/results/figures/registry.py, standard library only)."""
    return config_figures(config)


def chosen(dataset):
    """The tuning's choice for ``dataset`` (its chosen.yaml, checked against the tuning.csv beside it);
    Snakemake's IncompleteCheckpointException until its tune checkpoint has run."""
    return plan.read_chosen(config, dataset, checkpoints.tune.get(dataset=dataset).output.chosen)


@functools.cache
def run_hash(dataset, method, variant):
    return plan.run_hash(config, SCHEMA, dataset, method, variant, chosen)


@functools.cache
def data_hash(dataset, seed=None):
    """The name of a dataset's prepared file (of a run seed's, under `variance.split: true`)."""
    return plan.data_hash(config, dataset, seed if plan.split_varies(config) else None)


def run_dir(dataset, method, variant, seed):
    """The folder of one run of the config (under the unmoved output root)."""
    return plan.run_folder(config, run_hash(dataset, method, variant), dataset, method, variant, seed)


def checked_run(wildcards):
    """A target's run must be one of the config's settings (the JTT steps belong to a jtt run)."""
    dataset, method, variant = wildcards.dataset, getattr(wildcards, "method", "jtt"), wildcards.variant
    plan.check_run_hash(dataset, method, variant, wildcards.run_hash, run_hash(dataset, method, variant))


def data_of_run(wildcards):
    """The prepared dataset of a target's run (after checking the run is one of the config's)."""
    checked_run(wildcards)
    return DATA.format(dataset=wildcards.dataset, data_hash=data_hash(wildcards.dataset, int(wildcards.seed)))


def run_config_yaml(wildcards):
    checked_run(wildcards)
    run = [wildcards.dataset, wildcards.method, wildcards.variant, wildcards.seed]
    return yaml.safe_dump(plan.run_config(config, SCHEMA, *run, chosen), sort_keys=False)


def data_config_yaml(wildcards):
    seed = plan.data_seed(config, wildcards.dataset, wildcards.data_hash)
    plan.check_data_hash(wildcards.dataset, wildcards.data_hash, data_hash(wildcards.dataset, seed))
    return yaml.safe_dump(plan.data_settings(config, wildcards.dataset, seed), sort_keys=False)


def trial_files(wildcards):
    """What the tune checkpoint of a dataset reads: each trial run's config and validation evaluation."""
    return plan.trial_inputs(config, wildcards.dataset, run_dir)


def tuned_inputs(wildcards=None):
    """The chosen options of every dataset when the config tunes (what a run folder's name needs)."""
    return [TUNE_CHOSEN.format(dataset=d) for d in config["datasets"]] if TUNE else []


def all_run_files(wildcards=None):
    """Every declared output of training and evaluation, for the aggregate step (an input function:
    with a tuning stage the folders' names wait for its choice)."""
    return plan.result_inputs(config, run_dir)


def hold_output_root():
    """This workflow alone writes the output root until it ends (workflow/Snakefile's onstart; the
    pipeline_config rule and CONFIG_NAME are config.smk's, read when it is called)."""
    hold(rules.pipeline_config.output[0], config, CONFIG_NAME)


def release_output_root():
    release(rules.pipeline_config.output[0])

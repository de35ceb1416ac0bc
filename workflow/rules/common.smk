"""Helpers of the pipeline: config validation, the runs of the config, and every path pattern.

Path patterns are written here once; rules and targets use these names, never rebuild paths.
All checks run when the workflow is parsed, so a bad config fails before any job starts.
"""

import copy
import json
import os
import shlex

from snakemake.utils import validate

from mr2.engine import config as run_config
from mr2.engine.data import check_available
from mr2.engine import jtt as jtt_stages
from mr2.method.losses.factory import check_options

# Snakemake's --config reads the items of a list as strings ("seeds=[0,1]" gives ["0", "1"]).
if all(isinstance(seed, str) and seed.isdigit() for seed in config.get("seeds", [])):
    config["seeds"] = [int(seed) for seed in config["seeds"]]

validate(config, schema="../schemas/config.schema.yaml")

DATA = "results/data/{dataset}.pt"
RUN_DIR = "results/runs/{dataset}/{method}/{variant}/seed{seed}"
# JTT's stage 1 (an ERM run) and its error set on the training split: steps of a jtt run, not results
JTT_DIR = "results/jtt/{dataset}/{variant}/seed{seed}"
JTT_STAGE1_DIR = f"{JTT_DIR}/stage1"
JTT_ERRORS = f"{JTT_DIR}/errors.csv"
RUN_FILES = ["model.pt", "config.yaml", "epochs.csv"]
EVAL_DIR = f"{RUN_DIR}/eval"
EVAL_FILES = ["per_class.csv", "confusion.csv", "metrics.json"]
TABLES = "results/tables"
TABLE_NAMES = ["per_class", "runs", "epochs", "groups"]
FIGURES = "results/figures"
LOGS = "results/logs"
REPORT = "results/report.md"
THEORY = "results/theory"
THEORY_FIGURE = "bound_terms"  # written by the theory step into FIGURES, beside the results figures
PIPELINE_CONFIG = "results/pipeline_config.json"
ENV = "../../environment.yml"  # for --sdm conda; the README's set-up installs the same packages
FIGURE_NAMES = [
    "per_class_sorted",
    "accuracy_vs_variability",
    "group_accuracy",
    "change_vs_erm",
    "margins_over_training",
    "sweeps",
]
DEFAULT_VARIANT = "default"


class PipelineConfigError(ValueError):
    pass


def sweep_variants():
    """Variants of the swept method, one option changed each, named "option=value":
    {"c_bar=0.5": {"c_bar": 0.5}, "statistic=spread": {"statistic": "spread"}, ...}.
    c_bar and lam are the paper's Fig. 5; any other option of the method may be swept too."""
    sweeps = config.get("sweeps", {})
    out = {}
    for key, values in sweeps.items():
        if key == "method":
            continue
        for value in values:
            out[f"{key}={value}"] = {key: value}
    return out


def runs():
    """Every (dataset, method, variant, seed) of the config."""
    out = []
    sweep_method = config.get("sweeps", {}).get("method", "mr2")
    for dataset in config["datasets"]:
        for method in config["methods"]:
            for seed in config["seeds"]:
                out.append(dict(dataset=dataset, method=method, variant=DEFAULT_VARIANT, seed=seed))
        for variant in sweep_variants():
            for seed in config["seeds"]:
                out.append(dict(dataset=dataset, method=sweep_method, variant=variant, seed=seed))
    return out


def method_options(method, variant):
    options = copy.deepcopy(config.get("method_options", {}).get(method, {}))
    if variant != DEFAULT_VARIANT:
        options.update(sweep_variants()[variant])
    return options


def run_cfg(dataset, method, variant, seed):
    """The resolved engine config of one run (defaults <- run <- dataset block <- method)."""
    block = config["datasets"][dataset]
    update = {
        "seed": int(seed),
        "device": config.get("device", "auto"),
        "threads": config.get("threads", 1),
        "tags": {"variant": variant, "dataset_key": dataset},
        "method": {"name": method, "options": method_options(method, variant)},
    }
    cfg = run_config.deep_merge(run_config.DEFAULTS, config.get("run", {}))
    for section in ("data", "model", "train"):
        cfg = run_config.deep_merge(cfg, {section: block.get(section, {})}, ())
    cfg = run_config.validate(run_config.deep_merge(cfg, update))
    if method == "jtt":  # stage 2 up-samples the error set of stage 1 (workflow/rules/jtt.smk)
        cfg = jtt_stages.stage2_config(cfg, JTT_ERRORS.format(dataset=dataset, variant=variant, seed=seed))
    return cfg


def check_config():
    """Everything that can be checked before a job runs, each error naming the key."""
    sweep_method = config.get("sweeps", {}).get("method", "mr2")
    if sweep_variants() and sweep_method in ("erm",):
        raise PipelineConfigError(f"config key 'sweeps.method': {sweep_method!r} has no options to sweep")
    reference = config.get("reference", "erm")
    if reference not in config["methods"]:
        raise PipelineConfigError(f"config key 'reference': {reference!r} is not in 'methods' {config['methods']}")
    for name, block in config["datasets"].items():
        try:
            check_available(block["data"])
        except (ValueError, FileNotFoundError) as exc:
            raise PipelineConfigError(f"config key 'datasets.{name}.data': {exc}") from None
    for r in runs():
        where = f"datasets.{r['dataset']} / method {r['method']} / variant {r['variant']}"
        try:
            check_options(r["method"], method_options(r["method"], r["variant"]))
            run_cfg(**r)
        except ValueError as exc:
            raise PipelineConfigError(f"invalid config for {where}: {exc}") from None


check_config()


def theory_args():
    """Config key `theory` as options of `python -m theory bound` (its defaults where unset)."""
    return " ".join(f"--{key} {shlex.quote(str(value))}" for key, value in sorted(config.get("theory", {}).items()))


def set_args(cfg, prefix=""):
    """A nested config as shell-quoted ``--set key.path=<json>`` arguments."""
    args = []
    for key, value in cfg.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            args += set_args(value, f"{path}.")
        else:
            args.append(f"--set {shlex.quote(f'{path}={json.dumps(value)}')}")
    return args


def jtt_stage1_args(wildcards):
    cfg = run_cfg(wildcards.dataset, "jtt", wildcards.variant, wildcards.seed)
    return " ".join(set_args(jtt_stages.stage1_config(cfg)))


def upsample_input(wildcards):
    """The error set a jtt run up-samples; nothing for the other methods."""
    if wildcards.method != "jtt":
        return []
    return JTT_ERRORS.format(dataset=wildcards.dataset, variant=wildcards.variant, seed=wildcards.seed)


def train_args(wildcards):
    return " ".join(set_args(run_cfg(wildcards.dataset, wildcards.method, wildcards.variant, wildcards.seed)))


def prepare_args(wildcards):
    return " ".join(set_args({"data": config["datasets"][wildcards.dataset]["data"]}))


def all_run_dirs():
    return [RUN_DIR.format(**r) for r in runs()]


def all_run_files():
    """Every declared output of training and evaluation, for the aggregate step."""
    return [f"{d}/{f}" for d in all_run_dirs() for f in RUN_FILES[1:] + [f"eval/{e}" for e in EVAL_FILES]]


def folder_of(path):
    return os.path.dirname(path)


def gpu_resources():
    return {"gpu": config.get("gpus", 0)} if config.get("gpus", 0) > 0 else {}

# Helpers of the pipeline: the config's types and checks, the runs of the config, every path pattern.
#
# Parse-time code uses only the standard library, YAML and jsonschema (no torch, no mr2): a dry run
# needs neither the training stack nor any data. Path patterns are written here once; rules and
# targets use these names. The engine's deeper checks (each run config resolved against the
# engine's defaults, its method's options built, each dataset's files present) run in the first,
# short jobs, `run_config` and `data_config`, with the same named errors.

import copy
import functools
import hashlib
import json
import math
import re
import shlex
import sys
from pathlib import Path

import yaml
from snakemake.utils import validate

# the repository of this workflow (mr2's code, the report's captions), also when it is used as a
# Snakemake module from another workflow (workflow.basedir is then the other one's folder)
ROOT = Path(workflow.current_basedir.get_path_or_uri(secret_free=True)).resolve().parents[1]
CAPTIONS = ROOT / "workflow" / "report"
ENV_TORCH = "../envs/torch.yml"  # configs, prepare, train, evaluate, theory (--sdm conda)
ENV_RESULTS = "../envs/results.yml"  # tables, figures, analysis, report: pandas and matplotlib, no torch
# Every job runs this workflow's own mr2 (the repository the Snakefile is in), whatever the working
# directory or the environment, so the code that trains is the code that was checked: each rule's
# command starts with PYTHONPATH={params.repo:q}..., not a global shell.prefix, which would also
# prefix the rules of a workflow that uses this one as a module.
REPO = str(ROOT)
if REPO not in sys.path:  # mr2.common: standard library only (no torch), shared with the engine
    sys.path.insert(0, REPO)
from mr2.common.tuning import TRIAL_TAG, TUNED_TAG, trial_index, trial_options, trial_variant

DEFAULT_VARIANT = "default"
NAME = re.compile(r"^(?!.*[.][.])[A-Za-z0-9][A-Za-z0-9_.=-]*\Z")  # \Z: `$` would let a final newline in


class PipelineConfigError(ValueError):
    pass


# ----------------------------------------------------------------------------- types and checks
_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?$")


def typed(value):
    """Config values as YAML 1.2 reads them. Snakemake passes nested `--config` values as strings
    ("0.3", "true") and PyYAML reads `1e-2` in a config file as a string; numbers, booleans and
    null written so become numbers, booleans and None. Names (letters first) stay strings."""
    if isinstance(value, dict):
        return {key: typed(v) for key, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    if not isinstance(value, str):
        return value
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    if value in ("true", "True", "TRUE", "false", "False", "FALSE"):
        return value.lower() == "true"
    if value in ("null", "Null", "NULL", "~"):
        return None
    return value


def check_cross_keys():
    """Checks across keys that the schema cannot express, each error naming the key."""
    methods = config["methods"]
    sweep_method = config["sweeps"]["method"]
    swept = [key for key in config["sweeps"] if key != "method"]
    if config["reference"] not in methods:
        raise PipelineConfigError(f"config key 'reference': {config['reference']!r} is not in 'methods' {methods}")
    for method in config["method_model"]:
        if method not in methods and not (swept and method == sweep_method):
            raise PipelineConfigError(f"config key 'method_model.{method}': method {method!r} is not run")
    for method in config["method_options"]:
        if method not in methods and not (swept and method == sweep_method):
            raise PipelineConfigError(
                f"config key 'method_options.{method}': method {method!r} is not run "
                f"(not in 'methods' {methods}{' nor sweeps.method' if swept else ''})"
            )
    takes = method_option_names(sweep_method)
    for key in swept:
        if key not in takes:
            raise PipelineConfigError(
                f"config key 'sweeps.{key}': method {sweep_method!r} (sweeps.method) has no "
                f"option {key!r}; its options: {', '.join(sorted(takes)) or 'none'}"
            )
    for variant in sweep_variants():
        if not NAME.match(variant):
            raise PipelineConfigError(
                f"config key 'sweeps': variant name {variant!r} is not a safe name "
                "(letters, digits and _ . = - only)"
            )
    check_tune()
    check_convergence()
    for seed in config["seeds"]:  # the schema's "integer" lets 1.0 in; torch takes 64 bits at most
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            raise PipelineConfigError(f"config key 'seeds': {seed!r} is not an integer in [0, 2**64)")
    if config["runs_per_gpu"] > 1 and config["gpus"] != 1:
        raise PipelineConfigError(
            f"config key 'runs_per_gpu' ({config['runs_per_gpu']}) shares one GPU between runs: "
            f"it needs gpus: 1 (got gpus: {config['gpus']})"
        )


def check_tune():
    """Config key `tune`: every searched method is run and takes the options searched; every follower
    follows a searched method; the trials' seeds are apart from the final seeds."""
    tune = TUNE
    if not tune:
        return
    methods = config["methods"]
    for method, space in tune["space"].items():
        if method not in methods:
            raise PipelineConfigError(f"config key 'tune.space.{method}': method {method!r} is not in 'methods' {methods}")
        if method == config["reference"]:
            raise PipelineConfigError(f"config key 'tune.space.{method}': the reference is not tuned (its validation "
                                      "accuracy ranks the classes every trial is scored on)")
        takes = method_option_names(method)
        for option in space:
            if option not in takes:
                raise PipelineConfigError(f"config key 'tune.space.{method}.{option}': method {method!r} has no "
                                          f"option {option!r}; its options: {', '.join(sorted(takes)) or 'none'}")
            if option in config["method_options"].get(method, {}):
                raise PipelineConfigError(f"config key 'tune.space.{method}.{option}': also set in "
                                          f"'method_options.{method}'; an option is either fixed or searched")
        trial_options(space, 1, tune["seed"], method)  # the ranges, each error naming its key
    for follower, source in tune["follow"].items():
        if follower not in methods or source not in tune["space"]:
            raise PipelineConfigError(f"config key 'tune.follow.{follower}': {follower!r} must be in 'methods' and "
                                      f"{source!r} in 'tune.space' ({', '.join(tune['space'])})")
    shared = sorted(set(tune["seeds"]) & set(config["seeds"]))
    if shared:
        raise PipelineConfigError(f"config key 'tune.seeds': {shared} also in 'seeds'; the trials' seeds must be apart "
                                  "from the final runs', so the choice and the comparisons rest on different runs")


def check_convergence():
    """Config key `convergence`: each dataset block states its epochs, and the checks' keys are free."""
    if not CONVERGENCE:
        return
    for dataset in config["datasets"]:
        if epochs_of(dataset) is None:
            raise PipelineConfigError(f"config key 'datasets.{dataset}.train.epochs': needed by 'convergence' "
                                      "(the check trains factor x epochs)")
        key = convergence_key(dataset)
        if key in config["datasets"]:
            raise PipelineConfigError(f"config key 'datasets.{key}': the name of {dataset!r}'s convergence check; "
                                      "rename the block")


def epochs_of(dataset):
    """The epochs a dataset block trains (its `train.epochs`, else `run.train.epochs`), None if neither says."""
    block = config["datasets"][dataset].get("train", {})
    return block.get("epochs", config["run"].get("train", {}).get("epochs"))


def convergence_key(dataset):
    """``<dataset>.x<factor>``: the dataset key of the convergence check of ``dataset``."""
    return f"{dataset}.x{CONVERGENCE['factor']}"


def method_option_names(method):
    """The options the schema lets ``method_options.<method>`` set (its loss's options)."""
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    node = schema["properties"]["method_options"]["properties"][method]
    while "$ref" in node:  # a local reference "#/$defs/<name>"
        target = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return set(node.get("properties", {}))


def variant_name(option, value):
    """``c_bar=0.5``: the variant of the swept method that sets ``option`` to ``value``."""
    return f"{option}={value}"


def sweep_variants():
    """Variants of the swept method, one option changed each: {"c_bar=0.5": ("c_bar", 0.5), ...}.
    c_bar and lam are the paper's Fig. 5; any other option of the method may be swept too."""
    return {
        variant_name(key, value): (key, value)
        for key, values in config["sweeps"].items()
        if key != "method"
        for value in values
    }


def amp_off(settings):
    """`amp: off` unquoted is false to Snakemake's YAML 1.1 reader: read it as the "off" it says."""
    if isinstance(settings, dict) and settings.get("amp") is False:
        settings["amp"] = "off"


config.update(typed(dict(config)))
amp_off(config.get("run"))
validate(config, schema="../schemas/config.schema.yaml")
TUNE = config.get("tune") or {}  # no tuning stage unless the config has a `tune` section
CONVERGENCE = config.get("convergence") or {}  # no convergence check unless it has a `convergence` section
check_cross_keys()
SWEEP_METHOD = config["sweeps"]["method"]
#: the dataset key of each convergence check -> the dataset it checks
CONVERGENCE_OF = {convergence_key(d): d for d in config["datasets"]} if CONVERGENCE else {}


# ----------------------------------------------------------------------------- path patterns
# Every path is under the output root (config key `output_root`, default results). A run's folder
# and a prepared dataset carry a short hash of their settings as the pipeline states them (the run
# config of `run_config` below without the seed, the data config): two configs share a folder only
# when they describe the same run, so a run of one config never overwrites another's, and a
# changed setting is a new folder. `snakemake run_folders` lists the folders of a config.
OUT = str(Path(config["output_root"]))  # without a trailing slash
HASH = "[0-9a-f]{8}"
DATA_KEY = "{dataset}/{data_hash}"
RUN_KEY = "{dataset}/{method}/{variant}/{run_hash}/seed{seed}"
JTT_KEY = "{dataset}/{variant}/{run_hash}/seed{seed}"  # the run_hash of the jtt run it belongs to
DATA = f"{OUT}/data/{DATA_KEY}.pt"
DATA_CONFIG = f"{OUT}/data/{DATA_KEY}.yaml"
RUN_DIR = f"{OUT}/runs/{RUN_KEY}"
RUN_CONFIG = f"{RUN_DIR}/run.yaml"
# JTT's stage 1 (an ERM run) and its error set on the training split: steps of a jtt run, not results
JTT_DIR = f"{OUT}/jtt/{JTT_KEY}"
JTT_STAGE1_DIR = f"{JTT_DIR}/stage1"
JTT_ERRORS = f"{JTT_DIR}/errors.csv"
RUN_FILES = ["model.pt", "config.yaml", "epochs.csv"]
EVAL_DIR = f"{RUN_DIR}/eval"
EVAL_FILES = ["per_class.csv", "confusion.csv", "metrics.json"]
EVAL_VAL_DIR = f"{RUN_DIR}/eval_val"  # a trial's (and the reference's) scores on the validation split
EVAL_VAL_FILES = [f"eval_val/{name}" for name in ("per_class.csv", "metrics.json")]
TUNE_DIR = f"{OUT}/tune/{{dataset}}"
TUNE_CHOSEN = f"{TUNE_DIR}/chosen.yaml"
TABLES = f"{OUT}/tables"
TABLE_NAMES = ["per_class", "runs", "epochs", "groups"]
FIGURES = f"{OUT}/figures"
ANALYSIS = f"{OUT}/analysis"
LOGS = f"{OUT}/logs"
BENCHMARKS = f"{OUT}/benchmarks"
REPORT = f"{OUT}/report.md"
REPORT_HTML = f"{OUT}/report_page.html"
THEORY = f"{OUT}/theory"
THEORY_FIGURE = "bound_terms"  # written by the theory step into FIGURES, beside the results figures
PIPELINE_CONFIG = f"{OUT}/pipeline_config.json"
RUN_FOLDERS = f"{OUT}/run_folders.tsv"
GPU_LOCKS = ".gpu_locks"  # under the output root as the job's outputs place it (locks_of)
FIGURE_NAMES = [
    "claim_forest",
    "per_class_sorted",
    "accuracy_vs_variability",
    "group_accuracy",
    "change_vs_erm",
    "margins_over_training",
    "sweeps",
    "regimes",
    "tradeoff",
]


def figure_names():
    """The figures this config has data for (`mr2 figures` draws no placeholder): no sweeps figure
    without a sweep, no regimes figure unless one data name is run under two dataset keys."""
    data_names = [b.get("data", {}).get("name", k) for k, b in config["datasets"].items()]
    skip = {"sweeps"} if not sweep_variants() else set()
    skip |= {"regimes"} if len(set(data_names)) == len(data_names) else set()
    return [n for n in FIGURE_NAMES if n not in skip]


def log_of(rule, key=None):
    """``<root>/logs/<rule>/<key>.log`` (``<rule>.log`` for a job without wildcards)."""
    return f"{LOGS}/{rule}/{key}.log" if key else f"{LOGS}/{rule}.log"


def benchmark_of(rule, key=None):
    """``<root>/benchmarks/<rule>/<key>.tsv``: Snakemake's measurement of the job (s, max_rss, ...)."""
    return f"{BENCHMARKS}/{rule}/{key}.tsv" if key else f"{BENCHMARKS}/{rule}.tsv"


def known_methods():
    """Every method the schema knows (the `methods` enum)."""
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    return schema["properties"]["methods"]["items"]["enum"]


SAFE_NAME = r"(?![^/]*[.][.])[A-Za-z0-9][A-Za-z0-9_.=-]*"  # a NAME as a wildcard's pattern


def analysed_method():
    """The MR² method whose margins the figures and the premise analysis show: mr2 when it runs, else
    the first MR² method run or swept (mr2_uniform, ...), else mr2 (the figures then say it has no runs)."""
    swept = [SWEEP_METHOD] if sweep_variants() else []
    candidates = [m for m in [*config["methods"], *swept] if m.startswith("mr2")]
    return "mr2" if "mr2" in candidates or not candidates else candidates[0]


MR2_METHOD = analysed_method()
REFERENCE = config["reference"]


# ----------------------------------------------------------------------------- runs and their configs
def runs():
    """Every (dataset, method, variant, seed) of the config whose test results are tabled: each method
    and sweep variant with every seed, and each method of the convergence checks with theirs (the
    trials of the tuning stage are not: they are scored on validation only, `trial_runs`)."""
    out = []
    for dataset in config["datasets"]:
        for method in config["methods"]:
            for seed in config["seeds"]:
                out.append(dict(dataset=dataset, method=method, variant=DEFAULT_VARIANT, seed=seed))
        for variant in sweep_variants():
            for seed in config["seeds"]:
                out.append(dict(dataset=dataset, method=SWEEP_METHOD, variant=variant, seed=seed))
    for dataset in CONVERGENCE_OF:
        for method in config["methods"]:
            for seed in CONVERGENCE["seeds"]:
                out.append(dict(dataset=dataset, method=method, variant=DEFAULT_VARIANT, seed=seed))
    return out


def trial_runs(dataset):
    """The runs the tuning stage scores on ``dataset``'s validation split: every trial of every searched
    method and the reference (its validation accuracy ranks the classes), each with every tune seed."""
    out = [dict(dataset=dataset, method=REFERENCE, variant=DEFAULT_VARIANT, seed=s) for s in TUNE["seeds"]]
    for method in TUNE["space"]:
        for i in range(TUNE["trials"]):
            out += [dict(dataset=dataset, method=method, variant=trial_variant(i), seed=s) for s in TUNE["seeds"]]
    return out


def trial_files(wildcards):
    """What the tune checkpoint of a dataset reads: each trial run's config and validation evaluation."""
    return [f"{run_dir(**r)}/{f}" for r in trial_runs(wildcards.dataset) for f in [RUN_FILES[1], *EVAL_VAL_FILES]]


def tuned_method(method):
    """The searched method whose tuning sets ``method``'s options (itself, or the one it follows), or None."""
    source = TUNE.get("follow", {}).get(method, method) if TUNE else None
    return source if TUNE and source in TUNE["space"] else None


def chosen_options(dataset, method):
    """The options the tuning of ``dataset`` (of the dataset a convergence check is of) chose for
    ``method``, those it takes; raises Snakemake's IncompleteCheckpointException until tune has run."""
    source = tuned_method(method)
    chosen = checkpoints.tune.get(dataset=CONVERGENCE_OF.get(dataset, dataset)).output.chosen
    options = yaml.safe_load(Path(chosen).read_text(encoding="utf-8"))["methods"][source]
    takes = method_option_names(method)
    return {key: value for key, value in options.items() if key in takes}


def tuned_inputs(wildcards=None):
    """The chosen options of every dataset when the config tunes (what a run folder's name needs)."""
    return [TUNE_CHOSEN.format(dataset=d) for d in config["datasets"]] if TUNE else []


def merged(base, update):
    """``base`` updated by ``update``, nested mappings merged key by key (the engine checks the keys)."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def dataset_block(dataset):
    """The config's block of a target's dataset (a convergence check's: its dataset's block with factor x
    the epochs); a `PipelineConfigError` naming the key when there is none."""
    if dataset in CONVERGENCE_OF:
        base = CONVERGENCE_OF[dataset]
        return merged(config["datasets"][base], {"train": {"epochs": CONVERGENCE["factor"] * epochs_of(base)}})
    if dataset not in config["datasets"]:
        raise PipelineConfigError(
            f"the target's dataset {dataset!r} is not in config key 'datasets' "
            f"({', '.join(config['datasets'])}): add it, or give the --configfile that has it"
        )
    return config["datasets"][dataset]


def run_config(dataset, method, variant, seed):
    """The settings of one run as the pipeline states them: the `run` section, the dataset's block,
    the method's model settings (`method_model`), the method's options, the variant's option, the
    seed and the run's tags. The engine fills every key left out with its defaults (`mr2 configure`)
    and writes the result as the run's run.yaml."""
    cfg = merged(config["run"], {key: dataset_block(dataset).get(key, {}) for key in ("data", "model", "train")})
    cfg = merged(cfg, {"model": config["method_model"].get(method, {})})  # the method's own model settings
    options = copy.deepcopy(config["method_options"].get(method, {}))
    tags = {"variant": variant, "dataset_key": dataset}
    if dataset in CONVERGENCE_OF:
        tags["convergence_of"] = CONVERGENCE_OF[dataset]
    if variant == DEFAULT_VARIANT and tuned_method(method):
        options.update(chosen_options(dataset, method))
        tags[TUNED_TAG] = True
    elif trial_index(variant) is not None and TUNE and method in TUNE["space"]:
        index = trial_index(variant)
        if index >= TUNE["trials"] or dataset not in config["datasets"]:
            raise PipelineConfigError(f"the target's trial {dataset}/{method}/{variant} is not one of config key "
                                      f"'tune' (trials 0..{TUNE['trials'] - 1} of the datasets' blocks)")
        options.update(trial_options(TUNE["space"][method], TUNE["trials"], TUNE["seed"], method)[index])
        tags[TRIAL_TAG], tags["searched"] = index, sorted(TUNE["space"][method])
    elif variant != DEFAULT_VARIANT:
        if variant not in sweep_variants():
            raise PipelineConfigError(
                f"the target's variant {variant!r} is neither {DEFAULT_VARIANT!r} nor one of config "
                f"key 'sweeps' ({', '.join(sweep_variants()) or 'none'}): add it there, or give "
                "the --configfile that has it"
            )
        option, value = sweep_variants()[variant]
        options[option] = value
        tags["sweep"] = option
    return {
        **cfg,
        "seed": int(seed),
        "device": config["device"],
        "threads": config["threads"],
        "tags": tags,
        "method": {"name": method, "options": options},
    }


def short_hash(settings):
    """The first 8 hex digits of SHA-256 of ``settings`` as canonical JSON (sorted keys): the same
    settings give the same name in every session and on every machine."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@functools.cache
def run_hash(dataset, method, variant):
    """The name of a run's settings: the hash of its run config without the seed (the seed is the
    folder below), so the seeds of one setting share their parent folder."""
    settings = run_config(dataset, method, variant, 0)
    del settings["seed"]
    return short_hash(settings)


def data_settings(dataset):
    """The data section of a dataset block as the pipeline states it (`run.data` updated by the block's)."""
    return {"data": merged(config["run"].get("data", {}), dataset_block(dataset)["data"])}


@functools.cache
def data_hash(dataset):
    return short_hash(data_settings(dataset))


def run_dir(dataset, method, variant, seed):
    """The folder of one run of the config (under the unmoved output root)."""
    return RUN_DIR.format(
        dataset=dataset, method=method, variant=variant, seed=seed, run_hash=run_hash(dataset, method, variant)
    )


def checked_run(wildcards):
    """A target's run must be one of the config's settings: its hash is the one the config gives it,
    else a `PipelineConfigError` naming the folder (a folder of other settings is never reused)."""
    method = getattr(wildcards, "method", "jtt")  # the JTT steps belong to a jtt run
    dataset, variant, found = wildcards.dataset, wildcards.variant, wildcards.run_hash
    expected = run_hash(dataset, method, variant)
    if found != expected:
        raise PipelineConfigError(
            f"the target's run folder {found!r} ({dataset}/{method}/{variant}) "
            f"holds other settings than this config's ({expected!r}): list this config's folders with "
            "`snakemake run_folders`, or give the --configfile of that run"
        )


def data_of_run(wildcards):
    """The prepared dataset of a target's run (after checking the run is one of the config's)."""
    checked_run(wildcards)
    return DATA.format(dataset=wildcards.dataset, data_hash=data_hash(wildcards.dataset))


def run_config_yaml(wildcards):
    checked_run(wildcards)
    return yaml.safe_dump(
        run_config(wildcards.dataset, wildcards.method, wildcards.variant, wildcards.seed), sort_keys=False
    )


def data_config_yaml(wildcards):
    dataset, found = wildcards.dataset, wildcards.data_hash
    if found != data_hash(dataset):
        raise PipelineConfigError(
            f"the target's prepared data {found!r} of dataset {dataset!r} holds other settings than "
            f"this config's ({data_hash(dataset)!r})"
        )
    return yaml.safe_dump(data_settings(dataset), sort_keys=False)


def all_run_dirs():
    return [run_dir(**r) for r in runs()]


def all_run_files(wildcards=None):
    """Every declared output of training and evaluation, for the aggregate step (an input function:
    with a tuning stage the folders' names wait for its choice)."""
    return [f"{d}/{f}" for d in all_run_dirs() for f in RUN_FILES[1:] + [f"eval/{e}" for e in EVAL_FILES]]


def run_dirs_of(input):
    """The run folders of the aggregate step's inputs, in the config's order, as Snakemake placed
    them (a module's `prefix:` moves them; the patterns above are never read unmoved)."""
    return [folder_of(f) for f in input if Path(f).name == RUN_FILES[1]]


def run_folders_table():
    """``dataset method variant seed folder`` per run of the config (folders relative to the output root)."""
    rows = ["dataset\tmethod\tvariant\tseed\tfolder"]
    for r in runs():
        rows.append("\t".join([*map(str, r.values()), str(Path(run_dir(**r)).relative_to(OUT))]))
    return "\n".join(rows)


def upsample_input(wildcards):
    """The error set a jtt run up-samples; nothing for the other methods."""
    if wildcards.method != "jtt":
        return []
    return JTT_ERRORS.format(
        dataset=wildcards.dataset, variant=wildcards.variant, run_hash=wildcards.run_hash, seed=wildcards.seed
    )


def jtt_errors_args(wildcards, input):
    """``--jtt-errors <file>`` for a jtt run (stage 2 up-samples stage 1's error set)."""
    return ["--jtt-errors", input.upsample] if wildcards.method == "jtt" else []


def theory_args():
    """Config key `theory` as options of `python -m theory bound` (its defaults where unset)."""
    return [word for key, value in sorted(config["theory"].items()) for word in (f"--{key}", str(value))]


def locks_of(path, pattern, wildcards):
    """``<root>/.gpu_locks`` beside a job's output ``path`` (``pattern`` filled with ``wildcards``):
    the output root where Snakemake placed it, also when a module's `prefix:` moved it."""
    tail = pattern.format(**dict(wildcards.items()))[len(OUT) :]
    path = str(path)
    if not path.endswith(tail):
        raise PipelineConfigError(f"output {path} is not {pattern} under an output root")
    return f"{path[: len(path) - len(tail)]}/{GPU_LOCKS}"


def launcher(locks):
    """The command that runs the CLI for training: ``python -m mr2``, or with `gpus` > 1 torchrun with
    one process per GPU on one node (``--standalone`` picks a free port, so several runs can share a
    node), started by ``mr2 on-gpus`` on `gpus` GPUs of the machine that no other job holds."""
    if config["gpus"] <= 1:
        return ["python", "-m", "mr2"]
    return [
        "python",
        "-m",
        "mr2",
        "on-gpus",
        str(config["gpus"]),
        "--lock-dir",
        locks,
        "--",
        "python",
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={config['gpus']}",
        "-m",
        "mr2",
    ]


def gpu_resources(one_process=False):
    """What a model job declares: `gpu=N` for a training job (`gpus` processes), `gpu=1` for a
    one-process job (evaluation, JTT's error set). With runs_per_gpu > 1 a job also declares
    `gpu_slot=1`: run locally with `--resources gpu_slot=<GPUs x runs_per_gpu>` (gpu left unlimited),
    the jobs share the machine's GPUs; under SLURM `gpu=1` is what gets the job a GPU of its own."""
    if config["gpus"] <= 0:
        return {}
    if config["runs_per_gpu"] > 1:
        return {"gpu": 1, "gpu_slot": 1}
    return {"gpu": 1 if one_process else config["gpus"]}


def device_args(locks, one_process=False):
    """``--device`` and, for a job of one process on a GPU machine, ``--gpu-slots N --lock-dir ...``:
    the job takes a free slot of the least busy GPU (mr2.engine.gpus), so the jobs that run at once
    spread over the GPUs (torchrun jobs claim theirs in ``launcher``)."""
    args = ["--device", config["device"]]
    if config["gpus"] == 1 or (one_process and config["gpus"] > 1):
        args += ["--gpu-slots", str(config["runs_per_gpu"]), "--lock-dir", locks]
    return args


def folder_of(path):
    return str(Path(path).parent)

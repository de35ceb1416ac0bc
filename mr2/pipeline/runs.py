"""The runs of a pipeline config, each run's settings as the pipeline states them, and the hashes that
name their folders.

A run is (dataset, method, variant, seed). Its run config is the `run` section updated by the
dataset's block (and its `method_epochs` for the method, if any), the method's model settings and options, the variant's option (a sweep's, a trial's
or the tuning's choice), the seed and the run's tags; the engine fills every other key with its
defaults (`mr2 configure`). The folder of a run is named after the first 8 hex digits of SHA-256 of its
run config without the seed, so the seeds of one setting share their parent folder and a changed
setting is a new folder.

With a tuning stage (config key `tune`) a tuned method's final runs take the options the tuning of
their dataset chose: ``chosen(dataset)`` gives that dataset's chosen.yaml as a mapping (the workflow
reads it once its tune checkpoint has run, through ``read_chosen``: only while it still matches the
tuning.csv beside it). A searched ``train.<key>`` goes into the run config's `train` section, every
other searched option into the method's options.

With `variance: {split: true}` a run's data.split_seed is its seed (each seed its own training subset
and validation split); the run hash reads ``SPLIT_SEED_IS_SEED`` in its place, so the seeds of one
setting still share their parent folder, and each seed has its own prepared data (``data_hash``).
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..common.runs import DEFAULT_VARIANT
from ..common.tuning import TRAIN_PREFIX, TRIAL_TAG, TRIALS_DIGEST, TUNED_TAG, file_sha256, split_options
from ..common.tuning import trial_index, trial_options, trial_variant
from .config import (
    PipelineConfigError,
    convergence_datasets,
    convergence_section,
    epochs_of,
    method_option_names,
    split_varies,
    sweep_variants,
    tune_section,
)
from .paths import EVAL_FILES, EVAL_VAL_FILES, RUN_FILES, patterns

#: the tuning's choice of a dataset (its chosen.yaml: {"methods": {method: {option: value}}})
Chosen = Callable[[str], Mapping[str, Any]]


def runs(config: dict) -> list[dict[str, Any]]:
    """Every (dataset, method, variant, seed) of the config whose test results are tabled: each method
    and sweep variant with every seed, and each method of the convergence checks with theirs (the
    trials of the tuning stage are not: they are scored on validation only, `trial_runs`)."""
    out = []
    for dataset in config["datasets"]:
        for method in config["methods"]:
            for seed in config["seeds"]:
                out.append(dict(dataset=dataset, method=method, variant=DEFAULT_VARIANT, seed=seed))
        for variant in sweep_variants(config):
            for seed in config["seeds"]:
                out.append(dict(dataset=dataset, method=config["sweeps"]["method"], variant=variant, seed=seed))
    convergence = convergence_section(config)
    for dataset in convergence_datasets(config):
        for method in config["methods"]:
            for seed in convergence_seeds(config, method):
                out.append(dict(dataset=dataset, method=method, variant=DEFAULT_VARIANT, seed=seed))
    return out


def convergence_seeds(config: dict, method: str) -> list[int]:
    """The seeds of ``method``'s convergence check: its own (`convergence.method_seeds`), else `convergence.seeds`."""
    convergence = convergence_section(config)
    return convergence.get("method_seeds", {}).get(method, convergence["seeds"])


def all_seeds(config: dict) -> list[int]:
    """Every seed a run of the config trains with: the final runs', the trials' and the convergence checks'."""
    seeds = list(config["seeds"]) + list(tune_section(config).get("seeds", []))
    if convergence_section(config):
        seeds += [s for m in config["methods"] for s in convergence_seeds(config, m)]
    return sorted(set(seeds))


def trial_runs(config: dict, dataset: str) -> list[dict[str, Any]]:
    """The runs the tuning stage scores on ``dataset``'s validation split: every trial of every searched
    method and the reference (its validation accuracy ranks the classes), each with every tune seed."""
    tune = tune_section(config)
    reference = config["reference"]
    out = [dict(dataset=dataset, method=reference, variant=DEFAULT_VARIANT, seed=s) for s in tune["seeds"]]
    for method in tune["space"]:
        for i in range(tune["trials"]):
            out += [dict(dataset=dataset, method=method, variant=trial_variant(i), seed=s) for s in tune["seeds"]]
    return out


def tuned_method(config: dict, method: str) -> str | None:
    """The searched method whose tuning sets ``method``'s options (itself, or the one it follows), or None."""
    tune = tune_section(config)
    if not tune:
        return None
    source = tune.get("follow", {}).get(method, method)
    return source if source in tune["space"] else None


def tuning_dataset(config: dict, dataset: str) -> str:
    """The dataset whose tuning chooses the options of ``dataset``'s runs (a convergence check's: its dataset's)."""
    return convergence_datasets(config).get(dataset, dataset)


def chosen_options(config: dict, schema: dict, dataset: str, method: str, chosen: Chosen | None) -> dict[str, Any]:
    """The options the tuning of ``dataset`` (of the dataset a convergence check is of) chose for
    ``method``: those of the method it follows that it takes."""
    if chosen is None:
        raise PipelineConfigError(f"the runs of {method!r} on {dataset!r} take the tuning's choice (config key "
                                  "'tune'): none was given")
    options = chosen(tuning_dataset(config, dataset))["methods"][tuned_method(config, method)]
    takes = method_option_names(schema, method)
    return {key: value for key, value in options.items() if key in takes or key.startswith(TRAIN_PREFIX)}


def read_chosen(config: dict, dataset: str, path: str | Path) -> dict[str, Any]:
    """The tuning's choice for ``dataset``, its chosen.yaml at ``path``, as the final runs take it: read
    as plain YAML (no tags), a mapping whose `dataset` is ``dataset`` and whose `methods` give every
    method searched in config key `tune.space` its options; and still the choice of the trials beside it:
    its `tuning_csv_sha256` is the SHA-256 of the tuning.csv in its folder, and its options are those of
    the rows that tuning.csv marks `chosen`. Anything else (a damaged, edited or replaced record) is a
    `PipelineConfigError`, one line naming the file(s): deleting chosen.yaml makes the tune step choose
    again from its trials."""
    path = Path(path)
    redo = f"delete {path} and the tune step chooses again from its trials"
    try:
        record = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = " ".join(str(getattr(exc, "problem", None) or getattr(exc, "strerror", None) or exc).split())
        raise PipelineConfigError(f"{path}: not a tuning record that can be read ({problem}); {redo}") from None
    if not isinstance(record, dict) or not isinstance(record.get("methods"), dict):
        raise PipelineConfigError(f"{path}: not a tuning record (a mapping with 'methods'); {redo}")
    if record.get("dataset") != dataset:
        raise PipelineConfigError(f"{path}: the choice of dataset {record.get('dataset')!r}, not of {dataset!r}; {redo}")
    for method in tune_section(config)["space"]:
        if not isinstance(record["methods"].get(method), dict):
            raise PipelineConfigError(f"{path}: no options for {method!r} (searched in config key "
                                      f"'tune.space.{method}'); {redo}")
    trials = path.with_name("tuning.csv")
    if not trials.is_file() or record.get(TRIALS_DIGEST) != file_sha256(trials):
        raise PipelineConfigError(f"{path} does not match {trials} (its '{TRIALS_DIGEST}' is not that file's "
                                  f"SHA-256: one of the two was changed, replaced or deleted); {redo}")
    with open(trials, encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("dataset") == dataset and row.get("chosen") == "True"]
    try:
        marked = {row["method"]: json.loads(row["options"]) for row in rows}
    except (KeyError, TypeError, ValueError):
        marked = None
    if marked is None or len(marked) != len(rows) or marked != record["methods"]:
        raise PipelineConfigError(f"{path} does not match {trials}: the options it holds are not those of the "
                                  f"trials tuning.csv marks 'chosen'; {redo}")
    return record


def merged(base: dict, update: Mapping) -> dict:
    """``base`` updated by ``update``, nested mappings merged key by key (the engine checks the keys)."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def dataset_block(config: dict, dataset: str) -> dict:
    """The config's block of a target's dataset (a convergence check's: its dataset's block with factor x
    the epochs, and factor x each method's own `method_epochs`); a `PipelineConfigError` naming the key
    when there is none."""
    checks = convergence_datasets(config)
    if dataset in checks:
        base = checks[dataset]
        factor = convergence_section(config)["factor"]
        own = {m: factor * e for m, e in config["datasets"][base].get("method_epochs", {}).items()}
        block = merged(config["datasets"][base], {"train": {"epochs": factor * epochs_of(config, base)}})
        return {**block, "method_epochs": own} if own else block
    if dataset not in config["datasets"]:
        raise PipelineConfigError(
            f"the target's dataset {dataset!r} is not in config key 'datasets' "
            f"({', '.join(config['datasets'])}): add it, or give the --configfile that has it"
        )
    return config["datasets"][dataset]


def run_config(config: dict, schema: dict, dataset: str, method: str, variant: str, seed: int | str,
               chosen: Chosen | None = None) -> dict[str, Any]:
    """The settings of one run as the pipeline states them: the `run` section, the dataset's block (its
    `method_epochs` for this method, if any), the method's model settings (`method_model`), the method's options, the variant's option (a
    sweep's, a trial's, or the tuning's choice for a tuned method's default variant), the seed and the
    run's tags. The engine fills every key left out with its defaults (`mr2 configure`) and writes the
    result as the run's run.yaml."""
    block = dataset_block(config, dataset)
    cfg = merged(config["run"], {key: block.get(key, {}) for key in ("data", "model", "train")})
    cfg = merged(cfg, {"model": config["method_model"].get(method, {})})  # the method's own model settings
    if method in block.get("method_epochs", {}):  # a method slower to converge: its own epochs
        cfg = merged(cfg, {"train": {"epochs": block["method_epochs"][method]}})
    options = copy.deepcopy(config["method_options"].get(method, {}))
    tags: dict[str, Any] = {"variant": variant, "dataset_key": dataset}
    checks = convergence_datasets(config)
    if dataset in checks:
        tags["convergence_of"] = checks[dataset]
    tune = tune_section(config)
    sweeps = sweep_variants(config)
    recipe: dict[str, Any] = {}  # training options a search drew (``train.lr``)
    if variant == DEFAULT_VARIANT and tuned_method(config, method):
        loss, recipe = split_options(chosen_options(config, schema, dataset, method, chosen))
        options.update(loss)
        tags[TUNED_TAG] = True
    elif trial_index(variant) is not None and tune and method in tune["space"]:
        index = trial_index(variant)
        if index >= tune["trials"] or dataset not in config["datasets"]:
            raise PipelineConfigError(f"the target's trial {dataset}/{method}/{variant} is not one of config key "
                                      f"'tune' (trials 0..{tune['trials'] - 1} of the datasets' blocks)")
        loss, recipe = split_options(trial_options(tune["space"][method], tune["trials"], tune["seed"], method)[index])
        options.update(loss)
        tags[TRIAL_TAG], tags["searched"] = index, sorted(tune["space"][method])
    elif variant != DEFAULT_VARIANT:
        if variant not in sweeps:
            raise PipelineConfigError(
                f"the target's variant {variant!r} is neither {DEFAULT_VARIANT!r} nor one of config "
                f"key 'sweeps' ({', '.join(sweeps) or 'none'}): add it there, or give "
                "the --configfile that has it"
            )
        option, value = sweeps[variant]
        options[option] = value
        tags["sweep"] = option
    if "epochs" in recipe and dataset in checks:  # a searched method's own epochs, checked at factor x them
        recipe["epochs"] *= convergence_section(config)["factor"]
    if recipe:
        cfg = merged(cfg, {"train": recipe})
    if split_varies(config):  # each seed its own draw of the training subset and validation split
        cfg = merged(cfg, {"data": {"split_seed": int(seed)}})
    return {
        **cfg,
        "seed": int(seed),
        "device": config["device"],
        "threads": config["threads"],
        "tags": tags,
        "method": {"name": method, "options": options},
    }


def short_hash(settings: Any) -> str:
    """The first 8 hex digits of SHA-256 of ``settings`` as canonical JSON (sorted keys): the same
    settings give the same name in every session and on every machine."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def run_hash(config: dict, schema: dict, dataset: str, method: str, variant: str, chosen: Chosen | None = None) -> str:
    """The name of a run's settings: the hash of its run config without the seed (the seed is the
    folder below), so the seeds of one setting share their parent folder."""
    settings = run_config(config, schema, dataset, method, variant, 0, chosen)
    del settings["seed"]
    if split_varies(config):  # the split seed is the run's seed: the seeds of a setting share its folder
        settings["data"]["split_seed"] = SPLIT_SEED_IS_SEED
    return short_hash(settings)


#: what a run hash reads for the split seed under `variance.split: true` (each seed's own split)
SPLIT_SEED_IS_SEED = "the run's seed"


def data_settings(config: dict, dataset: str, seed: int | str | None = None) -> dict[str, Any]:
    """The data section of a dataset block as the pipeline states it (`run.data` updated by the block's);
    under `variance.split: true` that of the run seed ``seed`` (its split seed)."""
    data = merged(config["run"].get("data", {}), dataset_block(config, dataset)["data"])
    if split_varies(config):
        if seed is None:
            raise PipelineConfigError(f"the data of {dataset!r} depend on the run's seed ('variance.split: true'); "
                                      "give the seed")
        data["split_seed"] = int(seed)
    return {"data": data}


def data_hash(config: dict, dataset: str, seed: int | str | None = None) -> str:
    return short_hash(data_settings(config, dataset, seed))


def data_seed(config: dict, dataset: str, found: str) -> int | None:
    """The run seed whose prepared data of ``dataset`` are named ``found`` under `variance.split: true`
    (None without it: one prepared file per dataset); a `PipelineConfigError` when no seed's are."""
    if not split_varies(config):
        return None
    for seed in all_seeds(config):
        if data_hash(config, dataset, seed) == found:
            return seed
    raise PipelineConfigError(f"the target's prepared data {found!r} of dataset {dataset!r} are no seed's of this "
                              "config ('variance.split: true': one prepared file per seed)")


def run_folder(config: dict, run_hash: str, dataset: str, method: str, variant: str, seed: int | str) -> str:
    """The folder of one run (under the unmoved output root), its settings named ``run_hash``."""
    return patterns(config["output_root"])["RUN_DIR"].format(
        dataset=dataset, method=method, variant=variant, seed=seed, run_hash=run_hash
    )


def check_run_hash(dataset: str, method: str, variant: str, found: str, expected: str) -> None:
    """A target's run must be one of the config's settings: the hash in its path (``found``) is the one
    the config gives it, else a `PipelineConfigError` naming the folder (a folder of other settings is
    never reused)."""
    if found != expected:
        raise PipelineConfigError(
            f"the target's run folder {found!r} ({dataset}/{method}/{variant}) "
            f"holds other settings than this config's ({expected!r}): list this config's folders with "
            "`snakemake run_folders`, or give the --configfile of that run"
        )


def check_data_hash(dataset: str, found: str, expected: str) -> None:
    """A target's prepared dataset must be the config's: else a `PipelineConfigError` naming it."""
    if found != expected:
        raise PipelineConfigError(
            f"the target's prepared data {found!r} of dataset {dataset!r} holds other settings than "
            f"this config's ({expected!r})"
        )


def result_inputs(config: dict, folder_of_run: Callable[..., str]) -> list[str]:
    """What the aggregate step reads: every run's config, epochs and test evaluation (``folder_of_run(**run)``
    the folder of a run)."""
    files = RUN_FILES[1:] + [f"eval/{name}" for name in EVAL_FILES]
    return [f"{folder_of_run(**r)}/{f}" for r in runs(config) for f in files]


def trial_inputs(config: dict, dataset: str, folder_of_run: Callable[..., str]) -> list[str]:
    """What the tune checkpoint of ``dataset`` reads: each trial run's config and validation evaluation."""
    return [f"{folder_of_run(**r)}/{f}" for r in trial_runs(config, dataset) for f in [RUN_FILES[1], *EVAL_VAL_FILES]]


def run_folders_table(config: dict, folder_of_run: Callable[..., str]) -> str:
    """``dataset method variant seed folder`` per run of the config (folders relative to the output root;
    ``folder_of_run(**run)`` the folder of a run)."""
    out = str(Path(config["output_root"]))
    rows = ["dataset\tmethod\tvariant\tseed\tfolder"]
    for r in runs(config):
        rows.append("\t".join([*map(str, r.values()), str(Path(folder_of_run(**r)).relative_to(out))]))
    return "\n".join(rows)



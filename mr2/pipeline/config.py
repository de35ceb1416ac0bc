"""A pipeline config as the workflow reads it: typed as YAML 1.2 reads it, validated against
`workflow/schemas/*.schema.yaml` (the schemas' defaults filled in), then checked across keys, each
error a `PipelineConfigError` naming the key.

The schemas are passed in (``load_schemas`` reads a folder of them): the workflow reads its own, from
the folder its Snakefile is in, wherever that is, and resolves their references to each other by file
name, never through the filesystem.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from ..common.tuning import TRAIN_PREFIX, TUNABLE_TRAIN, trial_options

#: a name that becomes a path or a shell word (\\Z: `$` would let a final newline in)
NAME = re.compile(r"^(?!.*[.][.])[A-Za-z0-9][A-Za-z0-9_.=-]*\Z")
#: a NAME as a wildcard's pattern (inside a path: no `/`)
SAFE_NAME = r"(?![^/]*[.][.])[A-Za-z0-9][A-Za-z0-9_.=-]*"
#: the schema of a pipeline config among the schemas of ``load_schemas``
CONFIG_SCHEMA = "config.schema.yaml"


class PipelineConfigError(ValueError):
    pass


# ----------------------------------------------------------------------------- types
_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?$")


def typed(value: Any) -> Any:
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


def amp_off(settings: Any) -> None:
    """`amp: off` unquoted is false to Snakemake's YAML 1.1 reader: read it as the "off" it says."""
    if isinstance(settings, dict) and settings.get("amp") is False:
        settings["amp"] = "off"


# ----------------------------------------------------------------------------- schemas
def load_schemas(folder: str | Path) -> dict[str, dict]:
    """Every ``*.schema.yaml`` of ``folder``, by file name (the names their ``$ref``s use)."""
    schemas = {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(Path(folder).glob("*.schema.yaml"))}
    if CONFIG_SCHEMA not in schemas:
        raise FileNotFoundError(f"{folder}: no {CONFIG_SCHEMA}")
    return schemas


def _filling_validator(schemas: dict[str, dict], name: str):
    """A draft 2020-12 validator of schema ``name`` that also sets each missing property that has a
    ``default`` (a copy of it) before it checks the object's properties; other schemas of
    ``schemas`` are found by their file name."""
    from jsonschema import Draft202012Validator, validators
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def fill_then_check(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, subschema in properties.items():
                if "default" in subschema and key not in instance:
                    instance[key] = copy.deepcopy(subschema["default"])
        yield from check_properties(validator, properties, instance, schema)

    filling = validators.extend(Draft202012Validator, {"properties": fill_then_check})
    registry = Registry().with_resources(
        (key, Resource.from_contents(schema, default_specification=DRAFT202012)) for key, schema in schemas.items()
    )
    return filling(schemas[name], registry=registry)


def validate(config: dict, schemas: dict[str, dict], name: str = CONFIG_SCHEMA) -> None:
    """Check ``config`` against schema ``name``, filling in the schema's defaults (in place); a
    `PipelineConfigError` naming the key of the most relevant error."""
    from jsonschema.exceptions import best_match

    error = best_match(_filling_validator(schemas, name).iter_errors(config))
    if error is not None:
        where = ".".join(map(str, error.absolute_path))
        raise PipelineConfigError(f"config key '{where}': {error.message}" if where else f"config: {error.message}")


def method_option_names(schema: dict, method: str) -> set[str]:
    """The options the config schema lets ``method_options.<method>`` set (its loss's options)."""
    node = schema["properties"]["method_options"]["properties"][method]
    while "$ref" in node:  # a local reference "#/$defs/<name>"
        target = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return set(node.get("properties", {}))


def known_methods(schema: dict) -> list[str]:
    """Every method the config schema knows (the `methods` enum)."""
    return schema["properties"]["methods"]["items"]["enum"]


# ----------------------------------------------------------------------------- names the config derives
def variant_name(option: str, value: Any) -> str:
    """``c_bar=0.5``: the variant of the swept method that sets ``option`` to ``value``."""
    return f"{option}={value}"


def sweep_variants(config: dict) -> dict[str, tuple[str, Any]]:
    """Variants of the swept method, one option changed each: {"c_bar=0.5": ("c_bar", 0.5), ...}.
    c_bar and lam are the paper's Fig. 5; any other option of the method may be swept too."""
    return {
        variant_name(key, value): (key, value)
        for key, values in config["sweeps"].items()
        if key != "method"
        for value in values
    }


def tune_section(config: dict) -> dict:
    """The config's `tune` section, {} when it has none (no tuning stage)."""
    return config.get("tune") or {}


def convergence_section(config: dict) -> dict:
    """The config's `convergence` section, {} when it has none (no convergence check)."""
    return config.get("convergence") or {}


def epochs_of(config: dict, dataset: str) -> int | None:
    """The epochs a dataset block trains (its `train.epochs`, else `run.train.epochs`), None if neither says."""
    block = config["datasets"][dataset].get("train", {})
    return block.get("epochs", config["run"].get("train", {}).get("epochs"))


def convergence_key(config: dict, dataset: str) -> str:
    """``<dataset>.x<factor>``: the dataset key of the convergence check of ``dataset``."""
    return f"{dataset}.x{convergence_section(config)['factor']}"


def convergence_datasets(config: dict) -> dict[str, str]:
    """The dataset key of each convergence check -> the dataset it checks ({} without `convergence`)."""
    if not convergence_section(config):
        return {}
    return {convergence_key(config, d): d for d in config["datasets"]}


# ----------------------------------------------------------------------------- checks across keys
def check_output_root(root: str) -> None:
    """Config key `output_root` must name a folder every output can go under: not the file system's root
    (every output would land beside the system's folders) and not an existing file."""
    path = Path(root)
    if path.resolve() == Path(path.resolve().anchor):
        raise PipelineConfigError(f"config key 'output_root': {root!r} is the file system's root; name a folder "
                                  "for the results (e.g. results)")
    if path.exists() and not path.is_dir():
        raise PipelineConfigError(f"config key 'output_root': {root!r} is an existing file, not a folder")


def check_cross_keys(config: dict, schema: dict) -> None:
    """Checks across keys that the schema cannot express, each error naming the key."""
    check_output_root(config["output_root"])
    methods = config["methods"]
    sweep_method = config["sweeps"]["method"]
    swept = [key for key in config["sweeps"] if key != "method"]
    if config["reference"] not in methods:
        raise PipelineConfigError(f"config key 'reference': {config['reference']!r} is not in 'methods' {methods}")
    for method in config["method_model"]:
        if method not in methods and not (swept and method == sweep_method):
            raise PipelineConfigError(f"config key 'method_model.{method}': method {method!r} is not run")
    for dataset, block in config["datasets"].items():
        for method in block.get("method_epochs", {}):
            if method not in methods:
                raise PipelineConfigError(f"config key 'datasets.{dataset}.method_epochs.{method}': method "
                                          f"{method!r} is not in 'methods' {methods}")
    for method in config["method_options"]:
        if method not in methods and not (swept and method == sweep_method):
            raise PipelineConfigError(
                f"config key 'method_options.{method}': method {method!r} is not run "
                f"(not in 'methods' {methods}{' nor sweeps.method' if swept else ''})"
            )
    takes = method_option_names(schema, sweep_method)
    for key in swept:
        if key not in takes:
            raise PipelineConfigError(
                f"config key 'sweeps.{key}': method {sweep_method!r} (sweeps.method) has no "
                f"option {key!r}; its options: {', '.join(sorted(takes)) or 'none'}"
            )
    for variant in sweep_variants(config):
        if not NAME.match(variant):
            raise PipelineConfigError(
                f"config key 'sweeps': variant name {variant!r} is not a safe name "
                "(letters, digits and _ . = - only)"
            )
    check_tune(config, schema)
    check_convergence(config)
    check_variance(config)
    check_primary(config)
    for seed in config["seeds"]:  # the schema's "integer" lets 1.0 in; torch takes 64 bits at most
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            raise PipelineConfigError(f"config key 'seeds': {seed!r} is not an integer in [0, 2**64)")
    if config["runs_per_gpu"] > 1 and config["gpus"] != 1:
        raise PipelineConfigError(
            f"config key 'runs_per_gpu' ({config['runs_per_gpu']}) shares one GPU between runs: "
            f"it needs gpus: 1 (got gpus: {config['gpus']})"
        )


#: why the reference is neither searched nor a follower
REFERENCE_UNTUNED = "the reference is not tuned (its validation accuracy ranks the classes every trial is scored on)"


def check_tune(config: dict, schema: dict) -> None:
    """Config key `tune`: every searched method is run, is not the reference, and takes the options
    searched (a loss option not fixed in `method_options`, or a recipe key ``check_searched_recipe``
    admits); every follower is run, is neither the reference nor searched itself, follows a searched
    method and states in `method_options` no option its source's search chooses; the trials' seeds are
    apart from the final seeds."""
    tune = tune_section(config)
    if not tune:
        return
    methods = config["methods"]
    for method, space in tune["space"].items():
        if method not in methods:
            raise PipelineConfigError(f"config key 'tune.space.{method}': method {method!r} is not in 'methods' {methods}")
        if method == config["reference"]:
            raise PipelineConfigError(f"config key 'tune.space.{method}': {REFERENCE_UNTUNED}")
        takes = method_option_names(schema, method)
        for option in space:
            if option.startswith(TRAIN_PREFIX):
                check_searched_recipe(config, method, option)
                continue
            if option not in takes:
                raise PipelineConfigError(
                    f"config key 'tune.space.{method}.{option}': method {method!r} has no option {option!r}; its "
                    f"options: {', '.join(sorted(takes)) or 'none'}; the training recipe's: "
                    f"{', '.join(TRAIN_PREFIX + k for k in TUNABLE_TRAIN)}")
            if option in config["method_options"].get(method, {}):
                raise PipelineConfigError(f"config key 'tune.space.{method}.{option}': also set in "
                                          f"'method_options.{method}'; an option is either fixed or searched")
        trial_options(space, 1, tune["seed"], method)  # the ranges, each error naming its key
    for follower, source in tune["follow"].items():
        if follower == config["reference"]:
            raise PipelineConfigError(f"config key 'tune.follow.{follower}': {REFERENCE_UNTUNED}")
        if follower not in methods or source not in tune["space"]:
            raise PipelineConfigError(f"config key 'tune.follow.{follower}': {follower!r} must be in 'methods' and "
                                      f"{source!r} in 'tune.space' ({', '.join(tune['space'])})")
        if follower in tune["space"]:
            raise PipelineConfigError(f"config key 'tune.follow.{follower}': {follower!r} is searched itself "
                                      f"('tune.space.{follower}'); a method is either searched or follows one")
        stated = sorted(set(tune["space"][source]) & set(config["method_options"].get(follower, {})))
        if stated:
            raise PipelineConfigError(f"config key 'tune.follow.{follower}': it would replace "
                                      f"'method_options.{follower}.{stated[0]}' by the value 'tune.space.{source}."
                                      f"{stated[0]}' chooses; drop one of the two")
    shared = sorted(set(tune["seeds"]) & set(config["seeds"]))
    if shared:
        raise PipelineConfigError(f"config key 'tune.seeds': {shared} also in 'seeds'; the trials' seeds must be apart "
                                  "from the final runs', so the choice and the comparisons rest on different runs")


def check_searched_recipe(config: dict, method: str, option: str) -> None:
    """A searched ``train.<key>`` must be a key of the recipe a search may draw (``TUNABLE_TRAIN``) that
    no part of the config fixes (`run.train`, a dataset block's `train`): an error naming the key.
    ``train.epochs`` is the method's own epochs (the dataset blocks' are every other method's, and a
    convergence check trains factor x the chosen ones): only a `method_epochs` entry for it clashes."""
    key = option[len(TRAIN_PREFIX):]
    where = f"config key 'tune.space.{method}.{option}'"
    if key not in TUNABLE_TRAIN:
        raise PipelineConfigError(f"{where}: the training recipe has no searchable key {key!r}; searchable: "
                                  f"{', '.join(TRAIN_PREFIX + k for k in TUNABLE_TRAIN)}")
    if key == "epochs":  # the method's own epochs, as `method_epochs` states them; the blocks' are the others'
        fixed = [f"datasets.{d}.method_epochs.{method}" for d, b in config["datasets"].items()
                 if method in b.get("method_epochs", {})]
        if fixed:
            raise PipelineConfigError(f"{where}: also set in '{fixed[0]}'; a method's epochs are either fixed or "
                                      "searched")
        return
    fixed = [name for name, block in [("run.train", config["run"].get("train", {})),
                                      *((f"datasets.{d}.train", b.get("train", {})) for d, b in config["datasets"].items())]
             if key in block]
    if fixed:
        raise PipelineConfigError(f"{where}: also set in '{fixed[0]}.{key}'; an option is either fixed or searched")


def check_convergence(config: dict) -> None:
    """Config key `convergence`: each dataset block states its epochs, the checks' keys are free and
    every method given its own seeds is run."""
    if not convergence_section(config):
        return
    for method in convergence_section(config).get("method_seeds", {}):
        if method not in config["methods"]:
            raise PipelineConfigError(f"config key 'convergence.method_seeds.{method}': method {method!r} is not in "
                                      f"'methods' {config['methods']}")
    for dataset in config["datasets"]:
        if epochs_of(config, dataset) is None:
            raise PipelineConfigError(f"config key 'datasets.{dataset}.train.epochs': needed by 'convergence' "
                                      "(the check trains factor x epochs)")
        key = convergence_key(config, dataset)
        if key in config["datasets"]:
            raise PipelineConfigError(f"config key 'datasets.{key}': the name of {dataset!r}'s convergence check; "
                                      "rename the block")


def split_varies(config: dict) -> bool:
    """Whether each run's training subset and validation split follow its seed (`variance.split`)."""
    return bool((config.get("variance") or {}).get("split"))


def check_variance(config: dict) -> None:
    """Config key `variance.split`: the runs' split seed is their seed, so no dataset block fixes one."""
    if not split_varies(config):
        return
    for dataset, block in config["datasets"].items():
        for where, data in ((f"datasets.{dataset}.data", block.get("data", {})), ("run.data", config["run"].get("data", {}))):
            if "split_seed" in data:
                raise PipelineConfigError(f"config key '{where}.split_seed': with 'variance.split: true' every run's "
                                          "split seed is its own seed; drop one of the two")


def check_primary(config: dict) -> None:
    """Config key `primary`: its dataset is a block of the config, its method and controls are run, no
    control is the method itself, and every control is tuned (searched in `tune.space`): the primary
    test compares equally tuned methods."""
    primary = config.get("primary")
    if not primary:
        return
    if primary["dataset"] not in config["datasets"]:
        raise PipelineConfigError(f"config key 'primary.dataset': {primary['dataset']!r} is not in 'datasets' "
                                  f"({', '.join(config['datasets'])})")
    for key, names in (("method", [primary["method"]]), ("controls", primary["controls"])):
        for name in names:
            if name not in config["methods"]:
                raise PipelineConfigError(f"config key 'primary.{key}': {name!r} is not in 'methods' {config['methods']}")
    if primary["method"] in primary["controls"]:
        raise PipelineConfigError(f"config key 'primary.controls': holds the tested method {primary['method']!r}")
    space = tune_section(config).get("space", {})
    for name in [primary["method"], *primary["controls"]]:
        if name not in space:
            raise PipelineConfigError(f"config key 'primary': {name!r} is not searched in 'tune.space'; the primary "
                                      "test compares methods tuned with the same budget")


def checked(config: dict, schemas: dict[str, dict]) -> dict:
    """The pipeline config as the workflow runs it: ``config`` typed (a copy), `run.amp: false` read as
    "off", validated with the schema's defaults filled in, and checked across keys."""
    out = typed(copy.deepcopy(dict(config)))
    amp_off(out.get("run"))
    validate(out, schemas)
    check_cross_keys(out, schemas[CONFIG_SCHEMA])
    return out

"""The pipeline's schemas name exactly what the engine and the loss factory know, config/README.md
describes every key, and the configs list only overrides.

The schemas are what the workflow checks when it is parsed (without torch); the engine and the
factory are the single home of every default. These tests fail when the two drift apart.
"""

from pathlib import Path

import pytest
import yaml

from mr2.engine.config import DEFAULTS
from mr2.engine.data import DATASETS
from mr2.engine.models import MODELS
from mr2.method.losses import METHODS, method_options

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "workflow" / "schemas"
PIPELINE = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
RUN = yaml.safe_load((SCHEMAS / "run.schema.yaml").read_text())
#: engine keys the pipeline sets itself (the seed, the run's tags and method, JTT's up-sampling)
SET_BY_THE_PIPELINE = {"upsample_file", "upsample_factor"}


def resolve(schema, node):
    while "$ref" in node:
        target = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


@pytest.mark.parametrize("section", ["data", "model", "train"])
def test_run_schema_names_exactly_the_engine_keys(section):
    assert set(RUN["$defs"][section]["properties"]) == set(DEFAULTS[section]) - SET_BY_THE_PIPELINE
    if section == "data":
        assert set(RUN["$defs"]["data_part"]["properties"]) == set(DEFAULTS["data"]) - {"name"}


def test_run_schema_enums_are_the_registries():
    assert set(RUN["$defs"]["data"]["properties"]["name"]["enum"]) == set(DATASETS)
    assert set(RUN["$defs"]["model"]["properties"]["name"]["enum"]) == set(MODELS)


def test_run_schema_types_fit_the_engine_defaults():
    """Each engine default is a value its schema entry accepts (e.g. an integer key is not a float)."""
    import jsonschema

    for section in ("data", "train", "model"):
        for key, value in DEFAULTS[section].items():
            if key in SET_BY_THE_PIPELINE or (section, key) == ("model", "options"):
                continue
            entry = resolve(RUN, RUN["$defs"][section]["properties"][key])
            jsonschema.validate(value, entry)


def test_pipeline_schema_knows_every_method_and_its_options():
    assert set(PIPELINE["properties"]["methods"]["items"]["enum"]) == set(METHODS)
    per_method = PIPELINE["properties"]["method_options"]["properties"]
    assert set(per_method) == set(METHODS)
    for method in METHODS:
        declared = set(resolve(PIPELINE, per_method[method]).get("properties", {}))
        assert declared == set(method_options(method)), method
    swept = set(PIPELINE["properties"]["sweeps"]["properties"]) - {"method"}
    assert swept <= set(method_options("mr2"))
    # every method with an option to sweep (erm and erm_tuned take none)
    assert set(PIPELINE["properties"]["sweeps"]["properties"]["method"]["enum"]) == {m for m in METHODS if method_options(m)}


def test_method_defaults_satisfy_the_schema():
    import jsonschema

    per_method = PIPELINE["properties"]["method_options"]["properties"]
    for method in METHODS:
        schema = {**resolve(PIPELINE, per_method[method]), "$defs": PIPELINE["$defs"]}
        jsonschema.validate(method_options(method), schema)


def test_config_readme_describes_every_key():
    text = (ROOT / "config" / "README.md").read_text()
    for key in PIPELINE["properties"]:
        assert f"`{key}`" in text, key
    for section in ("data", "model", "train"):
        for key in RUN["$defs"][section]["properties"]:
            assert f"`{key}`" in text, f"{section}.{key}"
    for path in (ROOT / "config").glob("*.yaml"):
        assert f"`{path.name}`" in text, path.name


def test_configs_list_only_overrides_of_method_defaults():
    """A method option written in a config differs from the loss's default (one home per default)."""
    for path in (ROOT / "config").glob("*.yaml"):
        cfg = yaml.safe_load(path.read_text())
        for method, options in (cfg.get("method_options") or {}).items():
            defaults = method_options(method)
            same = [key for key, value in options.items() if defaults.get(key) == value]
            assert not same, f"{path.name}: method_options.{method} repeats the defaults of {same}"

"""The pipeline's first jobs: each run's and each dataset's config checked by the engine and written
resolved (``mr2 configure``), before any data is prepared or any run trains.

The pipeline checks types and names when it parses its config (standard library, YAML and
jsonschema only); this adds what needs the engine: the run's settings resolved over the engine's
defaults and validated, its method's options built into the loss on a stand-in problem (so a bad
value fails with the loss's own message), its model's options checked by name and kind, JTT's stage-1 config derived, the device present; for a
dataset, its files found where its loader will look.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..common.io import save_yaml
from ..method.losses.factory import check_options
from . import config as config_mod
from . import jtt
from .data import check_available
from .inference import select_device
from .models import resolve_model_options


def resolve_run(text: str) -> dict[str, Any]:
    """The resolved config of a run's settings (YAML text), every part of it checked."""
    settings = config_mod.load_mapping(text, "the run settings")
    cfg = config_mod.validate(config_mod.deep_merge(config_mod.DEFAULTS, settings))
    cfg["method"]["options"] = check_options(cfg["method"]["name"], cfg["method"]["options"])
    resolve_model_options(cfg["model"]["name"], cfg["model"]["options"])
    select_device(cfg["device"])
    if cfg["method"]["name"] == "jtt":
        config_mod.validate(jtt.stage1_config(cfg))
    return cfg


def resolve_data(text: str) -> dict[str, Any]:
    """``{"data": <resolved data config>}`` of a dataset's settings (YAML text); its files present."""
    loaded = config_mod.load_mapping(text, "the data settings")
    if not isinstance(loaded.get("data"), dict):
        raise config_mod.ConfigError("the data settings must hold a 'data' mapping")
    return {"data": check_available(loaded["data"])}


def configure(run: str | None, data: str | None, out: str | Path) -> dict[str, Any]:
    """Check and resolve a run's (``run``) or a dataset's (``data``) settings and write them to ``out``."""
    if (run is None) == (data is None):
        raise config_mod.ConfigError("give the settings of one run (--run) or of one dataset (--data)")
    resolved = resolve_run(run) if run is not None else resolve_data(data)
    save_yaml(resolved, out)
    return resolved

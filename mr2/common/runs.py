"""The identity of a run in every table and figure: its keys (dataset, method, variant, seed)
and its label."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .io import load_yaml_file

#: a name that is safe as a folder or a file stem (a dataset key, a variant, a README snapshot):
#: letters, digits and _ . = -, starting with a letter or a digit, never ``..``
SAFE_NAME = re.compile(r"(?!.*[.][.])[A-Za-z0-9][A-Za-z0-9_.=-]*")


def check_safe_name(what: str, value: Any) -> str:
    """``value`` when it is a ``SAFE_NAME`` (whole string); a ``ValueError`` naming ``what`` otherwise."""
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a safe name: letters, digits and _ . = - only, starting with a "
                         "letter or a digit, no '..'")
    return value


RUN_KEYS = ["dataset", "method", "variant", "seed"]
#: the variant of a method run with its configured options (sweeps add "option=value" variants)
DEFAULT_VARIANT = "default"


def run_keys(cfg: dict[str, Any]) -> dict[str, Any]:
    """The identity of a run in every table: dataset, method, variant, seed.

    ``dataset`` is the pipeline's dataset key (``tags.dataset_key``) when the config has one,
    so two dataset blocks reading the same data stay apart; otherwise ``data.name``.
    """
    tags = cfg.get("tags") or {}
    return {"dataset": tags.get("dataset_key", cfg["data"]["name"]), "method": cfg["method"]["name"],
            "variant": tags.get("variant", DEFAULT_VARIANT), "seed": int(cfg["seed"])}


def run_label(method: str, variant: str) -> str:
    """``mr2`` for the default variant, ``mr2 (c_bar=0.5)`` otherwise."""
    return method if variant == DEFAULT_VARIANT else f"{method} ({variant})"


def read_run_config(run_dir: str | Path) -> dict[str, Any]:
    """The resolved config of a run folder (its ``config.yaml``, as training writes it), holding the
    keys a run is named by (``run_keys``); a missing or damaged file (not YAML, not a mapping, a key
    missing or of the wrong kind) is one line naming it."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"missing run output {path}; train and evaluate this run first")
    cfg = load_yaml_file(path)
    try:
        keys = run_keys(cfg)
        ok = all(isinstance(keys[k], str) and keys[k] for k in ("dataset", "method", "variant"))
    except KeyError as exc:
        problem = f"it has no key {exc}"
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        problem = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    else:
        if ok and not isinstance(cfg["seed"], bool):
            return cfg
        problem = f"its dataset, method, variant and seed are {list(keys.values())}"
    raise ValueError(f"{path} is damaged: not a run's config as 'mr2 train' writes it ({problem}); train the run again")

"""The identity of a run in every table and figure: its keys (dataset, method, variant, seed)
and its label."""

from __future__ import annotations

import re
from typing import Any

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

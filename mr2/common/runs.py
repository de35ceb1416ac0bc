"""The identity of a run in every table and figure: its keys (dataset, method, variant, seed)
and its label."""

from __future__ import annotations

from typing import Any

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

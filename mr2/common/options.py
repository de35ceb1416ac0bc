"""Options given by name in a config (a method's, a model's): each must be of its default's kind."""

from __future__ import annotations

import math
from typing import Any


def check_option_type(owner: str, key: str, value: Any, default: Any) -> None:
    """An option's value must be of its default's kind: a finite number (not a boolean) where the
    default is a float, an integer where it is an int, true/false where it is a bool, a string
    where it is a string (a ``None`` default: its owner checks the value). ``ValueError`` naming
    ``owner`` (e.g. "method 'mr2'") and the option otherwise; ranges are the owner's own checks."""
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        kind = "a finite number"
    elif isinstance(default, str):
        ok, kind = isinstance(value, str), "a string"
    else:
        return
    if not ok:
        raise ValueError(f"{owner}: option {key!r} must be {kind}, got {value!r}")

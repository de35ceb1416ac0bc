"""Atomic file output (a crash never leaves a half-written result behind) and YAML reading."""

from __future__ import annotations

import json
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import yaml


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def save_yaml(obj: Any, path: str | os.PathLike) -> None:
    save_text(yaml.safe_dump(obj, sort_keys=False), path)


def save_json(obj: Any, path: str | os.PathLike) -> None:
    save_text(json.dumps(obj, indent=2, sort_keys=False) + "\n", path)


def save_csv(frame, path: str | os.PathLike) -> None:
    """Write a pandas DataFrame as CSV atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, but reading ``1e-6`` as a float (YAML 1.2), not as a string."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"),
    list("-+0123456789."),
)


def load_yaml(text: str):
    """Parse YAML text with numbers such as ``1e-6`` read as floats."""
    return yaml.load(text, Loader=_Loader)

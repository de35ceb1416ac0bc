"""Atomic file output: a crash never leaves a half-written result behind."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import torch
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


def save_torch(obj: Any, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


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

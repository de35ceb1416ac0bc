"""Reading and writing the engine's torch files (checkpoint.pt, model.pt) safely.

Every file is written atomically (``mr2.common.io.atomic_path``) and read with
``torch.load(weights_only=True)``: tensors and plain values (dicts, lists, numbers, strings) only,
so a crafted pickle in a received file cannot run code. Anything else is refused with one line
naming the file, and so is a file that lacks the entries its reader needs (``require_keys``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

import torch

from ..common.io import atomic_path


class UnsafeFileError(ValueError):
    """A torch file holds objects other than tensors and plain values; it was not loaded."""


def save_torch(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save`` to a temporary file, then renamed over ``path``. Saved through an open file,
    not a file name: torch names the archive's members after the file it is given (the temporary's
    random name), and through a file object always ``archive/...``, so the same ``obj`` gives the
    same bytes on every run."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        try:
            torch.save(obj, f)
        except RuntimeError as exc:  # torch reports a failed write as its own error; the OSError
            cause = exc.__cause__ or exc.__context__  # (a full disk: ENOSPC) is what ``atomic_path`` names
            if isinstance(cause, OSError):
                raise cause from None
            raise


def load_torch(path: str | os.PathLike, map_location: Any = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``; a file that needs more than tensors and plain
    values (a pickle that would build other objects or run code) raises ``UnsafeFileError``, an
    unreadable one a ``ValueError``, both naming the file in one line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - reported in one line naming the file
        text = str(exc)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        detail = next((line for line in lines if "GLOBAL" in line or "Unsupported" in line), lines[0] if lines else "")
        if "GLOBAL" in text:  # the pickle names a class or function to call: never run it
            raise UnsafeFileError(f"{path}: refused to load: it holds objects other than tensors and plain values "
                                  f"({detail[:200]})") from None
        raise ValueError(f"{path}: not a readable torch file ({type(exc).__name__}: {detail[:200]})") from None


def require_keys(obj: Any, keys: Iterable[str], path: str | os.PathLike, kind: str, fix: str) -> dict:
    """``obj`` (read from ``path``) if it is a dict holding ``keys``; otherwise a ``ValueError``
    naming the file, what it should be (``kind``), the missing entries and what to do (``fix``)."""
    missing = sorted(set(keys) - set(obj)) if isinstance(obj, dict) else sorted(keys)
    if missing:
        raise ValueError(f"{path} is not a {kind} of this version of mr2 (missing {', '.join(missing)}); {fix}")
    return obj

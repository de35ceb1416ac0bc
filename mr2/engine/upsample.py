"""Up-sampling of listed training samples in every epoch (JTT's stage 2, Liu et al. 2021).

The run-config keys ``train.upsample_file`` (a CSV written by ``python -m mr2 errors``, with
columns ``index``, ``label``, ``predicted``: indices into the prepared training split) and
``train.upsample_factor`` (λ_up, an integer >= 1) make each listed sample appear λ_up times in
every epoch instead of once; the others appear once. The epoch's order is a seeded permutation
of this multiset (see ``mr2.train``), so runs stay deterministic and resumable, and an epoch
has N + (λ_up − 1)·|E| samples.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from .config import ConfigError

ERROR_COLUMNS = ["index", "label", "predicted"]


def read_index_file(path: str | Path, train_y: torch.Tensor) -> torch.Tensor:
    """The ``index`` column of an error-set CSV, checked against the training labels ``train_y``.

    A file with no rows (stage 1 made no errors) lists nothing. Raises a ``ConfigError`` naming
    the file when it is missing or not a CSV, lacks a column, holds a value that is not an
    integer, an index outside [0, N) or a duplicate, or when its ``label`` column disagrees with the
    training split (the file belongs to another prepared dataset).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config key 'train.upsample_file': no file {path} (write it with 'python -m mr2 errors')")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ConfigError(f"upsample file {path} is not a CSV with columns {ERROR_COLUMNS} "
                          f"({' '.join(str(exc).split())[:200]})") from None
    missing = [c for c in ERROR_COLUMNS if c not in frame]
    if missing:
        raise ConfigError(f"upsample file {path}: missing column(s) {missing}; expected {ERROR_COLUMNS}")
    if frame.empty:  # stage 1 made no training errors: nothing to up-sample
        return torch.empty(0, dtype=torch.long)
    for column in ("index", "label"):
        if not pd.api.types.is_integer_dtype(frame[column]):
            raise ConfigError(f"upsample file {path}: column {column!r} must hold integers, "
                              f"got {frame[column].head(3).tolist()}")
    idx = torch.tensor(frame["index"].to_numpy(), dtype=torch.long)
    n = len(train_y)
    bad = idx[(idx < 0) | (idx >= n)]
    if len(bad):
        raise ConfigError(f"upsample file {path}: indices {bad[:5].tolist()} outside the training split [0, {n})")
    if len(torch.unique(idx)) != len(idx):
        raise ConfigError(f"upsample file {path}: duplicate indices")
    labels = torch.tensor(frame["label"].to_numpy(), dtype=torch.long)
    wrong = idx[labels != train_y.cpu()[idx]]
    if len(wrong):
        raise ConfigError(f"upsample file {path}: labels disagree with the training split at indices "
                          f"{wrong[:5].tolist()}; it was made from another prepared dataset")
    return idx


def upsampled_index(n: int, listed: torch.Tensor | None, factor: int) -> torch.Tensor:
    """The multiset of training indices of one epoch: 0..n−1 once, plus each index of
    ``listed`` another factor − 1 times (λ_up copies in all). ``listed=None`` or
    ``factor=1`` gives 0..n−1."""
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ConfigError(f"config key 'train.upsample_factor' must be an integer >= 1, got {factor!r}")
    base = torch.arange(n)
    if listed is None or factor == 1 or len(listed) == 0:
        return base
    return torch.cat([base, listed.repeat(factor - 1)])


def epoch_index(cfg_train: dict, train_y: torch.Tensor) -> torch.Tensor:
    """``upsampled_index`` from a run's ``train`` section (no file: every sample once)."""
    path = cfg_train.get("upsample_file")
    listed = read_index_file(path, train_y) if path else None
    return upsampled_index(len(train_y), listed, cfg_train.get("upsample_factor", 1))

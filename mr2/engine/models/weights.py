"""Loading weights from a local file named by the user (nothing is ever downloaded).

A weights file is a ``torch.save``d state_dict (a mapping of names to tensors; loaded with
``weights_only=True``) in one of two formats, told apart by its keys:

1. a ``Classifier`` state_dict (every key starts with ``backbone.`` or ``head.``), e.g. saved by
   the training code: the backbone is loaded, and the head too when ``head=True`` (the default;
   pass ``head=False`` to start a fresh head, e.g. for another number of classes);
2. a bare backbone state_dict, e.g. a torchvision ``resnet50``/``vit_b_16`` state_dict: keys
   under the model's torchvision classifier prefix (``fc.``, ``heads.``) are ignored, the rest
   is loaded into the backbone; the head keeps its fresh initialisation.

Loading is strict: a missing key, an unexpected key or a shape mismatch raises a ValueError
that names the file and lists the offending keys. A wrapped checkpoint (``{"state_dict": ...}``,
DataParallel ``module.`` prefixes, MoCo's ``encoder_q.``) must be converted to a plain state_dict
first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from ..checkpoint import load_torch
from .classifier import Classifier

_SHOWN = 8  # how many offending keys an error message lists


def _keys(keys: list[str]) -> str:
    more = f" ... (+{len(keys) - _SHOWN} more)" if len(keys) > _SHOWN else ""
    return ", ".join(keys[:_SHOWN]) + more


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The state_dict stored in ``path`` (FileNotFoundError naming it if it does not exist)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"weights file not found: {path}")
    state = load_torch(path)
    if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"weights file {path} does not hold a plain state_dict (a mapping of names to tensors)")
    return dict(state)


def _load_strict(module: nn.Module, state: dict[str, torch.Tensor], where: str, path: Path, prefix: str) -> None:
    """Load ``state`` into ``module`` or raise naming every offending key (as ``prefix`` + key)."""
    own = {prefix + k: v for k, v in module.state_dict().items()}
    state = {prefix + k: v for k, v in state.items()}
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(f"{k} (file {tuple(state[k].shape)}, model {tuple(own[k].shape)})" for k in set(own) & set(state) if state[k].shape != own[k].shape)
    problems = []
    if missing:
        problems.append(f"missing keys: {_keys(missing)}")
    if unexpected:
        problems.append(f"unexpected keys: {_keys(unexpected)}")
    if shapes:
        problems.append(f"shape mismatches: {_keys(shapes)}")
    if problems:
        raise ValueError(f"weights file {path} does not match the {where}; " + "; ".join(problems))
    module.load_state_dict({k[len(prefix):]: v for k, v in state.items()}, strict=True)


def load_weights(model: Classifier, path: str | Path, head: bool = True, ignore_prefix: str | None = None) -> Classifier:
    """Load ``path`` into ``model`` (formats above). ``head``: also load the head of a
    Classifier-format file. ``ignore_prefix``: classifier keys to drop from a bare backbone
    state_dict (``fc.`` for torchvision ResNets, ``heads.`` for ViT). Returns ``model``."""
    path = Path(path)
    state = read_state_dict(path)
    if state and all(k.startswith(("backbone.", "head.")) for k in state):
        part = lambda prefix: {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}  # noqa: E731
        _load_strict(model.backbone, part("backbone."), "model's backbone", path, "backbone.")
        if head:
            _load_strict(model.head, part("head."), "model's head", path, "head.")
        return model
    if ignore_prefix:
        state = {k: v for k, v in state.items() if not k.startswith(ignore_prefix)}
    _load_strict(model.backbone, state, "model's backbone (file read as a bare backbone state_dict)", path, "")
    return model

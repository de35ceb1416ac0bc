"""The run configuration: every default in one visible place, merged, checked and resolved.

A run's config is ``DEFAULTS`` deep-merged with a YAML file and ``--set key.path=value``
overrides. The resolved config is saved next to every result and inside every checkpoint.
Unknown keys and invalid values fail at once with a message naming the key.
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import yaml

from ..common.io import load_yaml

DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "device": "auto",  # auto | cpu | cuda | cuda:N
    "threads": None,  # CPU threads (part of the run: float sums split by thread); None leaves torch's default
    "amp": "auto",  # auto (bf16 autocast on CUDA) | bf16 | off
    "tags": {},  # free-form labels carried into every output (e.g. variant: "c_bar=0.5")
    "data": {
        "name": "fashion_mnist",
        "root": None,  # data folder for torchvision / image-folder sets
        "download": False,  # only download when the user asks for it
        "val_fraction": 0.1,  # stratified validation split of the training set
        "split_seed": 0,  # seed of the split (and of the per-class caps)
        "train_cap": None,  # per-class cap on training samples (balanced subsampling)
        "val_cap": None,  # validation from the pool's images train_cap left out, this many per class (needs val_fraction 0)
        "test_cap": None,  # per-class cap on test samples
        "image_size": None,  # resize file-backed image sets (default: the loader's)
        "imbalance": None,  # None (balanced) | {ratio: n_max/n_min, profile: exp}: long-tailed training split
        "options": {},  # the loader's own options (mnist1d: num_samples, train_split; planted: see its module)
    },
    "model": {
        "name": "small_cnn",
        "head": "linear",  # linear | cosine
        "cosine_scale": 16.0,
        "weights": None,  # a local state_dict file for the backbone
        "options": {},
    },
    "method": {
        "name": "mr2",
        "options": {},  # see mr2.losses.factory (c_bar, lam, p, momentum, ...)
    },
    "train": {
        "mode": "scratch",  # scratch | linear_probe | finetune
        "epochs": 10,
        "batch_size": 128,
        "optimizer": "sgd",  # sgd | adamw
        "lr": 0.05,
        "momentum": 0.9,
        "nesterov": False,
        "weight_decay": 5e-4,
        "warmup_epochs": 1.0,  # linear warm-up, then cosine decay to min_lr (per step)
        "min_lr": 1e-6,
        "grad_clip": None,  # max global gradient norm, None = off
        "augment": "auto",  # auto (crop+flip for images, shift for signals, nothing for vectors) | none
        "crop_padding": 4,
        "flip": True,  # random horizontal flips (turn off where mirroring changes the class)
        "shift": 4,  # max shift of 1-D signals
        "auto_augment": False,  # AutoAugment (images only), off by default
        "select": "last",  # last | best_val: which epoch's weights are the result (never test data)
        "eval_batch_size": 1024,
        "num_workers": 2,  # DataLoader workers for file-backed datasets
        "compile": False,  # torch.compile the model
        "cuda_graph": False,  # CUDA only: capture the whole training step in one CUDA graph and replay it (mr2.engine.step)
        "sync_bn": False,  # under torchrun: BatchNorm over the global batch (nn.SyncBatchNorm, CUDA only)
        "upsample_file": None,  # CSV of training indices to up-sample (JTT stage 2; see mr2.upsample)
        "upsample_factor": 1,  # each listed sample appears this many times per epoch (JTT's λ_up)
    },
}

CHOICES = {
    ("amp",): ("auto", "bf16", "off"),
    ("model", "head"): ("linear", "cosine"),
    ("train", "mode"): ("scratch", "linear_probe", "finetune"),
    ("train", "optimizer"): ("sgd", "adamw"),
    ("train", "augment"): ("auto", "none"),
    ("train", "select"): ("last", "best_val"),
}

POSITIVE = [("train", "lr"), ("model", "cosine_scale")]
OPTIONAL_POSITIVE = [("train", "grad_clip")]  # None (off) or a positive number
# integers where an integer is meant (``epochs: 2.5`` is an error, not 2 or 3), with their least value;
# ``threads`` may also be None (torch's default)
INTEGER = {("train", "epochs"): 1, ("train", "batch_size"): 1, ("train", "eval_batch_size"): 1,
           ("train", "num_workers"): 0, ("train", "crop_padding"): 0, ("train", "shift"): 0,
           ("train", "upsample_factor"): 1, ("seed",): 0, ("threads",): 1}
#: the most CPU threads a run may ask for (torch takes a C int; far beyond any machine's cores)
MAX_THREADS = 4096
DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")
NON_NEGATIVE = [("train", "weight_decay"), ("train", "warmup_epochs"), ("train", "min_lr"), ("train", "momentum")]
OPTIONAL_PATH = [("model", "weights"), ("train", "upsample_file")]  # None or a file name
BOOLEAN = [("train", "nesterov"), ("train", "flip"), ("train", "auto_augment"), ("train", "compile"),
           ("train", "cuda_graph"), ("train", "sync_bn")]
# Sub-dicts whose keys are free-form (validated by their own factories).
OPEN = {("model", "options"), ("method", "options"), ("data", "options"), ("tags",)}


class ConfigError(ValueError):
    """A config key or value is invalid; the message names it."""


def deep_merge(base: dict, update: dict, path: tuple[str, ...] = ()) -> dict:
    """``base`` updated by ``update``; keys of ``update`` absent from ``base`` are errors
    (except inside the free-form option dicts)."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        here = path + (key,)
        if path in OPEN:
            out[key] = copy.deepcopy(value)
        elif key not in base:
            known = ", ".join(sorted(base))
            raise ConfigError(f"unknown config key {'.'.join(here)!r}; known keys here: {known}")
        elif isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise ConfigError(f"config key {'.'.join(here)!r} must be a mapping, got {value!r}")
            out[key] = deep_merge(base[key], value, here)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _parse_yaml(text: str, where: str):
    """``load_yaml(text)``; a YAML syntax error is a ``ConfigError`` naming ``where`` in one line."""
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"{where} is not valid YAML ({problem})") from None


def load_mapping(text: str, where: str) -> dict:
    """The mapping that the YAML ``text`` holds (empty text: {}); a ``ConfigError`` naming ``where``
    in one line for a YAML error or anything but a mapping."""
    loaded = _parse_yaml(text, where) or {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{where} must hold a mapping")
    return loaded


def parse_set(items: list[str]) -> dict:
    """``["train.epochs=3", "method.options.lam=0.5"]`` -> nested dict (values parsed as YAML)."""
    out: dict = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set expects key.path=value, got {item!r}")
        key, raw = item.split("=", 1)
        node = out
        parts = key.strip().split(".")
        for i, part in enumerate(parts[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {key.strip()!r}: {'.'.join(parts[:i + 1])!r} was already set to a value")
        node[parts[-1]] = _parse_yaml(raw, f"--set value of config key {key.strip()!r} ({raw!r})")
    return out


def check_device(spec: Any) -> str:
    """``spec`` if it names a device (auto, cpu, cuda, cuda:N); a ``ConfigError`` otherwise."""
    if not isinstance(spec, str) or not DEVICE.fullmatch(spec):
        raise ConfigError(f"config key 'device' (--device) must be auto, cpu, cuda or cuda:N, got {spec!r}")
    return spec


def check_threads(value: int, what: str) -> int:
    """``value`` when it is at most ``MAX_THREADS``; a ``ConfigError`` naming ``what`` otherwise."""
    if value > MAX_THREADS:
        raise ConfigError(f"{what} must be an integer in [1, {MAX_THREADS}], got {value}")
    return value


def threads_of_run(configured: int | None, given: int | None, where: str) -> int | None:
    """The CPU threads of a step that runs a run's model: the run config's ``threads`` (``configured``;
    on CPU a run's numbers depend on it, so a run's bytes depend on its config alone). ``given``
    (``--threads``) must equal it, or fills it in where the config leaves it unset (None); a
    ``ConfigError`` naming both values and ``where`` (the config) otherwise."""
    if given is None:
        return configured
    check_threads(given, "--threads")
    if configured is not None and given != configured:
        raise ConfigError(f"--threads {given} differs from config key 'threads' ({configured}) of {where}: a run's "
                          "numbers depend on its CPU threads, so they come from its config; drop --threads or "
                          "change the config's 'threads'")
    return given


def _get(cfg: dict, path: tuple[str, ...]) -> Any:
    for part in path:
        cfg = cfg[part]
    return cfg


def _finite(value: Any) -> bool:
    """A finite int or float (not a boolean, not nan or ±inf)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def validate(cfg: dict) -> dict:
    """Check values whose validity does not depend on other modules; return ``cfg``. ``amp: false``
    is read as ``off`` (YAML 1.1 readers, Snakemake's among them, turn an unquoted ``off`` into false)."""
    if cfg.get("amp") is False:
        cfg["amp"] = "off"
    for path, allowed in CHOICES.items():
        if _get(cfg, path) not in allowed:
            raise ConfigError(f"config key {'.'.join(path)!r} must be one of {allowed}, got {_get(cfg, path)!r}")
    for path, least in INTEGER.items():
        value = _get(cfg, path)
        if path == ("threads",) and value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError(f"config key {'.'.join(path)!r} must be an integer >= {least}, got {value!r}")
        if value >= 2**64:  # torch's generators take 64 bits
            raise ConfigError(f"config key {'.'.join(path)!r} must be below 2**64, got {value!r}")
        if path == ("threads",):
            check_threads(value, "config key 'threads'")
    for path in POSITIVE + OPTIONAL_POSITIVE:
        value = _get(cfg, path)
        if path in OPTIONAL_POSITIVE and value is None:
            continue
        if not _finite(value) or value <= 0:
            off = " or null (off)" if path in OPTIONAL_POSITIVE else ""
            raise ConfigError(f"config key {'.'.join(path)!r} must be a positive number{off}, got {value!r}")
    for path in NON_NEGATIVE:
        value = _get(cfg, path)
        if not _finite(value) or value < 0:
            raise ConfigError(f"config key {'.'.join(path)!r} must be a finite number >= 0, got {value!r}")
    for path in OPTIONAL_PATH:
        value = _get(cfg, path)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"config key {'.'.join(path)!r} must be a file path or null, got {value!r}")
    for path in BOOLEAN:
        if not isinstance(_get(cfg, path), bool):
            raise ConfigError(f"config key {'.'.join(path)!r} must be true or false, got {_get(cfg, path)!r}")
    check_device(cfg["device"])
    return cfg


def resolve(files: list[str | Path] = (), sets: list[str] = (), base: dict | None = None) -> dict:
    """DEFAULTS (or ``base``) <- each YAML file in order <- each ``--set``; validated."""
    cfg = copy.deepcopy(base if base is not None else DEFAULTS)
    for f in files:
        path = Path(f)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        cfg = deep_merge(cfg, load_mapping(path.read_text(encoding="utf-8"), f"config file {path}"))
    cfg = deep_merge(cfg, parse_set(list(sets)))
    return validate(cfg)

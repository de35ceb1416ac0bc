"""The prepared dataset file: cap, split and cache a dataset in one checksummed torch file.

``prepare_dataset`` caps classes (``train_cap``/``test_cap``), carves a seeded stratified
validation split from the training pool, makes the training split long-tailed (``imbalance``),
recomputes the normalisation statistics on the final
training split, and writes one checksummed file atomically; ``load_prepared`` verifies and reads
it back. Model selection must use ``val`` only; ``test`` is for the final evaluation.

Provenance: the file stores the resolved data config it was made from and its checksum. Training
checks the config against the run's ``data`` block (``check_made_from``); every run records the
checksum in its ``checkpoint.pt`` and ``model.pt``, and resume, evaluation and JTT's error set
check it (``check_same_file``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from ...common.io import remove_stray_temporaries
from ..checkpoint import UnsafeFileError, load_torch, save_torch
from .files import FileSplit, check_images_readable
from .registry import DATASETS, load_splits, make_info, resolve_config
from .split import derived_seed, exponential_profile, stratified_split, subsample_per_class, subsample_to_counts
from .types import DatasetInfo, PreparedData, Split, TensorSplit

PREPARED_FORMAT = "mr2.prepared/1"
SPLIT_NAMES = ("train", "val", "test")
#: data config keys that say how the data was fetched, not what the prepared file holds
NOT_PROVENANCE = ("download",)


def _split_record(split: Split) -> dict:
    if isinstance(split, TensorSplit):
        return {"kind": "tensor", "x": split.x.contiguous(), "y": split.y.contiguous()}
    return {"kind": "files", "paths": list(split.paths), "y": split.y.contiguous(), "image_size": split.image_size}


def _split_from_record(rec: dict) -> Split:
    if rec["kind"] == "tensor":
        return TensorSplit(rec["x"], rec["y"])
    return FileSplit(list(rec["paths"]), rec["y"], int(rec["image_size"]))


def _hash_tensor(h, t: torch.Tensor) -> None:
    t = t.detach().cpu().contiguous()
    h.update(f"{t.dtype}{tuple(t.shape)}".encode())
    h.update(memoryview(t.reshape(-1).view(torch.uint8).numpy()))


def content_checksum(splits: dict, indices: dict, info: dict, config: dict) -> str:
    """sha256 over every split's tensors (dtype, shape, bytes), paths, the indices, info and config."""
    h = hashlib.sha256()
    for name in SPLIT_NAMES:
        rec = splits[name]
        h.update(f"{name}:{rec['kind']}".encode())
        if rec["kind"] == "tensor":
            _hash_tensor(h, rec["x"])
        else:
            h.update(json.dumps([rec["paths"], rec["image_size"]]).encode())
        _hash_tensor(h, rec["y"])
        _hash_tensor(h, indices[name])
    h.update(json.dumps([info, config], sort_keys=True).encode())
    return h.hexdigest()


def _class_counts(y: torch.Tensor, k: int) -> list[int]:
    return torch.bincount(y, minlength=k).tolist()


def long_tailed(y: torch.Tensor, num_classes: int, imbalance: dict | None, split_seed: int) -> torch.Tensor:
    """Sorted positions in ``y`` (the training split's labels) that a long-tailed training split keeps.

    ``imbalance`` None: all. ``{ratio, profile: exp}``: class k keeps n_k = ⌊n_max · ratio^{−k/(K−1)}⌋
    seeded random samples (``exponential_profile``, LDAM-DRW's CIFAR-LT definition), n_max being
    the largest class count of the split before (with ``train_cap`` on a balanced pool: every
    class's). The class order is the class index: class 0 keeps the most, class K−1 the fewest. A
    class with fewer samples than its n_k keeps all it has. The draw is fixed by ``split_seed``
    (``derived_seed(split_seed, "imbalance")``).
    """
    if imbalance is None:
        return torch.arange(len(y))
    counts = torch.bincount(y, minlength=num_classes)
    target = exponential_profile(int(counts.max()), num_classes, imbalance["ratio"])
    return subsample_to_counts(y, torch.tensor(target), derived_seed(split_seed, "imbalance"))


def held_out_validation(y: torch.Tensor, pool_idx: torch.Tensor, cap: int, split_seed: int,
                        classes: list[str]) -> torch.Tensor:
    """Sorted indices of a validation split drawn from the training pool's samples that ``train_cap``
    left out (``y`` the pool's labels, ``pool_idx`` the capped part): min(``cap``, what is left) seeded
    random samples of every class (``derived_seed(split_seed, "val_cap")``), so validation is disjoint
    from training and larger than a share of the capped part. A ``ValueError`` naming the class when
    the cap left a class no sample to validate on."""
    unused = torch.ones(len(y), dtype=torch.bool)
    unused[pool_idx] = False
    rest = torch.nonzero(unused).flatten()
    left = torch.bincount(y[rest], minlength=len(classes))
    empty = [classes[k] for k in torch.nonzero(left == 0).flatten().tolist()]
    if empty:
        raise ValueError(f"dataset config key 'val_cap': train_cap takes every training-pool sample of class(es) "
                         f"{empty}, leaving none to validate on; lower train_cap or use val_fraction instead")
    return rest[subsample_per_class(y[rest], cap, derived_seed(split_seed, "val_cap"))]


def check_every_class_trained(y: torch.Tensor, before: torch.Tensor, classes: list[str], cfg: dict) -> None:
    """Every class must keep a training sample (``y``: the final training split's labels, ``before``:
    those before ``imbalance``): a class without one has no accuracy to compare and no statistics,
    yet would be grouped and judged. A ``ValueError`` naming the classes and the key that emptied them."""
    counts = torch.bincount(y, minlength=len(classes))
    empty = [classes[k] for k in torch.nonzero(counts == 0).flatten().tolist()]
    if not empty:
        return
    shown = f"{empty[:10]}{f' (+{len(empty) - 10} more)' if len(empty) > 10 else ''}"
    had = torch.bincount(before, minlength=len(classes))
    if cfg["imbalance"] is not None and all(had[classes.index(c)] > 0 for c in empty):
        n_max, ratio = int(had.max()), cfg["imbalance"]["ratio"]
        raise ValueError(f"dataset config key 'imbalance.ratio' {ratio:g} leaves class(es) {shown} without training "
                         f"samples (class k keeps ⌊{n_max}·ratio^(−k/(K−1))⌋, the last ⌊{n_max}/{ratio:g}⌋); lower "
                         f"data.imbalance.ratio below {n_max}, the largest class's count")
    raise ValueError(f"dataset {cfg['name']!r}: class(es) {shown} have no training sample (data.train_cap "
                     f"{cfg['train_cap']}, data.val_fraction {cfg['val_fraction']}); every class needs one")


def prepare_dataset(cfg: dict, out_path) -> dict:
    """Load, cap, split and cache a dataset in one checksummed torch file; return a summary.

    Steps (every random draw fixed by ``split_seed``, see ``derived_seed``):
    1. ``train_cap``: keep at most that many samples per class of the official training pool;
    2. ``val_fraction``: stratified validation split of what remains (``stratified_split``); or, with
       ``val_cap``, validation drawn from the pool's samples ``train_cap`` left out
       (``held_out_validation``) and the whole capped part trained on;
    3. ``imbalance``: the training split made long-tailed (``long_tailed``); validation and test
       stay as they are, so with a balanced pool both stay balanced;
    4. ``test_cap``: the same per-class cap on the official test split;
    5. ``info.mean/std`` from the final training split only (never validation or test data).
    The file is written to a temporary name in the same folder and renamed (``save_torch``).
    """
    cfg = resolve_config(cfg)
    out_path = Path(out_path)
    remove_stray_temporaries(out_path)  # left by a killed earlier prepare of this file
    name = cfg["name"]
    train_pool, test_full, classes = load_splits(name, cfg["root"], cfg["download"], cfg["image_size"],
                                                 cfg["options"])
    seed = cfg["split_seed"]

    pool_idx = subsample_per_class(train_pool.y, cfg["train_cap"], derived_seed(seed, "train_cap"))
    if cfg["val_cap"] is None:
        tr_local, va_local = stratified_split(train_pool.y[pool_idx], cfg["val_fraction"], derived_seed(seed, "val"))
        train_idx, val_idx = pool_idx[tr_local], pool_idx[va_local]
    else:
        train_idx, val_idx = pool_idx, held_out_validation(train_pool.y, pool_idx, cfg["val_cap"], seed, classes)
    before = train_pool.y[train_idx]
    train_idx = train_idx[long_tailed(before, len(classes), cfg["imbalance"], seed)]
    check_every_class_trained(train_pool.y[train_idx], before, classes, cfg)
    test_idx = subsample_per_class(test_full.y, cfg["test_cap"], derived_seed(seed, "test_cap"))
    indices = {"train": train_idx, "val": val_idx, "test": test_idx}
    splits = {
        "train": train_pool.subset(indices["train"]),
        "val": train_pool.subset(indices["val"]),
        "test": test_full.subset(indices["test"]),
    }
    for split_name, split in splits.items():  # a file that is no image fails here, not after training
        if isinstance(split, FileSplit):
            check_images_readable(split.paths, f"dataset {name!r} {split_name} split")
    info = make_info(name, splits["train"], classes)

    records = {k: _split_record(v) for k, v in splits.items()}
    info_d = info.to_dict()
    checksum = content_checksum(records, indices, info_d, cfg)
    payload = {
        "format": PREPARED_FORMAT,
        "splits": records,
        "indices": indices,
        "info": info_d,
        "config": cfg,
        "checksum": checksum,
    }
    save_torch(payload, out_path)

    k = info.num_classes
    train_counts = _class_counts(splits["train"].y, k)
    return {
        "name": name,
        "path": str(out_path),
        "checksum": checksum,
        "num_classes": k,
        "input_shape": list(info.input_shape),
        "kind": info.kind,
        "storage": DATASETS[name].storage,
        "n_train": len(splits["train"]),
        "n_val": len(splits["val"]),
        "n_test": len(splits["test"]),
        "train_per_class_min": min(train_counts),
        "train_per_class_max": max(train_counts),
        "train_per_class": train_counts,
        "val_per_class_min": min(_class_counts(splits["val"].y, k)),
        "test_per_class_min": min(_class_counts(splits["test"].y, k)),
        "mean": list(info.mean),
        "std": list(info.std),
        "config": cfg,
    }


def load_prepared(path) -> PreparedData:
    """Read a file written by ``prepare_dataset``, verifying it is complete and its checksum matches.

    FileNotFoundError if it is missing; ValueError naming the file if it is truncated, of another
    format, or its contents do not match the stored checksum (edited or corrupted).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"prepared data file not found: {path} (run the prepare step)")
    try:
        payload = load_torch(path)
    except UnsafeFileError:
        raise
    except ValueError as err:  # truncated zip, wrong file type, ...
        raise ValueError(f"prepared data file {path} is incomplete or unreadable ({err}); prepare it again") from None
    keys = {"format", "splits", "indices", "info", "config", "checksum"}
    if not isinstance(payload, dict) or not keys <= set(payload) or payload["format"] != PREPARED_FORMAT:
        raise ValueError(f"prepared data file {path} is not a {PREPARED_FORMAT} file; prepare it again")
    try:
        actual = content_checksum(payload["splits"], payload["indices"], payload["info"], payload["config"])
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"prepared data file {path} is missing part of its contents ({err})") from err
    if actual != payload["checksum"]:
        raise ValueError(
            f"prepared data file {path}: checksum mismatch (stored {payload['checksum'][:12]}..., "
            f"contents {actual[:12]}...); the file was modified or corrupted, prepare it again"
        )
    splits = {k: _split_from_record(payload["splits"][k]) for k in SPLIT_NAMES}
    return PreparedData(
        train=splits["train"],
        val=splits["val"],
        test=splits["test"],
        info=DatasetInfo.from_dict(payload["info"]),
        config=dict(payload["config"]),
        checksum=payload["checksum"],
        indices=dict(payload["indices"]),
    )


def data_differences(run_data: dict, made_from: dict) -> list[str]:
    """``data.<key>: <run's value> in the run's config, <value> in the file`` for every data config
    key (``NOT_PROVENANCE`` aside) whose resolved value differs."""
    run_data, made_from = resolve_config(run_data), resolve_config(made_from)  # the same keys, all filled in
    return [f"data.{key}: {run_data[key]!r} in the run's config, {made_from[key]!r} in the file"
            for key in run_data if key not in NOT_PROVENANCE and run_data[key] != made_from[key]]


def check_made_from(data: PreparedData, path, run_data: dict) -> None:
    """The prepared file at ``path`` must have been made from the run's ``data`` config; a
    ``ValueError`` naming the file and every differing key otherwise."""
    differences = data_differences(run_data, data.config)
    if differences:
        raise ValueError(f"prepared data file {path} was made with other data settings than the run's config "
                         f"({'; '.join(differences)}); prepare it from this config or fix the 'data' block")


def check_same_file(data: PreparedData, path, checksum: str | None, owner, run_data: dict) -> None:
    """``path`` must be the prepared file (by checksum) that ``owner`` (a checkpoint, a run's
    model.pt) was trained on; a ``ValueError`` naming both checksums and the differing data
    settings otherwise."""
    if checksum == data.checksum:
        return
    differences = data_differences(run_data, data.config)
    why = "; ".join(differences) if differences else "same data settings: the file was prepared again"
    raise ValueError(f"{path} (checksum {data.checksum[:12]}) is not the prepared data file {owner} was trained on "
                     f"(checksum {str(checksum)[:12]}; {why})")

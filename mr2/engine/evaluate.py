"""Evaluation of a trained run on the test set, and the easy/medium/hard grouping.

``evaluate`` writes, in ``out_dir``:
  per_class.csv   a row per class: accuracy on the test set, the final margin γ_k, and the
                  per-class feature statistics of the final model (1/n statistics, exact):
                  on the training set ‖μ̂_k‖², ‖ŝ_k‖², a_k (p = 2, and L_p with p = 3, 5 as
                  ``*_p3``/``*_p5``) and on the test set (``test_*``, p = 2)
  confusion.csv   tidy confusion matrix: true, predicted, count
  metrics.json    overall top-1, mean/worst/std of per-class accuracy, the numbers the
                  bound of Proposition 1 needs (training error, training margin
                  cross-entropy with the trained γ, classifier weight norms, N; the norms
                  of the head's affine map [W b] (``affine_map``) and whether it has a bias)
Every file carries the run's keys (dataset, method, variant, seed) and the split it measured
(``split``: ``test``, or ``val`` for the tuning stage), and the resolved config travels in
``metrics.json``. The prepared file must be the one the run was trained on
(``load_run`` checks the checksum recorded in ``model.pt``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from .config import threads_of_run
from .data import load_prepared
from .data.cache import check_same_file
from ..common.io import remove_stray_temporaries, save_csv, save_json, writable_folder
from ..common.runs import run_keys
from .augment import normalize
from .loader import Source
from ..method.losses import logit_margin_cross_entropy
from .models import build_from_config
from ..method.stats import class_moments, lp_sq_norm
from .checkpoint import load_torch, require_keys
from .inference import per_class_accuracy, predict, select_device

STAT_NORMS = (2.0, 3.0, 5.0)
OUTPUTS = ("per_class.csv", "confusion.csv", "metrics.json")
MODEL_KEYS = ("config", "state", "info", "class_summary", "data_checksum")  # what train writes into model.pt


def feature_statistics(features: torch.Tensor, y: torch.Tensor, k: int, p: float) -> dict[str, torch.Tensor]:
    """Exact per-class ‖μ̂_k‖_p², ‖ŝ_k‖_p² and a_k = ‖μ̂_k‖_p² + ‖ŝ_k‖_p² of a feature set."""
    n, m, v, _ = class_moments(features.double(), y, k, p)
    msq = lp_sq_norm(m, p)
    return {"mean_sq_norm": msq, "spread": v, "a": msq + v, "n": n}


def affine_map(head: torch.nn.Module, feature_dim: int, device: torch.device) -> torch.Tensor:
    """[W b] (K, D + 1) of a head whose logits are affine in the features it classifies,
    z = W e + b: b = classify(0), W = classify(I) − b (cosine head: W = s·w_k/‖w_k‖₂, b = 0)."""
    with torch.no_grad():
        bias = head.classify(torch.zeros(1, feature_dim, device=device)).float()
        weight = head.classify(torch.eye(feature_dim, device=device)).float() - bias
    return torch.cat([weight.t(), bias.t()], dim=1)


def load_run(run_dir: str | Path, data_path: str | Path, device: torch.device):
    """(config, model, class summary, data) of a finished run from its ``model.pt``: the resolved
    config, the trained model rebuilt from it, the loss's final per-class tensors (e.g. ``gamma``)
    and the prepared file at ``data_path``, which must be the one the run was trained on (its
    checksum is recorded in ``model.pt``; ``check_same_file``)."""
    path = Path(run_dir) / "model.pt"
    if not path.is_file():
        raise FileNotFoundError(f"no trained model at {path}; run 'python -m mr2 train' first")
    saved = require_keys(load_torch(path, map_location=device), MODEL_KEYS, path, "trained model file",
                         "train the run again")
    cfg, info = saved["config"], saved["info"]
    data = load_prepared(data_path)
    check_same_file(data, data_path, saved["data_checksum"], path, cfg["data"])
    try:
        model = build_from_config(cfg["model"], info["num_classes"], info["input_shape"], with_weights=False)
        model.load_state_dict(saved["state"]["model"])
    except (RuntimeError, KeyError, TypeError) as exc:
        problem = " ".join(str(exc).split())[:300]
        raise ValueError(f"{path}: its weights do not fit the model its config describes ({problem})") from None
    return cfg, model.to(device), saved["class_summary"], data


def set_run_threads(cfg: dict[str, Any], threads: int | None, run_dir: str | Path) -> None:
    """Run a finished run's model with the CPU threads of its config (``threads_of_run``: ``threads``,
    the command's ``--threads``, must equal them), so its evaluation does not depend on the command."""
    n = threads_of_run(cfg.get("threads"), threads, f"the run's config in {Path(run_dir) / 'model.pt'}")
    if n:
        torch.set_num_threads(n)


SPLITS = ("test", "val")  # what ``evaluate`` may measure: the test set, or the validation split (tuning)


def write_evaluation(keys: dict[str, Any], table: pd.DataFrame, counts: np.ndarray, metrics: dict[str, Any],
                     out: Path) -> dict[str, Any]:
    """Save an evaluation into ``out``: per_class.csv (``table`` led by the run's ``keys`` and the split
    measured, ``metrics["split"]``), confusion.csv (the K×K ``counts``, true class by row, tidy) and
    metrics.json; returns ``metrics``."""
    table.insert(0, "split", metrics["split"])
    for key, value in reversed(keys.items()):
        table.insert(0, key, value)
    k = len(counts)
    true, predicted = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    confusion = pd.DataFrame({**{key: [value] * (k * k) for key, value in keys.items()},
                              "true": true.ravel(), "predicted": predicted.ravel(), "count": counts.ravel()})
    save_csv(table, out / "per_class.csv")
    save_csv(confusion, out / "confusion.csv")
    save_json(metrics, out / "metrics.json")
    return metrics


def failed_evaluation(cfg: dict[str, Any], data, split: str, out: Path) -> dict[str, Any]:
    """The validation scores of a run that diverged (``mr2.engine.train.record_divergence``: a tuning
    trial): accuracy 0 in every class (its model predicts nothing), so the trial counts in the search as
    its worst possible draw and is never chosen; the test set of a diverged run is never evaluated."""
    k, y = data.info.num_classes, getattr(data, split).y
    keys = run_keys(cfg)
    table = pd.DataFrame({"class": np.arange(k), "class_name": data.info.class_names,
                          f"n_{split}": torch.bincount(y, minlength=k).cpu().numpy(), "accuracy": np.zeros(k)})
    metrics = {**keys, "split": split, "top1": 0.0, "mean_class_acc": 0.0, "worst_class_acc": 0.0, f"n_{split}": len(y),
               "num_classes": k, "diverged": cfg["diverged"]["epoch"], "config": cfg}
    return write_evaluation(keys, table, np.zeros((k, k), dtype=int), metrics, out)


def evaluate(run_dir: str | Path, data_path: str | Path, out_dir: str | Path, device: str = "auto",
             threads: int | None = None, split: str = "test") -> dict[str, Any]:
    """Evaluate the run in ``run_dir`` on the test set of ``data_path`` (see module docstring), or with
    ``split="val"`` on its validation split (the tuning stage's score: the test set is never read then);
    the columns and keys named ``test`` are then named ``val`` (``n_val``, ``val_a``, ``val_ce``, ...)."""
    if split not in SPLITS:
        raise ValueError(f"evaluate: split must be one of {SPLITS}, got {split!r}")
    dev = select_device(device)
    cfg, model, summary, data = load_run(run_dir, data_path, dev)
    if cfg.get("diverged") and split != "val":  # before any folder is made
        raise ValueError(f"{Path(run_dir) / 'model.pt'}: the run diverged in epoch {cfg['diverged']['epoch']}; "
                         "it has no test numbers (a diverged run is recorded only as a tuning trial)")
    set_run_threads(cfg, threads, run_dir)
    out = writable_folder(out_dir, "evaluation folder")  # a file in the way or a read-only folder: before any work
    remove_stray_temporaries(*(out / name for name in OUTPUTS))  # left by a killed earlier evaluation
    if cfg.get("diverged"):
        return failed_evaluation(cfg, data, split, out)
    info, k = data.info, data.info.num_classes
    mean, std = torch.tensor(info.mean, device=dev), torch.tensor(info.std, device=dev)
    def transform(x):
        return normalize(x, mean, std)

    bs, amp = cfg["train"]["eval_batch_size"], cfg["amp"]
    workers = cfg["train"]["num_workers"]
    if split == "val" and len(data.val) == 0:
        raise ValueError(f"{data_path} has no validation split to evaluate on (data.val_fraction 0 without data.val_cap)")
    test, train = Source(getattr(data, split), dev, workers), Source(data.train, dev, workers)
    test_logits, test_feats = predict(model, test, bs, transform, dev, amp)
    train_logits, train_feats = predict(model, train, bs, transform, dev, amp)
    y_test, y_train = test.y, train.y
    pred = test_logits.argmax(1)
    acc = per_class_accuracy(pred, y_test, k)
    gamma = summary.get("gamma", torch.ones(k)).to(dev).float()  # γ ≡ 1 for methods without margins

    keys = run_keys(cfg)
    table = pd.DataFrame({"class": np.arange(k), "class_name": info.class_names,
                          f"n_{split}": torch.bincount(y_test, minlength=k).cpu().numpy(),
                          "accuracy": acc.cpu().numpy(), "gamma": gamma.cpu().numpy()})
    for p in STAT_NORMS:
        suffix = "" if p == 2.0 else f"_p{int(p)}"
        for name, values in feature_statistics(train_feats, y_train, k, p).items():
            if name != "n" or p == 2.0:
                table[("n_train" if name == "n" else name) + suffix] = values.cpu().numpy()
    for name, values in feature_statistics(test_feats, y_test, k, 2.0).items():
        if name != "n":
            table[f"{split}_{name}"] = values.cpu().numpy()
    conf = torch.bincount(y_test * k + pred, minlength=k * k).reshape(k, k).cpu().numpy()

    weight = getattr(model.head, "fc", model.head).weight.detach().float()  # linear or cosine head
    head_map = affine_map(model.head, model.feature_dim, dev)  # [W b] of the logits' map (Proposition 1's f)
    seen = ~acc.isnan()
    metrics = {
        **keys,
        "split": split,  # what the results layer checks: `aggregate` tables test scores, `tune` validation's
        "top1": (pred == y_test).float().mean().item(),
        "mean_class_acc": acc[seen].mean().item(),
        "worst_class_acc": acc[seen].min().item(),
        "worst_class": int(torch.where(seen, acc, torch.inf).argmin().item()),
        "std_class_acc": acc[seen].std(unbiased=False).item(),
        f"{split}_ce": torch.nn.functional.cross_entropy(test_logits, y_test).item(),
        f"n_{split}": len(y_test),
        "n_train": len(y_train),
        "num_classes": k,
        "train_error": (train_logits.argmax(1) != y_train).float().mean().item(),
        "train_margin_ce": logit_margin_cross_entropy(train_logits, y_train, gamma).item(),
        "weight_max_row_norm": weight.norm(dim=1).max().item(),
        "weight_frobenius_norm": weight.norm().item(),
        "head_bias": any(name.endswith("bias") for name, _ in model.head.named_parameters()),
        "head_max_row_norm": head_map.norm(dim=1).max().item(),
        "head_frobenius_norm": head_map.norm().item(),
        "config": cfg,
    }
    return write_evaluation(keys, table, conf, metrics, out)

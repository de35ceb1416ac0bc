"""Synthetic tidy tables with known accuracies, shared by test_results.py and test_figures.py.

ERM's per-class accuracy (mean over seeds) is BASE[c]; its ranking is known, so the hard
third is HARD etc. Every method adds a known per-class effect; seeds add noise.
``write_run`` writes one run directory in the exact file formats of mr2.engine.train and mr2.engine.evaluate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from mr2.common.io import save_csv

K = 9
SEEDS = (0, 1, 2)
METHODS = ("erm", "mr2", "mr2_uniform", "mr2_no_rep")
# per-class ERM accuracy, deliberately not sorted by class index
BASE = np.array([0.62, 0.91, 0.40, 0.75, 0.55, 0.88, 0.33, 0.70, 0.95])
HARD, MEDIUM, EASY = {6, 2, 4}, {0, 7, 3}, {5, 1, 8}
EFFECT = {"erm": 0.0, "mr2": 0.04, "mr2_uniform": 0.02, "mr2_no_rep": -0.01}
#: the options training writes into an MR² run's resolved config (the factory's defaults)
MR2_OPTIONS = {"c_bar": 1.0, "lam": 0.1, "p": 2.0, "momentum": 0.99, "statistic": "a"}


def resolved_config(method: str, variant: str) -> dict:
    """``tags`` and ``method.options`` of a run's resolved config, as the pipeline and training write
    them: every option of an MR² method filled in, a sweep variant "option=value" tagged with its option."""
    options = dict(MR2_OPTIONS) if method.startswith("mr2") else {}
    tags = {"variant": variant}
    if "=" in variant:
        option, value = variant.split("=", 1)
        options[option] = value if option == "statistic" else float(value)
        tags["sweep"] = option
    return {"tags": tags, "options": options}


def effect(method: str, variant: str, c: int, scale: float = 1.0) -> float:
    """Known change of a method's class-c accuracy; MR²'s gain is on the hard classes only
    (``scale`` times ``EFFECT``)."""
    if method == "erm":
        return 0.0
    gain = scale * EFFECT[method] if c in HARD else 0.0
    if variant.startswith("c_bar="):
        gain -= 0.05 * abs(float(variant.split("=")[1]) - 1.0)
    if variant.startswith("lam="):
        gain -= 0.1 * float(variant.split("=")[1])
    return gain


def tables(datasets=("toy",), methods=METHODS, seeds=SEEDS, sweeps=(), epochs=4, noise=0.01, rng_seed=0,
           regimes=None):
    """per_class, runs and epochs tables like mr2.results.aggregate returns. ``regimes`` maps a
    dataset key to (data name, train_cap, epochs, scale of the methods' effects); by default each
    key is its own data name with train_cap null, ``epochs`` and scale 1."""
    regimes = {d: (d, None, epochs, 1.0) for d in datasets} | (regimes or {})
    rng = np.random.default_rng(rng_seed)
    runs_spec = [(d, m, "default", s) for d in datasets for m in methods for s in seeds]
    runs_spec += [(d, "mr2", v, s) for d in datasets for v in sweeps for s in seeds]
    per_class, runs, log = [], [], []
    for d, m, v, s in runs_spec:
        name, cap, budget, scale = regimes[d]
        acc = np.clip(BASE + np.array([effect(m, v, c, scale) for c in range(K)]) + rng.normal(0, noise, K), 0, 1)
        a = 1.0 + 3.0 * (1 - BASE) + rng.normal(0, 0.05, K)  # harder classes vary more
        for c in range(K):
            per_class.append({"dataset": d, "method": m, "variant": v, "seed": s, "class": c,
                              "class_name": f"c{c}", "n_test": 100, "accuracy": acc[c], "gamma": a[c] ** (1 / 3),
                              "mean_sq_norm": 1.0, "spread": a[c] - 1.0, "a": a[c], "n_train": 500})
        cfg = resolved_config(m, v)
        runs.append({"dataset": d, "method": m, "variant": v, "seed": s, "top1": acc.mean(),
                     "worst_class_acc": acc.min(), "config.tags.sweep": cfg["tags"].get("sweep"),
                     "config.data.name": name, "config.data.train_cap": cap, "config.train.epochs": budget,
                     **{f"config.method.options.{k}": x for k, x in cfg["options"].items()}})
        for e in range(1, epochs + 1):
            log.append({"dataset": d, "method": m, "variant": v, "seed": s, "epoch": e, "class": pd.NA,
                        "name": "train_loss", "value": 2.0 / e})
            if m.startswith("mr2"):
                for c in range(K):
                    g = 1.0 + 0.1 * e * (1 if c in HARD else -0.5)
                    log.append({"dataset": d, "method": m, "variant": v, "seed": s, "epoch": e, "class": c,
                                "name": "gamma", "value": g})
    epochs_frame = pd.DataFrame(log)
    epochs_frame["class"] = epochs_frame["class"].astype("Int64")
    return {"per_class": pd.DataFrame(per_class), "runs": pd.DataFrame(runs), "epochs": epochs_frame}


# ----------------------------------------------------------------------------- a fake run tree
def renamed(t: dict, names: dict[str, str]) -> dict:
    """The tables of ``tables`` with methods renamed (``{"erm": "base"}``: another reference) in
    every table that names methods, in place; returned for chaining."""
    for name in ("per_class", "runs", "epochs"):
        t[name]["method"] = t[name]["method"].replace(names)
    return t


def write_run(root, dataset, method, variant, seed, k=4, dataset_key=None, epochs=2):
    """A run directory in the exact formats of mr2.engine.train and mr2.engine.evaluate."""
    run = root / "runs" / (dataset_key or dataset) / method / variant / f"seed{seed}"
    resolved = resolved_config(method, variant)
    cfg = {"seed": seed, "device": "cpu", "tags": {**resolved["tags"], **({"dataset_key": dataset_key} if dataset_key else {})},
           "data": {"name": dataset, "train_cap": None}, "model": {"name": "small_cnn", "options": {}},
           "method": {"name": method, "options": resolved["options"]},
           "train": {"epochs": epochs, "lr": 0.05}}
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    rows = []
    for e in range(1, epochs + 1):
        rows += [{"epoch": e, "class": None, "name": n, "value": 0.1 * e} for n in ("train_loss", "lr", "val_acc")]
        if method.startswith("mr2"):
            rows += [{"epoch": e, "class": c, "name": "gamma", "value": 1.0 + 0.01 * c} for c in range(k)]
    save_csv(pd.DataFrame(rows, columns=["epoch", "class", "name", "value"]), run / "epochs.csv")
    acc = (np.arange(k) + 1) / (k + 1) + 0.01 * seed
    table = pd.DataFrame({"dataset": dataset, "method": method, "variant": variant, "seed": seed, "class": np.arange(k),
                          "class_name": [f"n{c}" for c in range(k)], "n_test": 10, "accuracy": acc,
                          "gamma": 1.0, "mean_sq_norm": 2.0, "spread": 0.5, "a": 2.5, "n_train": 50,
                          "mean_sq_norm_p3": 1.0, "spread_p3": 0.1, "a_p3": 1.1, "test_a": 2.6})
    save_csv(table, run / "eval" / "per_class.csv")
    metrics = {"dataset": dataset, "method": method, "variant": variant, "seed": seed, "top1": float(acc.mean()),
               "mean_class_acc": float(acc.mean()), "worst_class_acc": float(acc.min()), "worst_class": 0,
               "std_class_acc": float(acc.std()), "n_test": 10 * k, "config": cfg}
    (run / "eval" / "metrics.json").write_text(json.dumps(metrics))
    return run


def noise_twin(rng, seeds=3, classes=30, sd=0.05):
    """per_class rows of ERM and of a "twin" equal to it in distribution: every class's accuracy
    0.7 plus independent noise, in every run (for the checks of regression to the mean)."""
    return pd.DataFrame([{"dataset": "d", "method": m, "variant": "default", "seed": s, "class": c,
                          "accuracy": 0.7 + rng.normal(0, sd)}
                         for m in ("erm", "twin") for s in range(seeds) for c in range(classes)])


# ----------------------------------------------------------------------------- figures as drawn
def figure_strings(fig) -> list[str]:
    """Every text a reader sees on ``fig``: titles, axis labels, tick labels, legends, annotations."""
    out = []
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()] + [t.get_text() for t in ax.texts]
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()] + [ax.get_legend().get_title().get_text()]
    return [s for s in out if s]


def spy_on_figures(monkeypatch, modules, save: bool) -> list[dict]:
    """Replace ``save_figure`` in each of ``modules`` by a spy that records every figure (the figure,
    its stem, texts, titles, axes, ``figure_strings``, whether it is a placeholder) and then writes
    its files (``save``) or only closes it (for tests of the content alone: rendering the two files
    is most of a figure's cost). Returns the list the records are appended to."""
    from mr2.results import plotting

    seen, real = [], plotting.save_figure

    def spy(fig, stem, **kw):
        assert isinstance(stem, (str, Path)) and str(stem), f"a figure saved without a file stem: {stem!r}"
        seen.append({"fig": fig, "stem": stem, "texts": [t.get_text() for ax in fig.axes for t in ax.texts],
                     "titles": [ax.get_title() for ax in fig.axes], "axes": list(fig.axes),
                     "strings": figure_strings(fig), "placeholder": len(fig.axes) == 1 and not fig.axes[0].axison})
        if save:
            return real(fig, stem, **kw)
        plotting.plt.close(fig)
        return []

    for module in modules:
        monkeypatch.setattr(module, "save_figure", spy)
    return seen


def run_in_ascii_locale(code: str, *args: str) -> subprocess.CompletedProcess:
    """``python -c code args`` in a Python whose locale encoding is ASCII (the C locale without
    Python's UTF-8 mode or locale coercion, as on some clusters): text read or written without an
    explicit encoding fails there on γ or MR². Fails the test when the code fails."""
    env = {**os.environ, "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "LC_ALL": "C", "LANG": "C"}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, check=True)

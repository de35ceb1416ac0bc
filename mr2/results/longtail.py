"""The long-tail view of runs on long-tailed training data (``data.imbalance``): many/medium/few-shot
classes by training count, balanced accuracy, and the positive control.

Groups (the long-tail literature's rule, made scale-aware): a class is *many-shot* when its
training count n_k > n_max / 5, *few-shot* when n_k < n_max / 25, *medium-shot* in between, n_max
being the dataset's largest training count. On CIFAR-100-LT (n_max = 500) these are the
literature's thresholds, many > 100 and few < 20 (Liu et al. 2019, used by the CIFAR-LT papers);
on Fashion-MNIST-LT (1,000 images per class, 100 of them held out for validation, ratio 100:
n_max = 900) they are many > 180 and few < 36, which give the classes 4 / 3 / 3 of the 10 classes
where the absolute thresholds would give 5 / 3 / 2. ``shot_groups`` takes other fractions or
absolute thresholds. The counts are those evaluation writes (``n_train`` in per_class.csv, the
training split the run was trained on).

Balanced accuracy is the mean per-class recall on the (balanced) test set: the results table's
"All". The positive control: logit adjustment and LDAM-DRW are known to raise the few-shot classes
and the balanced accuracy over ERM on long-tailed data (Menon et al. 2021; Cao et al. 2019); the
section says, from the paired differences, whether this pipeline reproduces that.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..common.runs import DEFAULT_VARIANT, RUN_KEYS
from .statistics import verdict
from .tables import format_difference, format_mean_std, paired

#: many-shot: n_k > n_max · MANY_FRACTION; few-shot: n_k < n_max · FEW_FRACTION (100 and 20 at n_max = 500)
MANY_FRACTION = 1 / 5
FEW_FRACTION = 1 / 25
SHOTS = ("many", "medium", "few")
LT_METRICS = {"many": "Many-shot", "medium": "Medium-shot", "few": "Few-shot", "balanced": "Balanced acc."}
#: the methods known to raise few-shot and balanced accuracy over ERM on long-tailed data
POSITIVE_CONTROLS = ("logit_adjust", "ldam")
IMBALANCE_COLUMN = "config.data.imbalance.ratio"


def shot_thresholds(n_max: float, many: float | None = None, few: float | None = None) -> tuple[float, float]:
    """(many, few) thresholds: absolute when given, else n_max · MANY_FRACTION and n_max · FEW_FRACTION."""
    return (n_max * MANY_FRACTION if many is None else many, n_max * FEW_FRACTION if few is None else few)


def shot_groups(counts: pd.Series, many: float | None = None, few: float | None = None) -> pd.Series:
    """class -> many / medium / few from the training counts ``counts`` (index: class): many when
    n_k > the many threshold, few when n_k < the few threshold, medium otherwise (``shot_thresholds``)."""
    hi, lo = shot_thresholds(float(counts.max()), many, few)
    group = np.where(counts > hi, "many", np.where(counts < lo, "few", "medium"))
    return pd.Series(group, index=counts.index, name="shot")


def imbalanced_datasets(runs: pd.DataFrame | None) -> list[str]:
    """The datasets whose runs were trained on long-tailed data (``data.imbalance`` set), in order."""
    if runs is None or IMBALANCE_COLUMN not in runs:
        return []
    ratio = pd.to_numeric(runs[IMBALANCE_COLUMN], errors="coerce")
    return list(dict.fromkeys(runs.loc[ratio.notna(), "dataset"]))


def shot_accuracy(per_class: pd.DataFrame, many: float | None = None, few: float | None = None) -> pd.DataFrame:
    """A row per run: mean accuracy of the many/medium/few-shot classes and the balanced accuracy
    (mean per-class recall), fractions. The groups come from each dataset's training counts
    (``n_train``, the same for every run of a dataset: the first run's are used)."""
    out = []
    for dataset, frame in per_class.groupby("dataset", sort=False):
        counts = frame.drop_duplicates("class").set_index("class")["n_train"].astype(float)
        groups = shot_groups(counts, many, few)
        data = frame.assign(shot=frame["class"].map(groups))
        by_shot = data.pivot_table(index=RUN_KEYS, columns="shot", values="accuracy", aggfunc="mean")
        balanced = data.groupby(RUN_KEYS)["accuracy"].mean().rename("balanced")
        out.append(by_shot.reindex(columns=list(SHOTS)).join(balanced).reset_index())
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=RUN_KEYS + [*SHOTS, "balanced"])


def _counts_line(per_class: pd.DataFrame, dataset: str, many, few) -> str:
    frame = per_class[per_class["dataset"] == dataset].drop_duplicates("class").set_index("class")["n_train"]
    counts = frame.astype(float)
    hi, lo = shot_thresholds(float(counts.max()), many, few)
    groups = shot_groups(counts, many, few)
    sizes = ", ".join(f"{(groups == s).sum()} {s}-shot" for s in SHOTS)
    return (f"Training counts n_k by class: {', '.join(str(int(c)) for c in counts.tolist())}; many-shot "
            f"n_k > {hi:g}, few-shot n_k < {lo:g} ({sizes}).")


def longtail_markdown(per_run: pd.DataFrame, dataset: str, reference: str) -> list[str]:
    """Markdown table of one dataset: per method (default variant), each long-tail metric as
    mean ± sd over seeds (percent) and its paired difference to the reference."""
    frame = per_run[(per_run["dataset"] == dataset) & (per_run["variant"] == DEFAULT_VARIANT)]
    header = ["Method", "Seeds"] + [f"{t}" for t in LT_METRICS.values()] + [f"Δ {t}" for t in LT_METRICS.values()]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * 2 * len(LT_METRICS)) + "|"]
    for method, runs in frame.groupby("method", sort=False):
        cells = [method, str(len(runs))]
        cells += [format_mean_std(runs[m].mean() * 100, runs[m].std(ddof=1) * 100) for m in LT_METRICS]
        if method == reference:
            cells += ["reference"] * len(LT_METRICS)
        else:
            for m in LT_METRICS:
                d = paired(per_run, dataset, method, reference, m)
                cells.append("n/a" if d is None else format_difference(d["diff"], d["diff_lo"], d["diff_hi"],
                                                                         d["n_paired"]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _control_name(runs: pd.DataFrame, dataset: str, method: str) -> str:
    """``LDAM-DRW`` when the dataset's ldam runs switch DRW on, else the method's name."""
    if method != "ldam":
        return "logit adjustment" if method == "logit_adjust" else method
    col = "config.method.options.drw_epoch"
    rows = runs[(runs["dataset"] == dataset) & (runs["method"] == "ldam")] if col in runs else runs.iloc[:0]
    return "LDAM-DRW" if len(rows) and pd.to_numeric(rows[col], errors="coerce").notna().all() else "LDAM (without DRW)"


def positive_control(per_run: pd.DataFrame, runs: pd.DataFrame, dataset: str, reference: str) -> str | None:
    """The generated sentence: do logit adjustment and LDAM-DRW raise the few-shot classes and the
    balanced accuracy over the reference (paired by seed, the 95 % interval excluding 0)? None
    when neither runs on ``dataset`` or the reference does not."""
    present = set(per_run.loc[per_run["dataset"] == dataset, "method"])
    controls = [m for m in POSITIVE_CONTROLS if m in present]
    if reference not in present or not controls:
        return None
    parts, outcomes = [], []
    for method in controls:
        res = {m: paired(per_run, dataset, method, reference, m) for m in ("few", "balanced")}
        if any(d is None for d in res.values()):
            outcomes.append("undetermined")
            parts.append(f"{_control_name(runs, dataset, method)}: no seed shared with {reference.upper()}")
            continue
        v = {m: verdict(d["diff"], d["diff_lo"], d["diff_hi"]) for m, d in res.items()}
        if any(x.startswith("undetermined") for x in v.values()):
            outcomes.append("undetermined")
        else:
            outcomes.append("yes" if all(x == "higher" for x in v.values()) else "no")
        parts.append(f"{_control_name(runs, dataset, method)}: few-shot {_fmt(res['few'])} ({v['few']}), balanced "
                     f"accuracy {_fmt(res['balanced'])} ({v['balanced']})")
    if "undetermined" in outcomes:
        word = "undetermined (too few paired seeds)"
    elif all(o == "yes" for o in outcomes):
        word = "reproduced"
    elif any(o == "yes" for o in outcomes):
        word = "partly reproduced"
    else:
        word = "not reproduced"
    names = " and ".join(_control_name(runs, dataset, m) for m in controls)
    return (f"- Positive control: {names} raise the few-shot classes and the balanced accuracy over "
            f"{reference.upper()} — **{word}** (paired by seed; " + "; ".join(parts) + ").")


def _fmt(d: dict[str, float]) -> str:
    if math.isnan(d["diff_lo"]):
        return f"{d['diff']:+.1f} points (no interval)"
    return f"{d['diff']:+.1f} points [95 % CI {d['diff_lo']:+.1f}, {d['diff_hi']:+.1f}]"


def longtail_section(per_class: pd.DataFrame, runs: pd.DataFrame | None, reference: str = "erm",
                     many: float | None = None, few: float | None = None) -> list[str]:
    """The report's "Long-tailed data" section (Markdown lines) for the datasets trained with
    ``data.imbalance``; nothing when there is none."""
    datasets = [d for d in imbalanced_datasets(runs) if d in set(per_class["dataset"])]
    if not datasets or "n_train" not in per_class:
        return []
    per_run = shot_accuracy(per_class[per_class["dataset"].isin(datasets)], many, few)
    lines = ["## Long-tailed data: many/medium/few-shot classes and the positive control", "",
             "Classes grouped by their training count (module `mr2.results.longtail`: many-shot above n_max/5, "
             "few-shot below n_max/25, the literature's 100 and 20 at CIFAR-100-LT's n_max = 500); balanced "
             "accuracy is the mean per-class recall on the balanced test set. Accuracy in %, mean ± sd over seeds; "
             f"Δ: paired by seed against {reference.upper()}, mean [95 % t-interval].", ""]
    for dataset in datasets:
        lines += [f"### {dataset}", "", _counts_line(per_class, dataset, many, few), ""]
        lines += longtail_markdown(per_run, dataset, reference) + [""]
        sentence = positive_control(per_run, runs, dataset, reference)
        if sentence:
            lines += [sentence, ""]
    return lines

"""Easy/medium/hard classes (our reading of the paper's split) and each run's group accuracy."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..common.runs import DEFAULT_VARIANT


def difficulty_groups(reference: pd.DataFrame) -> pd.Series:
    """Easy/medium/hard classes from the reference method's per-class accuracy.

    Our reading of the paper (its rule is unpublished): rank the classes by the reference
    method's (ERM's) test accuracy averaged over seeds, and cut the ranking into thirds:
    the lowest third is "hard", the middle "medium", the highest "easy". When K is not a
    multiple of 3 the extra classes go to the hard, then the medium group
    (``numpy.array_split``); ties are broken by class index. The same split is used for
    every method. Classes without test samples (accuracy NaN in every seed) are ranked in no
    group and take no share of the thirds. ``reference`` has columns ``class`` and ``accuracy``
    (one row per class and seed). Returns a Series class -> group.
    """
    mean = reference.groupby("class")["accuracy"].mean().dropna()
    order = mean.reset_index().sort_values(["accuracy", "class"])["class"].to_numpy()
    groups = pd.Series(index=pd.Index(order, name="class"), dtype=object)
    for name, part in zip(("hard", "medium", "easy"), np.array_split(order, 3)):
        groups.loc[part] = name
    return groups.sort_index().rename("group")


def class_names(per_class: pd.DataFrame) -> pd.DataFrame:
    """Columns dataset, class, class_name: each class's name as evaluation wrote it (its index as
    text where the table has no ``class_name``)."""
    names = per_class[["dataset", "class"] + (["class_name"] if "class_name" in per_class else [])]
    names = names.drop_duplicates(["dataset", "class"])
    if "class_name" not in names:
        names = names.assign(class_name=names["class"].astype(str))
    return names.assign(class_name=names["class_name"].fillna(names["class"].astype(str)).astype(str))


def group_accuracy(per_class: pd.DataFrame, groups: pd.Series) -> pd.DataFrame:
    """Mean per-class accuracy of each group, per run.

    ``per_class`` has one row per (run, class) with the run keys and ``accuracy``; returns
    one row per run with columns all, easy, medium, hard, worst (worst-class accuracy).
    """
    keys = [c for c in ("dataset", "method", "variant", "seed") if c in per_class]
    frame = per_class.merge(groups.reset_index(), on="class", how="left")
    by_group = frame.pivot_table(index=keys, columns="group", values="accuracy", aggfunc="mean")
    overall = frame.groupby(keys)["accuracy"].agg(all="mean", worst="min")
    return overall.join(by_group[[g for g in ("easy", "medium", "hard") if g in by_group]]).reset_index()


def difficulty_table(per_class: pd.DataFrame, reference: str = "erm",
                     variant: str = DEFAULT_VARIANT) -> pd.DataFrame:
    """Easy/medium/hard classes of every dataset, from the reference method's runs.

    Applies ``mr2.evaluate.difficulty_groups`` (thirds of the classes ranked by the
    reference's per-class accuracy, mean over seeds) to each dataset. Returns columns
    dataset, class, group. A dataset without runs of the reference is an error naming it.
    """
    out = []
    for dataset, frame in per_class.groupby("dataset", sort=False):
        ref = frame[(frame["method"] == reference) & (frame["variant"] == variant)]
        if ref.empty:
            raise ValueError(f"dataset {dataset!r} has no runs of the reference method {reference!r} "
                             f"(variant {variant!r}); the easy/medium/hard groups are defined by it")
        groups = difficulty_groups(ref).reset_index()
        groups.insert(0, "dataset", dataset)
        out.append(groups)
    return pd.concat(out, ignore_index=True)


def run_group_accuracy(per_class: pd.DataFrame, groups: pd.DataFrame) -> pd.DataFrame:
    """A row per run: all, easy, medium, hard, worst (``mr2.evaluate.group_accuracy`` per dataset)."""
    out = []
    for dataset, frame in per_class.groupby("dataset", sort=False):
        g = groups[groups["dataset"] == dataset].set_index("class")["group"]
        if g.empty:
            raise ValueError(f"no easy/medium/hard groups for dataset {dataset!r}")
        out.append(group_accuracy(frame, g))
    return pd.concat(out, ignore_index=True)


def held_out_group_accuracy(per_class: pd.DataFrame, reference: str = "erm",
                            variant: str = DEFAULT_VARIANT) -> pd.DataFrame:
    """A row per run, as ``run_group_accuracy``, with each seed's groups ranked on the reference's
    runs of the *other* seeds (cross-fitting).

    Ranking the classes on the same reference runs that every difference is then taken against
    carries a regression to the mean: a class lands in "hard" partly by the reference's bad luck
    on it, so any method, even one equal to the reference in distribution, looks better than the
    reference on hard classes and worse on easy ones. Groups ranked on independent seeds have no
    such bias. Seeds whose dataset has no reference run of another seed get no row (one seed: empty).
    """
    keys = ["dataset", "method", "variant", "seed"]
    ref = per_class[(per_class["method"] == reference) & (per_class["variant"] == variant)]
    out = []
    for (dataset, seed), frame in per_class.groupby(["dataset", "seed"], sort=False):
        others = ref[(ref["dataset"] == dataset) & (ref["seed"] != seed)]
        if not others.empty:
            out.append(group_accuracy(frame, difficulty_groups(others)))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=keys + ["all", "worst"])

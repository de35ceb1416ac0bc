"""Sentences, computed from the per-epoch log, that answer "how do the margins move during training,
and for which classes?" (the margins notebook ends with them). Every number carries its 95 %
t-interval over seeds (``mr2.results.statistics.t_interval``) or its range over seeds, and a direction
is stated only when its interval excludes the null (``mr2.results.statistics.verdict``): "not shown"
otherwise."""

from __future__ import annotations

import math

import pandas as pd

from ..common.runs import DEFAULT_VARIANT
from .plotting import GROUP_ORDER, display_name
from .statistics import t_interval, verdict

GROUPS = [g for g in GROUP_ORDER if g != "all"]  # easy, medium, hard
NAMED = 3  # classes named at each end


def seed_trajectories(epochs: pd.DataFrame, groups: pd.DataFrame, method: str = "mr2",
                      variant: str = DEFAULT_VARIANT, name: str = "gamma",
                      names: pd.DataFrame | None = None) -> pd.DataFrame:
    """A row per dataset, epoch, class and seed: the logged ``name`` (γ_k) of ``method`` at the end
    of the epoch, with the class's group and class_name (from ``names``,
    ``mr2.results.groups.class_names``; the class index as text without it)."""
    rows = epochs[(epochs["method"] == method) & (epochs["variant"] == variant) & (epochs["name"] == name)
                  & epochs["class"].notna()]
    rows = rows.assign(**{"class": rows["class"].astype("int64")})
    data = rows.groupby(["dataset", "epoch", "class", "seed"])["value"].mean().reset_index()
    keys = groups.assign(**{"class": groups["class"].astype("int64")})[["dataset", "class", "group"]]
    data = data.merge(keys, on=["dataset", "class"], how="left")
    if names is not None:
        names = names.assign(**{"class": names["class"].astype("int64")})
        return data.merge(names[["dataset", "class", "class_name"]], on=["dataset", "class"], how="left")
    return data.assign(class_name=data["class"].astype(str))


def class_trajectories(epochs: pd.DataFrame, groups: pd.DataFrame, method: str = "mr2",
                       variant: str = DEFAULT_VARIANT, name: str = "gamma",
                       names: pd.DataFrame | None = None) -> pd.DataFrame:
    """A row per dataset, epoch and class: ``seed_trajectories``' value, mean over seeds, with the
    class's group and class_name."""
    data = seed_trajectories(epochs, groups, method, variant, name, names)
    keys = ["dataset", "epoch", "class"]
    labels = data.drop_duplicates(keys)[keys + ["group", "class_name"]]
    means = data.groupby(keys)["value"].mean().reset_index()
    return means.merge(labels, on=keys, how="left")[keys + ["value", "group", "class_name"]]


#: what ``mr2.results.statistics.verdict`` of the hard-to-easy ratio minus 1 says about the hard
#: classes' margins (any other word: "larger or not: <word>")
RATIO_WORDS = {"higher": "larger, as Corollary 1 intends for harder classes",
               "lower": "smaller: the margins favour the easy classes"}
#: what ``verdict`` of a class's change over training says (any other word: "rise or fall: <word>")
CHANGE_WORDS = {"higher": "a rise", "lower": "a fall"}


def _interval(values: pd.Series, sign: str = "", digits: int = 3) -> str:
    """``0.550 [0.484, 0.616]``: the mean of the per-seed ``values`` and its 95 % ``t_interval``, or
    ``0.550 (1 seed, no interval)``."""
    iv = t_interval(values)
    f = f"{sign}.{digits}f"
    if math.isnan(iv["lo"]):
        return f"{iv['mean']:{f}} ({iv['n']} seed{'s' if iv['n'] != 1 else ''}, no interval)"
    return f"{iv['mean']:{f}} [{iv['lo']:{f}}, {iv['hi']:{f}}]"


def _word(values: pd.Series, words: dict[str, str], either: str, null: float = 0.0) -> str:
    """The word ``verdict`` gives the ``t_interval`` of ``values`` against ``null``, through ``words``;
    an interval containing ``null`` reads "<either>: not shown", no interval "<either>: undetermined (...)"."""
    iv = t_interval(values)
    word = verdict(iv["mean"] - null, iv["lo"] - null, iv["hi"] - null)
    if word in words:
        return words[word]
    return f"{either}: " + ("not shown" if word == "no clear difference" else word)


def margin_sentences(epochs: pd.DataFrame, groups: pd.DataFrame, method: str = "mr2",
                     variant: str = DEFAULT_VARIANT, name: str = "gamma",
                     names: pd.DataFrame | None = None) -> list[str]:
    """Per dataset, each number with its 95 % ``t_interval`` over seeds: the easy, medium and hard
    classes' mean γ_k after the first and the last logged epoch; the hard-to-easy ratio at the end
    (per seed), "larger" or "smaller" only when its interval excludes 1 and "not shown" otherwise;
    the classes with the largest and smallest final γ_k (with their groups) and those with the
    largest rise and fall over training, each change with its word (a rise, a fall, not shown)."""
    data = seed_trajectories(epochs, groups, method, variant, name, names)
    label = display_name(method, variant)
    if data.empty:
        return [f"No per-class {name} of {label} is logged: nothing to say about its margins."]
    lines = []
    for dataset, part in data.groupby("dataset", sort=False):
        first, last = part["epoch"].min(), part["epoch"].max()
        by_group = part.groupby(["epoch", "group", "seed"])["value"].mean()  # per seed: mean over the group's classes
        at = {e: by_group.loc[e] for e in (first, last)}
        present = [g for g in GROUPS if all(g in at[e].index.get_level_values("group") for e in (first, last))]
        moves = "; ".join(f"{g} classes {_interval(at[first].loc[g])} → {_interval(at[last].loc[g])}" for g in present)
        lines.append(f"{dataset}: {label}'s margins γ_k from epoch {int(first)} to epoch {int(last)} (mean over "
                     f"classes and seeds [95 % t-interval over seeds]): {moves}.")
        if {"hard", "easy"} <= set(at[last].index.get_level_values("group")):
            ratio = (at[last].loc["hard"] / at[last].loc["easy"]).dropna()  # seeds with both groups
            lines.append(f"{dataset}: at the end the hard classes' mean γ_k is {_interval(ratio, digits=2)} times "
                         f"the easy classes' (mean of the per-seed ratios): "
                         f"{_word(ratio, RATIO_WORDS, 'larger or not', null=1.0)}.")
        final = part[part["epoch"] == last]
        per_class = final.groupby("class", sort=False).agg(value=("value", "mean"), low=("value", "min"),
                                                           high=("value", "max"), seeds=("value", "size"),
                                                           class_name=("class_name", "first"), group=("group", "first"))
        ordered = per_class.sort_values("value", ascending=False)
        named = lambda frame: ", ".join(  # noqa: E731
            f"{r.class_name} ({r.group if isinstance(r.group, str) else 'no group'}, {_spread(r)})"
            for r in frame.itertuples())
        lines.append(f"{dataset}: largest final γ_k (mean over seeds, their range): {named(ordered.head(NAMED))}; "
                     f"smallest: {named(ordered.tail(NAMED).iloc[::-1])}.")
        start = part[part["epoch"] == first].set_index(["class", "seed"])["value"]
        change = (final.set_index(["class", "seed"])["value"] - start).dropna()
        mean_change = change.groupby(level="class").mean()
        up, down = mean_change.idxmax(), mean_change.idxmin()
        moved = lambda c: (f"{per_class.loc[c, 'class_name']}, {_interval(change.loc[c], '+')} "  # noqa: E731
                           f"({_word(change.loc[c], CHANGE_WORDS, 'rise or fall')})")
        lines.append(f"{dataset}: over training (last minus first epoch, per seed) γ_k rose most for {moved(up)}, "
                     f"and fell most for {moved(down)}.")
    return lines


def _spread(row) -> str:
    """``1.340, seeds 1.310 to 1.360``: a class's final γ_k, mean over seeds and their range."""
    if row.seeds < 2:
        return f"{row.value:.3f}, 1 seed"
    return f"{row.value:.3f}, seeds {row.low:.3f} to {row.high:.3f}"

"""Sentences, computed from the per-epoch log, that answer "how do the margins move during training,
and for which classes?" (the margins notebook ends with them)."""

from __future__ import annotations

import pandas as pd

from ..common.runs import DEFAULT_VARIANT
from .plotting import GROUP_ORDER, display_name

GROUPS = [g for g in GROUP_ORDER if g != "all"]  # easy, medium, hard
NAMED = 3  # classes named at each end


def class_trajectories(epochs: pd.DataFrame, groups: pd.DataFrame, method: str = "mr2",
                       variant: str = DEFAULT_VARIANT, name: str = "gamma",
                       names: pd.DataFrame | None = None) -> pd.DataFrame:
    """A row per dataset, epoch and class: the logged ``name`` (γ_k) of ``method`` at the end of the
    epoch, mean over seeds, with the class's group and class_name (from ``names``,
    ``mr2.results.groups.class_names``; the class index without it)."""
    rows = epochs[(epochs["method"] == method) & (epochs["variant"] == variant) & (epochs["name"] == name)
                  & epochs["class"].notna()]
    rows = rows.assign(**{"class": rows["class"].astype("int64")})
    data = rows.groupby(["dataset", "epoch", "class"])["value"].mean().reset_index()
    keys = groups.assign(**{"class": groups["class"].astype("int64")})[["dataset", "class", "group"]]
    data = data.merge(keys, on=["dataset", "class"], how="left")
    if names is not None:
        names = names.assign(**{"class": names["class"].astype("int64")})
        return data.merge(names[["dataset", "class", "class_name"]], on=["dataset", "class"], how="left")
    return data.assign(class_name=data["class"].astype(str))


def margin_sentences(epochs: pd.DataFrame, groups: pd.DataFrame, method: str = "mr2",
                     variant: str = DEFAULT_VARIANT, name: str = "gamma",
                     names: pd.DataFrame | None = None) -> list[str]:
    """Per dataset: the easy, medium and hard classes' mean γ_k after the first and the last logged
    epoch, the hard-to-easy ratio at the end, and the classes with the largest and smallest final
    γ_k (with their groups) and the largest change over training."""
    data = class_trajectories(epochs, groups, method, variant, name, names)
    label = display_name(method, variant)
    if data.empty:
        return [f"No per-class {name} of {label} is logged: nothing to say about its margins."]
    lines = []
    for dataset, part in data.groupby("dataset", sort=False):
        first, last = part["epoch"].min(), part["epoch"].max()
        start, end = part[part["epoch"] == first], part[part["epoch"] == last]
        means = {e: frame.groupby("group")["value"].mean() for e, frame in ((first, start), (last, end))}
        moves = "; ".join(f"{g} classes {means[first][g]:.3f} → {means[last][g]:.3f}"
                          for g in GROUPS if g in means[first].index and g in means[last].index)
        lines.append(f"{dataset}: {label}'s margins γ_k from epoch {int(first)} to epoch {int(last)} (mean over "
                     f"classes and seeds): {moves}.")
        if {"hard", "easy"} <= set(means[last].index):
            ratio = means[last]["hard"] / means[last]["easy"]
            lines.append(f"{dataset}: at the end the hard classes' mean γ_k is {ratio:.2f} times the easy classes' "
                         + ("(larger, as Corollary 1 intends for harder classes)." if ratio > 1 else
                            "(not larger: the margins do not favour the hard classes)."))
        ordered = end.sort_values("value", ascending=False)
        named = lambda frame: ", ".join(f"{n} ({g}, {v:.3f})" for n, g, v in  # noqa: E731
                                        zip(frame["class_name"], frame["group"].fillna("no group"), frame["value"]))
        lines.append(f"{dataset}: largest final γ_k: {named(ordered.head(NAMED))}; smallest: "
                     f"{named(ordered.tail(NAMED).iloc[::-1])}.")
        change = end.set_index("class")["value"] - start.set_index("class")["value"]
        up = end.set_index("class").loc[[change.idxmax()]]
        down = end.set_index("class").loc[[change.idxmin()]]
        lines.append(f"{dataset}: over training γ_k rose most for {up['class_name'].iloc[0]} "
                     f"({change.max():+.3f}) and fell most for {down['class_name'].iloc[0]} ({change.min():+.3f}).")
    return lines

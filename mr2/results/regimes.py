"""The training regime as an axis of the replication: how MR²'s paired Δ to ERM changes with the
training-set size and the epoch budget.

A *regime* is a dataset key of the pipeline config; the keys that read the same data (the same
``data.name`` in their runs' resolved configs) differ in the training-set size per class
(``data.train_cap``, null = the whole training set) and the epoch budget (``train.epochs``). The
regimes of a data name are ordered by size, then epochs, and labelled "600/class × 6 ep". Every
value is read from the runs table (the resolved configs), never from a dataset key's name.

For each regime and each of MR² and its ablations: the paired difference to ERM over seeds of the
accuracy of all classes, of the hard classes (the hard third of that dataset key's own ERM) and of
the worst class, in points, with its t-interval (``mr2.results.tables.paired``).

  regime_table     a row per data name, regime, method and metric: diff, diff_lo, diff_hi, n_paired
  regime_findings  one sentence per data name: MR²'s Δ in the smallest/shortest and the largest/longest regime
  regime_section   the report's "## Training regime" section (only when a data name has ≥ 2 regimes)
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from ..common.runs import DEFAULT_VARIANT
from .plotting import metric_name
from .statistics import LEVEL, verdict
from .tables import METRIC_TITLES, format_difference, paired, per_run_metrics

#: the runs-table columns (a run's resolved config) that define a regime
CONFIG_COLUMNS = {"data_name": "config.data.name", "train_cap": "config.data.train_cap",
                  "epochs": "config.train.epochs"}
METRICS = ("all", "hard", "worst")
METHODS = ("mr2", "mr2_uniform", "mr2_no_rep")
COLUMNS = ["data_name", "dataset", "regime", "train_cap", "epochs", "order", "method", "metric",
           "diff", "diff_lo", "diff_hi", "n_paired"]


def regime_label(train_cap: float, epochs: int) -> str:
    """``600/class × 6 ep``; ``all × 6 ep`` for the whole training set (``train_cap`` null)."""
    size = "all" if train_cap is None or pd.isna(train_cap) else f"{int(train_cap)}/class"
    return f"{size} × {int(epochs)} ep"


def block_epochs(epochs_by_method: pd.Series) -> int:
    """A setting's epochs (its block's ``train.epochs``) from one value per method, as a method may train
    its own (config key ``method_epochs``): the epochs most of its methods train, the fewest on a tie."""
    return int(epochs_by_method.value_counts().sort_index(kind="stable").idxmax())


def regimes(runs: pd.DataFrame | None) -> pd.DataFrame:
    """A row per dataset key whose data name is run under at least two keys: data_name, dataset,
    train_cap (NaN = all), epochs, regime (its label) and order (0 = smallest, then shortest,
    within its data name). Empty when the runs table lacks the config columns. A dataset key whose
    runs disagree on the data or the size, or one method's runs on the epochs, is an error naming
    the key and the column. A method may train its own epochs in a key (config key ``method_epochs``):
    the key's epochs are those most of its methods train (the fewest on a tie), the block's ``train.epochs``."""
    empty = pd.DataFrame(columns=["data_name", "dataset", "train_cap", "epochs", "regime", "order"])
    if runs is None or not set(CONFIG_COLUMNS.values()) <= {*runs.columns} or "method" not in runs:
        return empty
    frame = runs[["dataset", "method", *CONFIG_COLUMNS.values()]].rename(columns={v: k for k, v in CONFIG_COLUMNS.items()})
    frame = frame.assign(train_cap=pd.to_numeric(frame["train_cap"]))
    for column in CONFIG_COLUMNS:
        by = ["dataset", "method"] if column == "epochs" else ["dataset"]
        varies = frame.groupby(by)[column].nunique(dropna=False)
        if (varies > 1).any():
            where = varies[varies > 1].index[0]
            name = f"{where[0]!r} and method {where[1]!r}" if column == "epochs" else repr(where)
            raise ValueError(f"runs of dataset key {name} differ in {CONFIG_COLUMNS[column]}; "
                             "a dataset key is one training regime")
    common = frame.drop_duplicates(["dataset", "method"]).groupby("dataset")["epochs"].agg(block_epochs)
    keys = frame.drop_duplicates("dataset").drop(columns=["method", "epochs"]).merge(
        common.rename("epochs"), left_on="dataset", right_index=True)
    keys = keys[keys.groupby("data_name")["dataset"].transform("size") >= 2]
    if keys.empty:
        return empty
    keys = keys.assign(size=keys["train_cap"].fillna(math.inf)).sort_values(["data_name", "size", "epochs", "dataset"])
    keys["regime"] = [regime_label(c, e) for c, e in zip(keys["train_cap"], keys["epochs"])]
    same = keys.duplicated(["data_name", "regime"], keep=False)  # two keys, one size and budget: name the key
    keys.loc[same, "regime"] = keys.loc[same, "regime"] + " (" + keys.loc[same, "dataset"].astype(str) + ")"
    keys["order"] = keys.groupby("data_name").cumcount()
    return keys.drop(columns="size").reset_index(drop=True)


def regime_table(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame, reference: str = "erm",
                 methods: Sequence[str] = METHODS) -> pd.DataFrame:
    """A row per data name, regime (dataset key), method of ``methods`` and metric of ``METRICS``:
    the default variant's paired difference to the reference over seeds, in points, with its
    t-interval (``COLUMNS``). Regimes missing a method or the reference have no row for it."""
    keys = regimes(runs)
    selected = per_class[per_class["dataset"].isin(keys["dataset"]) & (per_class["variant"] == DEFAULT_VARIANT)]
    if selected.empty:
        return pd.DataFrame(columns=COLUMNS)
    per_run = per_run_metrics(selected, None, groups)
    rows = []
    for key in keys.itertuples(index=False):
        for method in methods:
            for metric in METRICS:
                d = paired(per_run, key.dataset, method, reference, metric)
                if d is not None:
                    rows.append({**key._asdict(), "method": method, "metric": metric, **d})
    return pd.DataFrame(rows, columns=COLUMNS)


def _interval(row: pd.Series) -> str:
    """``+0.9 [+0.2, +1.6] points (interval excludes 0)``."""
    v = verdict(row["diff"], row["diff_lo"], row["diff_hi"])
    where = {"higher": "excludes 0", "lower": "excludes 0", "no clear difference": "contains 0"}.get(v, "no interval")
    return f"{format_difference(row['diff'], row['diff_lo'], row['diff_hi'], int(row['n_paired']))} points " \
           + ("(no interval)" if where == "no interval" else f"(interval {where})")


def regime_findings(table: pd.DataFrame, reference: str = "erm", method: str = "mr2") -> list[str]:
    """One sentence per data name with ≥ 2 regimes of ``method``: its paired Δ to the reference in
    all / hard / worst class from the smallest, shortest regime to the largest, longest one."""
    lines = []
    for name, part in table[table["method"] == method].groupby("data_name", sort=False):
        first, last = part["order"].min(), part["order"].max()
        if first == last:
            continue
        ends = {o: part[part["order"] == o].set_index("metric") for o in (first, last)}
        changes = "; ".join(
            f"{metric_name(m)} from {_interval(ends[first].loc[m])} to {_interval(ends[last].loc[m])}"
            for m in METRICS if m in ends[first].index and m in ends[last].index)
        lines.append(f"- `{name}` ({part['order'].nunique()} regimes, ordered by size, then epochs): from the "
                     f"smallest, shortest regime ({ends[first]['regime'].iloc[0]}) to the largest, longest "
                     f"({ends[last]['regime'].iloc[0]}), `{method}`'s paired Δ to {reference.upper()} changes for "
                     f"{changes}.")
    return lines


def regime_markdown(table: pd.DataFrame) -> str:
    """The regime table as Markdown: a row per data name, regime and method, a column per metric."""
    lines = ["| Data | Regime | Method | " + " | ".join(f"Δ {METRIC_TITLES[m]}" for m in METRICS) + " |",
             "|---|---|---|" + "---:|" * len(METRICS)]
    for (name, _, method), part in table.groupby(["data_name", "order", "method"], sort=False):
        cells = part.set_index("metric")
        lines.append(f"| {name} | {part['regime'].iloc[0]} | {method} | " + " | ".join(
            format_difference(cells.loc[m, "diff"], cells.loc[m, "diff_lo"], cells.loc[m, "diff_hi"],
                              int(cells.loc[m, "n_paired"])) if m in cells.index else "n/a" for m in METRICS) + " |")
    return "\n".join(lines)


def regime_section(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame,
                   reference: str = "erm") -> list[str]:
    """The report's "## Training regime" section (Markdown lines); none when no data name is run
    in at least two regimes."""
    table = regime_table(per_class, runs, groups, reference)
    if table.empty or table.groupby("data_name")["order"].nunique().max() < 2:
        return []
    table = table.sort_values(["data_name", "order"], kind="stable")
    return ["## Training regime", "",
            f"The same data trained in several regimes (training-set size per class × epochs, from each run's "
            f"resolved config). Δ: each method's difference to {reference.upper()} paired by seed, in points, mean "
            f"[{LEVEL:.0%} t-interval over seeds]; hard classes are the hard third of each regime's own "
            f"{reference.upper()}. Figure: `regimes`.", "",
            *regime_findings(table, reference), "", regime_markdown(table), ""]

"""Results: the tidy tables of all runs, the easy/medium/hard groups and the results table.

Reads only what training and evaluation wrote (see mr2/train.py and mr2/evaluate.py):
  <run dir>/config.yaml, <run dir>/epochs.csv,
  <run dir>/eval/per_class.csv, <run dir>/eval/metrics.json.

``aggregate`` gathers them into three tidy tables, each row carrying the run keys
(dataset, method, variant, seed):
  per_class  a row per run and class (every column of per_class.csv)
  runs       a row per run (metrics.json, the resolved config flattened as ``config.<path>``)
  epochs     a row per run and epochs.csv row (epoch, class, name, value)
``difficulty_table`` splits each dataset's classes into easy/medium/hard from the reference
method (mr2.evaluate.difficulty_groups), and ``results_table`` summarises every
dataset × method × variant: mean ± sd over seeds and the paired difference to the reference.

Accuracies in the results table are in percent (``scale=100``); the tidy tables keep the
fractions that evaluation wrote.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import yaml

from ..common.io import load_json_file, save_csv, save_text
from ..common.runs import DEFAULT_VARIANT, RUN_KEYS, run_keys
from .groups import run_group_accuracy
from .html import escape_text
from .rules import ABLATIONS, CONTROLS, MR2, NOT_BASELINES, family_words
from .statistics import EFFECT_OF_INTEREST, LEVEL, paired_difference

EVAL_SUBDIR = "eval"
RESULTS_DIR = "results"  # the pipeline's results folder, in the repository root
ROOT_MARKER = "pyproject.toml"  # what makes a folder the repository root
METRICS = ["top1", "all", "easy", "medium", "hard", "worst"]
COMPARISON_COLUMNS = ["dataset", "method", "variant", "against", "against_variant", "kind", "metric", "n_paired",
                      "diff", "diff_sd", "diff_lo", "diff_hi", "mde", "effect_of_interest", "eq_lo", "eq_hi",
                      "p_value", "p_holm", "family_size", "word"]
DIFF_KEYS = ("diff", "diff_lo", "diff_hi", "diff_sd", "mde")
METRIC_TITLES = {"top1": "Top-1", "all": "All", "easy": "Easy", "medium": "Medium", "hard": "Hard",
                 "worst": "Worst class"}


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping as one level of dotted keys; lists become JSON text, empty mappings vanish."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, path + "."))
        elif isinstance(value, (list, tuple)):
            out[path] = json.dumps(value)
        else:
            out[path] = value
    return out


def _need(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"missing run output {path}; train and evaluate this run first")
    return path


def _with_keys(frame: pd.DataFrame, keys: dict[str, Any]) -> pd.DataFrame:
    """``frame`` with the run keys as its first columns (existing key columns replaced)."""
    frame = frame.drop(columns=[k for k in keys if k in frame])
    return pd.concat([pd.DataFrame({k: [v] * len(frame) for k, v in keys.items()}, index=frame.index), frame],
                     axis=1)


#: the split each evaluation folder of a run holds: eval/ the test set, eval_val/ the validation split
SPLIT_OF = {EVAL_SUBDIR: "test", "eval_val": "val"}


def split_of(found: pd.DataFrame | dict) -> set[str]:
    """The split(s) an evaluation (per_class.csv or metrics.json) records: its ``split``, or for one
    written before it was recorded, the split its counts are named after (``n_test``, ``n_val``);
    empty when neither says."""
    if "split" in found:
        return set(map(str, found["split"])) if isinstance(found, pd.DataFrame) else {str(found["split"])}
    return {split for split in ("test", "val") if f"n_{split}" in found}


def read_run(run_dir: str | Path, eval_subdir: str = EVAL_SUBDIR) -> dict[str, pd.DataFrame]:
    """The per_class, runs (one row) and epochs tables of one run directory. Its evaluation must be of
    the split ``eval_subdir`` is for (``SPLIT_OF``: test scores never tune, validation scores are never
    tabled as test accuracy); an error naming the file otherwise."""
    run_dir = Path(run_dir)
    cfg = yaml.safe_load(_need(run_dir / "config.yaml").read_text(encoding="utf-8"))
    keys = run_keys(cfg)
    ev = run_dir / eval_subdir
    try:
        per_class = pd.read_csv(_need(ev / "per_class.csv"))
    except ValueError as exc:  # empty or cut short
        raise ValueError(f"{ev / 'per_class.csv'} is not a readable table ({' '.join(str(exc).split())})") from None
    metrics = load_json_file(_need(ev / "metrics.json"))
    expected = SPLIT_OF.get(eval_subdir)
    for name, found in (("per_class.csv", per_class), ("metrics.json", metrics)):
        for key in ("method", "variant", "seed"):
            values = set(found[key]) if isinstance(found, pd.DataFrame) else {found.get(key)}
            if key in found and values != {keys[key]}:
                raise ValueError(f"{ev / name}: {key} {sorted(map(str, values))} does not match "
                                 f"{run_dir / 'config.yaml'} ({keys[key]!r})")
        if expected and split_of(found) - {expected}:
            use = "tables hold test scores" if expected == "test" else "tuning chooses on validation scores only"
            raise ValueError(f"{ev / name} holds {'/'.join(sorted(split_of(found)))}-split scores, not the {expected} "
                             f"split {eval_subdir}/ is for (the {use}): evaluate the run again with --split "
                             f"{expected} --out {ev}")
    per_class = per_class.drop(columns="split", errors="ignore")  # checked: every table holds one split
    metrics.pop("config", None)
    metrics.pop("split", None)
    runs = pd.DataFrame([{**{k: v for k, v in metrics.items() if k not in keys},
                          **flatten(cfg, "config."), "run_dir": str(run_dir)}])
    epochs = pd.read_csv(_need(run_dir / "epochs.csv"))
    epochs["class"] = epochs["class"].astype("Int64")
    return {"per_class": _with_keys(per_class, keys), "runs": _with_keys(runs, keys),
            "epochs": _with_keys(epochs, keys)}


def aggregate(run_dirs: Iterable[str | Path], eval_subdir: str = EVAL_SUBDIR) -> dict[str, pd.DataFrame]:
    """Tidy tables ``per_class``, ``runs`` and ``epochs`` of all ``run_dirs`` (see module docstring).

    Two directories with the same run keys are an error naming both; so are runs of two CPU vendors
    (``check_one_vendor``).
    """
    parts = [read_run(d, eval_subdir) for d in run_dirs]
    if not parts:
        raise ValueError("aggregate: no run directories given")
    tables = {name: pd.concat([p[name] for p in parts], ignore_index=True) for name in parts[0]}
    dup = tables["runs"][tables["runs"].duplicated(RUN_KEYS, keep=False)]
    if len(dup):
        same = ", ".join(f"{k}={v}" for k, v in dup.iloc[0][RUN_KEYS].items())
        raise ValueError(f"runs with the same keys ({same}): {list(dup['run_dir'])}")
    check_one_vendor(tables["runs"])
    return tables


VENDOR = "config.conditions.cpu_vendor"  # where a run's config.yaml records its CPU's vendor (on CPU)


def check_one_vendor(runs: pd.DataFrame) -> None:
    """Runs of one table, or of one pair, come from one CPU vendor: Intel and AMD CPUs give other
    numbers for the same run (docs/security.md), so runs whose ``conditions.cpu_vendor`` differ are
    an error naming two of them and their vendors. Runs that record none (older, or on a GPU) pass."""
    if VENDOR not in runs:
        return
    known = runs[runs[VENDOR].notna()]
    if known[VENDOR].nunique() > 1:
        first = known.iloc[0]
        other = known[known[VENDOR] != first[VENDOR]].iloc[0]
        raise ValueError(f"runs of two CPU vendors would be tabled together: {first['run_dir']} ran on "
                         f"{first[VENDOR]}, {other['run_dir']} on {other[VENDOR]}; their numbers differ, so aggregate "
                         "each vendor's runs on its own (another output_root)")


def results_folder(override: str | Path | None = None, start: str | Path | None = None) -> Path:
    """The pipeline's results folder: ``override`` when given (a notebook passes ``$MR2_RESULTS``),
    else ``results/`` in the repository root, the nearest folder at or above ``start`` (default: the
    current folder, e.g. a notebook kernel's ``notebooks/``) that holds ``pyproject.toml``. A folder
    that does not exist, or no repository root above ``start``, is an error naming it."""
    if override:
        found = Path(override)
    else:
        here = Path(start or Path.cwd()).resolve()
        root = next((d for d in (here, *here.parents) if (d / ROOT_MARKER).is_file()), None)
        if root is None:
            raise FileNotFoundError(f"no repository root ({ROOT_MARKER}) at or above {here}; "
                                    "set MR2_RESULTS to the pipeline's results folder")
        found = root / RESULTS_DIR
    if not found.is_dir():
        raise FileNotFoundError(f"missing results folder {found}; run the pipeline first or set MR2_RESULTS")
    return found


def write_tables(tables: dict[str, pd.DataFrame], out_dir: str | Path) -> dict[str, Path]:
    """Write each table as ``<out_dir>/<name>.csv`` atomically; returns the paths."""
    paths = {name: Path(out_dir) / f"{name}.csv" for name in tables}
    for name, frame in tables.items():
        save_csv(frame, paths[name])
    return paths


def read_tables(out_dir: str | Path, names: Iterable[str] = ("per_class", "runs", "epochs")) -> dict[str, pd.DataFrame]:
    """Read tables written by ``write_tables`` (``class`` as a nullable integer)."""
    out = {}
    for name in names:
        frame = pd.read_csv(_need(Path(out_dir) / f"{name}.csv"))
        if "class" in frame:
            frame["class"] = frame["class"].astype("Int64")
        out[name] = frame
    return out


def per_run_metrics(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame) -> pd.DataFrame:
    """A row per run with the metric columns of ``METRICS`` that the tables provide."""
    frame = run_group_accuracy(per_class, groups)
    if runs is not None and "top1" in runs:
        frame = frame.merge(runs[RUN_KEYS + ["top1"]], on=RUN_KEYS, how="left")
    return frame[RUN_KEYS + [m for m in METRICS if m in frame]]


def paired(per_run: pd.DataFrame, dataset: str, method: str, against: str, metric: str,
           variant: str = DEFAULT_VARIANT) -> dict[str, float] | None:
    """Paired (by seed) difference of ``metric`` between two methods' default variants, in points."""
    frame = per_run[per_run["dataset"] == dataset]
    a = frame[(frame["method"] == method) & (frame["variant"] == variant)].set_index("seed")[metric]
    b = frame[(frame["method"] == against) & (frame["variant"] == DEFAULT_VARIANT)].set_index("seed")[metric]
    common = a.index.intersection(b.index)
    if not len(common):
        return None
    return paired_difference(a.loc[common].to_numpy() * 100, b.loc[common].to_numpy() * 100)


def results_table(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame,
                  reference: str = "erm", reference_variant: str = DEFAULT_VARIANT,
                  level: float = 0.95, scale: float = 100.0) -> pd.DataFrame:
    """A row per dataset × method × variant.

    For each metric m of ``METRICS`` present (top1 from ``runs``; all/easy/medium/hard/worst
    from the per-class accuracies and ``groups``), in percent (``scale``):
      m_mean, m_std   mean and sample sd (n − 1) over seeds (sd NaN with one seed)
      m_diff, m_diff_lo, m_diff_hi, m_diff_sd, m_mde
                      paired difference to the reference method (same dataset and seed),
                      mean with a ``level`` t-interval, the paired sd and the minimum
                      detectable effect at 80 % power (``paired_difference``); NaN for the
                      reference itself and for runs without a reference of the same seed
    and n_seeds, n_paired. Rows keep the order of first appearance in ``per_class`` (datasets,
    then methods), with the reference first and default variants before the others.
    """
    per_run = per_run_metrics(per_class, runs, groups)
    metrics = [m for m in METRICS if m in per_run]
    per_run[metrics] = per_run[metrics] * scale
    is_ref = (per_run["method"] == reference) & (per_run["variant"] == reference_variant)
    ref = per_run[is_ref].set_index(["dataset", "seed"])[metrics]
    rows = []
    for (dataset, method, variant), frame in per_run.groupby(["dataset", "method", "variant"], sort=False):
        row: dict[str, Any] = {"dataset": dataset, "method": method, "variant": variant,
                               "n_seeds": len(frame), "n_paired": 0}
        own = frame.set_index(["dataset", "seed"])[metrics]
        common = own.index.intersection(ref.index)
        self_ref = method == reference and variant == reference_variant
        for m in metrics:
            row[f"{m}_mean"] = frame[m].mean()
            row[f"{m}_std"] = frame[m].std(ddof=1)
            diff = paired_difference(own.loc[common, m].to_numpy(), ref.loc[common, m].to_numpy(), level)
            if self_ref or not len(common):
                diff = {k: math.nan for k in DIFF_KEYS} | {"n_paired": len(common)}
            row["n_paired"] = diff["n_paired"]
            row.update({f"{m}_{k}": diff[k] for k in DIFF_KEYS})
        rows.append(row)
    table = pd.DataFrame(rows)
    datasets = {d: i for i, d in enumerate(per_class["dataset"].unique())}
    seen = {key: i for i, key in enumerate(per_class[["dataset", "method", "variant"]].drop_duplicates().itertuples(index=False))}
    order = pd.DataFrame({"dataset": table["dataset"].map(datasets),
                          "not_ref": (table["method"] != reference) | (table["variant"] != reference_variant),
                          "not_default": table["variant"] != DEFAULT_VARIANT,
                          "seen": [seen[tuple(k)] for k in table[["dataset", "method", "variant"]].itertuples(index=False)]})
    return table.loc[order.sort_values(list(order.columns)).index].reset_index(drop=True)


def comparison_pairs(per_run: pd.DataFrame, reference: str = "erm",
                     reference_variant: str = DEFAULT_VARIANT) -> list[tuple[str, str, str, str, str, str]]:
    """The paired comparisons behind the paper's claim, per dataset, as (dataset, method, variant,
    against, against_variant, kind):
      reference  every method × variant against the reference (the results table's Δ)
      ablation   each ablation of ``ABLATIONS`` against full MR² (default variants): the paper
                 claims each is below it
      control    full MR² against each equally tuned control of ``CONTROLS`` (a tuned logit
                 temperature, ERM with its recipe tuned): is the gain MR²'s own?
      baseline   full MR² against each baseline (a default-variant method that is neither the
                 reference nor one of ``NOT_BASELINES``): the paper claims MR² is above them on hard
                 classes without their easy-class loss"""
    pairs = []
    for dataset in per_run["dataset"].unique():
        here = per_run[per_run["dataset"] == dataset][["method", "variant"]].drop_duplicates()
        present = list(here.itertuples(index=False, name=None))
        if (reference, reference_variant) in present:
            pairs += [(dataset, m, v, reference, reference_variant, "reference") for m, v in present
                      if (m, v) != (reference, reference_variant)]
        if (MR2, DEFAULT_VARIANT) in present:
            pairs += [(dataset, a, DEFAULT_VARIANT, MR2, DEFAULT_VARIANT, "ablation") for a in ABLATIONS
                      if (a, DEFAULT_VARIANT) in present]
            pairs += [(dataset, MR2, DEFAULT_VARIANT, c, DEFAULT_VARIANT, "control") for c in CONTROLS
                      if (c, DEFAULT_VARIANT) in present and c != reference]
            pairs += [(dataset, MR2, DEFAULT_VARIANT, m, v, "baseline") for m, v in present
                      if v == DEFAULT_VARIANT and m != reference and m not in NOT_BASELINES]
    return pairs


def comparisons_table(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame,
                      reference: str = "erm", reference_variant: str = DEFAULT_VARIANT, level: float = LEVEL,
                      effect_of_interest: float = EFFECT_OF_INTEREST, scale: float = 100.0) -> pd.DataFrame:
    """A tidy row per comparison of ``comparison_pairs`` and metric of ``METRICS`` present: the
    paired (by seed, common seeds only) difference method − against in points, n_paired, mean
    ``diff`` with its paired sd, ``level`` t-interval and minimum detectable effect at 80 % power
    (``paired_difference``, the results table's own code), the two one-sided tests' 90 % interval,
    the paired t-test's p-value and its Holm adjustment within its family, the ``effect_of_interest``
    and the ``word`` it earns (``with_words``). Columns ``COMPARISON_COLUMNS``; a pair without a
    common seed is left out."""
    per_run = per_run_metrics(per_class, runs, groups)
    metrics = [m for m in METRICS if m in per_run]
    keyed = per_run.set_index(["dataset", "method", "variant", "seed"])[metrics].sort_index() * scale
    rows = []
    for dataset, method, variant, against, against_variant, kind in comparison_pairs(per_run, reference,
                                                                                     reference_variant):
        a, b = keyed.loc[(dataset, method, variant)], keyed.loc[(dataset, against, against_variant)]
        common = a.index.intersection(b.index)
        if not len(common):
            continue
        for m in metrics:
            d = paired_difference(a.loc[common, m].to_numpy(), b.loc[common, m].to_numpy(), level)
            rows.append({"dataset": dataset, "method": method, "variant": variant, "against": against,
                         "against_variant": against_variant, "kind": kind, "metric": m, **d,
                         "effect_of_interest": effect_of_interest})
    table = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    return with_words(table, effect_of_interest, level)


def with_words(table: pd.DataFrame, effect_of_interest: float = EFFECT_OF_INTEREST,
               level: float = LEVEL) -> pd.DataFrame:
    """``table`` (comparisons) with Holm's ``p_holm`` and ``family_size`` within each family and the
    ``word`` each comparison earns: ``mr2.results.rules.family_words`` (the rulebook decides)."""
    return family_words(table, effect_of_interest)


def format_mean_std(mean: float, std: float, digits: int = 1) -> str:
    """``71.8 ± 0.3``; ``71.8 (1 seed)`` when the sd is undefined."""
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if not math.isnan(std) else f"{mean:.{digits}f} (1 seed)"


def format_difference(diff: float, lo: float, hi: float, n_paired: int, digits: int = 1) -> str:
    """``+0.9 [+0.2, +1.6]``; ``+0.9 [no CI: 1 seed]`` with one paired seed; ``n/a`` without pairs."""
    if math.isnan(diff):
        return "n/a"
    if math.isnan(lo):
        return f"{diff:+.{digits}f} [no CI: {n_paired} seed]"
    return f"{diff:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def results_markdown(table: pd.DataFrame, reference: str = "erm", reference_variant: str = DEFAULT_VARIANT,
                     level: float = 0.95, digits: int = 1) -> str:
    """The results table as a Markdown pipe table, a column per metric and one per difference."""
    metrics = [m for m in METRICS if f"{m}_mean" in table]
    header = ["Dataset", "Method", "Variant", "Seeds"]
    for m in metrics:
        header += [METRIC_TITLES[m], f"Δ {METRIC_TITLES[m]}"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 4 + ["---:"] * 2 * len(metrics)) + "|"]
    for _, r in table.iterrows():
        is_ref = r["method"] == reference and r["variant"] == reference_variant
        cells = [escape_text(r["dataset"]), escape_text(r["method"]), escape_text(r["variant"]), str(int(r["n_seeds"]))]
        for m in metrics:
            cells.append(format_mean_std(r[f"{m}_mean"], r[f"{m}_std"], digits))
            cells.append("reference" if is_ref else format_difference(
                r[f"{m}_diff"], r[f"{m}_diff_lo"], r[f"{m}_diff_hi"], int(r["n_paired"]), digits))
        lines.append("| " + " | ".join(cells) + " |")
    note = (f"\nAccuracy in % on the test set, mean ± sd over seeds. Δ: difference to {escape_text(reference)} "
            f"({escape_text(reference_variant)}) paired by seed, mean [{level:.0%} t-interval over seeds]. "
            "Easy/medium/hard: thirds of the classes ranked by the reference's per-class accuracy; "
            "All: mean per-class accuracy; Worst class: lowest per-class accuracy.\n")
    return "\n".join(lines) + "\n" + note


def write_results_table(table: pd.DataFrame, csv_path: str | Path, md_path: str | Path, **markdown_args: Any) -> None:
    """The results table as CSV (numbers) and Markdown (formatted), both written atomically."""
    save_csv(table, csv_path)
    save_text(results_markdown(table, **markdown_args), md_path)

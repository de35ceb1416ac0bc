"""The tuning stage's decision: each trial's validation scores, the options chosen by the selection
rule the config states before anything runs (``tune.criterion``), what every other rule would have
chosen, and the expected best score against the number of trials.

Reads what ``mr2 evaluate --split val`` wrote for every trial and for the reference's runs at the
trials' seeds (``<run>/eval_val/``): validation data only, never the test set. The groups are those of
the reference (ERM, untuned): its classes ranked by validation accuracy and cut in thirds.

  trial_table      a row per trial: its searched options (the loss's and the recipe's ``train.<key>``)
                   and validation accuracy (all, easy, medium, hard, worst, top-1; mean over its seeds)
  qualifies        the claim rule's admission: easy ≥ the reference's easy − effect_of_interest (the
                   edge admits), i.e. a trial that keeps the easy classes
  ranks            each trial's rank under a rule: ``hard`` (the hard group, ties by all classes, then
                   the lower trial), ``all`` (the reverse) or ``claim`` (among the admitted trials the
                   best hard group; where none is admitted, the best accuracy of all classes)
  choose           ``rank`` and ``chosen`` under the config's rule, and ``chosen_<rule>`` for every rule
  expected_max     the expected best score of n trials drawn without replacement from the N run
                   (Tang et al. 2020's unbiased estimator); ``budget_table`` for n = 1..N
  reference_groups the reference's per-class validation accuracy and each class's group
  write_tuning     tuning.csv, chosen.yaml (the choice, every other rule's, the effect of interest and
                   the SHA-256 of tuning.csv: the final runs check it, ``mr2.pipeline.runs.read_chosen``),
                   reference_groups.csv, budget.csv, tuning.md and the figure tuning.{png,pdf}; every
                   check is made before anything is written
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from ..common.io import save_csv, save_text  # noqa: E402
from ..common.runs import DEFAULT_VARIANT  # noqa: E402
from ..common.tuning import TRIALS_DIGEST, file_sha256, option_column, trial_index  # noqa: E402
from .groups import difficulty_table  # noqa: E402
from .plotting import display_name, method_colour, panels, save_figure  # noqa: E402
from .tables import per_run_metrics  # noqa: E402

#: criterion -> (the validation metric maximised, the tie-break); the config key ``tune.criterion``.
#: ``claim``: among the trials that keep the easy group (``qualifies``) the best hard group, else the best
#: of all classes (``ranks``); its two metrics are those of the admitted trials
CRITERIA = {"hard": ("hard", "all"), "all": ("all", "hard"), "claim": ("hard", "all")}
SCORES = ["all", "easy", "medium", "hard", "worst", "top1"]
SEARCHED = "config.tags.searched"  # the options a trial's search drew (a JSON list in its run config's tags)


def plain(value):
    """A table cell as a plain Python number (numpy's int64 of a searched ``train.epochs`` is not JSON)."""
    return value.item() if hasattr(value, "item") else value


def trial_table(per_class: pd.DataFrame, runs: pd.DataFrame, reference: str = "erm",
                reference_variant: str = DEFAULT_VARIANT) -> pd.DataFrame:
    """A row per dataset × method × trial variant: ``trial`` (its index), ``options`` (JSON of the
    searched options and their values), n_seeds and each of ``SCORES`` in percent, mean over the
    trial's seeds. Easy/medium/hard: thirds of the classes ranked by the reference's (default
    variant's) validation accuracy, mean over its seeds (``difficulty_table``). Runs that are no
    trial, and any run of the reference (never tuned), give no row. A trial without the searched-options tag is an error naming it.
    ``diverged``: a seed of the trial diverged (its validation scores are 0, ``mr2.engine.evaluate``)."""
    groups = difficulty_table(per_class, reference, reference_variant)
    scores = per_run_metrics(per_class, runs, groups)
    keys = ["dataset", "method", "variant"]
    scores = scores[scores["variant"].map(trial_index).notna() & scores["method"].ne(reference)]
    if scores.empty:
        return pd.DataFrame(columns=[*keys, "trial", "options", "n_seeds", *SCORES])
    info = runs.drop_duplicates(keys).set_index(keys)
    failed = runs[runs[DIVERGED].notna()] if DIVERGED in runs else runs.iloc[:0]  # a seed that diverged
    diverged = set(failed[keys].itertuples(index=False, name=None))
    rows = []
    for (dataset, method, variant), frame in scores.groupby(keys, sort=False):
        run = info.loc[(dataset, method, variant)]
        if SEARCHED not in run or not isinstance(run[SEARCHED], str):
            raise ValueError(f"trial {dataset}/{method}/{variant} has no searched options "
                             f"({SEARCHED}) in its run config; run it from a config with a 'tune' section")
        searched = json.loads(run[SEARCHED])
        options = {name: plain(run[option_column(name)]) for name in searched}
        row = {"dataset": dataset, "method": method, "variant": variant, "trial": trial_index(variant),
               "options": json.dumps(options, sort_keys=True), "n_seeds": len(frame)}
        row.update({m: 100 * frame[m].mean() for m in SCORES if m in frame})
        # a trial whose training diverged (mr2.engine.train.record_divergence): scored 0, its worst draw
        row["diverged"] = (dataset, method, variant) in diverged
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["dataset", "method", "trial"], kind="stable").reset_index(drop=True)


#: the runs-table column a diverged run's config holds (the epoch it diverged in)
DIVERGED = "config.diverged.epoch"


def qualifies(trials: pd.DataFrame, reference_easy: pd.Series, effect: float) -> pd.Series:
    """The claim rule's admission: a trial whose validation easy-group accuracy is at most ``effect``
    points below the reference's on its dataset (easy ≥ reference easy − effect; the edge admits),
    i.e. one that keeps the easy classes, as the paper's claim asks."""
    floor = trials["dataset"].map(reference_easy) - effect
    return trials["easy"].ge(floor) & floor.notna()


def ranks(trials: pd.DataFrame, criterion: str, reference_easy: pd.Series | None = None,
          effect: float = 1.0) -> pd.Series:
    """Each trial's rank (1 = chosen) within its dataset and method under ``criterion``:

    - ``hard``: highest validation hard-group accuracy, ties by all classes, then the lower trial;
    - ``all``: highest validation accuracy of all classes, ties by the hard group, then the lower trial;
    - ``claim``: the trials that keep the easy classes (``qualifies``: easy ≥ the reference's − effect)
      first, ranked as ``hard``; after them the others, ranked as ``all``. So the chosen trial is the
      admitted one with the best hard group, or, where none is admitted, the one with the best
      accuracy of all classes (on balanced validation data, the mean per-class accuracy)."""
    if criterion not in CRITERIA:
        raise ValueError(f"config key 'tune.criterion': one of {sorted(CRITERIA)}, got {criterion!r}")
    frame = trials.copy()
    if criterion == "claim":
        if reference_easy is None:
            raise ValueError("tune criterion 'claim' needs the reference's validation easy-group accuracy")
        admitted = qualifies(frame, reference_easy, effect)
        frame["_first"] = admitted.astype(int)
        frame["_second"] = frame["hard"].where(admitted, frame["all"])
        frame["_third"] = frame["all"].where(admitted, frame["hard"])
    else:
        first, second = CRITERIA[criterion]
        frame["_first"], frame["_second"], frame["_third"] = 0, frame[first], frame[second]
    order = frame.sort_values(["dataset", "method", "_first", "_second", "_third", "trial"],
                              ascending=[True, True, False, False, False, True], kind="stable")
    return order.groupby(["dataset", "method"], sort=False).cumcount().add(1).reindex(frame.index)


def choose(trials: pd.DataFrame, criterion: str = "hard", reference_easy: pd.Series | None = None,
           effect: float = 1.0) -> pd.DataFrame:
    """``trials`` with columns ``rank`` and ``chosen`` (rank 1) under ``criterion`` (``ranks``), and
    ``chosen_<c>`` for every criterion c of ``CRITERIA`` (what each rule would have picked; the claim
    rule's only where ``reference_easy``, per dataset, is given), per dataset and method."""
    if criterion not in CRITERIA:
        raise ValueError(f"config key 'tune.criterion': one of {sorted(CRITERIA)}, got {criterion!r}")
    if "diverged" in trials and len(trials):
        failed = trials.groupby(["dataset", "method"])["diverged"].all()
        if failed.any():
            dataset, method = failed[failed].index[0]
            raise ValueError(f"tuning {dataset}/{method}: every trial diverged, so none can be chosen; narrow "
                             f"'tune.space.{method}' or lower train.lr")
    out = trials.copy()
    if out.empty:
        return out.assign(rank=pd.Series(dtype=int), chosen=pd.Series(dtype=bool))
    out["rank"] = ranks(out, criterion, reference_easy, effect)
    out["chosen"] = out["rank"].eq(1)
    if reference_easy is not None:
        out["admitted"] = qualifies(out, reference_easy, effect)
    for name in CRITERIA:
        if name == "claim" and reference_easy is None:
            continue
        out[f"chosen_{name}"] = ranks(out, name, reference_easy, effect).eq(1)
    return out


def expected_max(values, n: int) -> float:
    """The expected maximum of ``n`` values drawn without replacement from the N ``values``
    (Tang, Kim, Xu, Yu, Gimpel, Livescu, "Showing your work doesn't always work", ACL 2020, unbiased
    estimator): with v_(1) ≤ … ≤ v_(N) sorted,

        E[max_n] = Σ_{i=n}^{N} C(i−1, n−1) / C(N, n) · v_(i)

    (v_(i) is the maximum of a draw exactly when it holds v_(i) and n − 1 of the i − 1 smaller ones).
    n = 1 gives the mean, n = N the maximum. NaN values are left out; n outside 1..N is an error."""
    v = np.sort(np.asarray([x for x in values if not math.isnan(float(x))], dtype=float))
    big_n = len(v)
    if not 1 <= n <= big_n:
        raise ValueError(f"expected_max: n must be in 1..{big_n}, got {n}")
    weights = np.array([math.comb(i - 1, n - 1) for i in range(1, big_n + 1)], dtype=float) / math.comb(big_n, n)
    return float(weights @ v)


def other_criterion(criterion: str) -> str:
    """The criterion whose metric ``budget_table`` shows beside ``criterion``'s: all classes for the hard
    group (and the claim rule), the hard group for all classes."""
    return "hard" if CRITERIA[criterion][0] == "all" else "all"


def budget_table(trials: pd.DataFrame, criterion: str = "hard") -> pd.DataFrame:
    """Per dataset, method and budget n = 1..N (N its trials): the expected best validation score of
    the criterion's metric (``expected_max``) and of the other criterion's (``expected_max_other``)."""
    first = CRITERIA[criterion][0]
    other = CRITERIA[other_criterion(criterion)][0]
    rows = []
    for (dataset, method), frame in trials.groupby(["dataset", "method"], sort=False):
        for n in range(1, len(frame) + 1):
            rows.append({"dataset": dataset, "method": method, "n": n, "metric": first,
                         "expected_max": expected_max(frame[first], n),
                         "metric_other": other, "expected_max_other": expected_max(frame[other], n)})
    return pd.DataFrame(rows, columns=["dataset", "method", "n", "metric", "expected_max", "metric_other",
                                       "expected_max_other"])


def chosen_options(trials: pd.DataFrame, column: str = "chosen") -> dict[str, dict[str, dict]]:
    """{dataset: {method: options}} of the trials marked in ``column``."""
    out: dict[str, dict[str, dict]] = {}
    for _, r in trials[trials[column]].iterrows():
        out.setdefault(r["dataset"], {})[r["method"]] = json.loads(r["options"])
    return out


def reference_scores(per_class: pd.DataFrame, runs: pd.DataFrame, reference: str = "erm",
                     reference_variant: str = DEFAULT_VARIANT) -> pd.DataFrame:
    """The reference's validation scores per dataset (percent, mean over its seeds), on the same groups."""
    groups = difficulty_table(per_class, reference, reference_variant)
    scores = per_run_metrics(per_class, runs, groups)
    scores = scores[scores["method"].eq(reference) & scores["variant"].eq(reference_variant)]
    return (scores.groupby("dataset", sort=False)[[m for m in SCORES if m in scores]].mean() * 100).reset_index()


def plot_budget(budget: pd.DataFrame, reference: pd.DataFrame, reference_name: str, stem: str | Path) -> list[Path]:
    """One panel per dataset: the expected best validation score of each method against the number
    of trials (``budget_table``), the reference's validation score as a dashed line."""
    datasets = list(budget["dataset"].unique())
    fig, axes = panels(max(1, len(datasets)))
    for ax, dataset in zip(axes.flat, datasets):
        here = budget[budget["dataset"] == dataset]
        metric = here["metric"].iloc[0]
        for method, frame in here.groupby("method", sort=False):
            ax.plot(frame["n"], frame["expected_max"], marker="o", color=method_colour(method),
                    label=display_name(method))
        ref = reference[reference["dataset"] == dataset]
        if len(ref) and metric in ref:
            ax.axhline(float(ref[metric].iloc[0]), color="grey", linestyle="--", label=f"{reference_name} (untuned)")
        ax.set_title(dataset)
        ax.set_xlabel("trials")
        ax.set_ylabel(f"expected best validation accuracy, {metric} classes (%)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize="small")
    return save_figure(fig, stem)


#: how each criterion reads in tuning.md
RULES = {
    "hard": "the highest validation accuracy of the hard group, ties by all classes",
    "all": "the highest validation accuracy of all classes (the mean per-class accuracy: validation is "
           "balanced), ties by the hard group",
    "claim": "among the trials whose validation easy-group accuracy is at most {effect:g} point(s) "
             "(effect_of_interest) below {reference}'s, the highest validation hard-group accuracy (ties by all "
             "classes); where no trial is admitted, the highest accuracy of all classes",
}


def reference_groups(per_class: pd.DataFrame, reference: str = "erm",
                     reference_variant: str = DEFAULT_VARIANT) -> pd.DataFrame:
    """The table that defines the validation groups: per dataset and class the reference's validation
    accuracy (percent, mean over its seeds), the class's name and its group (``difficulty_table``)."""
    groups = difficulty_table(per_class, reference, reference_variant)
    ref = per_class[per_class["method"].eq(reference) & per_class["variant"].eq(reference_variant)]
    keys = ["dataset", "class"] + (["class_name"] if "class_name" in ref else [])
    acc = (ref.groupby(keys, dropna=False)["accuracy"].mean() * 100).rename("val_accuracy").reset_index()
    out = acc.merge(groups, on=["dataset", "class"], how="left")
    return out.sort_values(["dataset", "val_accuracy", "class"], kind="stable").reset_index(drop=True)


def tuning_markdown(trials: pd.DataFrame, criterion: str, reference: pd.DataFrame, reference_name: str,
                    groups: pd.DataFrame | None = None, effect: float = 1.0) -> str:
    """The tuning's summary: the selection rule, per dataset and method the chosen options and their
    validation scores, what each other rule would have picked, and the size of each validation group."""
    first, second = CRITERIA[criterion]
    others = [c for c in CRITERIA if c != criterion and f"chosen_{c}" in trials]
    lines = ["| Dataset | Method | Trials | Chosen options | Validation easy | Validation " + first + " | Validation "
             + second + " | " + " | ".join(f"The {c!r} rule would pick" for c in others) + " |",
             "|---|---|---:|---|---:|---:|---:|" + "---|" * len(others)]
    for (dataset, method), frame in trials.groupby(["dataset", "method"], sort=False):
        pick = frame[frame["chosen"]].iloc[0]
        alts = []
        for c in others:
            alt = frame[frame[f"chosen_{c}"]].iloc[0]
            alts.append("the same" if alt["trial"] == pick["trial"] else _options_text(alt["options"]))
        failed = int(frame["diverged"].sum()) if "diverged" in frame else 0
        admitted = f", {int(frame['admitted'].sum())} admitted" if criterion == "claim" and "admitted" in frame else ""
        lines.append(f"| {dataset} | {method} | {len(frame)}{f' ({failed} diverged)' if failed else ''}{admitted} | "
                     f"{_options_text(pick['options'])} | {pick['easy']:.1f} | "
                     f"{pick[first]:.1f} | {pick[second]:.1f} | " + " | ".join(alts) + " |")
    ref = "; ".join(f"{r['dataset']}: easy {r['easy']:.1f}, {first} {r[first]:.1f}, {second} {r[second]:.1f}"
                    for _, r in reference.iterrows())
    sizes = ""
    if groups is not None and len(groups):
        counts = groups.groupby("dataset", sort=False)["group"].value_counts()
        sizes = " ".join(
            f"On {d}, of {int(counts[d].sum())} classes the hard group holds {int(counts[d].get('hard', 0))}, the "
            f"medium {int(counts[d].get('medium', 0))} and the easy {int(counts[d].get('easy', 0))} "
            "(reference_groups.csv lists each class's validation accuracy and group)."
            for d in counts.index.get_level_values(0).unique())
    rule = RULES[criterion].format(effect=effect, reference=reference_name)
    return ("\n".join(lines) + f"\n\nValidation accuracy in %, mean over the trial's seeds; {reference_name} "
            f"(not tuned) on the same split: {ref}. Groups: the classes ranked by {reference_name}'s validation "
            f"accuracy and cut in thirds, the extra classes going to the hard, then the medium group. {sizes} "
            f"Selection rule ({criterion!r}): {rule}. A trial whose training diverged scores 0 (it counts as "
            "the worst draw of the search and is never chosen).\n")


def _options_text(options: str) -> str:
    return ", ".join(f"{k} = {v:g}" if isinstance(v, (int, float)) else f"{k} = {v}"
                     for k, v in json.loads(options).items()) or "its defaults"


def write_tuning(per_class: pd.DataFrame, runs: pd.DataFrame, out_dir: str | Path, criterion: str = "hard",
                 reference: str = "erm", effect: float = 1.0) -> dict[str, dict]:
    """``<out_dir>/tuning.csv`` (every trial, its options, validation scores and ranks), ``chosen.yaml``
    (the criterion, per method the options it chose and those each other rule would have, and the
    SHA-256 of the tuning.csv it was chosen from), ``reference_groups.csv`` (the reference's per-class
    validation accuracy and groups), ``budget.csv``, ``tuning.md`` and the figure ``tuning.{png,pdf}``;
    returns the record of the (single) dataset. Everything is checked before anything is written."""
    out = Path(out_dir)
    if criterion not in CRITERIA:
        raise ValueError(f"config key 'tune.criterion': one of {sorted(CRITERIA)}, got {criterion!r}")
    table = trial_table(per_class, runs, reference)
    if table.empty:
        raise ValueError("tune: no trial among the runs given (variants trial<i> evaluated on the validation split)")
    datasets = list(table["dataset"].unique())
    if len(datasets) != 1:
        raise ValueError(f"tune: the trials given belong to {len(datasets)} datasets ({datasets}); tune one at a time")
    ref = reference_scores(per_class, runs, reference)
    trials = choose(table, criterion, ref.set_index("dataset")["easy"], effect)
    budget = budget_table(trials, criterion)
    groups = reference_groups(per_class, reference)
    chosen = chosen_options(trials)
    others = {c: chosen_options(trials, f"chosen_{c}").get(datasets[0], {}) for c in CRITERIA
              if c != criterion and f"chosen_{c}" in trials}
    record = {"dataset": datasets[0], "criterion": criterion, "reference": reference, "effect_of_interest": effect,
              "methods": chosen[datasets[0]], "other_criteria": others}
    save_csv(trials, out / "tuning.csv")
    record[TRIALS_DIGEST] = file_sha256(out / "tuning.csv")
    save_csv(budget, out / "budget.csv")
    save_csv(groups, out / "reference_groups.csv")
    save_text(tuning_markdown(trials, criterion, ref, reference, groups, effect), out / "tuning.md")
    save_text(yaml.safe_dump(record, sort_keys=True), out / "chosen.yaml")
    plot_budget(budget, ref, reference, out / "tuning")
    return record

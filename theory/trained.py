"""Corollary 1 on trained models from their per-class table alone: a_k of the final model's training
features and γ_k, the margins it was trained with (``per_class.csv`` of the pipeline's aggregate step,
which every committed snapshot holds). No head norm Λ, no training margin risk and no logits are
needed, so this reads a run set whose runs table was not kept; ``theory.pipeline`` evaluates the
whole bound where it was.

Per run (``margin_terms``), with the bound's a_k (+1 with a bias, ``theory.bound.augmented_variability``)
where the bound is concerned and the loss's a_k (no +1) where the margins are:

  c_bar                     the mean margin mean_k γ_k: Corollary 1's γ and uniform γ have mean c̄ by
                            construction, γ ≡ 1 has mean 1 (the configured c̄ ``theory.pipeline`` reads)
  margin_sum                Σ_k a_k/γ_k² (the bound's a_k): the complexity term is
                            (4√2·Λ·K/√N)·sqrt(margin_sum), so at equal Λ and N two runs' terms compare
                            as the square roots of their margin sums
  complexity_ratio          the complexity term with Corollary 1's γ over the one with uniform γ = c̄ on
                            the run's a_k (``theory.bound.complexity_advantage``; ≤ 1)
  complexity_ratio_trained  the same for the γ the run was trained with
  exponent                  e of γ_k ∝ a_k^e: the least-squares slope of log γ_k on log a_k over the
                            classes (1/3 for Corollary 1's γ, 0 for equal margins)
  deviation                 max_k |γ_k/γ̂_k − 1|, γ̂ Corollary 1's γ on the final a_k at the run's c̄
                            (``theory.corollary.cube_root_margins``): how far the trained margins are
                            from the ones the final model's statistics give
  gamma_spread, a_spread    max_k γ_k / min_k γ_k and max_k a_k / min_k a_k
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .bound import augmented_variability, complexity_advantage
from .corollary import cube_root_margins

RUN_KEYS = ["dataset", "method", "variant", "seed"]
COLUMNS = RUN_KEYS + ["num_classes", "head_bias", "c_bar", "margin_sum", "complexity_ratio",
                      "complexity_ratio_trained", "exponent", "deviation", "gamma_spread", "a_spread"]


def run_margin_terms(a, gamma, bias: bool) -> dict[str, float]:
    """The columns of ``margin_terms`` (past the run's keys) for one run's a_k and γ_k."""
    a, gamma = np.asarray(a, dtype=np.float64), np.asarray(gamma, dtype=np.float64)
    if a.shape != gamma.shape or a.ndim != 1 or not (gamma > 0).all() or not (a > 0).all():
        raise ValueError(f"margin terms: need as many positive a_k as positive γ_k, got a={a.tolist()}, "
                         f"γ={gamma.tolist()}")
    c_bar = float(gamma.mean())
    a_bound = augmented_variability(a).numpy() if bias else a
    margin_sum = float((a_bound / gamma**2).sum())
    advantage = complexity_advantage(a_bound, c_bar)
    equal = np.ptp(gamma) <= 1e-12 * c_bar  # γ ≡ c̄: e = 0 exactly (a fit would leave rounding noise)
    return {"num_classes": len(a), "head_bias": bool(bias), "c_bar": c_bar, "margin_sum": margin_sum,
            "complexity_ratio": advantage["ratio"],
            "complexity_ratio_trained": math.sqrt(margin_sum / advantage["uniform"]),
            "exponent": 0.0 if equal else float(np.polyfit(np.log(a), np.log(gamma), 1)[0]),
            "deviation": float(np.abs(gamma / cube_root_margins(a, c_bar) - 1).max()),
            "gamma_spread": float(gamma.max() / gamma.min()), "a_spread": float(a.max() / a.min())}


def margin_terms(per_class: pd.DataFrame, bias: bool = True) -> pd.DataFrame:
    """A row per run of ``per_class`` (its order) with every column of ``COLUMNS``. ``bias``: the
    heads have a bias, so the bound's a_k are a_k + 1 (the engine's linear head has one, its cosine
    head none; the runs table records it per run as ``head_bias``, the per-class table does not)."""
    missing = [c for c in RUN_KEYS + ["class", "a", "gamma"] if c not in per_class]
    if missing:
        raise ValueError(f"per_class.csv: missing column(s) {missing}")
    rows = [{**dict(zip(RUN_KEYS, key)), **run_margin_terms(run.sort_values("class")["a"],
                                                            run.sort_values("class")["gamma"], bias)}
            for key, run in per_class.groupby(RUN_KEYS, sort=False)]
    return pd.DataFrame(rows, columns=COLUMNS)


def normalised_margins(per_class: pd.DataFrame) -> pd.DataFrame:
    """Corollary 1 as one line for every run: a row per run and class with x = a_k^{1/3} / mean_j
    a_j^{1/3} and y = γ_k / mean_j γ_j. Corollary 1's γ lie on y = x, equal margins on y = 1."""
    frame = per_class[RUN_KEYS + ["class", "a", "gamma"]].copy()
    by_run = [frame[k] for k in RUN_KEYS]
    root = np.cbrt(frame["a"].astype(float))
    frame["x"] = root / root.groupby(by_run).transform("mean")
    frame["y"] = frame["gamma"] / frame["gamma"].groupby(by_run).transform("mean")
    return frame.reset_index(drop=True)

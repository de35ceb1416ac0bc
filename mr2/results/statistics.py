"""The statistics of the results layer: t-intervals over seeds and rank correlations across classes.

One t-interval for the whole project (``t_interval``): the paired differences of the results table
and the seed intervals of the premise analysis both use it.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

LEVEL = 0.95


def t_interval(values: Iterable[float], level: float = LEVEL) -> dict[str, float]:
    """Mean of the finite ``values`` with the t-interval mean ± t_{(1+level)/2, n−1}·sd/√n (sd with
    n − 1); n counts the finite values. With n < 2 the interval is NaN (and with n = 0 the mean)."""
    v = np.asarray([float(x) for x in values], dtype=float)
    v = v[np.isfinite(v)]
    n = len(v)
    mean = float(v.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "lo": math.nan, "hi": math.nan, "n": n}
    half = float(stats.t.ppf((1 + level) / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def paired_difference(values: np.ndarray, reference: np.ndarray, level: float = LEVEL) -> dict[str, float]:
    """Mean paired difference d̄ = mean(x_s − r_s) over seeds s, with its ``t_interval``
    d̄ ± t_{(1+level)/2, n−1} · sd(d)/√n. With n = 1 the interval is NaN."""
    d = np.asarray(values, dtype=float) - np.asarray(reference, dtype=float)
    iv = t_interval(d, level)
    return {"diff": iv["mean"], "diff_lo": iv["lo"], "diff_hi": iv["hi"], "n_paired": len(d)}


def verdict(diff: float, lo: float, hi: float) -> str:
    """'higher' / 'lower' when the interval excludes 0, else 'no clear difference'; undetermined
    without an interval or with one of zero width (every seed the same difference: no spread)."""
    if any(math.isnan(v) for v in (diff, lo, hi)) or not hi - lo > 1e-9 * max(1.0, abs(diff)):
        return "undetermined (too few seeds for an interval)"
    if lo > 0:
        return "higher"
    if hi < 0:
        return "lower"
    return "no clear difference"


def spearman(x: Iterable[float], y: Iterable[float]) -> float:
    """Spearman's ρ = corr(rank(x), rank(y)), the Pearson correlation of average ranks (ties
    share their mean rank), over the pairs where both are finite. NaN when fewer than 3 pairs
    remain or either side is constant."""
    frame = pd.DataFrame({"g": 0, "x": np.asarray(list(x), dtype=float), "y": np.asarray(list(y), dtype=float)})
    return float(grouped_spearman(frame, ["g"], "x", "y")["rho"].iloc[0]) if len(frame) else math.nan


def grouped_spearman(frame: pd.DataFrame, keys: Sequence[str], x: str, y: str) -> pd.DataFrame:
    """``spearman(x, y)`` within every group of ``keys``, vectorised: ranks per group, then
    Σ r̃_x r̃_y / √(Σ r̃_x² Σ r̃_y²) with r̃ = rank − its group mean. Returns keys, rho, n."""
    keys = list(keys)
    data = frame[keys + [x, y]].copy()
    data[x], data[y] = data[x].astype(float), data[y].astype(float)
    data = data[np.isfinite(data[x]) & np.isfinite(data[y])]
    grouped = data.groupby(keys, sort=False, dropna=False)
    rx = grouped[x].rank(method="average")
    ry = grouped[y].rank(method="average")
    data["rx"] = rx - rx.groupby([data[k] for k in keys], sort=False, dropna=False).transform("mean")
    data["ry"] = ry - ry.groupby([data[k] for k in keys], sort=False, dropna=False).transform("mean")
    data["xy"], data["xx"], data["yy"] = data["rx"] * data["ry"], data["rx"] ** 2, data["ry"] ** 2
    sums = data.groupby(keys, sort=False, dropna=False).agg(xy=("xy", "sum"), xx=("xx", "sum"), yy=("yy", "sum"),
                                                             n=("xy", "size"))
    den = np.sqrt(sums["xx"] * sums["yy"])
    tol = 1e-12 * np.maximum(1.0, sums["n"].astype(float) ** 3)  # rank sums of squares are ~n³
    rho = (sums["xy"] / den.where(den > tol)).clip(-1.0, 1.0)
    rho[sums["n"] < 3] = math.nan
    out = sums[["n"]].assign(rho=rho.astype(float)).reset_index()
    every = frame[keys].drop_duplicates()  # groups with no finite pair: rho NaN, n 0
    out = every.merge(out, on=keys, how="left")
    out["n"] = out["n"].fillna(0).astype(int)
    return out[keys + ["rho", "n"]]


#: the fewest distinct per-seed values whose spread a seed interval may rest on
MIN_DISTINCT = 3


def seed_interval(values: Iterable[float], level: float = LEVEL) -> dict[str, float]:
    """Mean of per-seed correlations with their ``t_interval`` clipped to [−1, 1]; NaN values are
    left out (n = the defined ones). Fewer than ``MIN_DISTINCT`` distinct defined values (one seed,
    two seeds, or seeds that agree, down to an interval of zero width): no interval (NaN), so no
    verdict rests on a spread the seeds cannot show."""
    iv = t_interval(values, level)
    finite = {round(float(v), 9) for v in values if math.isfinite(float(v))}  # equal up to rounding
    if len(finite) < MIN_DISTINCT:
        iv["lo"], iv["hi"] = math.nan, math.nan
    elif iv["n"] >= 2:
        iv["lo"], iv["hi"] = max(-1.0, iv["lo"]), min(1.0, iv["hi"])
    return iv

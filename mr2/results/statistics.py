"""The statistics of the results layer: t-intervals over seeds, the power of a paired comparison,
rank correlations across classes, and the words a finding earns from its interval.

One t-interval for the whole project (``t_interval``): the paired differences of the results table
and the seed intervals of the premise analysis both use it. The numbers behind the verdict words —
paired differences with their 95 % and the two one-sided tests' 90 % intervals, p-values, Holm's
adjustment ``holm``, the minimum detectable effect — are computed here; the words a comparison and a
part of the claim earn are decided in ``mr2.results.rules``. ``verdict`` reads an interval (higher /
lower / no clear difference), ``correlation_verdict`` a correlation ("not shown" when its interval
contains 0, "uninformative" when it is as wide as [−1, +1]) and ``one_of_many`` a few significant
classes among many comparisons.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, stats

LEVEL = 0.95
POWER = 0.8  # the power at which the minimum detectable effect is stated
#: the smallest paired change (points) worth detecting, when a caller gives none (the config key
#: ``effect_of_interest``; config/README.md gives the reason)
EFFECT_OF_INTEREST = 1.0
#: the two one-sided tests at α = 1 − LEVEL each use the (1 − 2α) = 90 % interval
EQUIVALENCE_LEVEL = 1 - 2 * (1 - LEVEL)


def t_interval(values: Iterable[float], level: float = LEVEL) -> dict[str, float]:
    """Mean of the finite ``values`` with the t-interval mean ± t_{(1+level)/2, n−1}·sd/√n (sd with
    n − 1); n counts the finite values. With n < 2 the interval is NaN (and with n = 0 the mean)."""
    v = np.asarray([float(x) for x in values])
    v = v[np.isfinite(v)]
    n = len(v)
    mean = float(v.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "lo": math.nan, "hi": math.nan, "n": n}
    half = float(stats.t.ppf((1 + level) / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def paired_difference(values: np.ndarray, reference: np.ndarray, level: float = LEVEL) -> dict[str, float]:
    """Mean paired difference d̄ = mean(x_s − r_s) over seeds s, with its ``t_interval``
    d̄ ± t_{(1+level)/2, n−1} · sd(d)/√n, the paired sd(d) (n − 1) as ``diff_sd`` and the
    ``minimum_detectable_effect`` of a test at α = 1 − level as ``mde``. With n = 1 the interval,
    the sd and the MDE are NaN."""
    d = np.asarray(values, dtype=float) - np.asarray(reference, dtype=float)
    iv = t_interval(d, level)
    eq = t_interval(d, 1 - 2 * (1 - level))  # the two one-sided tests' interval (90 % at level 95 %)
    sd = float(np.std(d[np.isfinite(d)], ddof=1)) if iv["n"] >= 2 else math.nan
    return {"diff": iv["mean"], "diff_lo": iv["lo"], "diff_hi": iv["hi"], "n_paired": len(d), "diff_sd": sd,
            "mde": minimum_detectable_effect(sd, iv["n"], alpha=1 - level), "eq_lo": eq["lo"], "eq_hi": eq["hi"],
            "p_value": paired_p_value(iv["mean"], sd, iv["n"])}


def paired_p_value(diff: float, sd: float, n: int) -> float:
    """Two-sided p-value of the paired t-test of mean difference 0: 2·P(T > |d̄|/(sd/√n)), T ~ t(n − 1).
    NaN with n < 2 or no sd; with sd = 0, 1 when d̄ = 0 and 0 otherwise."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    if sd == 0:
        return 1.0 if diff == 0 else 0.0
    return float(2 * stats.t.sf(abs(diff) / (sd / math.sqrt(n)), n - 1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values of one family of m tests: with p_(1) ≤ … ≤ p_(m) sorted,
    p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j)); a test rejects at α when p̃ < α, which controls the
    family-wise error rate at α. NaN p-values are left out of the family (and stay NaN)."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(len(p), math.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


@lru_cache(maxsize=None)
def _noncentrality(n: int, alpha: float, power: float) -> float:
    """The noncentrality δ with P(|T| > t_{1−α/2, n−1}) = power for T ~ t'(n − 1, δ) (see
    ``minimum_detectable_effect``), by bracketing and Brent's method."""
    df = n - 1
    crit = float(stats.t.ppf(1 - alpha / 2, df))

    def excess(delta: float) -> float:  # P(T < −c) for T ~ t'(df, δ) is P(T' > c) for T' = −T ~ t'(df, −δ):
        # scipy's nct.cdf returns NaN for some tiny lower tails (df = 1, δ = 8), its sf does not
        return float(stats.nct.sf(crit, df, delta) + stats.nct.sf(crit, df, -delta)) - power

    high = 1.0
    while excess(high) < 0:
        high *= 2
    return float(optimize.brentq(excess, 0.0, high, xtol=1e-10))


def minimum_detectable_effect(sd: float, n: int, alpha: float = 1 - LEVEL, power: float = POWER) -> float:
    """The smallest true mean paired difference Δ that a two-sided paired t-test at level ``alpha``
    detects with probability ``power``, from the sd of the n paired differences.

    With d_1..d_n ~ N(Δ, sd²) the statistic T = d̄ / (sd/√n) follows a noncentral t distribution
    with n − 1 degrees of freedom and noncentrality δ = Δ √n / sd; the test rejects when
    |T| > t_{1−α/2, n−1}. The power is
        π(δ) = P(T > t_{1−α/2, n−1}) + P(T < −t_{1−α/2, n−1}),  T ~ t'(n − 1, δ)
             = sf(t_{1−α/2, n−1}; n − 1, δ) + sf(t_{1−α/2, n−1}; n − 1, −δ)   (scipy.stats.nct),
    increasing in δ ≥ 0; δ* solves π(δ*) = power (a root finder, exact up to 1e-10), and
        MDE = δ* · sd / √n
    (for large n, δ* → z_{1−α/2} + z_{power}: 2.80 at α = 0.05, 80 % power). NaN with n < 2 (no
    test) or an undefined sd; 0 with sd = 0 (any change is then detected)."""
    if n < 2 or sd is None or not math.isfinite(sd):
        return math.nan
    if sd == 0:
        return 0.0
    return _noncentrality(int(n), float(alpha), float(power)) * abs(float(sd)) / math.sqrt(n)


def seeds_needed(sd: float, target: float, alpha: float = 1 - LEVEL, power: float = POWER, most: int = 10_000) -> int:
    """The fewest paired seeds n ≥ 2 whose ``minimum_detectable_effect`` at paired sd ``sd`` is at
    most ``target`` (MDE falls with n: δ*(n)/√n decreases); an error past ``most`` seeds."""
    for n in range(2, most + 1):
        if minimum_detectable_effect(sd, n, alpha, power) <= target:
            return n
    raise ValueError(f"more than {most} seeds needed to detect {target} at paired sd {sd}")


def verdict(diff: float, lo: float, hi: float) -> str:
    """'higher' / 'lower' when the interval excludes 0, else 'no clear difference'; undetermined
    without an interval, or with one of zero width away from 0 (every seed the same nonzero
    difference: no spread to test against). An interval of zero width at 0 is every seed the same
    value for both methods (identical runs, e.g. a loss that equals cross-entropy on balanced
    classes): 'no clear difference', there is none."""
    if any(math.isnan(v) for v in (diff, lo, hi)):
        return "undetermined (too few seeds for an interval)"
    tol = 1e-9 * max(1.0, abs(diff))
    if not hi - lo > tol:
        return "no clear difference" if abs(diff) <= tol else "undetermined (no spread between seeds)"
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
    # a constant x or y has centred ranks exactly 0 (its average rank is a half-integer): 0 / 0 = NaN
    rho = (sums["xy"] / np.sqrt(sums["xx"] * sums["yy"])).clip(-1.0, 1.0)
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
    else:  # three distinct values: three seeds at least
        iv["lo"], iv["hi"] = max(-1.0, iv["lo"]), min(1.0, iv["hi"])
    return iv


def no_interval_reason(n: int) -> str:
    """Why ``seed_interval`` gave ``n`` per-seed values no interval: one seed, or fewer than
    ``MIN_DISTINCT`` distinct values among several."""
    return f"no interval: {n} seed" + (f"s, fewer than {MIN_DISTINCT} distinct values" if n > 1 else "")


# ----------------------------------------------------------------------------- the words a finding earns
#: a correlation's interval at least this wide (of the 2 that [−1, +1] spans) says nothing
UNINFORMATIVE_WIDTH = 1.9


def correlation_verdict(lo: float, hi: float) -> str:
    """The word a correlation's interval [lo, hi] earns: 'holds' (lo > 0), 'reversed' (hi < 0),
    'uninformative' (contains 0 and hi − lo ≥ ``UNINFORMATIVE_WIDTH``: about [−1, +1], which any
    two seeds of noise give), 'not shown' (contains 0 otherwise: never "does not hold", an interval
    containing 0 shows no link either way), 'undetermined' (no interval)."""
    if any(math.isnan(float(v)) for v in (lo, hi)):
        return "undetermined"
    if lo > 0:
        return "holds"
    if hi < 0:
        return "reversed"
    return "uninformative" if is_uninformative(lo, hi) else "not shown"


def is_uninformative(lo: float, hi: float, width: float = UNINFORMATIVE_WIDTH) -> bool:
    """True when a correlation's interval is as wide as [−1, +1]: hi − lo ≥ ``width``."""
    return bool(hi - lo >= width)


def one_of_many(n_significant: int, n_comparisons: int, level: float = LEVEL) -> str | None:
    """A warning when few of ``n_comparisons`` intervals (one per class, say) exclude 0: at the level
    ``level`` about (1 − level)·n of them do so by chance alone, so ``n_significant`` ≤ that count
    (at least 1) is "one of many comparisons", not a finding. None otherwise (none or more)."""
    if n_comparisons < 2 or n_significant == 0:
        return None
    expected = (1 - level) * n_comparisons
    if n_significant > max(1.0, expected):
        return None
    which = "1 interval" if n_significant == 1 else f"{n_significant} intervals"
    return (f"{which} of {n_comparisons} exclude{'s' if n_significant == 1 else ''} 0, about what "
            f"{100 * (1 - level):.0f} % of {n_comparisons} comparisons give by chance "
            f"({expected:.1f} expected): one of many comparisons, not a finding")

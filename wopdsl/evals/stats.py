"""The statistics of an evaluation report, in plain Python (no SciPy).

* :func:`wilson` — the Wilson score interval of a pass rate (Wilson, 1927);
* :func:`bootstrap_mean` — a percentile bootstrap interval of a mean score;
* :func:`mcnemar` — the exact McNemar test of two arms' pass/fail on the same cases (a
  two-sided binomial test on the discordant pairs);
* :func:`paired_bootstrap` — the mean difference of two arms' scores on the same cases, its
  percentile interval and a two-sided p-value (bootstrap of the differences centred on 0).

Bootstraps are seeded: the same data and seed give the same interval, on every machine
(:class:`random.Random` is the same Mersenne Twister everywhere).

Example:
    >>> low, high = wilson(8, 10)
    >>> round(low, 4), round(high, 4)
    (0.4902, 0.9433)
    >>> mcnemar(a_only=0, b_only=6)
    0.03125
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["Z95", "PairedDifference", "bootstrap_mean", "mcnemar", "paired_bootstrap", "wilson"]

Z95: Final = 1.959963984540054
"""The standard normal quantile of 0.975: a 95 % two-sided interval."""


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` successes in ``n`` trials.

    ``(0.0, 1.0)`` when ``n`` is 0 (nothing is known).
    """
    if n <= 0:
        return 0.0, 1.0
    p = passed / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _percentiles(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """The two-sided ``level`` percentile interval of sorted ``values`` (nearest rank)."""
    tail = (1 - level) / 2
    n = len(values)
    low = values[min(n - 1, max(0, math.floor(tail * n)))]
    high = values[min(n - 1, max(0, math.ceil((1 - tail) * n) - 1))]
    return low, high


def bootstrap_mean(scores: Sequence[float], *, resamples: int = 2000,
                   seed: int = 0) -> tuple[float, float]:
    """A 95 % percentile bootstrap interval of the mean of ``scores``.

    A single score (or none) has no spread: the interval is that score (or ``(nan, nan)``).
    """
    data = list(scores)
    if not data:
        return math.nan, math.nan
    if len(data) == 1 or min(data) == max(data):
        return data[0], data[0]
    rng = random.Random(seed)
    n = len(data)
    means = sorted(math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples))
    return _percentiles(means)


def mcnemar(a_only: int, b_only: int) -> float:
    """The two-sided exact McNemar p-value.

    Args:
        a_only: Pairs where arm A passed and arm B failed.
        b_only: Pairs where arm B passed and arm A failed.

    Returns:
        ``min(1, 2 · P(X ≤ min(a_only, b_only)))`` for ``X ~ Binomial(a_only + b_only, ½)``;
        1.0 when there is no discordant pair.
    """
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = math.fsum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return float(min(1.0, 2 * tail))


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Arm A's scores minus arm B's on the same cases."""

    mean: float
    """The mean difference (the effect)."""
    low: float
    """The 95 % interval of the mean difference."""
    high: float
    p_value: float
    """Two-sided: how often a mean at least this far from 0 arises when there is none."""


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, resamples: int = 2000,
                     seed: int = 0) -> PairedDifference:
    """Compare paired scores (``a[i]`` and ``b[i]`` from the same case and repeat).

    The interval resamples the differences; the p-value resamples them centred on 0 (the
    null of no difference) and counts means at least as far from 0 as the one observed,
    ``(1 + count) / (1 + resamples)``.

    Raises:
        ValueError: ``a`` and ``b`` differ in length.
    """
    if len(a) != len(b):
        raise ValueError("paired scores need as many of each")
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if not diffs:
        return PairedDifference(math.nan, math.nan, math.nan, 1.0)
    n = len(diffs)
    observed = math.fsum(diffs) / n
    if min(diffs) == max(diffs):
        # No spread: every resample is the same mean. A constant non-zero difference is as
        # far from "no difference" as the data can say.
        return PairedDifference(observed, observed, observed,
                                1.0 if observed == 0 else 1 / (1 + resamples))
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    low, high = _percentiles(means)
    centred = [d - observed for d in diffs]
    extreme = sum(1 for _ in range(resamples)
                  if abs(math.fsum(rng.choices(centred, k=n)) / n) >= abs(observed) - 1e-12)
    return PairedDifference(observed, low, high, (1 + extreme) / (1 + resamples))

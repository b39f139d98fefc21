"""The report's statistics against values computed by hand (no SciPy here)."""

from __future__ import annotations

import math

import pytest

from wopdsl.evals.stats import bootstrap_mean, mcnemar, paired_bootstrap, wilson


@pytest.mark.parametrize(("passed", "n", "low", "high"), [
    # Wilson score intervals, z = 1.959964: the textbook values (Newcombe, 1998, Table I
    # gives 0.4902-0.9433 for 8/10 … ) and the closed form at the edges.
    (8, 10, 0.4902, 0.9433),
    (9, 10, 0.5958, 0.9821),
    (3, 10, 0.1078, 0.6032),
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (15, 148, 0.0624, 0.1605),
])
def test_wilson_matches_the_closed_form(passed: int, n: int, low: float, high: float) -> None:
    got = wilson(passed, n)
    assert (round(got[0], 4), round(got[1], 4)) == (low, high)


def test_wilson_of_nothing_says_nothing() -> None:
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("a_only", "b_only", "p"), [
    (0, 6, 2 / 64),                       # 2 * (1/2)^6
    (1, 9, 2 * (1 + 10) / 1024),          # 2 * (C(10,0) + C(10,1)) / 2^10
    (3, 3, 1.0),                          # capped at 1
    (0, 0, 1.0),                          # no discordant pair: no evidence
    (2, 12, 2 * (1 + 14 + 91) / 16384),   # 2 * (C(14,0) + C(14,1) + C(14,2)) / 2^14
])
def test_exact_mcnemar_is_a_two_sided_binomial_on_discordant_pairs(a_only: int, b_only: int,
                                                                     p: float) -> None:
    assert mcnemar(a_only, b_only) == pytest.approx(p, rel=1e-12)
    assert mcnemar(b_only, a_only) == mcnemar(a_only, b_only)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    scores = [1, 2, 2, 3, 5, 4, 4, 3, 2, 5]
    first = bootstrap_mean(scores, seed=7)
    assert first == bootstrap_mean(scores, seed=7)
    # The normal approximation by hand: mean 3.1, sd 1.3 (population), se 1.3 / sqrt(10)
    # = 0.411, so 3.1 ± 1.96 · 0.411 = (2.29, 3.91).
    assert first == pytest.approx((2.29, 3.91), abs=0.15)
    assert first == (2.3, 3.9)  # this seed's resamples, on every platform
    assert bootstrap_mean([4, 4, 4]) == (4, 4)
    assert bootstrap_mean([2.5]) == (2.5, 2.5)
    assert all(math.isnan(x) for x in bootstrap_mean([]))


def test_paired_bootstrap_effect_interval_and_p_value() -> None:
    a = [10, 10, 10, 10, 10, 10, 10, 10, 10, 9]
    b = [10, 10, 10, 7, 7, 7, 7, 7, 7, 7]
    diff = paired_bootstrap(a, b, resamples=2000, seed=1)
    assert diff.mean == pytest.approx(2.0)
    assert diff.low <= 2.0 <= diff.high
    assert diff.low >= 0 and diff.high <= 3
    # Centred differences (-2 ×3, +1 ×6, 0) reach |mean| >= 2 only if all ten draws are -2.
    assert diff.p_value == pytest.approx(1 / 2001)
    assert paired_bootstrap(a, b, resamples=2000, seed=1) == diff
    same = paired_bootstrap([3, 4, 5], [3, 4, 5])
    assert (same.mean, same.p_value) == (0.0, 1.0)
    constant = paired_bootstrap([5, 5], [4, 4], resamples=999)
    assert (constant.mean, constant.low, constant.high, constant.p_value) == (1, 1, 1, 1 / 1000)
    noise = paired_bootstrap([1, 3, 2, 4, 3], [2, 2, 3, 3, 3], resamples=2000, seed=3)
    assert noise.p_value > 0.5  # no real difference
    with pytest.raises(ValueError):
        paired_bootstrap([1], [1, 2])

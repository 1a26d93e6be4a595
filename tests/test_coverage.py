"""Coverage of the 95% intervals by simulation (the full table is docs/coverage.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable import ForcedResponse, KaryRR, Warner
from deniable.estimation.common import moment_batch
from deniable.estimation.intervals import prevalence_intervals
from deniable.planning.simulation import simulate_tallies

from .conftest import Z4

S = 10_000
SE = math.sqrt(0.95 * 0.05 / S)  # Monte-Carlo SE of a coverage near 95%


def coverage(design, pi, n, method, rng, category=1):
    counts = simulate_tallies(design, pi, n, S, rng)
    est, var = moment_batch(design, counts)
    low, high = prevalence_intervals(design, counts, method, 0.95, estimate=est, variance=var)
    truth = design.as_prevalence(pi)[category]
    return float(((low[:, category] <= truth) & (truth <= high[:, category])).mean())


@pytest.mark.slow
@pytest.mark.parametrize("method", ["wilson", "jeffreys", "agresti_coull", "normal"])
@pytest.mark.parametrize(("pi", "n"), [(0.02, 1000), (0.3, 100), (0.5, 10_000)])
@pytest.mark.parametrize("design", [ForcedResponse(p_yes=0.25, p_no=0.25), Warner(p=0.7)], ids=repr)
def test_score_intervals_hold_95_within_1_percent(design, pi, n, method, rng):
    # claim: coverage in [0.94, 0.96]; accept a 4-sigma Monte-Carlo band around it
    cov = coverage(design, pi, n, method, rng)
    assert 0.94 - Z4 * SE <= cov <= 0.96 + Z4 * SE


@pytest.mark.slow
@pytest.mark.parametrize(("pi", "n"), [(0.02, 100), (0.5, 100), (0.3, 10_000)])
def test_chebyshev_and_clopper_pearson_never_under_cover(pi, n, rng):
    design = ForcedResponse(p_yes=0.25, p_no=0.25)
    for method in ("chebyshev", "beta"):
        assert coverage(design, pi, n, method, rng) >= 0.95 - Z4 * SE


@pytest.mark.slow
def test_kary_rr_wilson_coverage_per_category(rng):
    design = KaryRR(k=4, epsilon=1.0)
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    for j in range(4):
        cov = coverage(design, pi, 2000, "wilson", rng, category=j)
        assert 0.94 - Z4 * SE <= cov <= 0.96 + Z4 * SE


def test_bayes_credible_interval_covers_for_moderate_n(rng):
    design = ForcedResponse(p_yes=0.25, p_no=0.25)
    counts = simulate_tallies(design, 0.3, 1000, 1000, rng)
    low, high = prevalence_intervals(design, counts, "bayes", 0.95, rng=rng)
    cov = float(((low[:, 1] <= 0.3) & (high[:, 1] >= 0.3)).mean())
    se = math.sqrt(0.95 * 0.05 / 1000)
    assert 0.94 - Z4 * se <= cov <= 0.96 + Z4 * se


def test_binary_share_intervals_match_scipy():
    from scipy import stats

    from deniable.estimation.intervals import share_interval

    for y, n in [(0, 20), (7, 20), (20, 20), (333, 1000)]:
        ref = stats.binomtest(y, n).proportion_ci(0.95, method="wilson")
        lo, hi = share_interval("wilson", np.array(y), np.array(n), 0.95)
        assert (float(lo), float(hi)) == pytest.approx((ref.low, ref.high), abs=1e-12)
        ref = stats.binomtest(y, n).proportion_ci(0.95, method="exact")
        lo, hi = share_interval("beta", np.array(y), np.array(n), 0.95)
        assert (float(lo), float(hi)) == pytest.approx((ref.low, ref.high), abs=1e-10)


def test_intervals_are_clipped_and_ordered():
    from deniable import Tally, estimate

    result = estimate(ForcedResponse(p_yes=0.25, p_no=0.25), Tally([95, 5]))
    for method in ("normal", "wilson", "agresti_coull", "beta", "jeffreys", "chebyshev", "bayes"):
        ci = result.confidence_interval(0.95, method)
        assert np.all(ci.low >= 0) and np.all(ci.high <= 1) and np.all(ci.low <= ci.high)
    with pytest.raises(ValueError, match="method must be one of"):
        result.confidence_interval(0.95, "bootstrap")
    with pytest.raises(ValueError, match="confidence_level"):
        result.confidence_interval(1.5)

"""Coverage of the 95% intervals by simulation (the full table is docs/coverage.md)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from deniable import ForcedResponse, KaryRR, Tally, Warner, estimate
from deniable.errors import (
    DegenerateTallyWarning,
    DeniableWarning,
    EstimateOutsideWarning,
    FewReportsWarning,
    IntervalCoverageWarning,
)
from deniable.estimation._intervals import prevalence_intervals
from deniable.estimation._normal_theory import moment_batch, z_quantile
from deniable.mechanisms._binary import Crosswise
from deniable.planning._coverage import exact_coverage
from deniable.planning._simulation import simulate_tallies

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
    """Claim: coverage in [0.94, 0.96] (a 4-sigma Monte-Carlo band around it); within
    two of the largest standard errors of a boundary (pi = 0.02 at n = 1,000), the power
    constraint makes every method conservative, so there only the floor holds."""
    cov = coverage(design, pi, n, method, rng)
    assert cov >= 0.94 - Z4 * SE
    slope = 1 / abs(design.matrix[1, 1] - design.matrix[1, 0])
    if min(pi, 1 - pi) > 2 * slope * 0.5 / math.sqrt(n):
        assert cov <= 0.96 + Z4 * SE


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

    from deniable.estimation._intervals import share_interval

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


# --- boundary-honest intervals (Feldman & Cousins 1998, power-constrained) -------------

GRID_PI = (0.0, 0.001, 0.005, 0.01, 0.02, 0.3, 0.5, 0.99, 1.0)
GRID_N = (100, 300, 1_000, 3_000, 10_000)
BOUNDARY_DESIGNS = [
    ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
    Warner(p=0.7),
    Crosswise(p=0.25),
    KaryRR(k=7, epsilon=2.0),
]


def _category(design) -> int:
    return 0 if isinstance(design, KaryRR) else 1


@pytest.mark.parametrize("design", BOUNDARY_DESIGNS, ids=repr)
@pytest.mark.slow
def test_the_default_interval_covers_at_least_95_percent_over_the_boundary_grid(design):
    """Exact coverage (enumeration, no simulation error) of the default interval at every
    (pi, n) of the grid, the boundary included: a Neyman construction covers at least
    the level, so the only tolerance is the bisection's (2^-48 of the share's range)."""
    from deniable import Tally, estimate

    default = estimate(design, Tally(np.full(design.n_reports, 10))).default_interval_method
    assert default == "feldman_cousins"
    for n in GRID_N:
        for pi in GRID_PI:
            c = exact_coverage(design, pi, n, default, 0.95, _category(design))
            assert c.coverage >= 0.95 - 1e-9, (n, pi, c)


def _neyman_belt(n: int, a: float, b: float, level: float, grid: np.ndarray):
    """Feldman-Cousins acceptance regions by brute force: for each share on ``grid``,
    sort all counts by the likelihood ratio and take them until ``level`` is reached."""
    from scipy import stats

    y = np.arange(n + 1)
    best = np.clip(y / n, a, b)
    accept = np.zeros((grid.size, n + 1), dtype=bool)
    for g, lam in enumerate(grid):
        pmf = stats.binom.pmf(y, n, lam)
        ratio = stats.binom.logpmf(y, n, lam) - stats.binom.logpmf(y, n, best)
        order = np.argsort(-ratio, kind="stable")
        take = np.searchsorted(np.cumsum(pmf[order]), level) + 1
        accept[g, order[:take]] = True
    return accept


def test_unified_interval_matches_a_brute_force_neyman_construction():
    """Against the belt built by sorting every count at 4,001 shares (n = 40, share range
    [0.2, 0.7]): each interval's ends are within one grid step of the brute-force ones
    (counts above n b and below n a excepted: those get the power constraint)."""
    from deniable.estimation._unified import unified_share_interval

    n, a, b, level = 40, 0.2, 0.7, 0.95
    grid = np.linspace(a, b, 4001)
    step = grid[1] - grid[0]
    accept = _neyman_belt(n, a, b, level, grid)
    y = np.arange(n + 1)
    low, high = unified_share_interval(y, np.full(y.size, n), a, b, level)
    for count in range(math.ceil(n * a), math.floor(n * b) + 1):
        shares = grid[accept[:, count]]
        assert low[count] == pytest.approx(shares.min(), abs=step), count
        assert high[count] == pytest.approx(shares.max(), abs=step), count
    # the power constraint: counts beyond the range get the boundary count's end
    below, above = math.ceil(n * a), math.floor(n * b)
    assert np.all(high[:below] == high[below]) and np.all(low[above + 1 :] == low[above])


def test_the_collapsed_interval_of_issue_17_now_reflects_the_standard_error():
    """KaryRR(k=7, epsilon=2), n = 3,000, unbiased estimate -0.0196 (SE 0.0095): Wilson's
    interval was [0, 0.0001]; the default's upper end is about two standard errors at
    prevalence 0, and the estimate carries a warning."""
    from deniable import Tally, estimate

    design = KaryRR(k=7, epsilon=2.0)
    n = 3000
    p, q = design.matrix[0, 0], design.matrix[0, 1]
    y = round(n * (q + (p - q) * -0.0196))
    rest = n - y
    counts = np.array([y] + [rest // 6 + (i < rest % 6) for i in range(6)])
    est = estimate(design, Tally(counts))
    assert est.estimate[0] == pytest.approx(-0.0196, abs=5e-4)
    se_at_zero = math.sqrt(q * (1 - q) / n) / (p - q)
    wilson = est.confidence_interval(0.95, "wilson")
    # the collapse the issue found (0.0001) is gone: every method is power-constrained
    assert 1.8 * se_at_zero <= wilson.high[0] <= 2.5 * se_at_zero
    ci = est.confidence_interval()
    assert ci.low[0] == 0.0 and 1.8 * se_at_zero <= ci.high[0] <= 2.5 * se_at_zero
    assert len(est.warnings) == 1 and "below 0" in est.warnings[0]
    assert "method='mle'" in est.warnings[0] and "warning:" in est.summary()
    assert est.to_dict()["warnings"] == est.warnings
    assert estimate(design, Tally(counts), method="mle").warnings == []


def test_exact_coverage_agrees_with_simulation(rng):
    """The enumerator against 20,000 simulated surveys, within 4 Monte-Carlo SEs."""
    design = Warner(p=0.7)
    for method, pi, n in [("wilson", 0.3, 100), ("normal", 0.01, 300)]:
        exact = exact_coverage(design, pi, n, method).coverage
        counts = simulate_tallies(design, pi, n, 20_000, rng)
        low, high = prevalence_intervals(design, counts, method, 0.95)
        simulated = float(((low[:, 1] <= pi) & (pi <= high[:, 1])).mean())
        assert abs(simulated - exact) <= Z4 * math.sqrt(exact * (1 - exact) / 20_000)


@pytest.mark.slow
def test_bayes_on_a_binary_design_is_the_exact_posterior_interval(rng):
    """Forced response, n = 300: the equal-tailed credible interval covered 0.000 at
    pi = 0, the interval from posterior draws about 78% (it missed 0 by a draw's width).
    On a binary design the interval is now the highest-density set of the exact
    one-dimensional posterior: 600 simulated surveys cover within 4 Monte-Carlo SEs of
    the enumerated coverage, at least 95% less 4 SEs at 0 and 0.005; the interval holds 0
    whenever the data do not rule it out, so the only warning left is that below the
    boundary's count it is narrower than there (a credible interval is not
    power-constrained)."""
    import warnings

    from deniable import Tally, estimate
    from deniable.estimation._coverage_warning import interval_coverage

    design = ForcedResponse(p_yes=0.25, p_no=0.25)
    surveys = 600
    exact, _ = interval_coverage(design, 300, "bayes", 0.95, 1, (0.0, 0.005))
    for pi, want in zip((0.0, 0.005), exact, strict=True):
        counts = simulate_tallies(design, pi, 300, surveys, rng)
        low, high = prevalence_intervals(design, counts, "bayes", 0.95)
        got = float(((low[:, 1] <= pi) & (pi <= high[:, 1])).mean())
        assert abs(got - want) <= Z4 * math.sqrt(want * (1 - want) / surveys)
        assert got >= 0.95 - Z4 * math.sqrt(0.95 * 0.05 / surveys)
    for c in simulate_tallies(design, 0.0, 300, 20, rng):
        est = estimate(design, Tally(c), method="bayes")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ci = est.confidence_interval()
        assert ci.low[1] == 0.0 or estimate(design, Tally(c)).confidence_interval().low[1] > 0
        # it may still warn that it is narrower than at the boundary's count (below it)
        said = [str(w.message) for w in seen if w.category is IntervalCoverageWarning]
        assert all("(narrower than at the boundary's count)" in m for m in said), said


#: The issue's grid: prevalences at and near 0, two sizes, three designs.
ISSUE_GRID = (0.0, 0.001, 0.005, 0.01, 0.05, 0.3)
ISSUE_DESIGNS = (ForcedResponse(p_yes=0.25, p_no=0.25), Warner(p=0.7), KaryRR(k=7, epsilon=2.0))


@pytest.mark.parametrize("design", ISSUE_DESIGNS, ids=repr)
def test_every_frequentist_method_covers_94_percent_on_the_boundary_grid(design):
    """Exact coverage, n in {300, 3000}: every method offered covers at least 94% at
    every prevalence (before the power constraint: normal 0.9324 and jeffreys 0.9378
    at KaryRR, n = 300), and no interval is narrower at a count below the boundary's
    than at the boundary's (``bayes`` neither: power-constrained since issue 65, it gave
    the interval of a boundary's count, with no warning, at every count beyond it)."""
    import warnings

    from deniable.estimation._variance import affine_map

    j = 0 if isinstance(design, KaryRR) else 1
    for n in (300, 3000):
        for method in ("normal", "wilson", "agresti_coull", "beta", "jeffreys"):
            for pi in ISSUE_GRID:
                got = exact_coverage(design, pi, n, method, category=j).coverage
                assert got >= 0.94, (method, n, pi, got)
        amap = affine_map(design)
        r = int(amap.report[j])
        a, _ = amap.share_range(design)
        assert amap.slope[j] > 0  # prevalence 0 is the share a
        below = np.arange(int(np.ceil(n * a[j])))  # counts below what prevalence 0 predicts
        se0 = amap.slope[j] * math.sqrt(a[j] * (1 - a[j]) / n)
        for method in ("normal", "wilson", "agresti_coull", "beta", "jeffreys"):
            tallies = np.zeros((below.size, design.n_reports), dtype=np.int64)
            tallies[:, r] = below
            tallies[:, (r + 1) % design.n_reports] = n - below
            low, high = prevalence_intervals(design, tallies, method, 0.95)
            # one interval for every such count: the boundary's, about 2 SEs wide
            assert np.ptp(high[:, j]) < 1e-9 and np.all(low[:, j] == 0), method
            assert 1.5 * se0 <= high[0, j] <= 2.5 * se0, method
    if design.n_truths == 2:  # all reports "no": the credible interval is the boundary's
        counts = np.zeros(2, dtype=np.int64)
        counts[1 - r] = 3000
        at_boundary = np.zeros(2, dtype=np.int64)
        at_boundary[r] = int(np.ceil(3000 * a[j]))
        at_boundary[1 - r] = 3000 - at_boundary[r]
        with warnings.catch_warnings():
            warnings.simplefilter("error", IntervalCoverageWarning)
            got = estimate(design, Tally(counts), method="bayes").confidence_interval()
            edge = estimate(design, Tally(at_boundary), method="bayes").confidence_interval()
            estimate(design, Tally(counts)).confidence_interval()
        assert got.low[j] == 0 and got.high[j] >= edge.high[j] - 2e-3, (got, edge)


#: The bench's designs, sizes up to 3,000 and prevalences, with 0.1 (issue 43).
BENCH_DESIGNS = (
    ForcedResponse(p_yes=0.25, p_no=0.25),
    ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
    Warner(p=0.7),
    Crosswise(p=0.25),
    KaryRR(k=7, epsilon=2.0),
)
BENCH_PI = (0.0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.3, 0.5, 0.95, 0.99, 1.0)
FREQUENTIST = ("normal", "wilson", "agresti_coull", "beta", "jeffreys")


def _short_of_the_goal(design, method, n):
    """The cells where the warning misses issue 43's goal: coverage among the unwarned
    below 0.94 (judged where at least 0.1% of surveys go unwarned), or more than 10%
    warned where the method covers at least 0.95 (exact: warned_coverage)."""
    from deniable.estimation._coverage_warning import warned_coverage

    j = 0 if isinstance(design, KaryRR) else design.n_truths - 1
    every, unwarned, warned = warned_coverage(design, n, method, 0.95, j, BENCH_PI)
    return [
        (pi, round(a, 3), round(u, 3), round(w, 3))
        for pi, a, u, w in zip(BENCH_PI, every, unwarned, warned, strict=True)
        if (w < 0.999 and u < 0.94) or (a >= 0.95 and w > 0.10)
    ]


@pytest.mark.slow  # 4-14 s a design: every count of four sizes, six methods
@pytest.mark.parametrize("design", BENCH_DESIGNS, ids=repr)
def test_every_interval_is_honest_or_warned_on_the_bench_grid(design):
    """Exact (every count enumerated, the warning decided at each count's estimate):
    for every method at n in {100, 300, 1,000, 3,000} and the bench's prevalences with
    0.1, the unwarned surveys are covered at least 94% of the time and at most 10% are
    warned where the method covers 95%, with no exception. The last ones were
    ``normal`` on KaryRR(7, 2) at n <= 300 (0.931 at 0.5, n = 100; 0.937 at 0.1, n =
    300), which no warning rule could remove; ``normal`` is now continuity-corrected on
    count designs (``continuity_correction``). ``bayes`` on k-ary RR, whose uniform
    Dirichlet prior pulled a category of 7 towards 0 (0.896 at 0.5, n = 100), takes a
    uniform prior on the category (``category_prior``) and meets the goal."""
    misses = {
        (method, n): short
        for method in (*FREQUENTIST, "bayes")
        for n in (100, 300, 1_000, 3_000)
        if (short := _short_of_the_goal(design, method, n))
    }
    assert misses == {}


FINE = np.round(np.arange(101) / 100, 2)


def test_normal_with_continuity_correction_covers_at_every_prevalence_of_a_fine_grid():
    """Plain Wald on KaryRR(7, 2) at n = 100 lies below 0.94 at a third of the
    prevalences 0.25-0.6 (as low as 0.926) and no warning rule could meet issue 43's
    goal for it (the integer program had no solution, docs/coverage.md). With half a
    report's step added to each end (Newcombe 1998, method 2), its exact coverage is at
    least 0.94 at every prevalence of 0, 0.01, ..., 1 on KaryRR(7, 2) and forced
    response at n = 100 (lowest 0.9416 and 0.9475), so no warning is needed. The
    correction is |slope| / (2 n) on each side; the interval stays the Wald interval
    otherwise."""
    from deniable.estimation._coverage_warning import interval_coverage
    from deniable.estimation._intervals import continuity_correction
    from deniable.estimation._variance import affine_map

    kary = KaryRR(k=7, epsilon=2.0)
    forced = ForcedResponse(p_yes=0.25, p_no=0.25)
    for design, j, lowest in ((kary, 0, 0.9416), (forced, 1, 0.9475)):
        coverage, _ = interval_coverage(design, 100, "normal", 0.95, j, tuple(FINE))
        assert coverage.min() == pytest.approx(lowest, abs=5e-5)
    amap = affine_map(kary)
    assert amap is not None
    counts = np.array([[40, 10, 10, 10, 10, 10, 10]])  # the share of report 0 is 0.4
    low, high = prevalence_intervals(kary, counts, "normal", 0.95)
    shift = continuity_correction(amap, np.array([[100]]))[0, 0]
    assert shift == pytest.approx(abs(amap.slope[0]) / 200)
    est = amap.intercept[0] + amap.slope[0] * 0.4
    half = z_quantile(0.95) * abs(amap.slope[0]) * np.sqrt(0.4 * 0.6 / 100)
    assert (low[0, 0], high[0, 0]) == pytest.approx((est - half - shift, est + half + shift))


def test_no_warning_rule_meets_the_goal_for_wilson_on_kary_rr_at_n_100():
    """Where a method falls short at a tooth, the warning cannot always help: a rule is a
    set of report counts (everything a survey shows is a function of the count), and the
    integer program of issue 43's goal at every prevalence of 0, 0.01, ..., 1 has no
    solution for ``wilson`` and ``jeffreys`` on KaryRR(7, 2) at n = 100
    (``goal_attainable``). Controls: the solver finds rules where they exist, on the
    bench's 12 prevalences for the same methods (where the mean rule meets the goal),
    and on the fine grid for ``beta`` and the continuity-corrected ``normal``."""
    from deniable.estimation._coverage_warning import goal_attainable

    kary = KaryRR(k=7, epsilon=2.0)
    forced = ForcedResponse(p_yes=0.25, p_no=0.25)
    for method in ("wilson", "jeffreys"):
        assert not goal_attainable(kary, 100, method, 0.95, 0, FINE)
        assert goal_attainable(kary, 100, method, 0.95, 0, np.array(BENCH_PI))
    for method in ("beta", "normal"):
        assert goal_attainable(kary, 100, method, 0.95, 0, FINE)
        assert goal_attainable(forced, 100, method, 0.95, 1, FINE)


def test_goal_attainable_finds_a_rule_only_where_one_exists():
    """Checked against brute force over every set of counts at n = 12 (4,096 rules) on
    KaryRR(7, 2) for ``normal`` and ``wilson``, on prevalence grids of three spacings."""
    import itertools

    from scipy import stats

    from deniable.estimation._coverage_warning import (
        _count_intervals,
        _shares,
        goal_attainable,
    )

    design, n = KaryRR(k=7, epsilon=2.0), 12
    y = np.arange(n + 1)
    seen = set()
    for method in ("normal", "wilson"):
        lo, hi = _count_intervals(design, n, method, 0.95, 0, y, None)
        for step in (0.5, 0.1, 0.05):
            points = np.round(np.arange(0, 1 + 1e-9, step), 6)
            weights = stats.binom.pmf(y[None, :], n, _shares(design, 0, points)[:, None])
            covered = (lo[None, :] <= points[:, None] + 1e-12) & (
                points[:, None] - 1e-12 <= hi[None, :]
            )
            every = (weights * covered).sum(axis=1)

            def meets(warned, weights=weights, covered=covered, every=every):
                share = weights @ warned
                rest = weights @ ~warned
                good = (weights * covered) @ ~warned >= 0.94 * rest - 1e-12
                return bool(np.all((good | (share >= 0.999)) & ((every < 0.95) | (share <= 0.10))))

            brute = any(
                meets(np.array(bits, dtype=bool))
                for bits in itertools.product((False, True), repeat=n + 1)
            )
            assert goal_attainable(design, n, method, 0.95, 0, points) == brute, (method, step)
            seen.add(brute)
    assert seen == {True, False}


@pytest.mark.slow
def test_bayes_on_kary_rr_covers_prevalence_0():
    """Issue 43: bayes on k-ary RR covered 0.76-0.81 at prevalence 0 from its posterior
    draws. Each category's interval is now that of its exact one-dimensional posterior
    given its report's count (holding 0 where the density is highest there): exact
    coverage at 0 is at least 0.95 at every n of the bench, and the warning rule leaves
    the unwarned there covered at least 94%."""
    from deniable.estimation._coverage_warning import warned_coverage

    design = KaryRR(k=7, epsilon=2.0)
    for n in (100, 300, 1_000, 3_000):
        every, unwarned, warned = warned_coverage(design, n, "bayes", 0.95, 0, (0.0,))
        assert every[0] >= 0.95, (n, every)
        assert warned[0] >= 0.999 or unwarned[0] >= 0.94, (n, unwarned, warned)


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_bayes_on_kary_rr_covers_near_1():
    """Issue 43: under the uniform Dirichlet prior over 7 categories a category's
    marginal prior is Beta(1, 6), and its credible interval covered 0.000-0.108 at
    prevalence 0.99 for n from 100 to 10,000. The default prior is now uniform on the
    category asked about (``category_prior``): exact coverage at least 0.94 at 0.95, 0.99
    and 1 at every n, none warned; a prior given keeps its Beta marginal."""
    from deniable.estimation._bayes import category_prior
    from deniable.estimation._coverage_warning import warned_coverage

    design = KaryRR(k=7, epsilon=2.0)
    for n in (100, 1_000, 10_000):
        every, _, warned = warned_coverage(design, n, "bayes", 0.95, 0, (0.95, 0.99, 1.0))
        assert np.all(every >= 0.94) and np.all(warned == 0), (n, every, warned)
    assert category_prior(None, 3, 7) == (1.0, 1.0)
    assert category_prior(np.ones(7), 3, 7) == (1.0, 6.0)
    tally = Tally(np.array([90, 2, 2, 2, 2, 1, 1]))
    default = estimate(design, tally).confidence_interval(0.95, "bayes")
    dirichlet = estimate(design, tally, "bayes", prior=np.ones(7))
    with pytest.warns(IntervalCoverageWarning, match="cover 0.000 on average"):
        dirichlet_ci = dirichlet.confidence_interval(0.95, "bayes")
    assert default.high[0] > dirichlet_ci.high[0]  # Beta(1, 6) pulls category 0 down


@pytest.mark.slow
def test_the_warning_the_estimate_gives_is_the_rule_enumerated(rng):
    """300 simulated surveys at each of five cells (100 where each draws a posterior):
    the share that ``confidence_interval`` warns, and the coverage among the unwarned,
    agree with warned_coverage's exact figures within 4 Monte-Carlo standard errors; the warning
    names the mean coverage over the neighbourhood and recommends feldman_cousins. The
    warned cell is the ``bayes`` estimator's Dirichlet(1, ..., 1) prior on KaryRR(7, 2),
    whose Beta(1, 6) marginal pulls a category towards 0."""
    import warnings

    from deniable import Tally, estimate
    from deniable.estimation._coverage_warning import warned_coverage

    dirichlet = np.ones(7)
    cells = [
        (KaryRR(k=7, epsilon=2.0), 100, "bayes", 0.25, dirichlet),  # Beta(1, 6): warned
        (Warner(p=0.7), 100, "bayes", 0.0, None),  # at the boundary: silent
        (KaryRR(k=7, epsilon=2.0), 1_000, "bayes", 0.95, None),  # covers: silent
        (KaryRR(k=7, epsilon=2.0), 100, "normal", 0.5, None),  # covers: silent
        (ForcedResponse(p_yes=0.25, p_no=0.25), 1_000, "wilson", 0.3, None),  # silent
    ]
    for design, n, method, pi, prior in cells:
        surveys = 300 if prior is None else 100  # the Bayes estimate draws its posterior
        j = 0 if isinstance(design, KaryRR) else design.n_truths - 1
        every, unwarned, share = warned_coverage(design, n, method, 0.95, j, (pi,), prior)
        k = design.n_truths
        truth = np.full(k, (1 - pi) / (k - 1))
        truth[j] = pi
        counts = simulate_tallies(design, truth, n, surveys, rng)
        said, covered = [], []
        for c in counts:
            est = (
                estimate(design, Tally(c))
                if prior is None
                else estimate(design, Tally(c), "bayes", prior=prior)
            )
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                ci = est.confidence_interval(0.95, method)
            words = [str(w.message) for w in seen if w.category is IntervalCoverageWarning]
            mine = f"intervals of {str(est.labels[j])!r} cover"  # this category's warning
            coverage_words = [m for m in words if mine in m]
            edge = f"{str(est.labels[j])!r} ("  # and bayes's at a boundary, for it
            boundary = [m for m in words if "leaves out a boundary" in m and edge in m]
            said.append(bool(coverage_words) or bool(boundary))
            covered.append(ci.low[j] <= pi + 1e-12 and pi - 1e-12 <= ci.high[j])
            if coverage_words:
                assert "feldman_cousins" in coverage_words[0]
        said_, covered_ = np.array(said), np.array(covered)
        got = said_.mean()
        assert abs(got - share[0]) <= Z4 * math.sqrt(max(share[0] * (1 - share[0]), 1e-3) / surveys)
        assert abs(covered_.mean() - every[0]) <= Z4 * math.sqrt(
            max(every[0] * (1 - every[0]), 1e-3) / surveys
        )
        if (~said_).sum() >= 100 and not math.isnan(unwarned[0]):
            m = (~said_).sum()
            got_u = covered_[~said_].mean()
            assert abs(got_u - unwarned[0]) <= Z4 * math.sqrt(
                max(unwarned[0] * (1 - unwarned[0]), 1e-3) / m
            )


def test_warnings_measure_the_distance_at_the_nearest_prevalence_inside():
    """All 3 reports "no" through the two coins: the estimate -0.5 with a plug-in SE of
    0; at prevalence 0 the SE is sqrt(0.25 * 0.75 / 3) / 0.5 = 0.5, so it lies 1 of them
    below 0: a warning without the flooding sentence, and one for the SE of 0. The
    one-sided z test of a control refuses the SE of 0 and matches the normal tail."""
    design = ForcedResponse(p_yes=0.25, p_no=0.25)
    with pytest.warns(DeniableWarning) as issued:  # each kept warning issued, by kind
        est = estimate(design, Tally(np.array([3, 0])))
    assert est.estimate[1] == pytest.approx(-0.5) and est.std_error[1] == 0
    said = est.warnings
    assert [(w.category, str(w.message)) for w in issued] == est.warned
    assert [kind for kind, _ in est.warned] == [
        FewReportsWarning, EstimateOutsideWarning, EstimateOutsideWarning,
        DegenerateTallyWarning,
    ]  # fmt: skip
    assert "an estimate from 3 reports: fewer than 30" in said[0]
    assert "1 standard error above 1 (the standard error at 1, 0.5)" in said[1]  # "no": 1.5
    assert "1 standard error below 0 (the standard error at 0, 0.5)" in said[2]
    assert "standard error of 0" in said[3]
    assert not any("flooding" in w for w in said)
    assert not est.implausible().any()
    with pytest.raises(ValueError, match="standard error of 0"):
        est.one_sided_pvalue()
    with pytest.warns(EstimateOutsideWarning, match="flooding"):
        flooded = estimate(design, Tally(np.array([300, 0])))  # 10 SEs below 0 at n = 300
    assert flooded.implausible()[1] and "flooding" in flooded.warnings[1]
    fair = estimate(design, Tally(np.array([500, 500])))  # 0.5, SE sqrt(0.25 / 1000) / 0.5
    assert fair.one_sided_pvalue(0.5) == pytest.approx(0.5, abs=1e-12)
    se = math.sqrt(0.25 / 1000) / 0.5
    assert fair.one_sided_pvalue(0.0, category=0) == pytest.approx(
        0.5 * math.erfc(0.5 / se / math.sqrt(2)), rel=1e-9
    )
    with pytest.raises(ValueError, match="value"):
        fair.one_sided_pvalue(1.3)
    with pytest.raises(ValueError, match="category"):
        fair.one_sided_pvalue(0.0, category=2)


def test_chebyshev_never_collapses_onto_a_boundary():
    """Respondents who do not follow the design can put the estimate far below 0 (here
    every report says "no" through Warner(0.8): -1/3, about 12 standard errors below).
    Chebyshev's interval is then the one an estimate at 0 gets, ``[0, half-width]``
    (issue 43), not ``[0, 0]``; and symmetrically at 1."""
    from deniable.estimation._variance import worst_case_variance

    design = Warner(p=0.8)
    n = 400
    half = math.sqrt(float(worst_case_variance(design)[1]) / (n * 0.05))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        below = estimate(design, np.zeros(n, dtype=np.int64)).confidence_interval(0.95, "chebyshev")
        above = estimate(design, np.ones(n, dtype=np.int64)).confidence_interval(0.95, "chebyshev")
    assert below.low[1] == 0 and below.high[1] == pytest.approx(half, rel=1e-12)
    assert above.high[1] == 1 and above.low[1] == pytest.approx(1 - half, rel=1e-12)

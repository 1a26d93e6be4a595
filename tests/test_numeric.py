"""Numeric means and bucket histograms under local DP (Duchi et al. 2018; Wang et al.
2019; Ding, Kulkarni & Yekhanin 2017): exact epsilon, unbiasedness with exact variance,
interval coverage, memoization for repeated collection, and bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from deniable.errors import ReportValidationError
from deniable.estimation._means import (
    DBitFlipTally,
    MeanTally,
    estimate_histogram,
    estimate_mean,
    histogram_variance,
)
from deniable.mechanisms._dbitflip import DBitFlip
from deniable.mechanisms._numeric import DuchiMean, HybridMean, OneBitMean, Piecewise
from deniable.mechanisms._registry import numeric_from_spec

EPSILONS = (0.5, 1.0, 2.0, 4.0)
LOW, HIGH = 10.0, 50.0
POPULATION = stats.beta(2, 5, loc=LOW, scale=HIGH - LOW)  # the values' distribution


def mechanisms(epsilon: float):
    return [
        DuchiMean(epsilon, LOW, HIGH),
        Piecewise(epsilon, LOW, HIGH),
        HybridMean(epsilon, LOW, HIGH),
        OneBitMean(epsilon, LOW, HIGH),
    ]


# ---- exact epsilon ---------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_epsilon_of_the_one_bit_mechanisms_is_exact(epsilon):
    for m in (DuchiMean(epsilon, LOW, HIGH), OneBitMean(epsilon, LOW, HIGH)):
        p = m.prob_one(np.linspace(LOW, HIGH, 101))
        ratio = max(p.max() / p.min(), (1 - p).max() / (1 - p).min())
        assert ratio == pytest.approx(math.exp(epsilon), rel=1e-12)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_piecewise_density_is_a_density_with_mean_x_the_stated_variance_and_exact_epsilon(
    epsilon,
):
    pm = Piecewise(epsilon)
    c = pm.c
    grid = np.linspace(-c, c, 20_001)
    densities = []
    for x in (-1.0, -0.3, 0.0, 0.8, 1.0):
        left = (c + 1) / 2 * x - (c - 1) / 2
        pieces = [-c, left, left + c - 1, c]  # integrate piece by piece
        moment = [
            sum(
                integrate.quad(lambda y, j=j, x=x: y**j * pm.pdf(y, x), a, b)[0]
                for a, b in itertools.pairwise(pieces)
            )
            for j in range(3)
        ]
        assert moment[0] == pytest.approx(1.0, abs=1e-9)
        assert moment[1] == pytest.approx(x, abs=1e-9)
        assert moment[2] - x**2 == pytest.approx(pm.report_variance(np.array([x]))[0], rel=1e-8)
        densities.append(pm.pdf(grid, x))
    d = np.array(densities)
    assert (d.max(axis=0) / d.min(axis=0)).max() == pytest.approx(math.exp(epsilon), rel=1e-12)


def test_piecewise_reports_follow_its_density():
    """Kolmogorov-Smirnov of 10^5 reports against the CDF integrated from ``pdf``; alpha 1e-6."""
    pm = Piecewise(1.0)
    x = 0.4
    reports = pm.randomize(np.full(100_000, x), np.random.default_rng(3))
    c = pm.c
    left = (c + 1) / 2 * x - (c - 1) / 2
    knots = np.array([-c, left, left + c - 1, c])
    mass = np.concatenate(
        [[0], np.cumsum(pm.pdf((knots[:-1] + knots[1:]) / 2, x) * np.diff(knots))]
    )
    cdf = lambda y: np.interp(y, knots, mass)  # noqa: E731 - piecewise linear
    assert stats.kstest(reports, cdf).pvalue > 1e-6


@pytest.mark.parametrize("d", [1, 2, 3])
def test_dbitflip_epsilon_by_enumeration(d):
    """Every report (ordered buckets, bits) on k = 4: the largest probability ratio."""
    oracle = DBitFlip(4, 1.2, d=d)
    p_out, p_in = oracle._p()
    worst = 0.0
    for buckets in itertools.permutations(range(4), d):
        for bits in itertools.product((0, 1), repeat=d):
            probs = []
            for v in range(4):
                pr = 1.0
                for b, bit in zip(buckets, bits, strict=True):
                    p1 = p_in if b == v else p_out
                    pr *= p1 if bit else 1 - p1
                probs.append(pr)
            worst = max(worst, max(probs) / min(probs))
    assert worst == pytest.approx(math.exp(oracle.epsilon), rel=1e-12)


def test_dbitflip_samples_distinct_buckets_uniformly():
    oracle = DBitFlip(6, 1.0, d=3)
    memo = oracle.memoize(60_000, np.random.default_rng(4))
    assert all(len(set(row)) == 3 for row in memo.buckets[:2000].tolist())
    codes = memo.buckets @ np.array([36, 6, 1])  # ordered triples: 120 equally likely
    counts = np.bincount(codes, minlength=216)[np.unique(codes)]
    assert counts.size == 120
    expected = 60_000 / 120
    assert ((counts - expected) ** 2 / expected).sum() < stats.chi2.isf(1e-6, 119)


# ---- unbiased means: MSE against the exact variance, interval coverage -----------------

SURVEYS, N = 20_000, 500


def exact_variance(mechanism) -> float:
    """Var of the mean of N reports from fresh values: (E Var(y | v) + Var(v)) / N."""
    within = POPULATION.expect(lambda v: float(mechanism.report_variance(np.array([v]))[0]))
    return (within + POPULATION.var()) / N


@pytest.mark.parametrize(
    # the fast loop keeps epsilon 1; the others run in the whole suite (3.5 s each)
    "epsilon",
    [e if e == 1.0 else pytest.param(e, marks=pytest.mark.slow) for e in EPSILONS],
)
@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_means_are_unbiased_with_the_exact_variance_and_intervals_cover(epsilon):
    """20,000 simulated surveys of 500 values each per mechanism.

    The ratio MSE / exact variance has standard error about sqrt(2 / 20,000) = 0.01, so
    the 5% goal is five of them; the coverage has standard error 0.0015, so the +-1%
    goal is six and a half.
    """
    rng = np.random.default_rng(int(epsilon * 100))
    for mech in mechanisms(epsilon):
        truth = POPULATION.mean()
        estimates, covered = [], 0
        for _ in range(SURVEYS // 5000):
            values = POPULATION.rvs(size=(5000, N), random_state=rng)
            y = mech.debias(mech.randomize(values.ravel(), rng)).reshape(5000, N)
            est = y.mean(axis=1)
            se = y.std(axis=1, ddof=1) / math.sqrt(N)
            covered += int(np.count_nonzero(np.abs(est - truth) <= 1.959963984540054 * se))
            estimates.append(est)
        est = np.concatenate(estimates)
        ratio = np.mean((est - truth) ** 2) / exact_variance(mech)
        assert abs(ratio - 1) < 0.05, (mech, ratio)
        assert abs(covered / SURVEYS - 0.95) < 0.01, (mech, covered / SURVEYS)


def test_estimate_mean_gives_the_result_vocabulary_and_merges_tallies():
    m = HybridMean(2.0, LOW, HIGH)
    values = POPULATION.rvs(size=200_000, random_state=np.random.default_rng(5))
    reports = m.randomize(values, np.random.default_rng(6))
    result = estimate_mean(m, reports)
    halves = MeanTally.from_values(m.debias(reports[:1000])) + MeanTally.from_values(
        m.debias(reports[1000:])
    )
    assert estimate_mean(m, halves).estimate == pytest.approx(result.estimate, rel=1e-12)
    sd = math.sqrt(exact_variance(m) * N / values.size)
    assert abs(result.estimate - values.mean()) < 4 * sd
    normal = result.confidence_interval(0.95)
    hoeffding = result.confidence_interval(0.95, method="hoeffding")
    assert hoeffding.low < normal.low < result.estimate < normal.high < hoeffding.high
    assert "mean" in result.summary() and list(result.to_frame().columns)[:2] == [
        "estimate",
        "std_error",
    ]
    with pytest.raises(ValueError, match="method must be one of"):
        result.confidence_interval(0.95, method="wilson")


@pytest.mark.parametrize("epsilon", [1.0, pytest.param(4.0, marks=pytest.mark.slow)])
def test_dbitflip_histogram_is_unbiased_and_its_intervals_cover(epsilon):
    oracle = DBitFlip(8, epsilon, d=2)
    shares = np.array([0.4, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05, 0.0])
    rng = np.random.default_rng(7)
    surveys, n = 4000, 2000
    errors, covered = [], np.zeros(8)
    for _ in range(surveys):
        codes = rng.choice(8, size=n, p=shares)
        result = estimate_histogram(oracle, oracle.randomize(codes, rng))
        errors.append(result.estimate - shares)
        ci = result.confidence_interval(0.95)
        covered += (ci.low <= shares) & (shares <= ci.high)
    err = np.array(errors)
    # exact variance for fresh multinomial truths: E[Var | truths] + Var(share of truths)
    expected = (
        np.array(
            [histogram_variance(oracle, rng.choice(8, size=n, p=shares)) for _ in range(50)]
        ).mean(axis=0)
        + shares * (1 - shares) / n
    )
    ratio = (err**2).mean(axis=0) / expected
    assert np.all(np.abs(ratio - 1) < 4 * math.sqrt(2 / surveys) + 0.01), ratio
    # coverage: 4-sigma binomial band around 0.95 for 4,000 surveys
    assert np.all(np.abs(covered / surveys - 0.95) < 4 * math.sqrt(0.95 * 0.05 / surveys))
    tally = DBitFlipTally.from_reports(oracle, oracle.randomize(codes[:10], rng))
    assert (tally + tally).n == 20


# ---- repeated collection: memoization --------------------------------------------------


def test_memoized_one_bit_reports_reveal_no_more_than_one_report():
    """10^4 rounds from each client: the average is one memoized bit, so it moves an
    observer's odds between the range's ends by at most e^eps (4-sigma band from 2 x
    200,000 clients); without memoization the same average gives every value away."""
    epsilon, rounds = 1.0, 10_000
    m = OneBitMean(epsilon, LOW, HIGH, grid=1)
    rng = np.random.default_rng(8)
    few = m.memoize(20, rng)
    values = np.full(20, 23.0)
    stacked = np.array([m.randomize(values, memo=few) for _ in range(rounds)])
    assert np.all(stacked == stacked[0])  # every round repeats the first
    averages = {}
    for v in (LOW, HIGH):
        memo = m.memoize(200_000, rng)
        averages[v] = m.randomize(np.full(200_000, v), memo=memo).mean()  # = its 10^4-round mean
    bound = math.exp(epsilon)
    se = math.sqrt(0.25 / 200_000)
    assert averages[HIGH] / averages[LOW] <= bound * (1 + 8 * se / averages[LOW])
    assert (1 - averages[LOW]) / (1 - averages[HIGH]) <= bound * (1 + 8 * se / (1 - averages[HIGH]))
    # without memoization, averaging 10^4 fresh reports separates the two values always
    fresh_low = np.mean([m.randomize(np.full(200, LOW), rng) for _ in range(rounds)], axis=0)
    fresh_high = np.mean([m.randomize(np.full(200, HIGH), rng) for _ in range(rounds)], axis=0)
    assert fresh_low.max() < fresh_high.min()


@pytest.mark.parametrize("grid", [1, 4])
def test_alpha_point_rounding_keeps_the_mean_unbiased(grid):
    m = OneBitMean(2.0, LOW, HIGH, grid=grid)
    values = POPULATION.rvs(size=400_000, random_state=np.random.default_rng(9))
    memo = m.memoize(values.size, np.random.default_rng(10))
    result = estimate_mean(m, m.randomize(values, memo=memo))
    exact = math.sqrt(m.report_variance(values).sum()) / values.size
    assert abs(result.estimate - values.mean()) < 4 * exact


def test_memoized_dbitflip_reports_repeat():
    oracle = DBitFlip(16, 1.0, d=2)
    memo = oracle.memoize(50, np.random.default_rng(11))
    codes = np.arange(50) % 16
    first = oracle.randomize(codes, memo=memo)
    again = oracle.randomize(codes, memo=memo)
    assert np.array_equal(first.bits, again.bits) and np.array_equal(first.buckets, again.buckets)


# ---- bad input ---------------------------------------------------------------------------


def test_bad_input_names_the_field_and_the_allowed_values():
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, 30\]"):
        DuchiMean(0.0)
    with pytest.raises(ValueError, match="low < high"):
        Piecewise(1.0, low=5, high=5)
    with pytest.raises(ValueError, match=r"values must lie in \[low, high\]"):
        DuchiMean(1.0, 0, 1).randomize(np.array([0.5, 1.3]))
    with pytest.raises(ValueError, match="finite"):
        Piecewise(1.0).randomize(np.array([np.nan]))
    with pytest.raises(ReportValidationError, match="only 0 and 1"):
        DuchiMean(1.0).debias(np.array([0, 2]))
    with pytest.raises(ReportValidationError, match="reports must be 1-D floats"):
        Piecewise(1.0).debias(np.array([100.0]))
    with pytest.raises(ValueError, match=r"k must be in 2\.\.4096"):
        DBitFlip(10**9, 1.0)
    with pytest.raises(ValueError, match=r"d must be in 1\.\.k"):
        DBitFlip(4, 1.0, d=5)
    with pytest.raises(ValueError, match=r"bucket codes in 0\.\.3"):
        DBitFlip(4, 1.0).randomize(np.array([4]))
    with pytest.raises(ValueError, match=r"grid must be in 1\.\.64"):
        OneBitMean(1.0, grid=100)
    with pytest.raises(ValueError, match="unknown numeric mechanism 'laplace'"):
        numeric_from_spec("laplace:epsilon=1")


def test_specs_round_trip():
    for spec in (
        "duchi:epsilon=1,low=0,high=10",
        "1bitmean:epsilon=0.5,high=3,grid=4",
        "dbitflip:k=16,epsilon=1,d=2",
        "hybrid:epsilon=2",
        "piecewise:epsilon=4",
    ):
        m = numeric_from_spec(spec)
        assert numeric_from_spec(m.spec).to_dict() == m.to_dict()


def test_alpha_is_a_significance_level_only():
    """The hybrid mechanism's mixing probability and 1BitMean's rounding offset have
    their own names; the old ``alpha`` attributes warn until 0.3."""
    hybrid = HybridMean(2.0)
    assert hybrid.piecewise_probability == pytest.approx(1 - math.exp(-1.0))
    with pytest.warns(DeprecationWarning, match="piecewise_probability"):
        assert hybrid.alpha == hybrid.piecewise_probability
    memo = OneBitMean(1.0, grid=3).memoize(5, np.random.default_rng(0))
    assert memo.offset.shape == (5,) and ((memo.offset >= 0) & (memo.offset < 1)).all()
    with pytest.warns(DeprecationWarning, match="offset"):
        assert memo.alpha is memo.offset

"""The range-restricted geometric channel on a count (Ghosh, Roughgarden & Sundararajan
2009): its matrix, its privacy between neighbouring counts, its draws and the estimate
through it, tested against the theory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable import estimate
from deniable.mechanisms import GeometricCount, ldp_epsilon


@pytest.mark.parametrize(("k", "eps"), [(2, 0.05), (5, math.log(9)), (22, 1.0), (256, 3.0)])
def test_the_matrix_is_the_clamped_two_sided_geometric(k, eps):
    """Every column sums to 1; interior entries are (1 - a) / (1 + a) a^|r - t|; the
    ends hold the clamped tails a^t / (1 + a) and a^(k-1-t) / (1 + a)."""
    P = GeometricCount(k=k, epsilon=eps).matrix
    a = math.exp(-eps)
    assert np.allclose(P.sum(axis=0), 1.0, atol=1e-12)
    t = 0 if k == 2 else 1
    r = min(k - 2, 3) if k > 2 else 0
    if 0 < r < k - 1:
        assert P[r, t] == pytest.approx((1 - a) / (1 + a) * a ** abs(r - t), rel=1e-12)
    assert P[0, t] == pytest.approx(a**t / (1 + a), rel=1e-12)
    assert P[k - 1, t] == pytest.approx(a ** (k - 1 - t) / (1 + a), rel=1e-12)


@pytest.mark.parametrize(("k", "eps"), [(2, 0.01), (4, math.log(9)), (22, 1.0)])
def test_neighbouring_counts_are_epsilon_apart_and_no_more(k, eps):
    """Counts that differ by one: every report's likelihood ratio is at most e^eps, and
    reaches it (the bound is tight); any two counts d apart are d eps apart, so the
    whole count's LDP epsilon is (k - 1) eps."""
    d = GeometricCount(k=k, epsilon=eps)
    ratios = np.abs(np.log(d.matrix[:, 1:] / d.matrix[:, :-1]))
    assert ratios.max() <= eps * (1 + 1e-12)
    assert ratios.max() == pytest.approx(eps, rel=1e-9)
    assert d.epsilon == eps
    # ldp_epsilon rounds upward (each entry moved by 2^-53): at entries near a^21 that
    # is a relative 1e-8 of the log ratio, well inside 1e-6
    assert ldp_epsilon(d.matrix) >= (k - 1) * eps
    assert ldp_epsilon(d.matrix) == pytest.approx((k - 1) * eps, rel=1e-6)


def test_draws_follow_the_matrix_within_four_sigma():
    """200,000 draws of each count, seeded: every report frequency within 4 binomial
    standard errors of its matrix entry."""
    d = GeometricCount(k=5, epsilon=math.log(9))
    rng = np.random.default_rng(58)
    n = 200_000
    for t in range(5):
        reports = d.randomize(np.full(n, t), rng)
        freq = np.bincount(reports, minlength=5) / n
        p = d.matrix[:, t]
        assert np.all(np.abs(freq - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_the_estimate_undoes_the_channel_within_four_standard_errors():
    """A known distribution of counts 0..3 (a list of 2 items and the sensitive one),
    50,000 respondents: each share and the mean count within 4 of the moment
    estimator's standard errors of the truth."""
    d = GeometricCount(k=4, epsilon=math.log(9))
    rng = np.random.default_rng(7)
    truth = np.array([0.1, 0.4, 0.35, 0.15])
    counts = rng.choice(4, size=50_000, p=truth)
    est = estimate(d, d.randomize(counts, rng))
    observed = np.bincount(counts, minlength=4) / counts.size
    assert np.all(np.abs(est.estimate - observed) <= 4 * est.std_error)
    c = np.arange(4.0)
    P_inv = np.linalg.inv(d.matrix)
    lam = d.matrix @ observed
    var = c @ P_inv @ (np.diag(lam) - np.outer(lam, lam)) @ P_inv.T @ c / counts.size
    assert abs(c @ est.estimate - c @ observed) <= 4 * math.sqrt(var)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"k": 1, "epsilon": 1.0}, "k"), ({"k": 257, "epsilon": 1.0}, "k"),
     ({"k": 4, "epsilon": 0.0}, "epsilon"), ({"k": 4, "epsilon": math.inf}, "epsilon")],
)  # fmt: skip
def test_bad_parameters_are_refused_by_name(kwargs, field):
    with pytest.raises(ValueError, match=field):
        GeometricCount(**kwargs)

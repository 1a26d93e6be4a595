"""Estimators: the seed's examples, unbiasedness and exact variance by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable import (
    ForcedResponse,
    KaryRR,
    Kuk,
    MatrixDesign,
    ReportValidationError,
    Tally,
    UnrelatedQuestion,
    Warner,
    estimate,
)
from deniable.estimation._variance import per_respondent_variance
from deniable.planning._simulation import simulate_tallies

from .conftest import Z4

COINS = ForcedResponse(p_yes=0.25, p_no=0.25)


def test_seed_debiasing_example_kary_rr():
    result = estimate(KaryRR(k=10, epsilon=math.log(3)), np.array([1]))
    expected = [-0.5, 5.5] + [-0.5] * 8
    np.testing.assert_allclose(result.estimate, expected, atol=1e-12)


def test_two_coin_estimator_and_variance_formula():
    # 400 yes reports of 1000: pi_hat = 2 * 0.4 - 1/2, Var = 4 lam (1 - lam) / n
    result = estimate(COINS, Tally([600, 400]))
    assert result.estimate[1] == pytest.approx(0.3)
    assert result.std_error[1] == pytest.approx(math.sqrt(4 * 0.4 * 0.6 / 1000))
    assert result.covariance.shape == (2, 2)
    assert result.n == 1000


def test_exact_variance_of_two_coin_design_lies_between_3_over_4n_and_1_over_n():
    for pi, expected in [(0.0, 0.75), (1.0, 0.75), (0.5, 1.0)]:
        v = per_respondent_variance(COINS, np.array([1 - pi, pi]))[1]
        assert v == pytest.approx(expected)


@pytest.mark.parametrize(
    ("design", "prevalence"),
    [
        (COINS, 0.3),
        (COINS, 0.5),
        (Warner(p=0.7), 0.1),
        (UnrelatedQuestion(p=0.5, innocuous_prevalence=0.6), 0.2),
        (Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=3), 0.4),
        (KaryRR(k=4, epsilon=1.0), [0.1, 0.2, 0.3, 0.4]),
    ],
    ids=repr,
)
def test_moment_estimator_is_unbiased_with_the_exact_variance(design, prevalence, rng):
    # S surveys of n respondents. Mean within 4 SE of the truth (SE = sqrt(V / (n S)));
    # sample variance within 4 SE of the exact variance (SE ~ V sqrt(2 / (S - 1)) for a
    # near-normal estimator). False-failure rate ~ 6e-5 per assertion.
    n, S = 1000, 4000
    pi = design.as_prevalence(prevalence)
    counts = simulate_tallies(design, pi, n, S, rng)
    estimates = (counts / n) @ design.inverse.T
    exact_var = per_respondent_variance(design, pi) / n
    mean_se = np.sqrt(exact_var / S)
    assert np.all(np.abs(estimates.mean(axis=0) - pi) <= Z4 * mean_se)
    sample_var = estimates.var(axis=0, ddof=1)
    var_se = exact_var * math.sqrt(2 / (S - 1))
    assert np.all(np.abs(sample_var - exact_var) <= Z4 * var_se)


def test_seed_variance_3_over_4n_is_rejected_by_simulation(rng):
    # at pi = 1/2 the true variance is 1/n; 3/(4n) lies far outside the 4-sigma band
    n, S = 1000, 4000
    counts = simulate_tallies(COINS, 0.5, n, S, rng)
    estimates = 2 * counts[:, 1] / n - 0.5
    s2 = estimates.var(ddof=1)
    var_se = (1 / n) * math.sqrt(2 / (S - 1))
    assert abs(s2 - 1 / n) <= Z4 * var_se
    assert abs(s2 - 3 / (4 * n)) > Z4 * var_se


def test_moment_estimate_is_never_clipped_but_mle_is_on_the_simplex():
    reports = Tally([90, 10])  # 10% yes reports: moment estimate 2 * 0.1 - 0.5 = -0.3
    moment = estimate(COINS, reports)
    mle = estimate(COINS, reports, method="mle")
    assert moment.estimate[1] == pytest.approx(-0.3)
    assert mle.estimate[1] == pytest.approx(0.0, abs=1e-9)
    assert np.all(mle.estimate >= 0)
    assert mle.estimate.sum() == pytest.approx(1.0)


def test_mle_equals_moment_inside_the_simplex_and_maximises_likelihood():
    design = MatrixDesign([[0.6, 0.1, 0.2], [0.2, 0.8, 0.2], [0.2, 0.1, 0.6]])
    tally = Tally([300, 350, 350])
    moment = estimate(design, tally)
    mle = estimate(design, tally, method="mle")
    np.testing.assert_allclose(mle.estimate, moment.estimate, atol=1e-10)
    # outside the simplex: compare log-likelihood with a fine grid over the simplex
    tally = Tally([500, 60, 440])
    mle = estimate(design, tally, method="mle")

    def loglik(pi: np.ndarray) -> float:
        return float(tally.counts @ np.log(design.matrix @ pi))

    best = max(
        loglik(np.array([a, b, 1 - a - b]))
        for a in np.linspace(0, 1, 201)
        for b in np.linspace(0, 1 - a, max(2, int((1 - a) * 200) + 1))
    )
    assert loglik(mle.estimate) >= best - 1e-9


def test_mle_covariance_matches_moment_covariance_in_the_interior():
    tally = Tally([580, 420])
    np.testing.assert_allclose(
        estimate(COINS, tally, "mle").covariance, estimate(COINS, tally).covariance, rtol=1e-9
    )


def test_em_for_rectangular_design_converges_to_likelihood_maximum(rng):
    kuk = Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=25)
    reports = kuk.randomize((rng.random(2000) < 0.3).astype(int), rng)
    mle = estimate(kuk, reports, method="mle")
    grid = np.linspace(0, 1, 100_001)
    counts = np.bincount(reports, minlength=26)
    ll = counts @ np.log(kuk.matrix[:, [0]] * (1 - grid) + kuk.matrix[:, [1]] * grid)
    assert mle.estimate[1] == pytest.approx(grid[np.argmax(ll)], abs=2e-5)


def test_bayes_posterior_matches_exact_beta_posterior_without_randomization():
    # with the identity channel, the data-augmentation posterior is Beta(a + y, b + n - y)
    design = MatrixDesign(np.eye(2))
    result = estimate(design, Tally([70, 30]), method="bayes", prior=(2, 3))
    a, b = 2 + 30, 3 + 70
    assert result.estimate[1] == pytest.approx(a / (a + b), abs=4 * 0.045 / math.sqrt(4000))
    ci = result.confidence_interval(0.95, "bayes")
    assert ci.low[1] < a / (a + b) < ci.high[1]


def test_bayes_posterior_mean_is_close_to_grid_posterior(rng):
    # exact posterior by quadrature on a fine grid, uniform prior
    tally = Tally([620, 380])
    grid = np.linspace(0, 1, 200_001)
    lam = 0.25 + 0.5 * grid
    logpost = 380 * np.log(lam) + 620 * np.log1p(-lam)
    w = np.exp(logpost - logpost.max())
    mean = float((w * grid).sum() / w.sum())
    sd = float(math.sqrt((w * (grid - mean) ** 2).sum() / w.sum()))
    result = estimate(COINS, tally, method="bayes", rng=rng)
    # Monte-Carlo SE of a Gibbs mean: sd * sqrt(autocorrelation time / draws); the
    # augmentation keeps ~1/2 of the information here, so use a time of 20 (generous).
    assert abs(result.estimate[1] - mean) <= Z4 * sd * math.sqrt(20 / 4000)
    assert result.std_error[1] == pytest.approx(sd, rel=0.1)


def test_bad_inputs():
    with pytest.raises(ValueError, match="method must be one of moment, mle, bayes"):
        estimate(COINS, Tally([1, 1]), method="median")
    with pytest.raises(ValueError, match="prior is used only"):
        estimate(COINS, Tally([1, 1]), prior=(1, 1))
    with pytest.raises(ValueError, match="pseudocounts"):
        estimate(COINS, Tally([1, 1]), method="bayes", prior=(0, 1))
    with pytest.raises(ReportValidationError, match=r"codes in 0\.\.1"):
        estimate(COINS, np.array([0, 1, 3]))
    with pytest.raises(ReportValidationError, match="3 report symbols"):
        estimate(COINS, Tally([1, 1, 1]))
    with pytest.raises(ReportValidationError, match="n = 0"):
        estimate(COINS, np.array([], dtype=int))
    with pytest.raises(TypeError, match="Design"):
        estimate("warner", Tally([1, 1]))  # type: ignore[arg-type]


def test_result_is_frozen_and_serialisable():
    result = estimate(COINS, Tally([600, 400]))
    with pytest.raises(AttributeError):
        result.method = "mle"  # type: ignore[misc]
    d = result.to_dict(methods=("normal", "wilson"))
    assert d["n"] == 1000 and [ci["method"] for ci in d["intervals"]] == ["normal", "wilson"]
    assert d["interval"]["low"] == d["intervals"][0]["low"] and d["estimator"] == "moment"


def test_implausible_estimates_are_judged_at_the_nearest_possible_prevalence():
    """All 200 reports "yes" under Warner(0.7): the estimate, 1.75, is 0.75 above 1, and
    the standard error at the nearest possible prevalence (1: Var = 0.7 * 0.3 / (200 *
    0.4^2)) is 0.081, so it is 9 standard errors out (implausible); 150 of 200 give
    1.125, 1.5 standard errors out (plausible). The plug-in standard error at 1.75 is 0."""
    from deniable import Warner, estimate
    from deniable.estimation._estimates import FLAG_Z

    design = Warner(p=0.7)
    far = estimate(design, np.ones(200, dtype=np.int64))
    se_at_one = math.sqrt(0.7 * 0.3 / 200) / 0.4
    assert far.estimate[1] == pytest.approx(1.75) and far.std_error[1] == 0.0
    assert (far.estimate[1] - 1) / se_at_one > FLAG_Z
    assert far.implausible().tolist() == [True, True]
    near = estimate(design, np.r_[np.ones(150), np.zeros(50)].astype(np.int64))
    assert near.estimate[1] == pytest.approx(1.125) and not near.implausible().any()
    assert not estimate(design, np.ones(200, dtype=np.int64), method="mle").implausible().any()

"""rr_mixed_logit: random-intercept logistic regression of a randomized answer."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from deniable import ForcedResponse
from deniable.analysis import designs_by_row, rr_logit, rr_mixed_logit
from deniable.data import load_rr_survey

FR = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)


def sample(rng, clusters=40, size=30, tau=0.8, beta=(-0.5, 0.8)):
    u = rng.normal(0.0, tau, clusters)
    g = np.repeat(np.arange(clusters), size)
    x = rng.normal(size=g.size)
    truth = rng.random(g.size) < expit(beta[0] + beta[1] * x + u[g])
    return pd.DataFrame({"y": FR.randomize(truth.astype(int), rng), "x": x, "g": g})


def test_quadrature_converges_and_nests_the_fixed_model():
    """Adaptive Gauss-Hermite with 20 and 30 nodes agree to 1e-6 in log-likelihood (the
    integral is resolved); the mixed model nests rr_logit (tau -> 0), so its maximum is
    at least rr_logit's."""
    frame = sample(np.random.default_rng(1))
    q20 = rr_mixed_logit("y ~ x + (1 | g)", frame, FR, quadrature=20)
    q30 = rr_mixed_logit("y ~ x + (1 | g)", frame, FR, quadrature=30)
    assert q20.llf == pytest.approx(q30.llf, abs=1e-6)
    assert q30.llf >= rr_logit("y ~ x", frame, FR).llf - 1e-6
    assert q30.random_effects.size == 40 and "tau" in q30.params.index


@pytest.mark.slow
def test_fixed_effects_unbiased_and_covered():
    """150 simulated surveys (40 clusters of 30, tau = 0.8), 10 nodes: the slope's mean
    estimate is within 4 standard errors (of the mean) of 0.8 and its 95% Wald interval
    covers in 95% of surveys within 4 binomial standard errors."""
    rng = np.random.default_rng(20261123)
    reps = 150
    fits = [rr_mixed_logit("y ~ x + (1 | g)", sample(rng), FR, quadrature=10) for _ in range(reps)]
    slopes = np.array([f.params["x"] for f in fits])
    assert abs(slopes.mean() - 0.8) < 4 * slopes.std(ddof=1) / math.sqrt(reps)
    covered = [f.conf_int().loc["x"].iloc[0] <= 0.8 <= f.conf_int().loc["x"].iloc[1] for f in fits]
    assert abs(np.mean(covered) - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps)


def test_plagiarism_with_designs_varying_by_row():
    """GLMMRR's Plagiarism data (crosswise and direct questioning by row, random
    intercept by age, as the issue asks): fits on the 802 complete rows of 812 (the 6
    rows without age among those dropped), 20 age clusters."""
    data = load_rr_survey("GLMMRR/Plagiarism")
    keys, designs = designs_by_row(data, p1="RRp1", p2="RRp2")
    fit = rr_mixed_logit(
        "response ~ Gender + (1 | age)", data.assign(design=keys), designs, group="design"
    )
    assert len(data) == 812 and data["age"].isna().sum() == 6
    assert fit.nobs == 802 and fit.random_effects.size == 20 and fit.converged
    assert "adaptive Gauss-Hermite" in fit.summary()


def test_bad_input_names_the_field():
    frame = sample(np.random.default_rng(0), clusters=5, size=10)
    with pytest.raises(ValueError, match="exactly one random intercept"):
        rr_mixed_logit("y ~ x", frame, FR)
    with pytest.raises(ValueError, match="not in data"):
        rr_mixed_logit("y ~ x + (1 | nope)", frame, FR)
    with pytest.raises(ValueError, match="quadrature must be"):
        rr_mixed_logit("y ~ x + (1 | g)", frame, FR, quadrature=100)


@pytest.mark.slow
def test_tau_has_a_profile_interval_and_a_boundary_test():
    """40 clusters of 30, tau = 0.8, 7 nodes: tau's profile interval holds the estimate,
    each finite end sits where the deviance (on log tau) is chi2_1(0.95), and the test of
    tau = 0 uses the 50:50 mixture (p = half the chi2_1 tail); the summary prints both.
    With no random intercept (tau = 0), the lower end is 0."""
    from scipy import stats

    critical = float(stats.chi2.ppf(0.95, 1))
    fit = rr_mixed_logit("y ~ x + (1 | g)", sample(np.random.default_rng(5)), FR, quadrature=7)
    low, high = fit.tau_interval()
    assert 0 < low < fit.params["tau"] < high
    index = len(fit.params) - 1
    for end in (low, high):
        assert fit.profile.deviance(index, math.log(end)) == pytest.approx(critical, abs=1e-3)
    test = fit.tau_test()
    assert test.statistic == pytest.approx(2 * (fit.llf - fit.llf_without_random))
    assert test.pvalue == pytest.approx(0.5 * stats.chi2.sf(test.statistic, 1))
    assert "profile-likelihood interval" in fit.summary() and "Self & Liang" in fit.summary()
    flat = rr_mixed_logit(
        "y ~ x + (1 | g)", sample(np.random.default_rng(6), tau=0.0), FR, quadrature=7
    )
    low0, high0 = flat.tau_interval()
    assert low0 == 0.0 and high0 > flat.params["tau"]


@pytest.mark.slow
def test_the_boundary_test_holds_its_level_under_tau_zero():
    """200 surveys with no random intercept (25 clusters of 20): the likelihood-ratio
    statistic is 0 in about half of them (the 50:50 mixture's point mass, within 4
    binomial SEs) and the test rejects at 5% within 4 binomial SEs of 5%."""
    rng = np.random.default_rng(20261126)
    reps, zero, rejects = 200, 0, 0
    for _ in range(reps):
        fit = rr_mixed_logit(
            "y ~ x + (1 | g)", sample(rng, clusters=25, size=20, tau=0.0), FR, quadrature=7
        )
        test = fit.tau_test()
        zero += test.statistic < 1e-3
        rejects += test.pvalue < 0.05
    assert abs(zero / reps - 0.5) < 4 * math.sqrt(0.25 / reps)
    assert abs(rejects / reps - 0.05) < 4 * math.sqrt(0.05 * 0.95 / reps)

"""Sample size, disclosure risk and the exact prevalence test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from deniable import (
    ForcedResponse,
    KaryRR,
    Kuk,
    Tally,
    Triangular,
    Warner,
    disclosure_risk,
    prevalence_test,
    prevalence_test_error_rates,
    sample_size,
)

from .conftest import Z4

COINS = ForcedResponse(p_yes=0.25, p_no=0.25)


def test_chebyshev_sample_size_uses_the_exact_worst_case_variance():
    # the seed's rule n >= V / (c q^2) with V = 1 (worst case), c = 0.1, q = 0.01
    assert sample_size(COINS, margin=0.01, confidence_level=0.90, method="chebyshev") == 100_000
    # with the seed's V = 3/4 (only the minimum, at prevalence 0) it is 75,000, not 7,500
    n0 = sample_size(COINS, margin=0.01, confidence_level=0.90, method="chebyshev", prevalence=0.0)
    assert n0 == 75_000


def test_normal_sample_size():
    z = stats.norm.ppf(0.95)
    assert sample_size(COINS, margin=0.01, confidence_level=0.90) == math.ceil(z * z * 1.0 / 1e-4)
    # a prevalence range moves the worst case: lam = 1/4 + pi/2 is closest to 1/2 at pi = 0.1
    lam = 0.25 + 0.05
    n = sample_size(COINS, margin=0.05, prevalence=(0.0, 0.1))
    assert n == math.ceil(stats.norm.ppf(0.975) ** 2 * 4 * lam * (1 - lam) / 0.05**2)


def test_exact_sample_size_reaches_the_level_exactly():
    n = sample_size(COINS, margin=0.05, confidence_level=0.95, method="exact")
    # check coverage of |pi_hat - pi| <= 0.05 at pi = 1/2 (lam = 1/2, the worst case)
    y = np.arange(n + 1)
    ok = np.abs(2 * y / n - 0.5 - 0.5) <= 0.05 + 1e-12
    assert stats.binom.pmf(y, n, 0.5)[ok].sum() >= 0.95
    # and close to the normal answer
    assert abs(n - sample_size(COINS, margin=0.05)) / n < 0.05


def test_sample_size_for_kary_and_rectangular_designs():
    k = KaryRR(k=5, epsilon=1.0)
    p, q = k.keep_probability, k.other_probability
    lam = min(max(0.5, q), p)
    expected = math.ceil(stats.norm.ppf(0.975) ** 2 * lam * (1 - lam) / (p - q) ** 2 / 0.02**2)
    assert sample_size(k, margin=0.02) == expected
    assert sample_size(Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=3), margin=0.05) > 0
    with pytest.raises(ValueError, match="exact"):
        sample_size(Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=3), margin=0.05, method="exact")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"margin": 0.0}, "margin"),
        ({"margin": 0.1, "confidence_level": 1.0}, "confidence_level"),
        ({"margin": 0.1, "method": "guess"}, "method"),
        ({"margin": 0.1, "prevalence": 1.5}, "prevalence"),
    ],
)
def test_sample_size_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sample_size(COINS, **kwargs)


def test_disclosure_risk_is_bayes_rule():
    risk = disclosure_risk(COINS, prior=0.1)
    # Pr(yes | report yes) = 0.75 * 0.1 / (0.75 * 0.1 + 0.25 * 0.9) = 0.25
    assert risk.posterior_yes[1] == pytest.approx(0.25)
    assert risk.posterior_yes[0] == pytest.approx(0.25 * 0.1 / (0.25 * 0.1 + 0.75 * 0.9))
    np.testing.assert_allclose(risk.posterior.sum(axis=1), 1.0)
    assert "from 10% to 25%" in risk.describe()[1]
    # one-sided: a circle reveals "no" for sure, a triangle raises belief in "yes"
    tri = disclosure_risk(Triangular(p=0.2), prior=0.1)
    assert tri.posterior_yes[0] == 0.0
    assert tri.posterior_yes[1] == pytest.approx(0.1 / (0.1 + 0.2 * 0.9))


def test_prevalence_test_is_a_binomial_test_on_reports():
    result = prevalence_test(COINS, Tally([440, 560]), null=0.5, alternative="greater")
    assert result.pvalue == pytest.approx(
        stats.binomtest(560, 1000, 0.5, alternative="greater").pvalue
    )
    assert result.statistic == pytest.approx(2 * 0.56 - 0.5)
    # Warner with p < 1/2 has a negative slope: "greater" prevalence = fewer yes reports
    w = Warner(p=0.3)
    res = prevalence_test(w, Tally([560, 440]), null=0.5, alternative="greater")
    assert res.pvalue == pytest.approx(stats.binomtest(440, 1000, 0.5, alternative="less").pvalue)
    with pytest.raises(ValueError, match="alternative"):
        prevalence_test(COINS, Tally([1, 1]), alternative="bigger")
    with pytest.raises(ValueError, match="binary"):
        prevalence_test(KaryRR(k=3, epsilon=1.0), Tally([1, 1, 1]))


@pytest.mark.parametrize(
    ("prevalence", "alternative", "kind"),
    [
        (0.5, "greater", "false positive"),
        (0.6, "greater", "false negative"),
        (0.5, "two-sided", "false positive"),
    ],
)
def test_error_rates_simulated_agree_with_exact(prevalence, alternative, kind, rng):
    rates = prevalence_test_error_rates(
        COINS, n=100, prevalence=prevalence, alternative=alternative, n_simulations=20_000, rng=rng
    )
    assert rates.kind == kind
    # the simulated rate is binomial around the exact one: 4-sigma band
    assert (
        abs(rates.rejection_rate_simulated - rates.rejection_rate_exact)
        <= Z4 * rates.simulated_std_error
    )
    if kind == "false positive":
        assert rates.error_rate_exact <= 0.05  # an exact test never exceeds its level


def test_two_sided_pvalues_match_scipy():
    from deniable.planning._testing import _pvalues

    counts = np.arange(0, 41)
    ours = _pvalues(counts, 40, 0.3, "two-sided")
    ref = [stats.binomtest(int(c), 40, 0.3).pvalue for c in counts]
    np.testing.assert_allclose(ours, ref, rtol=1e-9)

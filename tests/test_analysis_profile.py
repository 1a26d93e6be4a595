"""Profile-likelihood intervals for rr_linear and rr_logit: the definition checked at
the ends and against a brute-force scan, agreement with Wald where the likelihood is
quadratic, and coverage where a weak design makes Wald's fail."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from deniable import ForcedResponse, Warner
from deniable.analysis import rr_linear, rr_logit

CRITICAL = float(stats.chi2.ppf(0.95, 1))


def linear_data(seed: int, n: int = 1000, p: float = 0.65, slope: float = 1.0) -> pd.DataFrame:
    """y = slope x + N(0, 1), x a yes/no at prevalence 0.5 reported through Warner(p)."""
    rng = np.random.default_rng(seed)
    x = rng.random(n) < 0.5
    y = slope * x + rng.normal(0.0, 1.0, n)
    r = np.where(rng.random(n) < p, x, ~x).astype(int)
    return pd.DataFrame({"y": y, "r": r})


def test_the_ends_are_where_the_profile_falls_by_the_chi_square_quantile():
    fit = rr_linear("y ~ r", linear_data(1), Warner(p=0.65), "r")
    low, high = fit.profile_interval("r")
    assert low < fit.params["r"] < high
    for end in (low, high):
        assert fit.profile_deviance("r", end) == pytest.approx(CRITICAL, abs=1e-4)
    assert abs(fit.profile_deviance("r", fit.params["r"])) < 1e-6
    # a brute-force scan of the deviance puts the same ends within the scan's step
    grid = np.linspace(low - 0.1, high + 0.1, 81)
    inside = grid[[fit.profile_deviance("r", v) <= CRITICAL for v in grid]]
    step = grid[1] - grid[0]
    assert abs(inside.min() - low) <= step and abs(inside.max() - high) <= step
    # sigma and pi through their monotone maps: the ends hold the estimate
    ci = fit.confidence_interval(method="profile")
    for term in ("sigma", "pi"):
        assert ci.low[term] < fit.params[term] < ci.high[term]
    assert ci.low["pi"] > 0 and ci.high["pi"] < 1
    # the weak design's likelihood is skewed: the summary says so, and recommends the
    # interval shown to reach the level there (r*, 0.942; the profile 0.938, issue 43)
    summary = fit.summary()
    assert "disagree for r" in summary
    assert "method='rstar')" in summary and "method='profile')" not in summary


def test_a_strong_design_gives_the_wald_interval_back():
    """Warner(0.95), n = 5,000: the likelihood is nearly quadratic; the profile ends
    are within 5% of the Wald half-width of Wald's, and the summary adds no note."""
    fit = rr_linear("y ~ r", linear_data(2, n=5000, p=0.95), Warner(p=0.95), "r")
    wald = fit.conf_int().loc["r"]
    low, high = fit.profile_interval("r")
    half = (wald["high"] - wald["low"]) / 2
    assert abs(low - wald["low"]) < 0.05 * half and abs(high - wald["high"]) < 0.05 * half
    assert "Note" not in fit.summary()
    with pytest.raises(ValueError, match="term must be one of"):
        fit.profile_interval("nope")
    with pytest.raises(ValueError, match="term must be a coefficient"):
        fit.profile_deviance("sigma", 1.0)


def test_rr_logit_profile_intervals():
    """Forced response, n = 3,000, logit(pi) = -1 + 0.8 z: each coefficient's ends sit
    where the deviance is the chi-square quantile; the intercept's interval holds -1."""
    rng = np.random.default_rng(3)
    n = 3000
    z = rng.normal(size=n)
    truth = rng.random(n) < 1 / (1 + np.exp(-(-1 + 0.8 * z)))
    design = ForcedResponse(p_yes=0.2, p_no=0.2)
    coin = rng.random(n)
    report = np.where(coin < 0.2, 1, np.where(coin < 0.4, 0, truth.astype(int)))
    fit = rr_logit("r ~ z", pd.DataFrame({"r": report, "z": z}), design)
    ci = fit.confidence_interval(method="profile")
    for term in ("Intercept", "z"):
        for end in (ci.low[term], ci.high[term]):
            assert fit.profile_deviance(term, end) == pytest.approx(CRITICAL, abs=1e-3)
    assert ci.low["Intercept"] < -1 < ci.high["Intercept"]
    assert ci.low["z"] < 0.8 < ci.high["z"]


@pytest.mark.slow
def test_profile_intervals_cover_a_weak_design():
    """Warner(0.65), prevalence 0.5, n = 1,000, slope 1, 1,500 seeded surveys, each
    fitted once and checked three ways on the same data: the Wald interval of the
    slope, the profile interval (the deviance at the true slope at most chi2_1(0.95))
    and the modified signed root's (``|r*(1)| <= z_0.975``).

    - The profile interval covers more often than Wald's: of the surveys where the two
      disagree, the profile's wins are more than half, by a one-sided sign test at 4
      sigma (measured: Wald 0.908, profile 0.938).
    - The issue's goal, 95% less 2 Monte-Carlo SEs (0.9387), is met by r* (measured
      0.942): the signed root r has SD 1.04 here (its square averages 1.12, not
      chi-square's 1); r* brings it to 1.02. The plain profile interval (0.938) is
      reported, not asserted against the goal."""
    surveys = 1500
    z = 1.959963984540054
    profile = wald = adjusted = profile_only = wald_only = 0
    for seed in range(surveys):
        fit = rr_linear("y ~ r", linear_data(10_000 + seed), Warner(p=0.65), "r")
        r, r_star = fit.signed_roots("r", 1.0)
        by_profile = r * r <= CRITICAL
        low, high = fit.conf_int().loc["r"]
        by_wald = bool(low <= 1.0 <= high)
        profile += by_profile
        wald += by_wald
        adjusted += abs(r_star) <= z
        profile_only += by_profile and not by_wald
        wald_only += by_wald and not by_profile
    split = profile_only + wald_only
    assert profile_only - split / 2 > 4 * math.sqrt(split / 4), (profile_only, wald_only)
    goal = 0.95 - 2 * math.sqrt(0.95 * 0.05 / surveys)
    assert adjusted / surveys >= goal, (adjusted / surveys, profile / surveys, wald / surveys)


def test_rstar_interval_ends_and_agreement_with_the_profile():
    """The r* interval's ends are where |r*| = z_0.975; r at them is the profile's
    signed root; on a strong design (direct questioning, n = 4,000, where the
    likelihood is nearly quadratic) r* and r differ by little (an O(1/sqrt(n)) term)
    and the two intervals nearly coincide."""
    z = 1.959963984540054
    fit = rr_linear("y ~ r", linear_data(1), Warner(p=0.65), "r")
    ci = fit.confidence_interval(method="rstar")
    for end, want in ((ci.low["r"], z), (ci.high["r"], -z)):
        r, r_star = fit.signed_roots("r", end)
        assert r_star == pytest.approx(want, abs=1e-4)
        assert r * r == pytest.approx(fit.profile_deviance("r", end), rel=1e-6)
    strong = rr_linear("y ~ r", linear_data(2, n=4000, p=1.0), Warner(p=1.0), "r")
    plain = strong.confidence_interval(method="profile")
    modified = strong.confidence_interval(method="rstar")
    width = plain.high["r"] - plain.low["r"]
    assert abs(modified.low["r"] - plain.low["r"]) < 0.05 * width
    assert abs(modified.high["r"] - plain.high["r"]) < 0.05 * width


def test_rstar_needs_each_rows_score():
    rng = np.random.default_rng(3)
    z = rng.normal(size=500)
    report = (rng.random(500) < 0.4).astype(int)
    fit = rr_logit("r ~ z", pd.DataFrame({"r": report, "z": z}), Warner(p=0.8))
    with pytest.raises(ValueError, match=r"r\* needs each row's log-likelihood and score"):
        fit.confidence_interval(method="rstar")

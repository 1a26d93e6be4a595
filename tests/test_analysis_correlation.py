"""rr_correlation: correlations of randomized and direct variables (RRreg's RRcor)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deniable import ForcedResponse, Warner
from deniable.analysis import rr_correlation

FR = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
PI, SLOPE = 0.3, 0.8
#: Population correlation of X ~ Bernoulli(PI) and Y = SLOPE X + N(0, 1).
RHO = SLOPE * math.sqrt(PI * (1 - PI)) / math.sqrt(SLOPE**2 * PI * (1 - PI) + 1)


def sample(rng, n, design2=None):
    x = rng.random(n) < PI
    y = SLOPE * x + rng.normal(size=n)
    frame = pd.DataFrame({"r": FR.randomize(x.astype(int), rng), "y": y, "z": rng.normal(size=n)})
    if design2 is not None:  # a second randomized variable: X itself, another design
        frame["r2"] = design2.randomize(x.astype(int), rng)
    return frame


def test_direct_variables_give_pearson():
    rng = np.random.default_rng(3)
    frame = sample(rng, 500)
    res = rr_correlation(frame, ["y", "z"], {})
    assert res.estimate["y ~ z"] == pytest.approx(np.corrcoef(frame.y, frame.z)[0, 1], abs=1e-12)
    assert res.matrix.loc["y", "y"] == 1.0 and res.n == 500


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_unbiased_and_bootstrap_standard_errors_calibrated():
    """200 simulated surveys of n = 2,000 (forced response on X): the mean estimate of
    cor(X, Y) is within 4 standard errors of the population value, cor(X, Z) = 0 too,
    the mean bootstrap SE matches the spread of the estimates within the 4-sigma band
    of a sample standard deviation (4 / sqrt(2 * 199) relative), and the 95% percentile
    interval covers the population value in 95% of surveys within 4 binomial standard
    errors."""
    rng = np.random.default_rng(20261123)
    reps = 200
    est, ses, zero, covered = [], [], [], []
    for i in range(reps):
        res = rr_correlation(sample(rng, 2000), ["r", "y", "z"], {"r": FR}, bootstrap=100, rng=i)
        ci = res.confidence_interval()
        covered.append(ci.low["r ~ y"] <= RHO <= ci.high["r ~ y"])
        est.append(res.estimate["r ~ y"])
        ses.append(res.std_error["r ~ y"])
        zero.append(res.estimate["r ~ z"])
    sd = np.std(est, ddof=1)
    assert abs(np.mean(est) - RHO) < 4 * sd / math.sqrt(reps)
    assert abs(np.mean(zero)) < 4 * np.std(zero, ddof=1) / math.sqrt(reps)
    assert abs(np.mean(ses) / sd - 1) < 4 / math.sqrt(2 * (reps - 1))
    assert abs(np.mean(covered) - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps)


def test_two_randomized_variables():
    """X reported twice through independent designs: cor(R1, R2) corrected for both
    designs estimates cor(X, X) = 1 (within 4 bootstrap SEs), and the percentile
    interval holds it."""
    rng = np.random.default_rng(11)
    frame = sample(rng, 20_000, Warner(p=0.8))
    res = rr_correlation(frame, ["r", "r2"], {"r": FR, "r2": Warner(p=0.8)}, rng=1)
    assert abs(res.estimate["r ~ r2"] - 1.0) < 4 * res.std_error["r ~ r2"]
    ci = res.confidence_interval()
    assert ci.low["r ~ r2"] <= 1.0 <= ci.high["r ~ r2"]
    assert res.confidence_interval(method="normal").low.index.tolist() == ["r ~ r2"]


def test_bad_input_names_the_field():
    rng = np.random.default_rng(0)
    frame = sample(rng, 100)
    with pytest.raises(ValueError, match="not in data"):
        rr_correlation(frame, ["r", "nope"], {"r": FR})
    with pytest.raises(ValueError, match="report codes 0 and 1"):
        rr_correlation(frame, ["y", "z"], {"y": FR})
    with pytest.raises(ValueError, match="at least 2"):
        rr_correlation(frame, ["r"], {"r": FR})
    with pytest.raises(ValueError, match="bootstrap must be"):
        rr_correlation(frame, ["r", "y"], {"r": FR}, bootstrap=10**6)
    with pytest.raises(ValueError, match="method must be"):
        rr_correlation(frame, ["r", "y"], {"r": FR}).confidence_interval(method="bca")
    from deniable.analysis import StochasticLieDetector

    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    with pytest.raises(ValueError, match=r"group is required: designs\['r'\] has randomization"):
        rr_correlation(frame, ["r", "y"], {"r": sld})
    with pytest.raises(ValueError, match=r"columns \['g'\] are not in data"):
        rr_correlation(frame, ["r", "y"], {"r": sld}, group="g")
    with pytest.raises(ValueError, match="group value 3 is not a randomization group"):
        rr_correlation(frame.assign(g=3), ["r", "y"], {"r": sld}, group="g")


@pytest.mark.slow
def test_stochastic_lie_detector_in_two_groups_recovers_the_correlation():
    """A binary trait X (pi 0.4) and Y = X + N(0, 1): cor(X, Y) = sqrt(0.24 / 1.24).
    Reports by the SLD in two groups with honesty t = 0.7 (unknown to the fit). Over 40
    surveys of 4,000 the mean estimate is within 4 standard errors of the mean (the
    replicates' SD / sqrt(40)) of the truth, and the mean bootstrap SE is within 25% of
    the estimates' SD (the SD of 40 draws has relative SE 1 / sqrt(2 * 39) = 0.11)."""
    from deniable.analysis import StochasticLieDetector

    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    rng = np.random.default_rng(11)
    truth = math.sqrt(0.24 / 1.24)
    estimates, ses = [], []
    for i in range(40):
        n = 4000
        x = (rng.random(n) < 0.4).astype(int)
        groups = np.where(rng.random(n) < 0.5, 1, 2)
        reports = sld.simulate(x, groups - 1, [0.7], rng)
        frame = pd.DataFrame({"r": reports, "y": x + rng.normal(size=n), "g": groups})
        res = rr_correlation(frame, ["r", "y"], {"r": sld}, group="g", bootstrap=100, rng=i)
        estimates.append(res.estimate["r ~ y"])
        ses.append(res.std_error["r ~ y"])
    sd = float(np.std(estimates, ddof=1))
    assert abs(np.mean(estimates) - truth) < 4 * sd / math.sqrt(40)
    assert 0.75 < np.mean(ses) / sd < 1.25


@pytest.mark.slow  # 4.5 s, simulated groups: the whole suite
def test_known_designs_by_group():
    """Forced response in group 1, Warner(0.8) in group 2 (a KnownChannel by group):
    on 20,000 respondents cor(X, Y) is within 4 bootstrap SEs of RHO; and a randomized
    pair of group-model variables (the same channel twice) estimates cor(X, X) = 1
    within 4 SEs."""
    from deniable.analysis import KnownChannel

    rng = np.random.default_rng(21)
    n = 20_000
    x = (rng.random(n) < PI).astype(int)
    g = np.where(rng.random(n) < 0.5, 1, 2)
    warner = Warner(p=0.8)

    def report() -> np.ndarray:
        return np.where(g == 1, FR.randomize(x, rng), warner.randomize(x, rng))

    frame = pd.DataFrame({"r": report(), "r2": report(), "y": SLOPE * x + rng.normal(size=n)})
    frame["g"] = g
    channel = KnownChannel({1: FR, 2: warner})
    res = rr_correlation(
        frame, ["r", "r2", "y"], {"r": channel, "r2": channel}, group="g", bootstrap=200
    )
    assert abs(res.estimate["r ~ y"] - RHO) < 4 * res.std_error["r ~ y"]
    assert abs(res.estimate["r ~ r2"] - 1.0) < 4 * res.std_error["r ~ r2"]

"""Named RRTCS devices (Devore, Singh-Joarder, Mangat-Singh, Mangat-Singh-Singh,
Soberanis Cruz, two-reply unknown-innocuous designs) as complex-sample revisions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.analysis import (
    devore,
    mangat_singh,
    mangat_singh_singh,
    singh_joarder,
    soberanis_cruz,
    survey_estimate,
    two_reply_codes,
    unknown_innocuous_two_replies,
)
from deniable.data import load_rr_survey

# (data set, revision, RRTCS's revision of a reply z as written in Qualitative.R, options)
EXAMPLES = {
    "Devore": ("DevoreData", devore(0.7), lambda z: (z - 0.3) / 0.7, {"kind": "total"}),
    "SinghJoarder": (
        "SinghJoarderData",
        singh_joarder(0.6),
        lambda z: (z - 0.4) / ((2 * 0.6 - 1) + 0.6 * 0.4),
        {"N": 802},
    ),
    "MangatSingh": (
        "MangatSinghData",
        mangat_singh(0.7, 0.55),
        lambda z: (z - 0.45 * 0.3) / (0.55 + 0.45 * 0.4),
        {"N": 802},
    ),
    "MangatSinghSingh": (
        "MangatSinghSinghData",
        mangat_singh_singh(0.6, 0.5),
        lambda z: (z - 0.4 * 0.5) / (1 - 0.4 * 0.5),
        {"kind": "total"},
    ),
    "SoberanisCruz": (
        "SoberanisCruzData",
        soberanis_cruz(0.7, 0.5),
        lambda z: (z - 0.3 * 0.5) / 0.7,
        {"kind": "total"},
    ),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_rrtcs_examples_give_the_horvitz_thompson_estimate(name):
    """On each device's RRTCS example (data set, parameters and estimator of its help
    page), the estimate is the Horvitz-Thompson total or mean of RRTCS's revised replies
    (its formula, coded here independently)."""
    file, revision, revise, options = EXAMPLES[name]
    data = load_rr_survey(f"RRTCS/{file}")
    est = survey_estimate(revision, data.z, pi=data.Pi, **options)
    total = float(np.sum(revise(data.z.to_numpy()) / data.Pi.to_numpy()))
    expected = total if options.get("kind") == "total" else total / options["N"]
    assert est.estimate == pytest.approx(expected, rel=1e-12)
    assert est.std_error > 0


def test_two_reply_unknown_innocuous_designs_on_rrtcs_examples():
    """HorvitzUB (p1 = 0.6, p2 = 0.7) and MangatSinghSinghUB (0.6, 0.8), mean with
    N = 802: RRTCS revises the replies I, J as ((1 - p2) I - (1 - p1) J) / (p1 - p2)."""
    for file, p1, p2 in (("HorvitzUBData", 0.6, 0.7), ("MangatSinghSinghUBData", 0.6, 0.8)):
        data = load_rr_survey(f"RRTCS/{file}")
        z = two_reply_codes(data.I, data.J)
        est = survey_estimate(unknown_innocuous_two_replies(p1, p2), z, pi=data.Pi, N=802)
        r = ((1 - p2) * data.I - (1 - p1) * data.J) / (p1 - p2)
        assert est.estimate == pytest.approx(float(np.sum(r / data.Pi)) / 802, rel=1e-12)
    with pytest.raises(ValueError, match="must differ"):
        unknown_innocuous_two_replies(0.6, 0.6)
    with pytest.raises(ValueError, match="0 or 1"):
        two_reply_codes([0, 2], [1, 1])


def test_the_devices_are_unbiased_for_the_mechanisms_they_describe():
    """Simulated from each device's own description (not from its c and d): Devore
    (truthful with chance p, else "yes"), Mangat & Singh (truthful with chance t, else
    Warner with p) and the two-reply design (each reply answers the sensitive question
    with chance p_i, else an innocuous one of unknown prevalence 0.4). Over 400 simple
    random samples of 1,000 at prevalence 0.2, the mean estimate is within 4 standard
    errors (of the mean) of 0.2."""
    rng = np.random.default_rng(20261123)
    n, reps, prevalence = 1000, 400, 0.2

    def devore_replies(y):
        return np.where(rng.random(y.size) < 0.7, y, 1)

    def mangat_singh_replies(y):
        warner = np.where(rng.random(y.size) < 0.7, y, 1 - y)
        return np.where(rng.random(y.size) < 0.55, y, warner)

    def two_replies(y):
        innocuous = rng.random(y.size) < 0.4
        first = np.where(rng.random(y.size) < 0.6, y, innocuous)
        innocuous = rng.random(y.size) < 0.4
        second = np.where(rng.random(y.size) < 0.8, y, innocuous)
        return two_reply_codes(first.astype(int), second.astype(int))

    cases = [
        (devore(0.7), devore_replies),
        (mangat_singh(0.7, 0.55), mangat_singh_replies),
        (unknown_innocuous_two_replies(0.6, 0.8), two_replies),
    ]
    for revision, replies in cases:
        estimates = []
        for _ in range(reps):
            y = (rng.random(n) < prevalence).astype(int)
            z = replies(y)
            est = survey_estimate(revision, z, pi=np.full(n, n / 1e6), N=1e6)
            estimates.append(est.estimate)
        spread = np.std(estimates, ddof=1) / math.sqrt(reps)
        assert abs(np.mean(estimates) - prevalence) < 4 * spread, revision.name


def test_jackknife_with_finite_population_correction_as_rrtcs():
    """RRTCS's JackknifeVariance without strata or clusters: delete-one totals with the
    others reweighted by n / (n - 1), ``(1 - mean(pi)) (n - 1) / n sum (J_i - mean J)^2``
    (its loop, coded here independently), on the Devore example's total."""
    data = load_rr_survey("RRTCS/DevoreData")
    revise = EXAMPLES["Devore"][2]
    r, pi = revise(data.z.to_numpy()), data.Pi.to_numpy()
    n = r.size
    keep = ~np.eye(n, dtype=bool)
    replicates = np.array([np.sum(r[k] / (pi[k] * (n - 1) / n)) for k in keep])
    expected = (1 - pi.mean()) * (n - 1) / n * np.sum((replicates - replicates.mean()) ** 2)
    est = survey_estimate(devore(0.7), data.z, pi=pi, kind="total", variance="jackknife", fpc=True)
    assert est.std_error**2 == pytest.approx(expected, rel=1e-10)
    plain = survey_estimate(devore(0.7), data.z, pi=pi, kind="total", variance="jackknife")
    assert est.std_error**2 == pytest.approx(plain.std_error**2 * (1 - pi.mean()), rel=1e-12)
    with pytest.raises(ValueError, match="fpc applies"):
        survey_estimate(devore(0.7), data.z, pi=pi, kind="total", fpc=True)


def test_the_innocuous_prevalence_is_named_and_alpha_warns():
    """RRTCS calls the innocuous prevalence ``alpha``; here ``alpha`` is a significance
    level only, so the keyword is ``innocuous_prevalence`` (``alpha=`` warns until 0.3)."""
    z = np.array([0.0, 1.0])
    new = mangat_singh_singh(0.6, innocuous_prevalence=0.5)
    assert new.name == "MangatSinghSingh(p=0.6, innocuous_prevalence=0.5)"
    np.testing.assert_array_equal(new.revise(z)[0], mangat_singh_singh(0.6, 0.5).revise(z)[0])
    with pytest.warns(DeprecationWarning, match="innocuous_prevalence"):
        old = soberanis_cruz(0.7, alpha=0.5)
    assert old.name == soberanis_cruz(0.7, 0.5).name
    np.testing.assert_array_equal(old.revise(z)[0], soberanis_cruz(0.7, 0.5).revise(z)[0])
    with pytest.raises(ValueError, match="innocuous_prevalence"):
        mangat_singh_singh(0.6, 1.3)
    with pytest.raises(TypeError, match="innocuous_prevalence is required"):
        soberanis_cruz(0.7)

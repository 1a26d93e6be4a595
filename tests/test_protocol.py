"""The mechanism protocol, the one registry and the one result vocabulary."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deniable import (
    BudgetExceededError,
    ConfidenceInterval,
    ForcedResponse,
    KaryRR,
    Mechanism,
    PrivacyWarning,
    Rappor,
    ReportValidationError,
    estimate,
    heavy_hitters,
    mechanism_from_spec,
)
from deniable.analysis import rr_logit, subgroup_prevalence, survey_estimate
from deniable.analysis._complex import kuk_revision
from deniable.collection.model._survey import load_survey
from deniable.collection.respondent._client import design_from_view
from deniable.estimation import EstimateResult, RapporEstimate
from deniable.mechanisms import BloomChannel, MatrixChannel, SupportChannel, check_epsilon
from deniable.mechanisms._registry import MECHANISMS, mechanism_from_dict

SPECS = [
    "forced-response:p_yes=0.25,p_no=0.25",
    "warner:p=0.7",
    "unrelated-question:p=0.5,innocuous_prevalence=0.3",
    "crosswise:p=0.25",
    "kuk:p_carrier=0.6,p_noncarrier=0.2,draws=3",
    "mangat:p=0.7",
    "triangular:p=0.3",
    "kary-rr:k=5,epsilon=1",
    "direct:k=3",
    "oue:k=20,epsilon=1",
    "sue:k=20,epsilon=1",
    "olh:k=50,epsilon=2",
    "hadamard:k=50,epsilon=1",
    "rappor:n_bloom_bits=16,h=2,n_cohorts=4",
]


#: The rest of the family: numeric means, dBitFlip and PEM (tests/test_channels.py).
OTHER_SPECS = [
    "duchi:epsilon=1",
    "piecewise:epsilon=1",
    "hybrid:epsilon=1",
    "1bitmean:epsilon=1",
    "dbitflip:k=10,epsilon=1",
    "pem:epsilon=4,max_length=3",
    "pem-bytes:epsilon=2,max_bytes=16,step=2",
]


def test_the_registry_names_every_mechanism_once():
    names = [s.partition(":")[0] for s in SPECS + OTHER_SPECS]
    assert sorted(MECHANISMS) == sorted(names)


@pytest.mark.parametrize("spec", SPECS)
def test_every_mechanism_satisfies_the_protocol_and_round_trips(spec):
    mech = mechanism_from_spec(spec)
    assert isinstance(mech, Mechanism)
    assert isinstance(mech.channel, MatrixChannel | SupportChannel | BloomChannel)
    assert mech.epsilon > 0
    assert (
        mechanism_from_spec(mech.spec) == mech or mech.spec == mechanism_from_spec(mech.spec).spec
    )
    described = mech.to_dict()
    assert described["mechanism"] == mech.spec_name
    assert mechanism_from_dict(described).spec == mech.spec
    assert isinstance(mech.params, dict)


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.startswith("rappor")])
def test_tally_is_sufficient_and_estimates_dispatch_on_the_channel(spec):
    mech = mechanism_from_spec(spec)
    rng = np.random.default_rng(3)
    truths = rng.integers(0, mech.n_truths, 4000)
    reports = mech.randomize(truths, rng)
    from_reports = estimate(mech, reports)
    from_tally = estimate(mech, mech.tally(reports))
    np.testing.assert_array_equal(from_reports.estimate, from_tally.estimate)
    # unbiased within 5 standard errors for every category (false failure < 1e-5 each)
    share = np.bincount(truths, minlength=mech.n_truths) / truths.size
    assert np.all(np.abs(from_reports.estimate - share) < 5 * from_reports.std_error + 1e-12)


def test_rappor_channel_has_the_oracle_roles():
    r = Rappor(n_bloom_bits=16, h=2, n_cohorts=4, f=0.5, p=0.5, q=0.75)
    # p* = Pr(report bit 1 | Bloom bit 1) > q* = Pr(report bit 1 | Bloom bit 0)
    assert r.p_star == pytest.approx(0.75 * 0.75 + 0.25 * 0.5)
    assert r.q_star == pytest.approx(0.25 * 0.75 + 0.75 * 0.5)
    assert r.channel == BloomChannel(r.p_star, r.q_star)


def test_one_privacy_guard_for_every_mechanism():
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, 30\] nats"):
        check_epsilon(31)
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, 30\] nats"):
        mechanism_from_spec("olh:k=10,epsilon=0")
    for spec in ("kary-rr:k=4,epsilon=6", "oue:k=10,epsilon=6", "olh:k=10,epsilon=6"):
        with pytest.warns(PrivacyWarning, match="epsilon"):
            mechanism_from_spec(spec)
    with pytest.raises(TypeError, match="Mechanism"):
        estimate("forced-response", np.array([0, 1]))  # type: ignore[arg-type]


def test_a_server_that_understates_epsilon_is_refused():
    coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    view = {
        "id": "q",
        "columns": coins.matrix.T.tolist(),
        "choices": ["no", "yes"],
        "reports": ["no", "yes"],
        "epsilon": math.log(3) * 0.99,
    }
    with pytest.raises(ValueError, match="states epsilon"):
        design_from_view(view)
    view["epsilon"] = coins.epsilon
    assert design_from_view(view) == coins


def test_a_survey_over_its_budget_raises_budget_exceeded():
    survey = {
        "format": 1,
        "id": "s",
        "version": 1,
        "title": "t",
        "privacy_budget": 1.0,
        "questions": [
            {"id": "a", "text": "A?", "design": {"name": "warner", "params": {"p": 0.8}}},
        ],
    }
    with pytest.raises(BudgetExceededError, match="privacy_budget"):
        load_survey(survey)


def check_vocabulary(result: EstimateResult, n: int) -> None:
    est = np.atleast_1d(np.asarray(result.estimate, dtype=float))
    se = np.atleast_1d(np.asarray(result.std_error, dtype=float))
    assert est.shape == se.shape == (n,)
    ci = result.confidence_interval(0.9)
    assert isinstance(ci, ConfidenceInterval)
    low, high = np.atleast_1d(np.asarray(ci.low, float)), np.atleast_1d(np.asarray(ci.high, float))
    assert np.all(low <= high)
    wider = result.confidence_interval(0.99)
    assert np.all(np.atleast_1d(np.asarray(wider.low, float)) <= low + 1e-12)
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == n
    assert {"estimate", "std_error", "low", "high"} <= set(frame.columns)
    text = result.summary()
    assert all(str(label) in text for label in result.labels)


def test_every_result_speaks_the_same_vocabulary():
    rng = np.random.default_rng(11)
    coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    truths = rng.random(3000) < 0.3
    reports = coins.randomize(truths, rng)
    check_vocabulary(estimate(coins, reports), 2)
    oracle = mechanism_from_spec("olh:k=30,epsilon=2")
    values = rng.choice(30, 20_000, p=np.r_[[0.5], np.full(29, 0.5 / 29)])
    result = estimate(oracle, oracle.randomize(values, rng))
    check_vocabulary(result, 30)
    hitters = heavy_hitters(result)
    assert hitters.values[0] == "0"
    check_vocabulary(hitters, len(hitters))
    frame = pd.DataFrame({"report": reports, "x": rng.normal(size=reports.size)})
    frame["g"] = np.where(frame.x > 0, "a", "b")
    fit = rr_logit("report ~ x", frame, coins)
    check_vocabulary(fit, 2)
    assert fit.estimate is fit.params
    by = subgroup_prevalence(coins, frame["report"], frame["g"])
    check_vocabulary(by.difference("a", "b"), 1)
    kuk = survey_estimate(kuk_revision(0.6, 0.2, 3), rng.integers(0, 4, 500), N=10_000)
    check_vocabulary(kuk, 1)
    low, high = kuk.confidence_interval()  # still unpacks like a tuple
    assert low < high


def test_rappor_decodes_into_a_result_object():
    rng = np.random.default_rng(5)
    cands = [f"v{i}" for i in range(10)]
    r = Rappor(n_bloom_bits=32, h=2, n_cohorts=8, candidates=cands)
    values = [cands[i] for i in rng.choice(10, 20_000, p=np.r_[[0.4, 0.3], np.full(8, 0.3 / 8)])]
    res = estimate(r, r.randomize(values, rng))
    assert isinstance(res, RapporEstimate)
    assert res.detected.shape == (10,) and bool(res.detected[0])
    check_vocabulary(res, 10)


def test_kary_rr_spec_round_trip_keeps_labels_out():
    assert mechanism_from_spec(KaryRR(k=3, epsilon=1.5).spec) == KaryRR(k=3, epsilon=1.5)


@pytest.mark.parametrize("spec", SPECS)
def test_reports_round_trip_through_table_columns(spec):
    mech = mechanism_from_spec(spec)
    rng = np.random.default_rng(8)
    if isinstance(mech, Rappor):
        reports = mech.randomize(["a", "b", "c"] * 20, rng)
    else:
        reports = mech.randomize(rng.integers(0, mech.n_truths, 60), rng)
    columns = mech.report_columns(reports)
    assert all(len(v) == 60 for v in columns.values())
    back = mech.reports_from_columns({k: list(v) for k, v in columns.items()})
    np.testing.assert_array_equal(mech.tally(back).counts, mech.tally(reports).counts)
    assert mech.tally(back).n == 60
    with pytest.raises(ReportValidationError, match="reports need a column"):
        mech.reports_from_columns({"nothing": [1]})

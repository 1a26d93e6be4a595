"""Numeric survey questions: a number in [low, high], randomized to one bit.

The one-bit mechanisms (Duchi, Jordan & Wainwright 2018; Ding, Kulkarni & Yekhanin 2017)
are Warner's design applied to the value rounded at random to ``low`` or ``high``; a
numeric question's estimates are that design's, mapped to the question's units.
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._export import export_bytes
from deniable.collection.model._survey import load_survey
from deniable.collection.store._storage import Store
from deniable.collection.study._survey_results import survey_results
from deniable.errors import SurveyError
from deniable.estimation import estimate
from deniable.mechanisms._numeric import DuchiMean, OneBitMean
from deniable.tallies import Tally

from .conftest import SURVEY

LOW, HIGH = 0.0, 40.0
NUMERIC = {
    "id": "overtime",
    "text": "How many hours of unpaid overtime did you work last week?",
    "range": {"low": LOW, "high": HIGH, "unit": "hours"},
    "design": {"name": "duchi", "params": {"epsilon": 1.0}},
}


def numeric_survey(**question):
    data = copy.deepcopy(SURVEY)
    data["questions"].append(copy.deepcopy(NUMERIC) | question)
    data["privacy_budget"] = 8.0
    return load_survey(data)


@pytest.mark.parametrize("name, cls", [("duchi", DuchiMean), ("1bitmean", OneBitMean)])
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_the_question_is_warner_over_its_bounds(name, cls, eps):
    """Pr(report 1 | v) of the mechanism equals the design's columns mixed linearly in
    z = (v - low) / (high - low); the question costs exactly epsilon."""
    q = numeric_survey(design={"name": name, "params": {"epsilon": eps}}).question("overtime")
    mech = cls(eps, low=LOW, high=HIGH)
    assert q.numeric is not None and q.numeric.params == mech.params
    v = np.linspace(LOW, HIGH, 101)
    z = (v - LOW) / (HIGH - LOW)
    mixed = (1 - z) * q.mechanism.matrix[1, 0] + z * q.mechanism.matrix[1, 1]
    np.testing.assert_allclose(mixed, mech.prob_one(v), rtol=0, atol=1e-15)
    assert q.cost == eps and q.epsilon == eps
    assert q.mechanism.epsilon == pytest.approx(eps, abs=1e-12)
    assert q.choice_labels == ["0", "40"] and q.report_labels == ["0", "1"]


def test_digests_of_surveys_without_numeric_questions_did_not_change():
    s = load_survey(SURVEY)
    assert s.digest == "5300882c604da75906b8231f1c40430b4b271c8226043199f5a9446228ec3071"
    assert s.questions[0].content_digest == (
        "3bb4b70d0454a899ca2d51f30c5e69bd8d04fb8a4472a72017d5b8f75f3da794"
    )
    # a numeric question's digest covers its range: a new range is a new question
    a = numeric_survey().question("overtime").content_digest
    b = numeric_survey(range={"low": 0, "high": 60}).question("overtime").content_digest
    assert a != b


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"range": {"low": 5, "high": 5}}, "low (5) must be below high (5)"),
        ({"range": {"low": 0, "high": math.inf}}, "range.high"),
        ({"range": {"low": -1e13, "high": 0}}, "range.low"),
        ({"range": {"low": 0, "high": 1, "colour": "red"}}, "range.colour"),
        ({"design": {"name": "piecewise", "params": {"epsilon": 1}}}, "real numbers"),
        ({"design": {"name": "warner", "params": {"p": 0.7}}}, "needs one of duchi, 1bitmean"),
        ({"design": {"name": "duchi", "params": {"epsilon": 1, "k": 2}}}, "exactly {epsilon}"),
        ({"design": {"name": "duchi", "params": {}}}, "exactly {epsilon}"),
        ({"design": {"name": "duchi", "params": {"epsilon": -1}}}, "must be > 0"),
        ({"design": {"name": "duchi", "params": {"epsilon": 9}}}, "allow_large_epsilon"),
        ({"choices": ["a", "b"]}, "choices: a numeric question"),
        ({"sensitive": ["40"]}, "sensitive: a numeric question"),
        ({"range": None}, "give the question a range"),
    ],
)
def test_malformed_numeric_questions_are_named(change, fragment):
    with pytest.raises(SurveyError) as info:
        numeric_survey(**change)
    assert fragment in str(info.value)
    assert any(field.startswith("questions.2") for field, _ in info.value.errors)


def test_the_budget_counts_numeric_questions():
    with pytest.raises(SurveyError, match="privacy_budget"):
        load_survey(
            copy.deepcopy(SURVEY)
            | {"privacy_budget": 3.0, "questions": [*SURVEY["questions"], NUMERIC]}
        )


def test_respondent_view_of_a_numeric_question():
    view = numeric_survey().respondent_view()
    q = view["questions"][-1]
    assert q["numeric"] == {"low": LOW, "high": HIGH, "unit": "hours"}
    assert q["by_hand"] is False and q["params"] == {"epsilon": 1.0, "low": LOW, "high": HIGH}
    assert view["questions"][0]["numeric"] is None


def _interval_table(q, n):
    """The mapped interval for every possible count of 1-reports, k = 0..n."""
    lows, highs, means = (np.empty(n + 1) for _ in range(3))
    for k in range(n + 1):
        est = estimate(q.mechanism, Tally(np.array([n - k, k])))
        ci = est.confidence_interval(0.95)
        lows[k], highs[k], means[k] = ci.low[1], ci.high[1], est.estimate[1]
    return lows, highs, means


@pytest.mark.parametrize("n", [30, 100, 300])
def test_exact_coverage_of_the_mean_interval_at_and_near_the_bounds(n):
    """Exact coverage (binomial enumeration, no simulation error) of the 95% interval for
    a population answering one value v, at v = low, near it, inside, near high and high.
    The default interval (Feldman & Cousins 1998) is a Neyman construction: at least
    0.95 at every value, up to its bisection's tolerance."""
    q = numeric_survey().question("overtime")
    lows, highs, _ = _interval_table(q, n)
    for share in (0.0, 0.01, 0.05, 0.3, 0.5, 0.95, 0.99, 1.0):
        lam = q.mechanism.matrix[1] @ np.array([1 - share, share])
        pmf = stats.binom.pmf(np.arange(n + 1), n, lam)
        covered = pmf[(lows <= share + 1e-12) & (highs >= share - 1e-12)].sum()
        assert covered >= 0.95 - 1e-9, (n, share, covered)


def test_unbiased_mean_and_coverage_for_a_varied_population(rng):
    """4,000 surveys of 300 respondents whose answers vary (70% answer 0, the rest are
    spread over [0, 40]), randomized with DuchiMean: the mean of the estimates is within
    4 standard errors of the true mean (exact variance of the estimator), and coverage is
    at least the exact coverage for a population all at the same mean less 4 simulation
    standard errors (varied answers make the reports less dispersed, never more)."""
    n, surveys = 300, 4000
    q = numeric_survey().question("overtime")
    values = np.where(rng.random((surveys, n)) < 0.7, 0.0, rng.uniform(LOW, HIGH, (surveys, n)))
    bits = q.numeric.randomize(values.ravel(), rng).reshape(surveys, n)
    k = bits.sum(axis=1)
    lows, highs, means = _interval_table(q, n)
    width = HIGH - LOW
    truth = values.mean(axis=1)
    estimates = LOW + width * means[k]
    # exact variance of the unbiased estimate given each survey's values
    p = q.numeric.prob_one(values.ravel()).reshape(surveys, n)
    scale = width / (q.mechanism.matrix[1, 1] - q.mechanism.matrix[1, 0])
    var = (scale / n) ** 2 * (p * (1 - p)).sum(axis=1)
    z = (estimates - truth).sum() / math.sqrt(var.sum())
    assert abs(z) < 4
    covered = ((LOW + width * lows[k]) <= truth) & (truth <= LOW + width * highs[k])
    share = truth.mean() / width
    lam = q.mechanism.matrix[1] @ np.array([1 - share, share])
    pmf = stats.binom.pmf(np.arange(n + 1), n, lam)
    exact = pmf[(lows <= share) & (highs >= share)].sum()
    assert covered.mean() >= exact - 4 * math.sqrt(exact * (1 - exact) / surveys)
    # mean_estimate (MeanEstimate, the numeric vocabulary) gives the same estimate
    one = q.mean_estimate([n - k[0], k[0]])
    assert one.estimate == pytest.approx(estimates[0], abs=1e-9)


def test_results_and_cli_give_the_mean_in_the_questions_units(tmp_path, rng):
    """End to end: reports stored, results released as a mean in hours, the export
    analysed by `deniable analyze --question` to the same figures."""
    survey = numeric_survey()
    store = Store(f"sqlite:///{tmp_path / 'numeric.sqlite'}")
    store.publish(survey)
    n = 2000
    values = rng.uniform(0, 20, n)  # true mean near 10 hours
    bits = survey.question("overtime").numeric.randomize(values, rng)
    rows = [{"drugs": 0, "status": 1, "overtime": int(b)} for b in bits]
    store.submit_batch(survey, rows)
    store.release()
    res = survey_results(store, survey, 0.95)
    item = next(q for q in res["questions"] if q["id"] == "overtime")
    assert item["range"] == [LOW, HIGH] and item["unit"] == "hours"
    mean = item["mean"]
    # exact standard error of the estimate at these values
    p = survey.question("overtime").numeric.prob_one(values)
    m = survey.question("overtime").mechanism.matrix[1]
    se = (HIGH - LOW) / (m[1] - m[0]) * math.sqrt((p * (1 - p)).sum()) / n
    assert abs(mean["estimate"] - values.mean()) < 4 * se
    assert mean["result"] == "RangeMean" and mean["unit"] == "hours"
    assert mean["interval"]["low"] < mean["estimate"] < mean["interval"]["high"]
    assert mean["std_error"] == pytest.approx(se, rel=0.1)
    content, _, name = export_bytes(store, survey.id, "parquet")
    path = tmp_path / name
    path.write_bytes(content)
    store.close()
    out = CliRunner().invoke(app, ["analyze", str(path), "--question", "overtime", "--json"])
    assert out.exit_code == 0, out.output
    cli = json.loads(out.output)
    assert cli["estimate"] == pytest.approx(mean["estimate"], abs=1e-9)
    interval = [cli["interval"]["low"], cli["interval"]["high"]]
    assert interval == pytest.approx([mean["interval"]["low"], mean["interval"]["high"]], abs=1e-9)
    assert cli["n"] == n and cli["missing"] == 0
    out = CliRunner().invoke(app, ["analyze", str(path), "--question", "overtime"])
    assert "hours, SE" in out.output and "DuchiMean(epsilon=1.0" in out.output

"""Validation items (Höglinger & Diekmann 2017): a question of known prevalence, asked
through each arm's design, measures false positives and false negatives in aggregate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from deniable import Crosswise, ForcedResponse, Warner, estimate
from deniable.analysis import validation_check
from deniable.analysis._known._known_prevalence import exact_pvalues
from deniable.collection.model._survey import load_survey
from deniable.collection.store._storage import Store
from deniable.errors import SurveyError
from deniable.mechanisms import KaryRR

from .conftest import Z4


def _reports(design, truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each respondent's report through the design (simulation only: seeded)."""
    p_one = design.matrix[1][truth]  # P(report 1 | truth)
    return (rng.random(truth.size) < p_one).astype(np.int64)


def test_the_standard_error_is_the_exact_one_at_the_known_prevalence():
    """Warner(0.75), known 0.4: lam = 0.45, Var = lam (1 - lam) / (n (2p - 1)^2); an arm
    whose reports all fell one way (plug-in SE 0) is still tested."""
    n = 600
    result = estimate(Warner(p=0.75), np.array([1] * 260 + [0] * 340))
    check = validation_check(result, 0.4)
    assert check.std_error == pytest.approx(math.sqrt(0.45 * 0.55 / (n * 0.25)), rel=1e-12)
    assert check.estimate == pytest.approx((260 / n - 0.25) / 0.5, rel=1e-12)
    assert check.z == pytest.approx(check.difference / check.std_error)
    # exact tails of the count of 'yes' reports, Binomial(600, 0.45): they share P(Y = 260)
    assert check.pvalue_false_negatives == pytest.approx(binom.cdf(260, n, 0.45), rel=1e-12)
    assert check.pvalue_false_positives == pytest.approx(binom.sf(259, n, 0.45), rel=1e-12)
    both = check.pvalue_false_negatives + check.pvalue_false_positives
    assert both == pytest.approx(1.0 + binom.pmf(260, n, 0.45), rel=1e-12)
    all_no = estimate(Crosswise(p=0.25), np.zeros(400, dtype=np.int64))
    assert all_no.std_error[1] == 0
    check = validation_check(all_no, 0.0)
    assert check.std_error == pytest.approx(math.sqrt(0.25 * 0.75 / 400) / 0.5)


def test_bad_arguments_are_named():
    result = estimate(Warner(p=0.75), np.array([1, 0, 1]))
    with pytest.raises(ValueError, match="known"):
        validation_check(result, 1.3)
    kary = estimate(KaryRR(k=3, epsilon=1.0), np.array([0, 1, 2, 2]))
    with pytest.raises(ValueError, match="two answers"):
        validation_check(kary, 0.2)


def _size(design, known: float, n: int, side: int, alpha: float = 0.05) -> float:
    """The exact size: the null probability of every report count whose p-value (side 0:
    false positives, 1: false negatives) is at most alpha."""
    m = np.asarray(design.matrix, dtype=np.float64)
    share = m[1, 0] * (1 - known) + m[1, 1] * known  # P(report 1) under the null
    size = 0.0
    for ones in range(n + 1):
        pvalue = exact_pvalues(m, known, n, np.array([n - ones, ones]))[side]
        size += binom.pmf(ones, n, share) * (pvalue <= alpha)
    return size


@pytest.mark.parametrize(
    ("design", "known"),
    [(ForcedResponse(p_yes=0.1, p_no=0.2), 0.0), (Warner(p=0.8), 0.0),
     (Crosswise(p=0.25), 0.0), (Warner(p=0.8), 0.3), (ForcedResponse(p_yes=0.1, p_no=0.2), 0.5)],
)  # fmt: skip
def test_the_exact_test_is_never_over_size_at_small_n(design, known):
    """Both one-sided tests at nominal 0.05 have size at most 0.05 at every n of 50-300,
    by exact enumeration of the report counts (the normal approximation reached 0.073
    for forced response (0.1, 0.2), n 100, known 0: checked here too)."""
    for n in range(50, 301, 10):
        for side in (0, 1):
            assert _size(design, known, n, side) <= 0.05, (n, side)
    m = np.asarray(ForcedResponse(p_yes=0.1, p_no=0.2).matrix)
    lam, n = m[1, 0], 100  # the normal approximation's size there, for the record
    se = math.sqrt(lam * (1 - lam) / n) / (m[1, 1] - m[1, 0])
    z = (np.arange(n + 1) / n - lam) / (m[1, 1] - m[1, 0]) / se
    normal = float(binom.pmf(np.arange(n + 1), n, lam)[z >= 1.6448536269514722].sum())
    assert normal > 0.06


def test_the_check_gives_the_exact_p_values_of_its_counts():
    rng = np.random.default_rng(65)
    design = ForcedResponse(p_yes=0.1, p_no=0.2)
    for n in (50, 120, 300):
        reports = _reports(design, (rng.random(n) < 0.1).astype(np.int64), rng)
        check = validation_check(estimate(design, reports), 0.05)
        counts = np.bincount(reports, minlength=2)
        m = np.asarray(design.matrix, dtype=np.float64)
        assert (check.pvalue_false_positives, check.pvalue_false_negatives) == exact_pvalues(
            m, 0.05, n, counts
        )


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_the_test_holds_its_level_and_finds_false_positives_and_negatives(rng):
    """2,000 surveys of 1,000 through Crosswise(0.25): where respondents follow the
    design, a zero-prevalence item is flagged at 5% as often as the exact test's size
    says (within 4 binomial SEs); where 8% say "yes" to what nobody carries (Höglinger & Diekmann's
    false positives), the mean difference is 0.08 within 4 SEs of the mean; a
    known-prevalence item of 0.3 whose carriers deny a third of the time gives -0.1."""
    design, n, surveys = Crosswise(p=0.25), 1_000, 2_000
    flagged, fp, fn = 0, [], []
    for _ in range(surveys):
        honest = _reports(design, np.zeros(n, dtype=np.int64), rng)
        flagged += validation_check(estimate(design, honest), 0.0).pvalue_false_positives < 0.05
        lying = (rng.random(n) < 0.08).astype(np.int64)  # they answer as carriers
        fp.append(validation_check(estimate(design, _reports(design, lying, rng)), 0.0).difference)
        carriers = rng.random(n) < 0.3
        denied = carriers & (rng.random(n) < 1 / 3)
        said = (carriers & ~denied).astype(np.int64)
        fn.append(validation_check(estimate(design, _reports(design, said, rng)), 0.3).difference)
    size = _size(design, 0.0, n, 0)  # the exact test's size, at most 0.05
    assert size <= 0.05 and abs(flagged / surveys - size) <= Z4 * math.sqrt(
        size * (1 - size) / surveys
    )
    for values, want in ((fp, 0.08), (fn, -0.1)):
        values_ = np.array(values)
        assert abs(values_.mean() - want) <= Z4 * values_.std(ddof=1) / math.sqrt(surveys)


def _validation_study(**question) -> dict:
    return {
        "format": 1,
        "id": "valid",
        "version": 1,
        "title": "Validation",
        "privacy_budget": 4.0,
        "min_release": 1,
        "allow_small_release": True,
        "arms": {
            "cm": {"weight": 1},
            "rr": {"weight": 1, "designs": {"born": {"name": "warner", "params": {"p": 0.75}}}},
        },
        "questions": [
            {
                "id": "born",
                "text": "Were you born in January, February or March?",
                "design": {"name": "crosswise", "params": {"p": 0.25}},
            }
            | question
        ],
    }


def test_the_survey_file_names_a_validation_item_and_refuses_what_cannot_be_one():
    survey = load_survey(_validation_study(known_prevalence=0.25))
    assert survey.questions[0].validation_prevalence == 0.25
    plain = load_survey(_validation_study())
    assert plain.questions[0].validation_prevalence is None
    assert "known_prevalence" not in plain.canonical_json()  # old digests stay
    assert load_survey(_validation_study(control="zero")).questions[0].validation_prevalence == 0
    for changes, words in (
        ({"known_prevalence": 1.5}, "less than or equal to 1"),
        ({"known_prevalence": 0.2, "control": "zero"}, "give one of the two"),
        (
            {
                "known_prevalence": 0.2,
                "choices": ["a", "b", "c"],
                "design": {"name": "kary-rr", "params": {"epsilon": 1}},
            },
            "two answers",
        ),
    ):
        with pytest.raises(SurveyError, match=words):
            load_survey(_validation_study(**changes))


def test_each_arm_is_checked_against_the_known_prevalence(tmp_path):
    """Two arms (crosswise, Warner) asking a question whose prevalence is known (a
    quarter of people are born in January to March): each arm's row carries its check,
    the single-design view its warning, the dashboard the columns; with honest
    respondents every difference lies within 4 of its SEs."""
    from deniable.collection.respondent._devices import simulate_responses
    from deniable.collection.study._survey_results import survey_results

    survey = load_survey(_validation_study(known_prevalence=0.25))
    store = Store(f"sqlite:///{tmp_path / 'v.sqlite'}")
    store.publish(survey)
    rng = np.random.default_rng(4301)
    truths = {"born": (rng.random(3_000) < 0.25).astype(np.int64)}
    sent = simulate_responses(survey, truths, rng)
    store.submit_batch(
        survey, [r["reports"] for r in sent], [r["arm"] for r in sent], [r["groups"] for r in sent]
    )
    store.release()
    res = survey_results(store, survey, 0.95)
    (study,) = res["study"]
    assert study["known"] == 0.25
    assert [a["arm"] for a in study["arms"]] == ["cm", "rr"]
    for arm in study["arms"]:
        check = arm["validation"]
        assert check["known"] == 0.25 and check["n"] == arm["n"]
        assert abs(check["difference"]) <= Z4 * check["std_error"]
        assert check["estimate"] == pytest.approx(arm["estimate"], abs=1e-12)
    store.close()


@pytest.mark.slow  # the results page draws its plots
@pytest.mark.anyio
async def test_the_dashboard_shows_each_arms_check(client):
    from deniable.collection.respondent._devices import simulate_responses

    from .conftest import AUTH

    study = _validation_study(known_prevalence=0.25)
    assert (await client.post("/api/surveys", json=study, headers=AUTH)).status_code == 201
    survey = load_survey(study)
    rng = np.random.default_rng(4302)
    sent = simulate_responses(survey, {"born": (rng.random(600) < 0.25).astype(np.int64)}, rng)
    client.store.submit_batch(
        survey, [r["reports"] for r in sent], [r["arm"] for r in sent], [r["groups"] for r in sent]
    )
    html = (await client.get("/surveys/valid/results", headers=AUTH)).text
    assert "validation item of known prevalence 0.25" in html
    assert "minus the known 0.25 (SE at it)" in html and "p, false negatives" in html
    res = (await client.get("/api/surveys/valid/results", headers=AUTH)).json()
    assert all("validation" in arm for arm in res["study"][0]["arms"])

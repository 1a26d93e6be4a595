"""Survey definitions: validation names the field, budgets compose, one-sided designs opt in."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.model._recipes import NO_RECIPE, dice_recipe, physical_instructions
from deniable.collection.model._survey import BUDGET_SLACK, load_survey, parse_survey
from deniable.errors import PrivacyWarning, SurveyError

from .conftest import SURVEY


def survey(**changes):
    data = copy.deepcopy(SURVEY)
    data.update(changes)
    return data


def fields(exc: SurveyError) -> list[str]:
    return [f for f, _ in exc.errors]


def test_valid_survey_epsilons_and_digest():
    s = load_survey(SURVEY)
    assert s.question("drugs").epsilon == pytest.approx(math.log(3), abs=1e-12)
    assert s.question("status").epsilon == pytest.approx(2.0, abs=1e-12)
    assert s.total_epsilon == pytest.approx(math.log(3) + 2.0, abs=1e-12)
    assert s.question("status").report_labels == ["single", "married", "divorced"]
    # the digest identifies content: any change, even to text, changes it
    other = survey(title="Health survey (revised)")
    assert load_survey(other).digest != s.digest
    assert load_survey(copy.deepcopy(SURVEY)).digest == s.digest


def test_yaml_and_json_files_agree(tmp_path):
    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SURVEY))
    (tmp_path / "s.json").write_text(json.dumps(SURVEY))
    assert load_survey(tmp_path / "s.yaml").digest == load_survey(tmp_path / "s.json").digest
    assert parse_survey(json.dumps(SURVEY)).digest == load_survey(SURVEY).digest


def test_budget_is_sequential_composition():
    spent = math.log(3) + 2.0
    assert load_survey(survey(privacy_budget=spent))  # exactly at the budget
    with pytest.raises(SurveyError) as info:
        load_survey(survey(privacy_budget=spent - 10 * BUDGET_SLACK))
    assert fields(info.value) == ["privacy_budget"]
    assert "drugs=1.09861" in str(info.value) and "status=2" in str(info.value)


def test_infinite_epsilon_needs_opt_in():
    q = {
        "id": "abortion",
        "text": "Have you had an abortion?",
        "design": {"name": "mangat", "params": {"p": 0.3}},
    }
    with pytest.raises(SurveyError, match="allow_infinite_epsilon"):
        load_survey(survey(questions=[q], no_lifetime_budget=True))
    # a report that proves an answer ("no" here): no finite lifetime budget bounds it
    with pytest.raises(SurveyError, match="Add no_lifetime_budget: true") as info:
        load_survey(survey(questions=[q | {"allow_infinite_epsilon": True}]))
    assert fields(info.value) == ["no_lifetime_budget"]
    with pytest.raises(SurveyError, match="takes no lifetime_budget"):
        load_survey(
            survey(
                questions=[q | {"allow_infinite_epsilon": True}],
                lifetime_budget=5,
                no_lifetime_budget=True,
            )
        )
    s = load_survey(
        survey(questions=[q | {"allow_infinite_epsilon": True}], no_lifetime_budget=True)
    )
    assert math.isinf(s.lifetime) and s.respondent_view()["no_lifetime_budget"] is True
    # Mangat: "yes" always reports yes, "no" reports yes with chance 0.7; a report can
    # prove only "no", and "yes" costs its likelihood ratio ln(1 / 0.7)
    (question,) = s.questions
    assert math.isinf(question.epsilon)
    assert question.cost == pytest.approx(math.log(1 / 0.7), rel=1e-12)
    assert s.total_epsilon == question.cost
    # if "no" were the sensitive answer, the "no" report would prove it: refused
    with pytest.raises(SurveyError, match="proves a sensitive answer"):
        load_survey(
            survey(
                questions=[q | {"allow_infinite_epsilon": True, "sensitive": ["no"]}],
                no_lifetime_budget=True,
            )
        )


def test_a_design_that_exposes_the_sensitive_answer_is_refused():
    """Forced response with p_yes = 0: a "yes" report proves "yes" (the review's case)."""
    q = {
        "id": "q",
        "text": "Sensitive?",
        "design": {"name": "forced-response", "params": {"p_yes": 0.0, "p_no": 0.01}},
        "allow_infinite_epsilon": True,
    }
    with pytest.raises(SurveyError, match="proves a sensitive answer") as info:
        load_survey(survey(privacy_budget=0.1, questions=[q]))
    assert fields(info.value) == ["questions.0"]


def test_large_epsilon_needs_opt_in_and_has_a_hard_maximum():
    q = {
        "id": "q",
        "text": "Which?",
        "choices": ["a", "b", "c"],
        "design": {"name": "kary-rr", "params": {"epsilon": 6.0}},
    }
    with pytest.warns(PrivacyWarning), pytest.raises(SurveyError, match="allow_large_epsilon"):
        load_survey(survey(privacy_budget=10, questions=[q]))
    with pytest.warns(PrivacyWarning):
        s = load_survey(survey(privacy_budget=10, questions=[q | {"allow_large_epsilon": True}]))
    assert s.total_epsilon == pytest.approx(6.0)
    with pytest.warns(PrivacyWarning), pytest.raises(SurveyError, match="privacy_budget"):
        load_survey(survey(privacy_budget=31, questions=[q | {"allow_large_epsilon": True}]))


@pytest.mark.parametrize("k", [1e9, 3000, 65])
def test_category_counts_are_bounded_before_anything_is_built(k):
    q = {
        "id": "q",
        "text": "Which?",
        "design": {"name": "kary-rr", "params": {"k": k, "epsilon": 1.0}},
    }
    with pytest.raises(SurveyError, match=r"design\.params\.k must be in 1\.\.64") as info:
        load_survey(survey(questions=[q]))
    assert fields(info.value) == ["questions.0"]


def test_sensitive_answers_default_and_override():
    s = load_survey(SURVEY)
    assert [s.questions[0].choice_labels[i] for i in s.questions[0].sensitive_indices] == ["yes"]
    assert s.questions[1].sensitive_indices == [0, 1, 2]  # no "no": every answer
    with pytest.raises(SurveyError, match="not among"):
        bad = copy.deepcopy(SURVEY)
        bad["questions"][0]["sensitive"] = ["maybe"]
        load_survey(bad)


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        ({"privacy_budget": -1}, "privacy_budget", "greater than 0"),
        ({"id": "Bad Id"}, "id", "pattern"),
        ({"version": 0}, "version", "greater than or equal to 1"),
        ({"format": 2}, "format", "1"),
        ({"colour": "red"}, "colour", "'colour' is not a field of the survey"),
        ({"questions": []}, "questions", "at least 1"),
    ],
)
def test_malformed_survey_fields_are_named(change, field, fragment):
    with pytest.raises(SurveyError) as info:
        load_survey(survey(**change))
    assert field in fields(info.value)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("question", "fragment"),
    [
        ({"design": {"name": "warner", "params": {"p": 1.3}}}, "p must be a probability in [0, 1]"),
        ({"design": {"name": "coin-toss"}}, "unknown design 'coin-toss'; allowed:"),
        ({"design": {"name": "warner", "params": {"q": 0.7}}}, "design 'warner' takes p; got q"),
        (
            {"choices": ["a", "b", "c"], "design": {"name": "warner", "params": {"p": 0.7}}},
            "choices has 3",
        ),
        ({"design": {"name": "kary-rr", "params": {"epsilon": 1}}}, "kary-rr needs choices"),
    ],
)
def test_malformed_question_names_the_question(question, fragment):
    q = {"id": "q", "text": "?"} | question
    with pytest.raises(SurveyError) as info:
        load_survey(survey(questions=[q]))
    assert fields(info.value)[0].startswith("questions.0")
    assert fragment in str(info.value)


def test_duplicate_question_ids_and_bad_yaml():
    q = SURVEY["questions"][0]
    with pytest.raises(SurveyError, match="used twice"):
        load_survey(survey(questions=[q, q]))
    with pytest.raises(SurveyError, match="not valid YAML"):
        parse_survey("id: [unclosed")
    with pytest.raises(SurveyError, match="mapping"):
        parse_survey("- a list")


def test_respondent_view_columns_are_the_design_matrix():
    s = load_survey(SURVEY)
    view = s.respondent_view()
    for q, vq in zip(s.questions, view["questions"], strict=True):
        assert vq["columns"] == q.mechanism.matrix.T.tolist()
        assert all(math.isclose(sum(c), 1.0) for c in vq["columns"])
    drugs = view["questions"][0]
    # two-coin design at prior 1/2: posterior of "yes" after report yes is 3/4
    assert drugs["disclosure"]["posterior"][1][1] == pytest.approx(0.75)
    assert (
        "heads-heads is 1" in drugs["instructions"]
        and "outcome is 1, answer" in drugs["instructions"]
    )
    assert json.dumps(view)  # JSON-ready


def test_survey_check_command(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SURVEY))
    result = CliRunner().invoke(app, ["survey", "check", str(path), "--prior", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert [q["id"] for q in out["questions"]] == ["drugs", "status"]
    assert out["total_epsilon"] == pytest.approx(math.log(3) + 2)
    # prior 0.1, report "yes": posterior = 0.75*0.1 / (0.75*0.1 + 0.25*0.9) = 0.25
    assert out["questions"][0]["posterior_after_report"]["yes"][1] == pytest.approx(0.25)
    # without --prior, the file's disclosure_prior: 0.2 gives 0.75*0.2 / (0.15 + 0.2) = 3/7
    path.write_text(json.dumps(SURVEY | {"disclosure_prior": 0.2}))
    own = CliRunner().invoke(app, ["survey", "check", str(path), "--json"])
    posterior = json.loads(own.output)["questions"][0]["posterior_after_report"]["yes"][1]
    assert posterior == pytest.approx(3 / 7)
    path.write_text(json.dumps(SURVEY))
    text = CliRunner().invoke(app, ["survey", "check", str(path)])
    assert text.exit_code == 0 and "Cost per respondent: 3.0986 nats" in text.output
    assert "Lifetime budget of health: 3.0986 of 4 nats" in text.output
    path.write_text(json.dumps(survey(privacy_budget=1.0)))
    bad = CliRunner().invoke(app, ["survey", "check", str(path)])
    assert bad.exit_code == 2 and "privacy_budget" in bad.output


def test_survey_check_prints_the_lifetime_ledger(tmp_path):
    """v2 changes one question's text (charged again); v3 repeats v2 (free); v4 changes
    the other question and goes past the lifetime budget of 6 nats."""
    base = copy.deepcopy(SURVEY) | {"lifetime_budget": 6.0}
    v2 = copy.deepcopy(base) | {"version": 2}
    v2["questions"][0]["text"] = "Drugs, in the last year?"
    v3 = copy.deepcopy(v2) | {"version": 3, "title": "Same questions"}
    v4 = copy.deepcopy(v3) | {"version": 4}
    v4["questions"][1]["text"] = "Your marital status?"
    paths = []
    for i, data in enumerate((base, v2, v3, v4), 1):
        paths.append(tmp_path / f"v{i}.json")
        paths[-1].write_text(json.dumps(data))
    ok = CliRunner().invoke(app, ["survey", "check", *map(str, paths[:3]), "--json"])
    assert ok.exit_code == 0, ok.output
    ledger = json.loads(ok.output)["ledger"]
    drugs, status = math.log(3), 2.0
    assert [v["added"] for v in ledger["versions"]] == pytest.approx([drugs + status, drugs, 0])
    assert ledger["spent"] == pytest.approx(2 * drugs + status)
    over = CliRunner().invoke(app, ["survey", "check", *map(str, paths)])
    assert over.exit_code == 2
    assert "lifetime_budget" in over.output and "version 4 adds 2 nats" in over.output


def test_the_largest_survey_gives_a_bounded_page():
    """The respondent page of a survey at every limit (4 questions of 64 categories with
    200-character labels, 96 binary questions, 2,000-character texts, a 10,000-character
    description) stays under 2 MiB; matrices past 20,000 cells are refused."""
    from deniable.collection.server._pages import respondent_page

    wide = [
        {
            "id": f"q{i}",
            "text": "x" * 2000,
            "choices": [f"{j:0200d}" for j in range(64)],
            "design": {"name": "kary-rr", "params": {"epsilon": 0.01}},
        }
        for i in range(4)
    ]
    binary = [
        {"id": f"b{i}", "text": "y" * 2000, "design": {"name": "warner", "params": {"p": 0.52}}}
        for i in range(96)
    ]
    data = survey(
        title="t" * 2000, description="d" * 10_000, privacy_budget=30, questions=wide + binary
    )
    assert len(respondent_page(load_survey(data)).encode()) < 2 * 1024 * 1024
    with pytest.raises(SurveyError, match="at most 20000 fit"):
        fifth = wide[0] | {"id": "q4"}
        load_survey(survey(privacy_budget=30, questions=[*wide, fifth, *binary[:1]]))


def _recipe_chances(recipe: str, truths: list[str], reports: list[str], outcomes: int):
    """Read the chances back out of a recipe's text: shape (k, m)."""
    import re

    out = np.zeros((len(truths), len(reports)))
    for t, truth in enumerate(truths):
        part = recipe.split(f"If your true answer is '{truth}': outcomes ")[1].split(".")[0]
        for span, label in re.findall(r"(\d+(?:-\d+)?) mean '([^']+)'", part):
            lo, _, hi = span.partition("-")
            out[t, reports.index(label)] += (int(hi or lo) - int(lo) + 1) / outcomes
    return out


@pytest.mark.parametrize(
    ("design", "device", "outcomes"),
    [
        ({"name": "kary-rr", "params": {"epsilon": math.log(4)}}, "Roll a die.", 6),
        ({"name": "warner", "params": {"p": 0.75}}, "Flip two coins", 4),
        ({"name": "kary-rr", "params": {"epsilon": math.log(34)}}, "Roll two dice", 36),
    ],
)
def test_dice_recipes_give_the_designs_chances_exactly(design, device, outcomes):
    choices = ["a", "b", "c"] if design["name"] == "kary-rr" else None
    q = load_survey(
        survey(
            questions=[
                {"id": "q", "text": "?", "design": design}
                | ({"choices": choices} if choices else {})
            ]
        )
    ).questions[0]
    assert physical_instructions(q) != NO_RECIPE or design["name"] == "warner"
    text = dice_recipe(q.mechanism.matrix.T, q.choice_labels, q.report_labels)
    assert text is not None and text.startswith(device)
    chances = _recipe_chances(text, q.choice_labels, q.report_labels, outcomes)
    np.testing.assert_allclose(chances, q.mechanism.matrix.T, atol=1e-12)


@pytest.mark.parametrize(
    ("p_yes", "p_no", "outcomes"),
    [(0.25, 0.25, 4), (1 / 6, 1 / 6, 6), (0.125, 0.25, 8), (1 / 12, 1 / 4, 36), (0.2, 0.1, None)],
)
def test_forced_response_by_hand_realises_the_designs_chances_or_is_not_offered(
    p_yes, p_no, outcomes
):
    """The own-coin instructions of forced response name a device and outcome spans
    whose chances are the design's exactly (they said "flip coins or roll a die for 20%
    / 10%" and then gave two coins, right only at 25% / 25%); 20% and 10% need tenths,
    which no coin or die gives: no recipe, and the page offers no own coin."""
    import re
    from fractions import Fraction

    from deniable.collection.model._i18n import catalog

    design = {"name": "forced-response", "params": {"p_yes": p_yes, "p_no": p_no}}
    one = load_survey(survey(questions=[{"id": "q", "text": "?", "design": design}]))
    text = physical_instructions(one.questions[0])
    view = one.respondent_view()["questions"][0]
    if outcomes is None:
        assert text == NO_RECIPE and view["by_hand"] is False
        return
    assert view["by_hand"] is True and text.startswith(
        {4: "Flip two coins", 6: "Roll a die", 8: "Flip three coins", 36: "Roll two dice"}[outcomes]
    )

    def chance(pattern: str) -> Fraction:
        found = re.search(pattern, text)
        if found is None:
            return Fraction(0)
        first, last = int(found.group(1)), int(found.group(2) or found.group(1))
        return Fraction(last - first + 1, outcomes)

    assert chance(r"outcome is (\d+)(?:-(\d+))?, answer 'yes'") == Fraction(
        p_yes
    ).limit_denominator(36)
    assert chance(r"it is (\d+)(?:-(\d+))?, answer 'no'") == Fraction(p_no).limit_denominator(36)
    for lang in ("de",):  # every language gives the same device
        assert (
            physical_instructions(one.questions[0], lang)
            != catalog(lang)["instructions"]["no_recipe"]
        )


def test_no_recipe_where_no_dice_give_the_chances():
    q = load_survey(
        survey(
            questions=[
                {
                    "id": "q",
                    "text": "?",
                    "choices": ["a", "b", "c"],
                    "design": {"name": "kary-rr", "params": {"epsilon": 2.0}},
                }
            ]
        )
    ).questions[0]
    assert physical_instructions(q) == NO_RECIPE
    view = load_survey(survey(questions=[q.model_dump(mode="json")])).respondent_view()
    assert view["questions"][0]["by_hand"] is False


def test_languages_and_translations():
    from deniable.collection.model._i18n import LANGUAGES, catalog, choose_language

    en = catalog("en")
    for lang in LANGUAGES:  # every catalog has every message, with the same placeholders
        other = catalog(lang)
        assert set(other) == set(en) and set(other["instructions"]) == set(en["instructions"])
    assert choose_language(None, "de-CH,de;q=0.9,en;q=0.8") == "de"
    assert choose_language(None, "fr-FR,fr;q=0.9,en;q=0.5,de;q=0.4") == "en"
    assert choose_language("de", "en") == "de" and choose_language("xx", None) == "en"
    assert choose_language(None, "de;q=0") == "en"
    with pytest.raises(ValueError, match="lang must be one of"):
        catalog("fr")
    tr = {"de": {"questions": {"drugs": {"choices": ["nein", "ja"], "text": "Drogen?"}}}}
    s = load_survey(survey(translations=tr))
    view = s.respondent_view("de")
    drugs = view["questions"][0]
    assert drugs["text"] == "Drogen?" and drugs["choices"] == ["nein", "ja"]
    assert drugs["instructions"].startswith("Werfen Sie zwei Münzen")
    assert drugs["memo_key"] == s.respondent_view("en")["questions"][0]["memo_key"]
    assert view["title"] == s.title  # not translated: shown as written
    # a digest does not change when the new fields are at their defaults
    assert "translations" not in s.model_copy(update={"translations": {}}).canonical_json()
    with pytest.raises(SurveyError, match=r"translations.de.questions.drugs.choices must have 2"):
        load_survey(survey(translations={"de": {"questions": {"drugs": {"choices": ["a"]}}}}))
    with pytest.raises(SurveyError, match="no question 'nosuch'"):
        load_survey(survey(translations={"de": {"questions": {"nosuch": {"text": "x"}}}}))
    with pytest.raises(SurveyError, match="translations"):
        load_survey(survey(translations={"fr": {"title": "x"}}))


EXPOSING = {
    "id": "drugs",
    "text": "Have you used an illegal drug?",
    "design": {"name": "forced-response", "params": {"p_yes": 0.0, "p_no": 0.01}},
    "allow_infinite_epsilon": True,
    "sensitive": ["no"],
}


def test_every_answer_a_report_proves_is_told_whatever_sensitive_says():
    """The review's case: forced response with p_yes = 0 and "no" called sensitive. The
    budget counts only "no" (ln 100), but "yes" is proved by a "yes" report (P(yes | no)
    = 0): the served factors are [100, null] (no, yes)."""
    s = load_survey(survey(privacy_budget=5, questions=[EXPOSING], no_lifetime_budget=True))
    (q,) = s.questions
    assert q.cost == pytest.approx(math.log(100), rel=1e-9)
    assert q.exposed_answers == ["yes"]
    (served,) = s.respondent_view()["questions"]
    assert served["disclosure"]["max_odds_factor"] == [100.0, None]  # 12 significant digits
    json.dumps(served)  # JSON null, not "inf"


@pytest.mark.parametrize(
    ("design", "exposed"),
    [
        ({"name": "unrelated-question", "params": {"p": 0.7, "innocuous_prevalence": 0}}, ["yes"]),
        ({"name": "kuk", "params": {"p_noncarrier": 0, "p_carrier": 0.7}}, ["yes"]),
        ({"name": "mangat", "params": {"p": 0.7}}, ["no"]),
        ({"name": "warner", "params": {"p": 0.75}}, []),
    ],
)
def test_factors_per_answer_match_the_matrix(design, exposed):
    """factor[a] = max over r, b != a of P[r, a] / P[r, b], recomputed here by brute force."""
    q = {"id": "q", "text": "Sensitive?", "design": design, "allow_infinite_epsilon": True}
    unbounded = {"no_lifetime_budget": bool(exposed)}  # a proof: no lifetime budget
    try:
        s = load_survey(survey(privacy_budget=30, questions=[q], **unbounded))
    except SurveyError:  # a proof of the default-sensitive answer is still refused
        s = load_survey(
            survey(privacy_budget=30, questions=[q | {"sensitive": ["no"]}], **unbounded)
        )
    (question,) = s.questions
    p = question.mechanism.matrix
    m, k = p.shape
    for a in range(k):
        worst = 1.0
        for r in range(m):
            for b in range(k):
                if b != a and p[r, a] > 0:
                    worst = max(worst, math.inf if p[r, b] == 0 else p[r, a] / p[r, b])
        assert question.odds_factors[a] == pytest.approx(worst, rel=1e-12)
    assert question.exposed_answers == exposed
    if not exposed:
        assert max(question.odds_factors) == pytest.approx(math.exp(question.epsilon), rel=1e-9)

"""Every string a respondent sees is translatable: a design's default labels through
the page's catalog, a numeric question's unit through the survey's translation; and
``survey check`` lists what a declared language leaves as written."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.model._i18n import default_label
from deniable.collection.model._survey import load_survey
from deniable.errors import SurveyError

SLEEP = {
    "format": 1,
    "id": "sleep",
    "version": 1,
    "title": "Sleep and study",
    "description": "Three questions.",
    "privacy_budget": 4.0,
    "questions": [
        {
            "id": "drugs",
            "text": "Have you taken a sleeping pill without a prescription?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "cheat",
            "text": "Have you cheated in an exam?",
            "innocuous_question": "Is your mother's birthday in January, February or March?",
            "design": {"name": "crosswise", "params": {"p": 0.25}},
        },
        {
            "id": "sleep",
            "text": "How many hours did you sleep last night?",
            "range": {"low": 0, "high": 12, "unit": "hours"},
            "design": {"name": "duchi", "params": {"epsilon": 1.0}},
        },
    ],
    "translations": {
        "de": {
            "title": "Schlaf und Studium",
            "questions": {
                "sleep": {"text": "Wie viele Stunden haben Sie letzte Nacht geschlafen?"},
            },
        }
    },
}


def test_default_labels_come_from_the_catalog():
    assert [default_label(x, "de") for x in ("no", "yes", "different", "same")] == [
        "nein",
        "ja",
        "verschieden",
        "gleich",
    ]
    assert default_label("2 red", "de") == "2 rot" and default_label("circle", "de") == "Kreis"
    assert default_label("married", "de") == "married"  # a survey's own label: as written
    assert default_label("yes", "en") == "yes"


def test_the_german_view_translates_default_labels_and_the_unit():
    data = copy.deepcopy(SLEEP)
    data["translations"]["de"]["questions"]["sleep"]["unit"] = "Stunden"
    survey = load_survey(data)
    de = {q["id"]: q for q in survey.respondent_view("de")["questions"]}
    assert de["drugs"]["choices"] == ["nein", "ja"] and de["drugs"]["reports"] == ["nein", "ja"]
    assert de["cheat"]["reports"] == ["verschieden", "gleich"]
    assert "„gleich“" in de["cheat"]["instructions"]
    assert de["sleep"]["numeric"]["unit"] == "Stunden"
    en = {q["id"]: q for q in survey.respondent_view("en")["questions"]}
    assert en["drugs"]["choices"] == ["no", "yes"] and en["sleep"]["numeric"]["unit"] == "hours"
    # the memo key does not depend on the language
    assert [q["memo_key"] for q in de.values()] == [q["memo_key"] for q in en.values()]


def test_a_unit_translates_only_a_numeric_question():
    data = copy.deepcopy(SLEEP)
    data["translations"]["de"]["questions"]["drugs"] = {"unit": "Stück"}
    with pytest.raises(SurveyError, match=r"translations.de.questions.drugs.unit: only a numeric"):
        load_survey(data)


def test_survey_check_lists_what_a_language_leaves_as_written(tmp_path):
    survey = load_survey(copy.deepcopy(SLEEP))
    left = survey.untranslated()["de"]
    assert left == [
        "description",
        "questions.drugs.text",
        "questions.cheat.text",
        "questions.cheat.innocuous_question",
        "questions.sleep.unit",
    ]  # the default labels (no/yes, different/same) are the catalog's to translate
    path = tmp_path / "sleep.json"
    path.write_text(json.dumps(SLEEP))
    out = CliRunner().invoke(app, ["survey", "check", str(path), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["untranslated"] == {"de": left}
    table = CliRunner().invoke(app, ["survey", "check", str(path)], env={"COLUMNS": "300"})
    assert "Translation de leaves as written: description, questions.drugs.text" in table.stdout

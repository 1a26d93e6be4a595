"""`deniable embed limesurvey` (issue 41, item 2). LimeSurvey could not be run here: its
repository snapshot is 1.34 GB, over the 500 MB the snapshot tool brings, and Debian
ships no LimeSurvey package (the attempt of 2026-11-27, said in docs/collection.md). So
the theme's script runs in Debian's Chromium on a stand-in page with LimeSurvey's markup
of a "list with comment" question (the core radio list with answer codes A0, A1, the
comment, the survey form): the form then holds only the answer code of the report and
the digest in the comment; no request carries the answer; a LimeSurvey CSV of the
result reads back."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.model import design_digest
from deniable.collection.model._survey import load_survey

from .test_component import SURVEY, TEXTS, page_at  # noqa: F401 (the fixture)

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)"
)

#: LimeSurvey's markup of a "list with comment" question (SGQA 123456X1X42) with the
#: theme's class, inside the survey's form.
STAND_IN = """
([lang]) => {
  document.documentElement.lang = lang;
  const de = lang === "de";
  document.body.innerHTML = `<form id="limesurvey" name="limesurvey" method="post">
  <input type="hidden" name="YII_CSRF_TOKEN" value="t0k">
  <div id="question42" class="row question-container list-with-comment deniable-cheat mandatory">
    <div class="question-title-container">
      <div class="ls-label-question">${de ? "Geschummelt?" : "Have you cheated?"}</div></div>
    <div class="answer-container">
      <ul class="answers-list radio-list list-unstyled" role="radiogroup">
        <li class="answer-item radio-item"><input class="radio" type="radio" name="123456X1X42"
          id="answer123456X1X42A0" value="A0"><label for="answer123456X1X42A0">no</label></li>
        <li class="answer-item radio-item"><input class="radio" type="radio" name="123456X1X42"
          id="answer123456X1X42A1" value="A1"><label for="answer123456X1X42A1">yes</label></li>
      </ul>
      <div class="answer-item text-item"><label for="answer123456X1X42comment">Comment</label>
        <textarea name="123456X1X42comment" id="answer123456X1X42comment"></textarea></div>
      <input type="hidden" name="java123456X1X42" id="java123456X1X42" value="">
    </div>
  </div>
  <button type="submit" id="ls-button-submit">${de ? "Absenden" : "Submit"}</button></form>`;
  window.__conditions = [];
  window.checkconditions = (value, name, type) => window.__conditions.push([value, name, type]);
}
"""


@pytest.fixture
def generated(tmp_path):
    survey_file = tmp_path / "embedded.json"
    survey_file.write_text(json.dumps(SURVEY))
    out = tmp_path / "limesurvey"
    result = CliRunner().invoke(
        app, ["embed", "limesurvey", str(survey_file), "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out, survey_file


#: The metadata LimeSurvey's own "list with comment" theme carries
#: (application/views/survey/questions/answer/list_with_comment/config.xml), but the
#: author's e-mail and web address, which a generated theme has none of.
CORE_METADATA = {
    "name", "type", "title", "creationDate", "author", "copyright", "license", "version",
    "apiVersion", "description", "questionType", "group", "subquestions", "answerscales",
    "hasdefaultvalues", "assessable", "class",
}  # fmt: skip


def test_the_themes_are_question_themes_over_list_with_comment(generated):
    import xml.etree.ElementTree as ET

    out, _ = generated
    for qid in ("cheat", "panel"):
        folder = out / f"deniable-{qid}" / "survey" / "questions" / "answer" / "list_with_comment"
        config = ET.parse(folder / "config.xml").getroot()
        metadata = {child.tag: child.text for child in config.find("metadata")}
        assert set(metadata) >= CORE_METADATA, CORE_METADATA - set(metadata)
        assert metadata["questionType"] == "O" and metadata["type"] == "question_theme"
        assert metadata["class"] == f"deniable-{qid}"
        engine = {child.tag: child.text for child in config.find("engine")}
        assert engine == {
            "load_core_css": "true",
            "load_core_js": "true",
            "show_as_template": "true",
            "show_as_question_type": "false",
        }
        assert [v.text for v in config.find("compatibility")] == ["5.0", "6.0"]
        assert config.findtext("files/js/filename") == "scripts/deniable-rr.js"
        script = (folder / "assets" / "scripts" / "deniable-rr.js").read_text()
        assert "Math.random" not in script and "export " not in script
    assert "LimeSurvey could not be run here" in (out / "README.md").read_text()


def test_a_question_text_with_markup_characters_is_escaped_in_the_theme(tmp_path):
    """`&` and `<` in a question's text: the config stays XML and keeps the text."""
    import xml.etree.ElementTree as ET

    body = json.loads(json.dumps(SURVEY))
    body["questions"][0]["text"] = "Cheating & <b>lying</b>?"
    (tmp_path / "s.json").write_text(json.dumps(body))
    out = tmp_path / "ls"
    done = CliRunner().invoke(
        app, ["embed", "limesurvey", str(tmp_path / "s.json"), "--output", str(out)]
    )
    assert done.exit_code == 0, done.output
    qid = body["questions"][0]["id"]
    config = out / f"deniable-{qid}" / "survey" / "questions" / "answer" / "list_with_comment"
    title = ET.parse(config / "config.xml").getroot().findtext("metadata/title")
    assert title == "deniable: Cheating & <b>lying</b>?"


def test_the_example_survey_sets_up_the_questions_answers_and_themes(generated):
    import xml.etree.ElementTree as ET

    out, _ = generated
    doc = ET.parse(out / "deniable.lss").getroot()
    assert doc.findtext("LimeSurveyDocType") == "Survey"
    assert [x.text for x in doc.find("languages")] == ["en", "de"]

    def rows(table: str) -> list[dict[str, str]]:
        return [{c.tag: c.text or "" for c in row} for row in doc.find(table).find("rows")]

    questions = rows("questions")
    assert [(q["title"], q["type"]) for q in questions] == [
        ("deniablecheat", "O"),
        ("deniablepanel", "O"),
    ]
    assert {a["code"] for a in rows("answers")} == {"A0", "A1"}
    themes = {
        r["value"] for r in rows("question_attributes") if r["attribute"] == "question_template"
    }
    assert themes == {"deniable-cheat", "deniable-panel"}
    texts = {(r["qid"], r["language"]): r["question"] for r in rows("question_l10ns")}
    assert texts[("1", "de")] == "Haben Sie bei einer Prüfung geschummelt?"


def test_the_theme_writes_only_the_report_and_the_digest_into_limesurveys_form(
    page_at,  # noqa: F811
    generated,
    tmp_path,
):
    _, open_page = page_at
    out, survey_file = generated
    page = open_page()
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url))
    page.evaluate(STAND_IN, ["en"])
    script = out / "deniable-cheat/survey/questions/answer/list_with_comment/assets/scripts"
    page.add_script_tag(content=(script / "deniable-rr.js").read_text())
    assert page.locator(".answers-list").is_hidden()  # the core list gives way
    assert page.locator(".question-title-container").is_hidden()  # the text shown once
    # Submit waits for the report: an empty answer cannot be posted past the question
    assert page.locator("#ls-button-submit").is_disabled()
    page.get_by_role("radio", name="yes").check()
    form = "Object.fromEntries(new FormData(document.getElementById('limesurvey')))"
    assert page.evaluate(form) == {
        "YII_CSRF_TOKEN": "t0k", "123456X1X42comment": "", "java123456X1X42": "",
    }  # fmt: skip
    page.get_by_role("button", name="Randomize my answer on this device").click()
    page.wait_for_function("window.__conditions.length === 1")
    assert page.locator("#ls-button-submit").is_enabled()
    fields = page.evaluate(form)
    digest = design_digest(load_survey(SURVEY).question("cheat"))
    assert fields["123456X1X42comment"] == digest
    assert fields["123456X1X42"] in ("A0", "A1")
    assert set(fields) == {"YII_CSRF_TOKEN", "123456X1X42", "123456X1X42comment",
                           "java123456X1X42"}  # fmt: skip
    assert not [u for u in sent if "/healthz" not in u]
    # the response as LimeSurvey's CSV export (question codes as headings), read back
    export = tmp_path / "results-survey123456.csv"
    with export.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "submitdate", "lastpage", "startlanguage", "seed", "deniablecheat",
                    "deniablecheat[comment]"])  # fmt: skip
        w.writerow([1, "2026-11-27 11:30:00", 1, "en", 42, fields["123456X1X42"], digest])
    args = ["analyze", str(export), "--survey", str(survey_file), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (item,) = json.loads(result.stdout)["questions"]
    assert (item["question"], item["n"], item["refused"]) == ("cheat", 1, 0)


def test_the_theme_in_each_language_at_both_widths(page_at, generated, tmp_path):  # noqa: F811
    from .test_browser import _four_views

    _, open_page = page_at
    out, _ = generated
    script = out / "deniable-cheat/survey/questions/answer/list_with_comment/assets/scripts"

    def open_view(lang: str, width: int):
        page = open_page(width=width)
        page.evaluate(STAND_IN, [lang])
        page.add_script_tag(content=(script / "deniable-rr.js").read_text())
        page.get_by_text(TEXTS[lang]).wait_for()
        return page

    _four_views(open_view, "host-limesurvey-stand-in", tmp_path)


@pytest.mark.slow  # a browser, 10 reloads and two more tabs
def test_a_participants_reloads_and_tabs_keep_the_report(page_at, generated):  # noqa: F811
    """A survey with participants puts the token in LimeSurvey's form: after a draw, 10
    reloads and a second tab of that participant show the report drawn before (Submit
    enabled at once, nothing drawn again); a tab without a token starts fresh."""
    _, open_page = page_at
    out, _ = generated
    folder = out / "deniable-cheat/survey/questions/answer/list_with_comment/assets/scripts"
    script = (folder / "deniable-rr.js").read_text()

    def load(tab, token: str | None) -> None:
        tab.evaluate(STAND_IN, ["en"])
        if token is not None:
            tab.evaluate(
                "(t) => document.getElementById('limesurvey').insertAdjacentHTML("
                "'afterbegin', `<input type='hidden' name='token' value='${t}'>`)",
                token,
            )
        tab.add_script_tag(content=script)

    page = open_page()
    load(page, "tok3n")
    page.get_by_role("radio", name="yes").check()
    page.get_by_role("button", name="Randomize my answer on this device").click()
    page.wait_for_function("window.__conditions.length === 1")
    form = "new FormData(document.getElementById('limesurvey')).get('123456X1X42')"
    first = page.evaluate(form)
    seen = []
    tabs = [page] * 10 + [page.context.new_page()]
    for tab in tabs:
        if tab is page:
            page.reload()
        else:
            tab.goto(page.url)
        load(tab, "tok3n")
        tab.wait_for_function("window.__conditions.length === 1")
        assert tab.locator("#ls-button-submit").is_enabled()
        seen.append(tab.evaluate(form))
    assert seen == [first] * 11
    stranger = page.context.new_page()
    stranger.goto(page.url)
    load(stranger, None)
    assert stranger.locator("#ls-button-submit").is_disabled()
    assert stranger.get_by_role("button", name="Randomize my answer on this device").is_enabled()

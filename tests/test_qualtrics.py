"""`deniable embed qualtrics` (issue 41, item 2): Qualtrics cannot run here, so each
generated question script runs in Debian's Chromium on a stand-in page that provides
exactly the documented calls (Qualtrics.SurveyEngine.addOnload with the question as
`this`, getQuestionContainer, disableNextButton, enableNextButton, setJSEmbeddedData of
the simplified engine, setEmbeddedData of the classic one). The embedded data holds only
the report, the digest and the version; the page's form never holds the answer; the
.qsf declares the fields in its flow; a CSV export of the result reads back."""

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

#: The stand-in: Qualtrics' page form, one question container, the engine's calls.
STAND_IN = """
([classic]) => {
  document.body.innerHTML = '<form id="Page" method="post"><input type="hidden" '
    + 'name="SurveyID" value="SV_x"><div class="QuestionOuter" id="QID1"><div '
    + 'class="QuestionText"></div></div><button id="NextButton" type="submit">Next'
    + '</button></form>';
  const recorded = {};
  const loads = [];
  window.__recorded = recorded;
  window.__next = "enabled";
  const engine = {
    addOnload: (fn) => loads.push(fn),
    addOnReady: () => {}, addOnUnload: () => {}, addOnPageSubmit: () => {},
    setEmbeddedData: (k, v) => { recorded[k] = v; },
  };
  if (!classic) engine.setJSEmbeddedData = (k, v) => { recorded["__js_" + k] = v; };
  window.Qualtrics = { SurveyEngine: engine };
  window.__question = {
    questionId: "QID1",
    getQuestionContainer: () => document.getElementById("QID1"),
    disableNextButton: () => { window.__next = "disabled"; },
    enableNextButton: () => { window.__next = "enabled"; },
  };
  window.__runLoads = () => loads.forEach((fn) => fn.call(window.__question));
}
"""


@pytest.fixture
def generated(tmp_path):
    survey_file = tmp_path / "embedded.json"
    survey_file.write_text(json.dumps(SURVEY))
    out = tmp_path / "qualtrics"
    result = CliRunner().invoke(app, ["embed", "qualtrics", str(survey_file), "--output", str(out)])
    assert result.exit_code == 0, result.output
    return out, survey_file


def test_the_qsf_declares_the_fields_and_carries_the_scripts(generated):
    out, _ = generated
    qsf = json.loads((out / "deniable.qsf").read_text())
    elements = {e["Element"]: e for e in qsf["SurveyElements"] if e["Element"] in ("BL", "FL")}
    fields = {f["Field"] for f in elements["FL"]["Payload"]["Flow"][0]["EmbeddedData"]}
    for qid in ("cheat", "panel"):
        assert {f"__js_deniable_{qid}", f"__js_deniable_{qid}_digest", f"deniable_{qid}"} <= fields
    # one deniable question a page (each script disables Next until its own draw): no
    # page lets a second question go undrawn
    block = next(b for b in elements["BL"]["Payload"] if b["ID"] == "BL_deniable")
    kinds = [e["Type"] for e in block["BlockElements"]]
    assert kinds == ["Question", "Page Break", "Question"], kinds
    scripts = [e["Payload"]["QuestionJS"] for e in qsf["SurveyElements"] if e["Element"] == "SQ"]
    assert scripts == [(out / f"question-{q}.js").read_text() for q in ("cheat", "panel")]
    for path in out.iterdir():
        assert "Math.random" not in path.read_text(), path.name


@pytest.mark.parametrize("classic", [False, True])
def test_the_question_script_keeps_only_the_report_in_embedded_data(
    page_at,  # noqa: F811
    generated,
    tmp_path,
    classic,
):
    _, open_page = page_at
    out, survey_file = generated
    page = open_page()
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url))
    page.evaluate(STAND_IN, [classic])
    page.add_script_tag(content=(out / "question-cheat.js").read_text())
    page.evaluate("window.__runLoads()")
    assert page.evaluate("window.__next") == "disabled"  # no next before a report
    page.get_by_role("radio", name="yes").check()
    fields = page.evaluate("[...new FormData(document.getElementById('Page')).keys()]")
    assert fields == ["SurveyID"]  # the page's form never holds the answer
    page.get_by_role("button", name="Randomize my answer on this device").click()
    page.wait_for_function("window.__next === 'enabled'")
    recorded = page.evaluate("window.__recorded")
    prefix = "" if classic else "__js_"
    digest = design_digest(load_survey(SURVEY).question("cheat"))
    assert set(recorded) == {f"{prefix}deniable_cheat", f"{prefix}deniable_cheat_digest",
                             f"{prefix}deniable_version"}  # fmt: skip
    assert recorded[f"{prefix}deniable_cheat_digest"] == digest
    assert recorded[f"{prefix}deniable_cheat"] in ("0", "1")
    assert not [u for u in sent if "/healthz" not in u]  # nothing fetched or sent
    # the response as a Qualtrics CSV export (three header rows), read back
    export = tmp_path / "export.csv"
    with export.open("w", newline="") as fh:
        w = csv.writer(fh)
        names = ["StartDate", "ResponseId", *recorded]
        w.writerow(names)
        w.writerow(["Start Date", "Response ID", *recorded])
        w.writerow([json.dumps({"ImportId": n}) for n in names])
        w.writerow(["2026-11-27 11:00:00", "R_1", *recorded.values()])
    result = CliRunner().invoke(
        app, ["analyze", str(export), "--survey", str(survey_file), "--json"]
    )
    assert result.exit_code == 0, result.output
    (item,) = json.loads(result.stdout)["questions"]
    assert item["question"] == "cheat" and item["n"] == 1 and item["refused"] == 0


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
def test_the_question_script_in_each_language_at_both_widths(page_at, generated, tmp_path):  # noqa: F811
    """Qualtrics pipes ``${e://Field/Q_Language}`` into the script on its server before
    the page loads; the stand-in does the same, and the question shows in that language."""
    from .test_browser import _four_views

    _, open_page = page_at
    out, _ = generated
    script = (out / "question-cheat.js").read_text()
    assert "${e://Field/Q_Language}" in script

    def open_view(lang: str, width: int):
        page = open_page(width=width)
        page.evaluate(STAND_IN, [False])
        piped = script.replace("${e://Field/Q_Language}", lang.upper())
        page.add_script_tag(content=piped)
        page.evaluate("window.__runLoads()")
        page.get_by_text(TEXTS[lang]).wait_for()
        return page

    _four_views(open_view, "host-qualtrics-stand-in", tmp_path)


@pytest.mark.slow  # a browser, 10 reloads and a second tab
def test_a_reload_or_a_second_tab_of_one_participant_keeps_the_report(page_at, generated):  # noqa: F811
    """Qualtrics pipes the participant's id into the script (``deniable_participant``,
    here written in as Qualtrics would): after a draw, 10 reloads of the page and a
    second tab show the report drawn before, Next enabled at once, and never draw
    another; without an id, a new tab starts fresh (the tab's sessionStorage)."""
    _, open_page = page_at
    out, _ = generated
    source = (out / "question-cheat.js").read_text()
    token = "${e://Field/deniable_participant}"
    assert token in source

    def load(tab, participant: str) -> str:
        tab.evaluate(STAND_IN, [False])
        tab.add_script_tag(content=source.replace(token, participant))
        tab.evaluate("window.__runLoads()")
        tab.wait_for_function("window.__next === 'enabled'")
        return str(tab.evaluate("window.__recorded.__js_deniable_cheat"))

    page = open_page()
    page.evaluate(STAND_IN, [False])
    page.add_script_tag(content=source.replace(token, "P-9"))
    page.evaluate("window.__runLoads()")
    page.get_by_role("radio", name="yes").check()
    page.get_by_role("button", name="Randomize my answer on this device").click()
    page.wait_for_function("window.__next === 'enabled'")
    first = str(page.evaluate("window.__recorded.__js_deniable_cheat"))
    seen = []
    for _ in range(10):
        page.reload()
        seen.append(load(page, "P-9"))
        assert page.get_by_role("button", name="Randomize my answer on this device").is_disabled()
        assert "drawn earlier for you: a reload or another tab" in page.inner_text("fieldset")
    tab = page.context.new_page()
    tab.goto(page.url)
    seen.append(load(tab, "P-9"))
    assert seen == [first] * 11
    stranger = page.context.new_page()  # no id: the tab's own storage, nothing carried over
    stranger.goto(page.url)
    stranger.evaluate(STAND_IN, [False])
    stranger.add_script_tag(content=source)
    stranger.evaluate("window.__runLoads()")
    assert stranger.evaluate("window.__next") == "disabled"
    assert stranger.get_by_role("button", name="Randomize my answer on this device").is_enabled()

"""A list experiment inside another survey tool (``deniable embed``): the component
draws the group in the browser and shows that group's list, each host keeps the count
and the group, and ``deniable analyze EXPORT --survey`` reads them back to the
difference in means."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable.analysis import list_difference_in_means
from deniable.cli import app
from deniable.collection.exports import embed, read_host_export
from deniable.collection.exports._export import GROUP_SUFFIX
from deniable.collection.model import design_digest
from deniable.collection.model._i18n import catalog
from deniable.collection.model._survey import load_survey

from .conftest import Z4
from .test_component import participant_tag
from .test_jspsych import node_modules  # noqa: F401 (the fixture)
from .test_otree import otree_bin  # noqa: F401 (the fixture)

CHROMIUM = Path("/usr/bin/chromium")
ITEMS = ["Recycled a bottle", "Voted in an election", "Run a marathon"]
SURVEY = {
    "id": "listed",
    "title": "Listed",
    "version": 1,
    "privacy_budget": 6,
    "questions": [
        {
            "id": "cheat",
            "text": "Have you cheated in an exam?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "done",
            "text": "How many of these have you done in the past year? Not which, only how many.",
            "design": {"name": "list-experiment"},
            "items": ITEMS,
            "sensitive_item": "Driven after drinking",
        },
    ],
}


def _survey():
    return load_survey(SURVEY)


def _list_view() -> dict:
    return next(q for q in _survey().respondent_view()["questions"] if q["id"] == "done")


def test_every_host_gets_the_list_question(tmp_path: Path) -> None:
    """The questions module carries the list's view (both groups' lists), oTree keeps a
    group field on its page, Qualtrics declares and sets ``deniable_done_group``, and
    LimeSurvey's answer codes carry the group (``A<count>`` on the control list,
    ``B<count>`` with the item)."""
    survey = _survey()
    out = {}
    for host in ("jspsych", "otree", "qualtrics", "limesurvey"):
        out[host] = embed(host, survey, tmp_path / host)
    questions = (tmp_path / "jspsych" / "deniable-questions.js").read_text(encoding="utf-8")
    assert '"list": true' in questions and "Driven after drinking" in questions
    assert "can be seen for certain" in questions
    app_py = (tmp_path / "otree" / "deniable_rr" / "__init__.py").read_text(encoding="utf-8")
    assert "deniable_done_group = models.IntegerField(min=0, max=1)" in app_py
    assert "LISTS = ['done']" in app_py
    page = (tmp_path / "otree" / "deniable_rr" / "Question.html").read_text(encoding="utf-8")
    assert "{{ if is_list }}" in page and "_group" in page
    qsf = json.loads((tmp_path / "qualtrics" / "deniable.qsf").read_text(encoding="utf-8"))
    fields = qsf["SurveyElements"][1]["Payload"]["Flow"][0]["EmbeddedData"]
    assert {"deniable_done_group", "__js_deniable_done_group"} <= {f["Field"] for f in fields}
    script = (tmp_path / "qualtrics" / "question-done.js").read_text(encoding="utf-8")
    assert '"deniable_done_group"' in script
    lss = ElementTree.parse(tmp_path / "limesurvey" / "deniable.lss").getroot()
    codes = {row.findtext("code") for row in lss.iter("row") if row.findtext("qid") == "2"}
    codes.discard(None)  # the other tables' rows of question 2
    # the control list has 3 items (counts 0..3), the treated one 4 (0..4)
    assert codes == {f"A{c}" for c in range(4)} | {f"B{c}" for c in range(5)}


def _host_rows(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Groups and counts of ``n`` respondents, 30% of whom have driven after drinking."""
    group = rng.integers(0, 2, n)
    counts = rng.binomial(3, 0.4, n) + group * (rng.random(n) < 0.3)
    return group, counts


def _write_export(host: str, path: Path, group: np.ndarray, counts: np.ndarray) -> Path:
    """A host's export of the list question as each host writes it (module text of
    :mod:`deniable.collection.exports._hosts`)."""
    digest = design_digest(_survey().question("done"))
    if host == "jspsych":
        trials = [
            {"trial_type": "deniable-rr", "subject": f"p{i}", "question": "done",
             "report": int(c), "group": int(g), "digest": digest}
            for i, (g, c) in enumerate(zip(group, counts, strict=True))
        ]  # fmt: skip
        path = path.with_suffix(".json")
        path.write_text(json.dumps(trials), encoding="utf-8")
        return path
    rows = list(zip(group, counts, strict=True))
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        if host == "otree":
            base = "app.1.player.deniable_done"
            w.writerow(["participant.code", base, base + "_digest", base + "_group"])
            w.writerows([[f"p{i}", c, digest, g] for i, (g, c) in enumerate(rows)])
        elif host == "qualtrics":
            w.writerow(["ResponseId", "__js_deniable_done", "__js_deniable_done_digest",
                        "__js_deniable_done_group"])  # fmt: skip
            w.writerow(["Response ID", "d", "d digest", "d group"])
            w.writerow(['{"ImportId":"_recordId"}', "{}", "{}", "{}"])
            w.writerows([[f"R_{i}", c, digest, g] for i, (g, c) in enumerate(rows)])
        else:  # limesurvey: the answer code's letter is the group
            w.writerow(["id", "deniabledone", "deniabledone[comment]"])
            w.writerows([[i, f"{'AB'[g]}{c}", digest] for i, (g, c) in enumerate(rows)])
    return path


@pytest.mark.parametrize("host", ["jspsych", "otree", "qualtrics", "limesurvey"])
def test_each_hosts_export_is_read_to_the_difference_in_means(host: str, tmp_path: Path) -> None:
    """800 simulated respondents in each host's export: each (group, count) pair read
    back exactly, and ``deniable analyze --json`` gives the difference in means of those
    rows (its estimate within 4 of its SE of the 0.3 simulated)."""
    rng = np.random.default_rng(31)
    group, counts = _host_rows(rng, 800)
    path = _write_export(host, tmp_path / f"{host}.csv", group, counts)
    back = read_host_export(path, _survey(), host)
    frame = back.frame  # jsPsych's rows come sorted by participant: compare the pairs
    pairs = sorted(zip(frame["done" + GROUP_SUFFIX], frame["done"], strict=True))
    assert pairs == sorted(zip(group.tolist(), counts.tolist(), strict=True))
    survey_file = tmp_path / "listed.json"
    survey_file.write_text(json.dumps(SURVEY), encoding="utf-8")
    args = ["analyze", str(path), "--survey", str(survey_file), "--host", host, "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["questions"]
    item = next(q for q in got if q["question"] == "done")["list"]
    want = list_difference_in_means(counts, group, items=3)
    assert item["estimate"] == pytest.approx(want.estimate, abs=1e-12)
    assert item["std_error"] == pytest.approx(want.std_error, abs=1e-12)
    assert abs(item["estimate"] - 0.3) < Z4 * item["std_error"]


def test_a_pilot_of_six_rows_gives_the_estimate_and_says_what_it_cannot(tmp_path: Path) -> None:
    """A 6-row pilot in an oTree export (3 per list, counts too uniform for the
    design-effect test's covariance): ``analyze`` gives the difference in means, exit 0,
    and says on stderr why there is no design-effect test, never a traceback (it ended
    in numpy's LinAlgError). The library refuses the test by name with the sizes."""
    from deniable.analysis import list_design_effect_test

    group, counts = np.array([0, 0, 0, 1, 1, 1]), np.array([3, 3, 3, 3, 1, 4])
    with pytest.raises(ValueError, match="3 treated and 3 control reports"):
        list_design_effect_test(counts, group, items=3)
    path = _write_export("otree", tmp_path / "pilot.csv", group, counts)
    survey_file = tmp_path / "listed.json"
    survey_file.write_text(json.dumps(SURVEY), encoding="utf-8")
    args = ["analyze", str(path), "--survey", str(survey_file), "--host", "otree"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "done: no design-effect test: the design-effect test needs more varied" in " ".join(
        result.stderr.split()
    )
    want = list_difference_in_means(counts, group, items=3)
    assert f"{want.estimate:.4f}" in result.stdout
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "host, group, count, match",
    [
        ("otree", 2, 1, "needs group 0 .* or 1 .*; got group '2' with count 1"),
        ("otree", 0, 4,
         "needs group 0 \\(counts 0..3\\) or 1 \\(counts 0..4\\); got group '0' with count 4"),
        ("limesurvey", 0, 4, "got group 'A4' with count 4"),
    ],
)  # fmt: skip
def test_a_count_its_group_does_not_allow_is_refused(host, group, count, match, tmp_path):
    groups = np.array([0, 1, group])
    counts = np.array([1, 2, count])
    path = _write_export(host, tmp_path / f"{host}.csv", groups, counts)
    with pytest.raises(ValueError, match=match):
        read_host_export(path, _survey(), host)


def test_a_list_count_without_its_group_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "otree.csv"
    digest = design_digest(_survey().question("done"))
    path.write_text(
        "participant.code,app.1.player.deniable_done,app.1.player.deniable_done_digest\n"
        f"p0,2,{digest}\n"
    )
    with pytest.raises(ValueError, match="list experiment 'done' has counts but no group"):
        read_host_export(path, _survey(), "otree")


MOUNT = """
async ([url, question, messages, options]) => {
  document.body.innerHTML = '<main><h1>Host survey</h1><form id="host"><div id="slot">'
    + '</div></form></main>';
  document.documentElement.lang = "en";
  const C = await import(url);
  const store = window.__store || new Map();
  window.__store = store;
  const storage = options.storage
    ? { getItem: (k) => (store.has(k) ? store.get(k) : null), setItem: (k, v) => store.set(k, v) }
    : null;
  window.__result = C.mount(document.getElementById("slot"), question,
    { messages, lang: "en", participant: options.participant, storage });
  return C.COMPONENT_VERSION;
}
"""


@pytest.fixture
def page_at(tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    from deniable.collection.server._live import serve_in_thread
    from deniable.collection.store._storage import Store

    from .test_browser import ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
        try:
            with serve_in_thread(store, "an-analyst-token-for-tests") as base:
                context = browser.new_context(viewport={"width": 1000, "height": 800})
                page = context.new_page()
                page.add_init_script(
                    "Math.random = () => { throw new Error('Math.random used'); };"
                )
                page.goto(f"{base}/healthz")  # a secure (loopback) origin
                yield base, page
        finally:
            store.close()
            browser.close()


@pytest.mark.slow  # a browser
def test_the_component_shows_the_drawn_groups_list_and_keeps_the_count_and_group(
    page_at, tmp_path
) -> None:
    """The group's list and counts, the note that 0 or every item is seen for certain,
    the count and the group handed back (and nothing sent); the group kept for the
    participant across a second mount; and over 400 mounts without storage, group 1
    drawn a number of times within 4 sigma of 200 (sd 10)."""
    base, page = page_at
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    view = _list_view()
    url = f"{base}/static/component.js"
    options = {"participant": "P-9", "storage": True}
    page.evaluate(MOUNT, [url, view, catalog("en"), options])
    text = page.inner_text("fieldset")
    shown = page.locator("fieldset li").all_inner_texts()
    group = 1 if "Driven after drinking" in shown else 0
    assert shown == [*ITEMS, "Driven after drinking"][: 3 + group]
    assert "can be seen for certain" in text
    assert page.get_by_role("radio").count() == 4 + group
    page.get_by_role("button", name="Use this answer").click()
    assert "Choose your true answer first" in page.inner_text("fieldset")
    page.get_by_role("radio", name="2").check()
    page.get_by_role("button", name="Use this answer").click()
    result = page.evaluate("window.__result")
    assert result == {"question": "done", "report": 2, "group": group,
                      "digest": design_digest(_survey().question("done")),
                      "version": result["version"]}  # fmt: skip
    assert "The survey will receive the number 2" in page.inner_text("fieldset")
    from .test_browser import _screenshot

    _screenshot(page, "component-list", tmp_path)
    # the same participant mounts again: the same list
    page.evaluate(MOUNT, [url, view, catalog("en"), options])
    again = page.locator("fieldset li").count()
    assert again == 3 + group
    ones = page.evaluate(
        """async ([url, question, messages]) => {
          const C = await import(url);
          let ones = 0;
          for (let i = 0; i < 400; i++) {
            sessionStorage.clear(); // 400 tabs: each draws its own group
            const slot = document.createElement("div");
            C.mount(slot, question, { messages, lang: "en" });
            await new Promise((r) => setTimeout(r, 0)); // the list renders once its memo is read
            ones += slot.querySelectorAll("li").length === 4 ? 1 : 0;
          }
          return ones;
        }""",
        [url, view, catalog("en")],
    )
    assert abs(ones - 200) <= Z4 * math.sqrt(400 * 0.25)
    assert errors == []
    assert all("/static/" in r or "/healthz" in r for r in requests), requests


LIMESURVEY_STAND_IN = """
() => {
  document.documentElement.lang = "en";
  const radios = [..."AB"].flatMap((letter, g) => [...Array(4 + g).keys()].map((c) =>
    `<li class="answer-item radio-item"><input class="radio" type="radio" name="123456X1X43"
      id="answer123456X1X43${letter}${c}" value="${letter}${c}"><label
      for="answer123456X1X43${letter}${c}">${c}</label></li>`)).join("");
  document.body.innerHTML = `<form id="limesurvey" name="limesurvey" method="post">
  <input type="hidden" name="YII_CSRF_TOKEN" value="t0k">
  <div id="question43" class="row question-container list-with-comment deniable-done mandatory">
    <div class="question-title-container"><div class="ls-label-question">How many?</div></div>
    <div class="answer-container">
      <ul class="answers-list radio-list list-unstyled" role="radiogroup">${radios}</ul>
      <div class="answer-item text-item"><label for="answer123456X1X43comment">Comment</label>
        <textarea name="123456X1X43comment" id="answer123456X1X43comment"></textarea></div>
    </div>
  </div>
  <button type="submit" id="ls-button-submit">Submit</button></form>`;
  window.__conditions = [];
  window.checkconditions = (value, name, type) => window.__conditions.push([value, name, type]);
}
"""


@pytest.mark.slow  # a browser
def test_limesurveys_theme_writes_the_groups_answer_code_and_the_digest(page_at, tmp_path):
    """On a stand-in of LimeSurvey's "list with comment" markup (answer codes A0..A3 and
    B0..B4), the theme's script shows the drawn group's list and checks ``A<count>`` on
    the control list or ``B<count>`` on the longer one; the comment holds the digest;
    the form holds nothing else of the respondent's."""
    _, page = page_at
    out = tmp_path / "limesurvey"
    embed("limesurvey", _survey(), out)
    script = out / "deniable-done/survey/questions/answer/list_with_comment/assets/scripts"
    page.evaluate(LIMESURVEY_STAND_IN)
    page.add_script_tag(content=(script / "deniable-rr.js").read_text())
    assert page.locator(".answers-list").is_hidden()
    longer = page.locator("fieldset li").count() == 4
    page.locator("fieldset").get_by_role("radio", name="2").check()
    page.get_by_role("button", name="Use this answer").click()
    page.wait_for_function("window.__conditions.length === 1")
    fields = page.evaluate(
        "Object.fromEntries(new FormData(document.getElementById('limesurvey')))"
    )
    assert fields == {
        "YII_CSRF_TOKEN": "t0k",
        "123456X1X43": ("B2" if longer else "A2"),
        "123456X1X43comment": design_digest(_survey().question("done")),
    }


@pytest.mark.slow  # a browser and jsPsych from npm
@pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which("npm") is None,
    reason="needs Debian's chromium and npm (.ci/run installs them)",
)
def test_the_jspsych_experiment_asks_the_list_and_its_data_reads_back(
    tmp_path,
    node_modules,  # noqa: F811 (tests/test_jspsych.py's fixture: jsPsych from npm)
) -> None:
    """The generated experiment in real jsPsych 8: the randomized question, then the
    list; the list's trial data holds the count and the group (and no answer), and
    ``deniable analyze`` reads the saved data back (one respondent: the list says each
    group needs 2 rows)."""
    from playwright.sync_api import sync_playwright

    from .test_browser import ARGS
    from .test_jspsych import serving

    out = tmp_path / "jspsych"
    embed("jspsych", _survey(), out)
    (out / "node_modules").symlink_to(node_modules)
    with serving(out) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_context().new_page()  # a context whose tabs share storage
        page.goto(f"{base}/experiment.html?participant=P-3")
        page.get_by_role("radio", name="yes").check()
        assert page.get_by_role("button", name="Continue").count() == 0  # nothing drawn
        page.get_by_role("button", name="Randomize my answer on this device").click()
        report = page.locator(".deniable-report").get_attribute("data-report")
        page.get_by_role("button", name="Continue").click()
        longer = page.locator("fieldset li").count() == 4
        page.get_by_role("radio", name="1").check()
        assert page.get_by_role("button", name="Continue").count() == 0  # no count taken
        page.get_by_role("button", name="Use this answer").click()
        page.get_by_role("button", name="Continue").click()
        data = json.loads(page.evaluate("experiment.data.get().json()"))
        kept = page.evaluate("Object.keys(localStorage)")
        # 10 reloads and a second tab of the same participant: the report drawn before,
        # shown at once and never drawn again, and the same list
        seen = []
        tabs = [page] * 10 + [page.context.new_page()]
        for tab in tabs:
            if tab is page:
                tab.reload()
            else:
                tab.goto(f"{base}/experiment.html?participant=P-3")
            again = tab.locator(".deniable-report")
            again.wait_for()
            assert tab.get_by_role(
                "button", name="Randomize my answer on this device"
            ).is_disabled()
            drawn = again.get_attribute("data-report")
            tab.get_by_role("button", name="Continue").click()
            tab.locator("fieldset li").first.wait_for()
            seen.append((drawn, tab.locator("fieldset li").count() == 4))
        browser.close()
    assert seen == [(report, longer)] * 11
    (trial,) = [t for t in data if t.get("question") == "done"]
    assert trial["report"] == 1 and trial["group"] == int(longer)
    assert sorted(kept) == [  # the list's group, and the randomized question's report
        f"deniable/list/{participant_tag('P-3')}/done/" + design_digest(_survey().question("done")),
        f"deniable/report/{participant_tag('P-3')}/cheat/"
        + design_digest(_survey().question("cheat")),
    ]
    saved = tmp_path / "data.json"
    saved.write_text(json.dumps(data))
    survey_file = tmp_path / "listed.json"
    survey_file.write_text(json.dumps(SURVEY), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["analyze", str(saved), "--survey", str(survey_file), "--json"]
    )
    assert result.exit_code == 0, result.output
    item = next(q for q in json.loads(result.stdout)["questions"] if q["question"] == "done")
    assert item["list"]["note"] == "each group needs 2 rows"


@pytest.mark.slow  # a browser and oTree's devserver
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run: apt)")
def test_the_otree_app_posts_the_count_and_the_group(tmp_path, otree_bin) -> None:  # noqa: F811
    """The generated app under the real ``otree devserver``: the list page (its template's
    ``{{ if is_list }}`` branch) posts the count, the digest and the group, and the
    "All apps - wide" CSV reads back with ``deniable_done_group``."""
    import urllib.request

    from playwright.sync_api import sync_playwright

    from .test_browser import ARGS
    from .test_otree import otree_project, running_devserver

    project = otree_project(tmp_path)
    embed("otree", _survey(), project)
    posted: list[str] = []
    with running_devserver(project, otree_bin) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_context().new_page()  # a context whose tabs share storage
        page.on(
            "request",
            lambda r: posted.append(r.post_data or "") if r.method == "POST" else None,
        )
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/demo/deniable")
        page.wait_for_url(lambda u: "SessionStartLinks" in u, timeout=30_000)
        link = page.eval_on_selector_all(
            "a", "els => els.map(e => e.href).filter(h => h.includes('InitializeParticipant'))"
        )[0]
        page.goto(link)
        page.get_by_role("radio", name="yes").check()
        page.get_by_role("button", name="Randomize my answer on this device").click()
        page.get_by_role("button", name="Continue").click()
        page.wait_for_load_state()
        longer = page.locator("fieldset li").count() == 4
        # Next hidden until the count is taken; 10 reloads and a second tab of the same
        # participant show the same list
        assert not page.get_by_role("button", name="Continue").is_visible()
        lists = []
        for _ in range(10):
            page.reload()
            page.locator("fieldset li").first.wait_for()
            lists.append(page.locator("fieldset li").count() == 4)
        tab = page.context.new_page()
        tab.goto(page.url)
        tab.locator("fieldset li").first.wait_for()
        lists.append(tab.locator("fieldset li").count() == 4)
        tab.close()
        assert lists == [longer] * 11
        page.get_by_role("radio", name="3").check()
        page.get_by_role("button", name="Use this answer").click()
        page.get_by_role("button", name="Continue").click()
        page.get_by_text("No more pages left").wait_for()
        browser.close()
        wide = tmp_path / "all_apps_wide.csv"
        with urllib.request.urlopen(f"{base}/api/export_wide", timeout=10) as r:
            wide.write_bytes(r.read())
    assert errors == []
    pages = [dict(pair.split("=", 1) for pair in body.split("&")) for body in posted if body]
    ours = {k for k in pages[-1] if k.startswith("deniable_")}
    assert ours == {"deniable_done", "deniable_done_digest", "deniable_done_group",
                    "deniable_version"}  # fmt: skip
    assert (pages[-1]["deniable_done"], pages[-1]["deniable_done_group"]) == ("3", str(int(longer)))
    back = read_host_export(wide, _survey(), "otree")
    row = back.frame.iloc[0]
    assert row["done"] == 3 and row["done" + GROUP_SUFFIX] == int(longer)


@pytest.mark.slow  # a browser
def test_the_qualtrics_script_keeps_the_count_and_the_group(page_at, tmp_path) -> None:
    """On tests/test_qualtrics.py's stand-in of Qualtrics' engine (the simplified one,
    ``setJSEmbeddedData``): the list question's script records the count, the digest,
    the group and the version, and nothing else; next is enabled once the count is
    taken."""
    from .test_qualtrics import STAND_IN

    _, page = page_at
    out = tmp_path / "qualtrics"
    embed("qualtrics", _survey(), out)
    page.evaluate(STAND_IN, [False])
    page.add_script_tag(content=(out / "question-done.js").read_text())
    page.evaluate("window.__runLoads()")
    assert page.evaluate("window.__next") == "disabled"
    longer = page.locator("fieldset li").count() == 4
    page.get_by_role("radio", name="0").check()
    page.get_by_role("button", name="Use this answer").click()
    page.wait_for_function("window.__next === 'enabled'")
    recorded = page.evaluate("window.__recorded")
    assert recorded == {
        "__js_deniable_done": "0",
        "__js_deniable_done_digest": design_digest(_survey().question("done")),
        "__js_deniable_done_group": str(int(longer)),
        "__js_deniable_version": recorded["__js_deniable_version"],
    }


@pytest.mark.slow  # a browser
def test_axe_core_finds_no_violation_in_the_list_component_at_phone_width(tmp_path) -> None:
    """The list component at 390 px (axe-core, which uses Math.random itself, so the
    page is not guarded here), and its screenshot."""
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium (.ci/run installs it)")
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import sync_playwright

    from deniable.collection.server._live import serve_in_thread
    from deniable.collection.store._storage import Store

    from .test_browser import ARGS, _screenshot

    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    try:
        with serve_in_thread(store, "an-analyst-token-for-tests") as base, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
            page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
            page.goto(f"{base}/healthz")
            page.evaluate(MOUNT, [f"{base}/static/component.js", _list_view(), catalog("en"), {}])
            found = Axe().run(page, context={"include": [["fieldset.deniable-rr"]]})
            _screenshot(page, "component-list-phone", tmp_path)
            browser.close()
    finally:
        store.close()
    assert found.violations_count == 0, json.dumps(found.response["violations"])[:2000]


@pytest.mark.parametrize("host", ["jspsych", "qualtrics", "limesurvey", "otree"])
def test_embed_says_how_to_pass_the_participants_id_for_a_list(tmp_path: Path, host: str) -> None:
    """Without a participant's id a list's group lives in the tab (a new tab draws it
    again): embed says so, and how the host passes one; oTree always passes one."""
    survey_file = tmp_path / "listed.json"
    survey_file.write_text(json.dumps(SURVEY), encoding="utf-8")
    args = ["embed", host, str(survey_file), "--output", str(tmp_path / host), "--json"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    warnings = json.loads(out.stdout)["warnings"]
    if host == "otree":
        assert warnings == []
        return
    (warning,) = warnings
    assert warning.startswith("list question 'done': its group is kept for every tab")
    how = {"jspsych": "?participant=ID", "qualtrics": "deniable_participant",
           "limesurvey": "with participants"}  # fmt: skip
    assert how[host] in warning
    table = CliRunner().invoke(app, args[:-1])
    assert "a new tab draws the group again" in " ".join(table.stderr.split())

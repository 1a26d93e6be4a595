"""`deniable embed jspsych` with the real jsPsych 8 (from the npm registry) in Debian's
Chromium (issue 41, item 2): the experiment runs, its data holds the report, the design
digest and the component's version and nothing of the answer, no request carries an
answer, `simulate()` works in data-only and visual modes, and the saved data reads back
through `deniable analyze --survey`."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._hosts import read_host_export
from deniable.collection.model._survey import load_survey

from .test_component import SURVEY, TEXTS, participant_tag

CHROMIUM = Path("/usr/bin/chromium")
JSPSYCH = "8.3.0"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)"
    ),
    pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm (.ci/run installs it)"),
]


def npm_installed(package: str, version: str, marker: str) -> Path:
    """``package@version`` from the npm registry, installed once in a cache beside the
    user's home (``marker``: a file the installed package has); its ``node_modules``.
    Skips the test where npm cannot install it."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "deniable-tests"
    target = cache / f"{package}-{version}"
    if not (target / "node_modules" / package / marker).exists():
        target.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(target),
             f"{package}@{version}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            pytest.skip(f"npm could not install {package}@{version}: {done.stderr[-300:]}")
    return target / "node_modules"


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory) -> Path:
    """jsPsych from the npm registry, installed once (a cache beside the user's home)."""
    return npm_installed("jspsych", JSPSYCH, "dist/index.browser.js")


@pytest.fixture
def experiment(tmp_path, node_modules):
    survey_file = tmp_path / "embedded.json"
    survey_file.write_text(json.dumps(SURVEY))
    out = tmp_path / "jspsych"
    result = CliRunner().invoke(
        app, ["embed", "jspsych", str(survey_file), "--output", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    (out / "node_modules").symlink_to(node_modules)
    with serving(out) as base:
        yield out, base, survey_file


@contextlib.contextmanager
def serving(folder: Path):
    """``folder`` over HTTP on a free loopback port until the block ends: its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_no_generated_file_uses_math_random(experiment):
    out, _, _ = experiment
    names = sorted(p.name for p in out.iterdir() if p.is_file())
    assert names == [
        "README.md", "component.js", "deniable-questions.js", "experiment.html",
        "explain.js", "plugin-deniable-rr.js", "randomizer.js",
    ]  # fmt: skip
    for path in out.iterdir():
        if path.is_file():
            assert "Math.random" not in path.read_text(), path.name


def test_the_experiment_runs_in_jspsych_and_keeps_only_reports(experiment, tmp_path):
    from playwright.sync_api import sync_playwright

    from .test_browser import ARGS, _four_views

    _, base, survey_file = experiment
    survey = load_survey(SURVEY)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page()
        sent: list[str] = []
        page.on("request", lambda r: sent.append(f"{r.method} {r.url} {r.post_data or ''}"))
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def open_view(lang: str, width: int):
            view = browser.new_page(viewport={"width": width, "height": 844})
            view.goto(f"{base}/experiment.html?lang={lang}")
            view.get_by_text(TEXTS[lang]).wait_for()
            return view

        _four_views(open_view, "host-jspsych", tmp_path)
        phone = open_view("en", 390)  # the question's box clear of the screen's edges
        box = phone.locator("fieldset.deniable-rr").bounding_box()
        assert box is not None and box["x"] >= 8 and box["x"] + box["width"] <= 390 - 8, box
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        german = open_view("de", 1000)  # the trial's button in the survey's language
        assert german.evaluate("document.documentElement.lang") == "de"
        german.locator("fieldset.deniable-rr input[type=radio]").first.check()
        german.get_by_role("button", name="Meine Antwort auf diesem Gerät verlosen").click()
        german.get_by_role("button", name="Weiter", exact=True).wait_for()
        assert german.get_by_role("button", name="Continue").count() == 0
        page.goto(f"{base}/experiment.html?participant=P-17")
        shown = []
        for truth in ("yes", "no"):
            page.get_by_role("radio", name=truth).check()
            page.get_by_role("button", name="Randomize my answer on this device").click()
            shown.append(int(page.locator(".deniable-report").get_attribute("data-report")))
            page.get_by_role("button", name="Continue").click()
        data = json.loads(page.evaluate("experiment.data.get().json()"))
        kept = page.evaluate("Object.keys(localStorage)")
        # simulate(): data-only and visual modes, on a fresh jsPsych
        simulated = page.evaluate(
            """async () => {
              const { default: Plugin } = await import('./plugin-deniable-rr.js');
              const { messages, questions } = await import('./deniable-questions.js');
              const out = {};
              for (const mode of ['data-only', 'visual']) {
                const js = initJsPsych({ display_element: document.body });
                const timeline = questions.en.map((question) => ({
                  type: Plugin, question, messages: messages.en,
                  simulation_options: { data: { truth: 1 } },
                }));
                await js.simulate(timeline, mode);
                out[mode] = js.data.get().values();
              }
              return out;
            }"""
        )
        browser.close()
    assert errors == []
    trials = [t for t in data if t["trial_type"] == "deniable-rr"]
    assert [t["report"] for t in trials] == shown
    digests = {q.id: q for q in survey.questions}
    for t in trials:
        assert {"question", "report", "digest", "component_version", "rt"} <= set(t)
        assert t["subject"] == "P-17"
        assert not {"truth", "answer", "response"} & set(t)
    from deniable.collection.model import design_digest

    assert [t["digest"] for t in trials] == [design_digest(digests[t["question"]]) for t in trials]
    # the panel question kept its secret for the participant, and each question the
    # report drawn (a reload shows it again); nothing else is stored
    tag = participant_tag("P-17")  # never the participant id itself
    assert set(kept) == {f"deniable/panel/{tag}"} | {
        f"deniable/report/{tag}/{t['question']}/{t['digest']}" for t in trials
    }
    # no request but files: nothing posted anywhere
    assert all(s.startswith("GET ") for s in sent), [s for s in sent if not s.startswith("GET")]
    for mode in ("data-only", "visual"):
        rows = simulated[mode]
        assert [r["question"] for r in rows] == ["cheat", "panel"], mode
        assert all(r["report"] in (0, 1) and len(r["digest"]) == 64 for r in rows)
        assert all("truth" not in r for r in rows)
    # the saved data reads back, its digests checked
    saved = tmp_path / "data.json"
    saved.write_text(json.dumps(data))
    back = read_host_export(saved, survey)
    assert back.host == "jspsych" and back.refused == {"cheat": 0, "panel": 0}
    assert back.frame.loc[0, "cheat"] == shown[0] and back.frame.loc[0, "panel"] == shown[1]
    result = CliRunner().invoke(
        app, ["analyze", str(saved), "--survey", str(survey_file), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert [q["n"] for q in json.loads(result.stdout)["questions"]] == [1, 1]

"""`deniable embed otree` with the real oTree from PyPI (issue 41, item 2): the app runs
under `otree devserver` in Debian's Chromium (oTree's bots run no JavaScript, so they
cannot test the component), each page posts only the report, the digest and the version,
and the "All apps - wide" CSV reads back through `deniable analyze --survey`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deniable.cli import app

from .test_component import SURVEY, TEXTS

CHROMIUM = Path("/usr/bin/chromium")
OTREE = "6.0.15"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run: apt)"),
]

SETTINGS = """
SESSION_CONFIGS = [
    dict(name="deniable", app_sequence=["deniable_rr"], num_demo_participants=1,
         language="en"),
    dict(name="deniable_de", app_sequence=["deniable_rr"], num_demo_participants=1,
         language="de"),
]
SESSION_CONFIG_DEFAULTS = dict(real_world_currency_per_point=1.00, participation_fee=0.00,
                               doc="")
PARTICIPANT_FIELDS = []
SESSION_FIELDS = []
LANGUAGE_CODE = "en"
REAL_WORLD_CURRENCY_CODE = "USD"
USE_POINTS = True
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "a-test-password"
DEMO_PAGE_INTRO_HTML = ""
SECRET_KEY = "a-secret-key-for-the-test-project"
"""


@pytest.fixture(scope="module")
def otree_bin() -> Path:
    """oTree from PyPI in a virtual environment of its own (its pins are not ours)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "deniable-tests"
    env = cache / f"otree-{OTREE}"
    binary = env / "bin" / "otree"
    if not binary.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(env)], capture_output=True)
        done = subprocess.run(
            [str(env / "bin" / "pip"), "install", "-q", f"otree=={OTREE}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if made.returncode or done.returncode:
            pytest.skip(f"pip could not install otree=={OTREE}: {done.stderr[-300:]}")
    return binary.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_devserver(project: Path, otree_bin: Path):
    """``otree devserver`` in ``project`` on a free port until the block ends: its base
    URL, once ``/demo`` answers (within 60 s, else the test fails)."""
    port = _free_port()
    env = os.environ | {"PATH": f"{otree_bin}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [str(otree_bin / "otree"), "devserver", str(port)], cwd=project, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{base}/demo", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("otree devserver did not answer within 60 s")
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def otree_project(folder: Path) -> Path:
    """An empty oTree project (the settings above) in ``folder/project``."""
    project = folder / "project"
    project.mkdir()
    (project / "settings.py").write_text(SETTINGS)
    (project / "__init__.py").write_text("")
    return project


@pytest.fixture
def devserver(tmp_path, otree_bin):
    project = otree_project(tmp_path)
    survey_file = tmp_path / "embedded.json"
    survey_file.write_text(json.dumps(SURVEY))
    out = CliRunner().invoke(app, ["embed", "otree", str(survey_file), "--output", str(project)])
    assert out.exit_code == 0, out.output
    with running_devserver(project, otree_bin) as base:
        yield base, survey_file, tmp_path


def test_the_app_runs_under_otree_devserver_and_keeps_only_reports(devserver):
    from playwright.sync_api import sync_playwright

    from .test_browser import ARGS, _four_views

    base, survey_file, tmp_path = devserver
    posted: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page()
        page.on(
            "request", lambda r: posted.append(r.post_data or "") if r.method == "POST" else None
        )
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def start(view, config: str) -> None:
            """A demo session of ``config`` and its one participant's first page."""
            view.goto(f"{base}/demo/{config}")
            view.wait_for_url(lambda u: "SessionStartLinks" in u, timeout=30_000)
            link = view.eval_on_selector_all(
                "a", "els => els.map(e => e.href).filter(h => h.includes('InitializeParticipant'))"
            )[0]
            view.goto(link)

        def open_view(lang: str, width: int):
            view = browser.new_page(viewport={"width": width, "height": 844})
            start(view, "deniable" if lang == "en" else f"deniable_{lang}")
            view.get_by_text(TEXTS[lang]).wait_for()
            return view

        _four_views(open_view, "host-otree", tmp_path)
        german = open_view("de", 1000)  # oTree's next button in the survey's language
        german.locator("fieldset.deniable-rr input[type=radio]").first.check()
        german.get_by_role("button", name="Meine Antwort auf diesem Gerät verlosen").click()
        german.get_by_role("button", name="Weiter", exact=True).wait_for()
        assert german.get_by_role("button", name="Next").count() == 0
        start(page, "deniable")
        page.locator("fieldset.deniable-rr").wait_for()
        shown = []
        for truth in ("yes", "no"):
            page.get_by_role("radio", name=truth).check()
            page.get_by_role("button", name="Randomize my answer on this device").click()
            shown.append(int(page.locator(".deniable-report").get_attribute("data-report")))
            page.get_by_role("button", name="Continue").click()
            page.wait_for_load_state()
        page.get_by_text("No more pages left").wait_for()
        browser.close()
    assert errors == []
    # each page posted the report, the digest and the version (and oTree's own token)
    pages = [dict(pair.split("=", 1) for pair in body.split("&")) for body in posted if body]
    assert len(pages) == 2
    for body, qid in zip(pages, ("cheat", "panel"), strict=True):
        ours = {k for k in body if k.startswith("deniable_")}
        assert ours == {f"deniable_{qid}", f"deniable_{qid}_digest", "deniable_version"}
        assert set(body) - ours <= {"csrftoken", "csrfmiddlewaretoken", "timeout_happened"}
    wide = tmp_path / "all_apps_wide.csv"
    with urllib.request.urlopen(f"{base}/api/export_wide", timeout=10) as r:
        wide.write_bytes(r.read())
    result = CliRunner().invoke(app, ["analyze", str(wide), "--survey", str(survey_file), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["host"] == "otree"
    assert [(q["question"], q["n"], q["refused"]) for q in data["questions"]] == [
        ("cheat", 1, 0),
        ("panel", 1, 0),
    ]

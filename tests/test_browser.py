"""The respondent page in a real browser (Playwright driving Debian's chromium).

`.ci/run` installs chromium from Debian's packages; no browser is downloaded from
anywhere else. Without /usr/bin/chromium these tests are skipped with that reason.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from deniable.collection.live import serve_in_thread
from deniable.collection.storage import Store
from deniable.collection.survey import load_survey
from deniable.mechanisms.binary import ForcedResponse, Kuk
from deniable.mechanisms.designs import KaryRR

from .conftest import ANALYST, SURVEY

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)"
)
#: Significance level of each distribution test below (false-failure rate per test).
ALPHA = 1e-3
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def site(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'browser.sqlite'}")
    survey = load_survey(copy.deepcopy(SURVEY) | {"requires_invitation": True})
    store.publish(survey)
    with serve_in_thread(store, ANALYST) as base:
        yield base, store, survey
    store.close()


def test_true_answer_never_leaves_the_browser(browser, site):
    base, store, survey = site
    token = store.issue_tokens(survey.id, 1)[0]
    # a phone-sized screen, driven with the keyboard only
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    page = context.new_page()
    seen: list[dict] = []
    page.on(
        "request",
        lambda r: seen.append({"method": r.method, "url": r.url, "body": r.post_data}),
    )
    page.goto(f"{base}/s/health?token={token}")
    assert "token" not in page.url  # the invitation is taken out of the address bar
    # accessible names: screen readers announce these
    page.get_by_role("radio", name="yes").focus()
    page.keyboard.press("Space")
    assert page.get_by_role("radio", name="yes").is_checked()
    page.locator("#q-drugs [data-role=draw]").focus()
    page.keyboard.press("Enter")
    page.get_by_role("radio", name="divorced").check()
    page.locator("#q-status [data-role=draw]").click()
    shown = {
        q: int(page.locator(f"#report-{q}").get_attribute("data-report"))
        for q in ("drugs", "status")
    }
    text = page.locator("#report-drugs").inner_text()
    assert "will receive the report" in text and "not receive your true answer" in text
    assert page.get_by_role("radio", name="yes").is_checked() is False  # not kept on the page
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    # every request the page made: same origin; exactly one carries data, and only reports
    assert all(r["url"].startswith(base) for r in seen)
    posts = [r for r in seen if r["method"] != "GET"]
    assert len(posts) == 1 and posts[0]["url"] == f"{base}/api/surveys/health/responses"
    assert json.loads(posts[0]["body"]) == {"version": 1, "reports": shown, "token": token}
    gets = [r["url"] for r in seen if r["method"] == "GET"]
    assert sorted(u.split("?")[0] for u in gets) == sorted(
        [f"{base}/s/health", f"{base}/static/style.css", f"{base}/static/respond.js"]
    )
    # the browser's storage holds the reports only
    stored_locally = page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
    assert json.loads(stored_locally) == {
        "deniable/health/1/q/drugs": str(shown["drugs"]),
        "deniable/health/1/q/status": str(shown["status"]),
        "deniable/health/1/submitted": "true",
    }
    # the server stored exactly what the page showed
    frame = store.export("health")
    assert dict(zip(frame["question_id"], frame["report"], strict=True)) == shown
    # a reload shows the same reports and cannot draw or send again
    seen.clear()
    page.reload()
    assert int(page.locator("#report-drugs").get_attribute("data-report")) == shown["drugs"]
    assert page.locator("#q-drugs [data-role=draw]").is_disabled()
    assert page.get_by_role("button", name="Send my reports").is_disabled()
    assert all(r["method"] == "GET" for r in seen)
    context.close()


def test_own_coin_mode_sends_the_entered_outcome(browser, site):
    base, store, survey = site
    token = store.issue_tokens(survey.id, 1)[0]
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/s/health?token={token}")
    page.locator("#q-drugs [data-role=physical]").click()
    assert "both heads" in page.locator("#q-drugs").inner_text()
    page.locator("#outcome-drugs-1").check()
    page.locator("#q-drugs [data-role=use-outcome]").click()
    page.locator("#q-status [data-role=physical]").click()
    page.locator("#outcome-status-0").check()
    page.locator("#q-status [data-role=use-outcome]").click()
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    frame = store.export("health")
    assert dict(zip(frame["question_id"], frame["report"], strict=True)) == {
        "drugs": 1,
        "status": 0,
    }
    context.close()


def test_javascript_and_python_randomizers_agree_in_distribution(browser, site, rng):
    """Chi-square tests at alpha = 1e-3 each: JS draws vs the exact column, and JS vs
    Python draws (homogeneity), over 200,000 draws per column in the real browser."""
    base, _, _ = site
    page = browser.new_page()
    page.goto(f"{base}/s/health")
    n = 200_000
    designs = [
        (ForcedResponse(p_yes=0.25, p_no=0.25), 1),
        (ForcedResponse(p_yes=1 / 6, p_no=1 / 6), 0),
        (KaryRR(k=5, epsilon=1.0), 3),
        (Kuk(p_carrier=0.7, p_noncarrier=0.3, draws=3), 1),
    ]
    for design, truth in designs:
        column = design.matrix[:, truth]
        js = np.array(page.evaluate("([c, n]) => deniable.sample(c, n)", [column.tolist(), n]))
        assert js.sum() == n
        py = np.bincount(design.randomize(np.full(n, truth), rng), minlength=column.size)
        gof = stats.chisquare(js, n * column)
        assert gof.pvalue > ALPHA, (design, js, n * column)
        homog = stats.chi2_contingency(np.vstack([js, py]))
        assert homog.pvalue > ALPHA, (design, js, py)
    # the test has power: a column off by 0.01 is rejected
    wrong = np.array(page.evaluate("([c, n]) => deniable.sample(c, n)", [[0.26, 0.74], n]))
    assert stats.chisquare(wrong, n * np.array([0.25, 0.75])).pvalue < ALPHA
    # one 53-bit uniform per draw, in [0, 1)
    u = np.array(page.evaluate("Array.from({length: 20000}, () => deniable.uniform53())"))
    assert u.min() >= 0 and u.max() < 1
    assert np.all(u * 2**53 == np.floor(u * 2**53))
    assert abs(u.mean() - 0.5) < 4 * math.sqrt(1 / 12 / u.size)
    page.close()

"""The embeddable component (web/component.js, issue 41 item 1) in Debian's Chromium,
on a stand-in host page: a host form around it. It hands back only the report, the
design digest and its version; the true answer's inputs belong to no form (the host
never submits or autosaves them) and are cleared; no request carries the answer; no
Math.random; axe-core finds no violation at phone width; a panel question keeps its
permanent layer only with a participant and storage, and says so without them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from deniable.collection.model import design_digest
from deniable.collection.model._i18n import catalog
from deniable.collection.model._survey import load_survey

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)"
)

SURVEY = {
    "id": "embedded",
    "title": "Embedded",
    "version": 1,
    "privacy_budget": 6,
    "questions": [
        {
            "id": "cheat",
            "text": "Have you cheated in an exam?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "panel",
            "text": "Did you drink at work this month?",
            "design": {"name": "warner", "params": {"p": 0.85}},
            "panel": {"permanent": {"name": "warner", "params": {"p": 0.85}}},
        },
    ],
    "translations": {
        "de": {
            "title": "Eingebettet",
            "questions": {
                "cheat": {"text": "Haben Sie bei einer Prüfung geschummelt?"},
                "panel": {"text": "Haben Sie diesen Monat bei der Arbeit getrunken?"},
            },
        }
    },
}

#: The first question's text in each of the survey's languages.
TEXTS = {
    "en": SURVEY["questions"][0]["text"],
    "de": SURVEY["translations"]["de"]["questions"]["cheat"]["text"],
}

#: A stand-in host: a form of its own (a field it submits and autosaves), the component
#: mounted inside it, every request recorded.
MOUNT = """
async ([url, question, messages, options]) => {
  document.body.innerHTML = '<main><h1>Host survey</h1><form id="host" method="post" '
    + 'action="/host-submit"><label>Your id <input name="host_id" value="P-17"></label>'
    + '<div id="slot"></div><button type="submit">Next</button></form></main>';
  document.documentElement.lang = "en";
  const C = await import(url);
  const store = new Map();
  const storage = options.storage === "local"
    ? window.localStorage
    : options.storage
    ? { getItem: (k) => (store.has(k) ? store.get(k) : null), setItem: (k, v) => store.set(k, v) }
    : null;
  window.__result = C.mount(document.getElementById("slot"), question,
    { messages, lang: "en", participant: options.participant, storage });
  window.__store = store;
  return C.COMPONENT_VERSION;
}
"""


@pytest.fixture
def page_at(tmp_path):
    from playwright.sync_api import sync_playwright

    from deniable.collection.server._live import serve_in_thread
    from deniable.collection.store._storage import Store

    from .test_browser import ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
        try:
            with serve_in_thread(store, "an-analyst-token-for-tests") as base:

                def open_page(width: int = 1000, guard: bool = True):
                    context = browser.new_context(viewport={"width": width, "height": 800})
                    page = context.new_page()
                    if guard:  # axe-core, the tester's tool, uses Math.random itself
                        page.add_init_script(
                            "Math.random = () => { throw new Error('Math.random used'); };"
                        )
                    page.goto(f"{base}/healthz")  # a secure (loopback) origin
                    return page

                yield base, open_page
        finally:
            store.close()
            browser.close()


def participant_tag(participant: str) -> str:
    """The name the component keeps a participant's state under, computed here
    independently of the browser: PBKDF2-HMAC-SHA256 (RFC 8018) of the id with the salt
    "deniable participant tag v1", 100,000 iterations, 16 bytes, as hex."""
    return hashlib.pbkdf2_hmac(
        "sha256", participant.encode(), b"deniable participant tag v1", 100_000, 16
    ).hex()


def _view(question_id: str) -> dict:
    survey = load_survey(SURVEY)
    view = survey.respondent_view()
    return next(q for q in view["questions"] if q["id"] == question_id)


def test_the_component_hands_back_only_the_report_digest_and_version(page_at, tmp_path):
    base, open_page = page_at
    page = open_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(f"{r.url} {r.post_data or ''}"))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    view = _view("cheat")
    version = page.evaluate(MOUNT, [f"{base}/static/component.js", view, catalog("en"), {}])
    page.get_by_role("radio", name="yes").check()
    # the true answer is owned by no form: the host's submission holds only its own field
    fields = page.evaluate("[...new FormData(document.getElementById('host')).keys()]")
    assert fields == ["host_id"]
    page.get_by_role("button", name="Randomize my answer on this device").click()
    result = page.evaluate("window.__result")
    assert set(result) == {"question", "report", "digest", "version"}
    assert result["digest"] == design_digest(load_survey(SURVEY).questions[0])
    assert result["version"] == version and result["report"] in (0, 1)
    assert not page.get_by_role("radio", name="yes").is_checked()  # cleared after the draw
    assert all(not page.get_by_role("radio", name=n).is_enabled() for n in ("yes", "no"))
    shown = page.inner_text("fieldset")  # the host records it: no deniable server named
    assert "The survey will receive the report" in shown and "The server" not in shown
    assert "It will not receive your true answer" in shown
    assert errors == []
    # nothing was sent but the modules themselves
    assert all("/static/" in r or "/healthz" in r for r in requests), requests
    from .test_browser import _screenshot

    _screenshot(page, "component", tmp_path)


def test_own_coin_mode_and_a_panel_question_with_and_without_storage(page_at):
    base, open_page = page_at
    page = open_page()
    page.evaluate(MOUNT, [f"{base}/static/component.js", _view("cheat"), catalog("en"), {}])
    page.get_by_role("button", name="Use my own coin or die instead").click()
    assert page.get_by_text("Flip two coins: heads-heads is 1").is_visible()
    page.get_by_role("radio", name="no").last.check()
    page.get_by_role("button", name="Use this outcome").click()
    assert page.evaluate("window.__result")["report"] == 0
    # a panel question: the secret kept for the participant, no own-coin mode
    page = open_page()
    options = {"participant": "P-17", "storage": True}
    page.evaluate(MOUNT, [f"{base}/static/component.js", _view("panel"), catalog("en"), options])
    assert page.get_by_role("button", name="Use my own coin or die instead").is_hidden()
    assert "asked again in later waves" in page.inner_text("fieldset").lower()
    page.get_by_role("radio", name="yes").check()
    page.get_by_role("button", name="Randomize my answer on this device").click()
    assert page.evaluate("window.__result")["report"] in (0, 1)
    kept = page.evaluate("Object.fromEntries(window.__store)")
    tag = participant_tag("P-17")
    memo = f"deniable/report/{tag}/panel/{_view('panel')['design_digest']}"
    assert set(kept) == {f"deniable/panel/{tag}", memo}  # the secret, and the report drawn
    assert len(kept[f"deniable/panel/{tag}"]) == 43
    assert kept[memo] == str(page.evaluate("window.__result")["report"])
    # without storage it says so, and still sends a report of the composed channel
    page = open_page()
    page.evaluate(MOUNT, [f"{base}/static/component.js", _view("panel"), catalog("en"), {}])
    assert "cannot be kept for later waves" in page.inner_text("fieldset")
    page.get_by_role("radio", name="no").check()
    page.get_by_role("button", name="Randomize my answer on this device").click()
    assert page.evaluate("window.__result")["report"] in (0, 1)


def test_a_panel_secret_kept_under_the_raw_id_moves_to_the_tag_and_no_subtle_keeps_nothing(
    page_at,
):
    """An earlier component kept the panel secret under the raw participant id: the next
    mount moves it to the participant's tag (the permanent layer stays the same) and
    removes the old key. A page without crypto.subtle (not https, not localhost) keeps
    nothing under the participant: the report goes to the tab's sessionStorage and the
    panel question says that its layer cannot be kept."""
    base, open_page = page_at
    url = f"{base}/static/component.js"
    page = open_page()
    secret = "A" * 43
    page.evaluate(f"localStorage.setItem('deniable/panel/P-17', {secret!r})")
    who = {"participant": "P-17", "storage": "local"}
    page.evaluate(MOUNT, [url, _view("panel"), catalog("en"), who])
    page.get_by_role("radio", name="yes").check()
    page.get_by_role("button", name="Randomize my answer on this device").click()
    page.evaluate("window.__result")
    kept = page.evaluate("Object.fromEntries(Object.entries(localStorage))")
    assert kept[f"deniable/panel/{participant_tag('P-17')}"] == secret
    assert not any("P-17" in k for k in kept)
    bare = open_page()
    bare.evaluate("Object.defineProperty(window.crypto, 'subtle', { value: undefined })")
    bare.evaluate(MOUNT, [url, _view("panel"), catalog("en"), who])
    assert "cannot be kept for later waves" in bare.inner_text("fieldset")
    bare.get_by_role("radio", name="no").check()
    bare.get_by_role("button", name="Randomize my answer on this device").click()
    bare.evaluate("window.__result")
    assert bare.evaluate("Object.keys(localStorage)") == []
    assert bare.evaluate("Object.keys(sessionStorage)") == [
        f"deniable/report/session/panel/{_view('panel')['design_digest']}"
    ]


def test_the_component_draws_the_designs_distribution(page_at):
    """4,000 draws through the component's randomize path for "yes" under forced response
    (Pr(report yes) = 0.75): within 4 sigma (sd = sqrt(4000 * 0.75 * 0.25) = 27.4)."""
    base, open_page = page_at
    page = open_page()
    counts = page.evaluate(
        """async ([url, column]) => {
          const R = await import(url);
          let yes = 0;
          for (let i = 0; i < 4000; i++) yes += R.drawReport(column, R.uniform53());
          return yes;
        }""",
        [f"{base}/static/randomizer.js", _view("cheat")["columns"][1]],
    )
    assert abs(counts - 3000) <= 4 * (4000 * 0.75 * 0.25) ** 0.5


def test_axe_core_finds_no_violation_in_the_component_at_phone_width(page_at):
    from axe_playwright_python.sync_playwright import Axe

    base, open_page = page_at
    page = open_page(width=390, guard=False)
    page.evaluate(MOUNT, [f"{base}/static/component.js", _view("cheat"), catalog("en"), {}])
    found = Axe().run(page, context={"include": [["fieldset.deniable-rr"]]})
    assert found.violations_count == 0, json.dumps(found.response["violations"])[:2000]


@pytest.mark.slow  # 7 s: two reloads and a second tab
def test_a_reload_or_a_second_tab_shows_the_report_drawn_before_and_draws_no_other(page_at):
    """Reloading until another report comes up gains nothing: after a draw, 10 reloads
    of the tab show the same report (inputs disabled, "drawn earlier"), and so does a
    second tab of the same participant (the host's participant id and localStorage); a
    new tab with no participant id (the next person at a lab computer) starts fresh. A
    list question shows the same list across 10 reloads. Only reports and groups are
    kept."""
    from .test_embed_list import _list_view

    base, open_page = page_at
    url = f"{base}/static/component.js"
    page = open_page()
    page.evaluate(MOUNT, [url, _view("cheat"), catalog("en"), {}])
    page.get_by_role("radio", name="yes").check()
    page.get_by_role("button", name="Randomize my answer on this device").click()
    first = page.evaluate("window.__result")["report"]
    for _ in range(10):
        page.reload()
        page.evaluate(MOUNT, [url, _view("cheat"), catalog("en"), {}])
        assert page.evaluate("window.__result")["report"] == first
        assert "drawn earlier on this page" in page.inner_text("fieldset")
        assert page.get_by_role("button", name="Randomize my answer on this device").is_disabled()
    kept = page.evaluate("Object.entries(sessionStorage)")
    assert kept == [
        [f"deniable/report/session/cheat/{_view('cheat')['design_digest']}", str(first)]
    ]
    fresh = page.context.new_page()  # another tab, no participant id: nothing carried over
    fresh.goto(f"{base}/healthz")
    fresh.evaluate(MOUNT, [url, _view("cheat"), catalog("en"), {}])
    assert fresh.get_by_role("button", name="Randomize my answer on this device").is_enabled()
    # one participant in two tabs, with the host's id and localStorage
    who = {"participant": "P-17", "storage": "local"}
    one = open_page()
    one.evaluate(MOUNT, [url, _view("cheat"), catalog("en"), who])
    one.get_by_role("radio", name="no").check()
    one.get_by_role("button", name="Randomize my answer on this device").click()
    drawn = one.evaluate("window.__result")["report"]
    two = one.context.new_page()
    two.goto(f"{base}/healthz")
    two.evaluate(MOUNT, [url, _view("cheat"), catalog("en"), who])
    assert two.evaluate("window.__result")["report"] == drawn
    # the next person on the device reads every key: the participant's tag, not the id
    # (an oTree code or a LimeSurvey token is a credential)
    keys = two.evaluate("Object.keys(localStorage)")
    assert keys == [
        f"deniable/report/{participant_tag('P-17')}/cheat/{_view('cheat')['design_digest']}"
    ]
    assert not any("P-17" in k or "P-17" in two.evaluate(f"localStorage[{k!r}]") for k in keys)
    # a list question: one list across reloads
    lists = open_page()
    lists.evaluate(MOUNT, [url, _list_view(), catalog("en"), {}])
    shown = lists.inner_text("fieldset")
    for _ in range(10):
        lists.reload()
        lists.evaluate(MOUNT, [url, _list_view(), catalog("en"), {}])
        assert lists.inner_text("fieldset") == shown

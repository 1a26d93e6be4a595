"""The respondent page in a real browser (Playwright driving Debian's chromium).

`.ci/run` installs chromium from Debian's packages; no browser is downloaded from
anywhere else. Without /usr/bin/chromium these tests are skipped with that reason.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from deniable.collection.model._survey import load_survey
from deniable.collection.server._live import serve_in_thread
from deniable.collection.store._storage import Store
from deniable.mechanisms import KaryRR
from deniable.mechanisms._binary import ForcedResponse, Kuk

from .conftest import ANALYST, SURVEY, token_arm

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


def token_owner(token: str) -> str:
    """The page's owner of an anonymous link's reports: SHA-256 of its invitation."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()


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
    # each response released at once (crowds are tested in test_storage and test_attacker)
    survey = load_survey(
        copy.deepcopy(SURVEY)
        | {"requires_invitation": True, "min_release": 1, "allow_small_release": True}
    )
    store.publish(survey)
    with serve_in_thread(store, ANALYST) as base:
        yield base, store, survey
    store.close()


@pytest.mark.smoke
def test_true_answer_never_leaves_the_browser(browser, site):
    base, store, survey = site
    token = store.invitations.issue_tokens(survey.id, 1)[0]
    # a phone-sized screen, driven with the keyboard only
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    page = context.new_page()
    seen: list[dict] = []
    page.on(
        "request",
        lambda r: seen.append({"method": r.method, "url": r.url, "body": r.post_data}),
    )
    # no code on the page may use a non-cryptographic generator, the bundled library included
    page.add_init_script("Math.random = () => { throw new Error('Math.random used'); };")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/s/health#token={token}")
    assert "token" not in page.url  # the invitation is taken out of the address bar
    assert not any(r["method"] == "POST" for r in seen)  # opening the page spends nothing
    # accessible names: screen readers announce these
    page.get_by_role("radio", name="yes").focus()
    page.keyboard.press("Space")
    assert page.get_by_role("radio", name="yes").is_checked()
    page.locator("#q-drugs [data-role=draw]").focus()
    page.keyboard.press("Enter")  # the first draw spends the invitation
    page.get_by_text("exchanged for an anonymous credential").wait_for()
    page.locator("#report-drugs").wait_for()
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
    # every request the page made: same origin, no token in any URL; two carry data: the
    # blinded message with the invitation, then the reports with the unblinded credential
    assert all(r["url"].startswith(base) and token not in r["url"] for r in seen)
    posts = [r for r in seen if r["method"] != "GET"]
    assert [p["url"] for p in posts] == [
        f"{base}/api/surveys/health/credentials",
        f"{base}/api/surveys/health/responses",
    ]
    issue, response = (json.loads(p["body"]) for p in posts)
    assert set(issue) == {"token", "blinded_msg", "version"} and issue["token"] == token
    assert set(response) == {"version", "reports", "credential"} and token not in posts[1]["body"]
    assert response["reports"] == shown and response["version"] == 1
    # the credential the server sees is not the blinded message it signed
    assert issue["blinded_msg"] not in posts[1]["body"]
    gets = [r["url"] for r in seen if r["method"] == "GET"]
    assert sorted(u.split("?")[0] for u in gets) == sorted(
        [
            f"{base}/s/health",
            f"{base}/static/style.css",
            f"{base}/static/vendor/blindrsa-ts-0.4.4.js",
            f"{base}/static/randomizer-global.js",
            f"{base}/static/randomizer.js",
            f"{base}/static/explain.js",
            f"{base}/static/respond.js",
        ]
    )
    assert errors == []
    # the browser's storage holds the reports only (the spent credential is removed),
    # under their owner: SHA-256 of the (spent) invitation, not the invitation
    stored_locally = page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
    digests = {q.id: q.memo_digest for q in survey.questions}
    owner = token_owner(token)
    assert token not in stored_locally
    assert json.loads(stored_locally) == {
        f"deniable/memo/{owner}/{digests['drugs']}": str(shown["drugs"]),
        f"deniable/memo/{owner}/{digests['status']}": str(shown["status"]),
        f"deniable/health/{owner}/sent/1": "true",
    }
    # the server stored exactly what the page showed
    store.release()  # what waits is released at the next release time
    frame = store.released.export("health")
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
    token = store.invitations.issue_tokens(survey.id, 1)[0]
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/s/health#token={token}")
    page.locator("#q-drugs [data-role=physical]").click()
    assert "heads-heads is 1" in page.locator("#q-drugs").inner_text()
    page.locator("#outcome-drugs-1").check()
    page.locator("#q-drugs [data-role=use-outcome]").click()
    page.locator("#report-drugs").wait_for()  # after the invitation is spent
    # k-ary RR at epsilon 2 (keep 78.7%): no dice give it, and the page says so plainly
    assert page.locator("#q-status [data-role=physical]").is_hidden()
    assert "cannot be randomized by hand" in page.locator("#q-status").inner_text()
    page.get_by_role("radio", name="single").check()
    page.locator("#q-status [data-role=draw]").click()
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    store.release()  # what waits is released at the next release time
    frame = store.released.export("health")
    assert dict(zip(frame["question_id"], frame["report"], strict=True))["drugs"] == 1
    # the risk in plain words first, the figures behind a toggle
    assert "cannot become more than 3 times surer" in page.locator("#q-drugs").inner_text()
    assert page.locator("#q-drugs details").count() == 1
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


VECTORS = json.loads((Path(__file__).parent / "data" / "rfc9474_vectors.json").read_text())


def test_rfc9474_vector_in_chromium(browser, site):
    """RFC 9474's RSABSSA-SHA384-PSS-Randomized vector through the bundled library, with
    crypto.getRandomValues answering the vector's prefix, salt and blinding factor."""
    base, _, _ = site
    v = next(x for x in VECTORS if x["name"] == "RSABSSA-SHA384-PSS-Randomized")
    n, d, p, q = (int(v[x], 16) for x in ("n", "d", "p", "q"))
    k = (n.bit_length() + 7) // 8
    r = pow(int(v["inv"], 16), -1, n)

    def b64(x: int) -> str:
        import base64

        raw = x.to_bytes((x.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    jwk = {
        "kty": "RSA",
        "n": b64(n),
        "e": b64(int(v["e"], 16)),
        "d": b64(d),
        "p": b64(p),
        "q": b64(q),
        "dp": b64(d % (p - 1)),
        "dq": b64(d % (q - 1)),
        "qi": b64(pow(q, -1, p)),
    }
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/s/health")
    out = page.evaluate(
        """async ([v, jwk, rHex]) => {
          const hex = (h) => Uint8Array.from(h.match(/../g).map((b) => parseInt(b, 16)));
          const toHex = (a) => Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
          const queue = [hex(v.msg_prefix), hex(v.salt), hex(rHex)];
          const real = crypto.getRandomValues.bind(crypto);
          crypto.getRandomValues = (a) => (queue.length ? queue.shift() : real(a));
          const alg = { name: "RSA-PSS", hash: "SHA-384" };
          const pub = await crypto.subtle.importKey(
            "jwk", { kty: "RSA", n: jwk.n, e: jwk.e, ext: true }, alg, true, ["verify"]);
          const priv = await crypto.subtle.importKey("jwk", { ...jwk, ext: true }, alg, true,
            ["sign"]);
          const suite = blindrsa.RSABSSA.SHA384.PSS.Randomized();
          const input = suite.prepare(hex(v.msg));
          const { blindedMsg, inv } = await suite.blind(pub, input);
          const blindSig = await suite.blindSign(priv, blindedMsg);
          const sig = await suite.finalize(pub, input, blindSig, inv);
          crypto.getRandomValues = real;
          return { input: toHex(input), blinded: toHex(blindedMsg), blindSig: toHex(blindSig),
                   sig: toHex(sig), valid: await suite.verify(pub, sig, input) };
        }""",
        [v, jwk, f"{r:0{2 * k}x}"],
    )
    assert out["input"] == v["input_msg"]
    assert out["blinded"] == v["blinded_msg"]
    assert out["blindSig"] == v["blind_sig"]
    assert out["sig"] == v["sig"]
    assert out["valid"] is True
    context.close()


def _recipient_link(base: str, store: Store, survey_id: str, address: str) -> str:
    issued = store.invitations.invite_recipients(survey_id, [address], lifetime_budget=100.0)
    return (
        f"{base}/s/{survey_id}#token={issued.tokens[0]}&v={issued.version}&owner={issued.owners[0]}"
    )


def test_an_unchanged_question_is_not_drawn_again_in_a_new_version(browser, site):
    """Ada, re-invited to version 2 which changes one question's text: the browser reuses
    the memoized report of the unchanged question (no draw, no new randomness) and draws
    only for the changed one; the lifetime ledger charges only the changed question."""
    base, store, _ = site
    data = copy.deepcopy(SURVEY) | {"id": "life", "requires_invitation": True}
    store.publish(load_survey(data | {"lifetime_budget": 6.0}))
    context = browser.new_context()
    page = context.new_page()
    page.goto(_recipient_link(base, store, "life", "ada@example.org"))
    page.get_by_role("radio", name="yes").check()
    page.locator("#q-drugs [data-role=draw]").click()
    page.locator("#report-drugs").wait_for()
    page.get_by_role("radio", name="married").check()
    page.locator("#q-status [data-role=draw]").click()
    first = int(page.locator("#report-status").get_attribute("data-report"))
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()

    data |= {"version": 2, "lifetime_budget": 6.0}
    data["questions"][0]["text"] = "Have you used an illegal drug in the last year?"
    store.publish(load_survey(data))
    assert store.ledger("life").cumulative[-1][1] == pytest.approx(math.log(3))
    page.add_init_script(
        "window.__draws = 0; const g = crypto.getRandomValues.bind(crypto);"
        "crypto.getRandomValues = (a) => { window.__draws += 1; return g(a); };"
    )
    page.goto("about:blank")
    page.goto(_recipient_link(base, store, "life", "ada@example.org"))
    # the unchanged question shows its earlier report and cannot be drawn again
    page.locator("#report-status").wait_for()
    assert int(page.locator("#report-status").get_attribute("data-report")) == first
    assert "drawn earlier on this device" in page.locator("#report-status").inner_text()
    assert page.locator("#q-status [data-role=draw]").is_disabled()
    # the changed question is open: answering it draws once (and spends the invitation)
    assert page.locator("#report-drugs").is_hidden()
    page.get_by_role("radio", name="no").check()
    before = page.evaluate("window.__draws")
    page.locator("#q-drugs [data-role=draw]").click()
    page.locator("#report-drugs").wait_for()
    blinding = page.evaluate("window.__draws") - before - 1  # the credential's randomness
    assert blinding >= 1
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    assert store.response_count("life", 2) == 1
    context.close()


@pytest.mark.slow
def test_a_reinvited_person_sends_the_memoized_report_across_versions_and_surveys(browser, site):
    """Ada is invited to 20 unchanged versions and to the same question under 10 other
    survey ids: Chromium draws once and sends that report 30 times. Bob, on the same
    browser, is not shown Ada's report and draws his own."""
    base, store, _ = site
    question = copy.deepcopy(SURVEY["questions"][0])
    targets = [("again", v) for v in range(1, 21)] + [(f"again-{i}", 1) for i in range(10)]
    context = browser.new_context()
    page = context.new_page()
    sent = []
    for survey_id, version in targets:
        data = copy.deepcopy(SURVEY) | {
            "id": survey_id,
            "version": version,
            "title": f"T{version}",
            "requires_invitation": True,
            "questions": [question],
            "lifetime_budget": 30,
            "min_release": 1,
            "allow_small_release": True,
        }
        store.publish(load_survey(data))
        page.goto("about:blank")
        page.goto(_recipient_link(base, store, survey_id, "ada@example.org"))
        if not sent:
            page.get_by_role("radio", name="yes").check()
            page.locator("#q-drugs [data-role=draw]").click()
        page.locator("#report-drugs").wait_for()
        sent.append(int(page.locator("#report-drugs").get_attribute("data-report")))
        page.get_by_role("button", name="Send my reports").click()
        page.get_by_text("Sent and stored").wait_for()
    assert len(set(sent)) == 1
    store.release()  # what waits is released at the next release time
    stored = [
        int(r) for sid in {s for s, _ in targets} for r in store.released.export(sid)["report"]
    ]
    assert stored == [sent[0]] * 30
    page.goto("about:blank")
    page.goto(_recipient_link(base, store, "again", "bob@example.org"))
    assert page.locator("#report-drugs").is_hidden()
    assert not page.locator("#q-drugs [data-role=draw]").is_disabled()
    context.close()


def test_an_invitation_code_typed_by_hand(browser, site):
    """Without a link, the page asks for the invitation code and shows nothing else; the
    first draw spends it; a code already used says plainly what happened and what to do."""
    base, store, survey = site
    (token,) = store.invitations.issue_tokens(survey.id, 1)
    for attempt in ("fresh", "used"):
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{base}/s/health")
        page.locator("#token-box").wait_for()
        assert page.locator("#q-drugs [data-role=draw]").is_disabled()
        page.fill("#token", token)
        page.get_by_role("button", name="Continue with this code").click()
        page.get_by_role("radio", name="no").check()
        page.locator("#q-drugs [data-role=draw]").click()
        if attempt == "fresh":
            page.get_by_role("radio", name="single").check()
            page.locator("#q-status [data-role=draw]").click()
            page.get_by_role("button", name="Send my reports").click()
            page.get_by_text("Sent and stored").wait_for()
        else:
            page.get_by_text("already used to start answering").wait_for()
            assert "Continue on another device" in page.locator("#status").inner_text()
            assert page.locator("#report-drugs").is_hidden()
        context.close()
    assert store.response_count("health") == 1


def _answer_and_send(page) -> None:
    page.get_by_role("radio", name="no").check()
    page.locator("#q-drugs [data-role=draw]").click()
    page.locator("#report-drugs").wait_for()
    page.get_by_role("radio", name="single").check()
    page.locator("#q-status [data-role=draw]").click()
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()


def test_a_failed_exchange_spends_nothing_and_a_reload_keeps_the_invitation(browser, site):
    """The network drops every credential request: the page says nothing was used up;
    after a reload the token, kept in this tab's session storage and never in the
    address, is exchanged on the first draw and the reports are sent."""
    base, store, survey = site
    (token,) = store.invitations.issue_tokens(survey.id, 1)
    context = browser.new_context()
    page = context.new_page()
    page.route("**/credentials", lambda route: route.abort())
    page.goto(f"{base}/s/health#token={token}")
    page.get_by_role("radio", name="no").check()
    page.locator("#q-drugs [data-role=draw]").click()
    page.get_by_text("Nothing was used up").wait_for()
    assert "token" not in page.url and page.locator("#report-drugs").is_hidden()
    page.unroute("**/credentials")
    page.reload()
    _answer_and_send(page)
    assert store.response_count("health") == 1
    assert token not in json.dumps(page.evaluate("Object.assign({}, sessionStorage)"))  # spent
    context.close()


def test_a_dropped_answer_does_not_burn_the_invitation(browser, site):
    """The server spends the invitation and signs, but the answer never reaches the
    page: the page asks again with the same blinded message and gets the same
    signature, so the person can still answer."""
    base, store, survey = site
    (token,) = store.invitations.issue_tokens(survey.id, 1)
    context = browser.new_context()
    page = context.new_page()
    bodies = []

    def drop_first(route):
        bodies.append(json.loads(route.request.post_data))
        if len(bodies) == 1:
            route.fetch()  # reaches the server: the spend commits
            route.abort()  # and the answer is lost
        else:
            route.continue_()

    page.route("**/credentials", drop_first)
    page.goto(f"{base}/s/health#token={token}")
    _answer_and_send(page)
    assert len(bodies) == 2 and bodies[0] == bodies[1]  # the same request again
    assert store.response_count("health") == 1
    context.close()


def test_look_on_the_phone_answer_on_the_laptop(browser, site):
    """Two devices (browser contexts). Opening the link on one spends nothing, so the
    other can answer with it."""
    base, store, survey = site
    (token,) = store.invitations.issue_tokens(survey.id, 1)
    phone = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    laptop = browser.new_context()
    look = phone.new_page()
    look.goto(f"{base}/s/health#token={token}")
    look.get_by_role("radio", name="yes").check()  # reads, chooses, but does not draw
    page = laptop.new_page()
    page.goto(f"{base}/s/health#token={token}")
    _answer_and_send(page)
    assert store.response_count("health") == 1
    phone.close()
    laptop.close()


def test_start_on_one_device_continue_on_another(browser, site, tmp_path):
    """Start on the phone (the first draw spends the invitation); the laptop, opening
    the same link, is told what happened and what to do; the phone's transfer link
    carries the credential and the drawn report; the laptop sends; stored once, and the
    phone then learns the reports were sent from the other device."""
    base, store, survey = site
    (token,) = store.invitations.issue_tokens(survey.id, 1)
    phone = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    laptop = browser.new_context()
    start = phone.new_page()
    start.goto(f"{base}/s/health#token={token}")
    start.get_by_role("radio", name="yes").check()
    start.locator("#q-drugs [data-role=draw]").click()
    start.locator("#report-drugs").wait_for()
    drawn = int(start.locator("#report-drugs").get_attribute("data-report"))
    assert start.locator("#transfer-box").is_visible()
    start.get_by_role("button", name="Show the link for my other device").click()
    link = start.locator("#transfer-link").input_value()
    assert "#transfer=" in link and token not in link
    _screenshot(start, "respondent-transfer", tmp_path)

    other = laptop.new_page()
    other.goto(f"{base}/s/health#token={token}")
    other.get_by_role("radio", name="no").check()
    other.locator("#q-drugs [data-role=draw]").click()
    other.get_by_text("already used to start answering").wait_for()
    other.goto("about:blank")
    other.goto(link)
    assert "transfer" not in other.url
    other.locator("#report-drugs").wait_for()
    assert int(other.locator("#report-drugs").get_attribute("data-report")) == drawn
    other.get_by_role("radio", name="single").check()
    other.locator("#q-status [data-role=draw]").click()
    other.get_by_role("button", name="Send my reports").click()
    other.get_by_text("Sent and stored").wait_for()
    # the phone, opened again, says the answers are to go from the other device and
    # offers no blank form (it asks the server nothing); it may continue here after all
    start.reload()
    assert start.locator("#moved-box").is_visible()
    assert "continues on your other device" in start.locator("#moved-heading").inner_text()
    assert start.locator("#submit").is_disabled()
    assert start.locator("#q-status [data-role=draw]").is_disabled()
    assert not start.locator("#transfer-box").is_visible()
    _screenshot(start, "respondent-moved", tmp_path)
    start.get_by_role("button", name="Continue on this device instead").click()
    start.locator("#report-drugs").wait_for()
    assert not start.locator("#moved-box").is_visible()
    # the phone sends too: the credential is spent, and the page says where it went
    start.get_by_role("radio", name="married").check()
    start.locator("#q-status [data-role=draw]").click()
    start.get_by_role("button", name="Send my reports").click()
    start.get_by_text("already sent from your other device").wait_for()
    store.release()  # what waits is released at the next release time
    frame = store.released.export("health")
    assert store.response_count("health") == 1
    assert int(frame.loc[frame["question_id"] == "drugs", "report"].iloc[0]) == drawn
    phone.close()
    laptop.close()


def test_a_shared_device_never_shows_another_persons_report(browser, site):
    """Person A answers and sends. Then, on the same browser profile: the bare address,
    B's link pasted into the same tab (only the fragment changes), and B's own page
    after "someone else" show none of A's reports, and B answers afresh."""
    base, store, survey = site
    token_a, token_b, token_c = store.invitations.issue_tokens(survey.id, 3)
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/s/health#token={token_a}")
    _answer_and_send(page)
    a_reports = page.locator(".report").all_inner_texts()
    # the same tab, the bare address: nobody's reports
    page.goto("about:blank")
    page.goto(f"{base}/s/health")
    assert page.locator("#token-box").is_visible()
    assert page.locator(".report:visible").count() == 0
    assert "already sent" not in page.inner_text("body")
    # B's link pasted into A's tab: only the fragment changes
    page.goto(f"{base}/s/health#token={token_a}")
    page.locator("#report-drugs").wait_for()  # A's own link shows A's reports
    page.evaluate(f"window.location.hash = 'token={token_b}'")
    page.wait_for_function("!window.location.hash")  # reloaded, taken out of the address
    assert page.locator(".report:visible").count() == 0
    assert "already sent" not in page.inner_text("body")
    _answer_and_send(page)
    assert store.response_count("health") == 2
    # "someone else": asks first, then forgets B in this tab; nothing of B shown
    page.once("dialog", lambda d: d.accept())
    page.locator("#someone-else summary").click()
    page.get_by_role("button", name="Let someone else answer").click()
    page.locator("#token-box").wait_for()
    assert page.locator(".report:visible").count() == 0
    assert page.evaluate("Object.keys(sessionStorage).length") == 0
    # C starts fresh on the same device; A's texts never appear
    page.goto(f"{base}/s/health#token={token_c}")
    assert page.locator(".report:visible").count() == 0
    assert not any(text in page.inner_text("body") for text in a_reports if text)
    context.close()


def test_a_closed_survey_says_so_and_takes_nothing(browser, site):
    base, store, survey = site
    (token,) = store.invitations.issue_tokens(survey.id, 1)
    store.set_closed(survey.id, True)
    page = browser.new_page()
    page.goto(f"{base}/s/health#token={token}")
    assert "This survey is closed" in page.locator("#closed").inner_text()
    assert page.locator("#closed").is_visible()
    assert page.locator("#q-drugs [data-role=draw]").is_disabled()
    assert page.locator("#q-drugs input").first.is_disabled()
    assert page.get_by_role("button", name="Send my reports").is_disabled()
    page.close()
    store.set_closed(survey.id, False)


def test_description_consent_innocuous_question_and_hints(browser, site):
    base, store, _ = site
    text = (Path(__file__).parents[1] / "examples" / "workplace.yaml").read_text()
    data = yaml.safe_load(text) | {
        "requires_invitation": False,
        "description": "A survey of working conditions.",
        "consent": "Taking part is voluntary. Contact: survey-team@example.org",
    }
    store.publish(load_survey(data))
    page = browser.new_page()
    page.goto(f"{base}/s/{data['id']}")
    assert page.get_by_text("A survey of working conditions.").is_visible()
    assert page.get_by_text("Contact: survey-team@example.org").is_visible()
    page.get_by_text("Is your mother's birthday in January").first.wait_for()
    hint = page.locator("#hint").inner_text()
    assert "first make a report for question(s) 1, 2, 3" in hint
    page.close()


def _screenshot(page, name: str, tmp_path: Path) -> Path:
    """Save a full-page screenshot to ``DENIABLE_SCREENSHOTS`` (the docs' images are made
    so: ``DENIABLE_SCREENSHOTS=docs/img pytest tests/test_browser.py``) or to tmp_path."""
    folder = Path(os.environ.get("DENIABLE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    return path


#: The widths the docs show a page at: a desktop and a phone (CSS pixels).
WIDTHS = {"desktop": 1000, "phone": 390}


def _four_views(open_view, name: str, tmp_path: Path, languages=("en", "de")) -> list[Path]:
    """Screenshot a host's question in each language at desktop and phone width, the
    docs' images ``<name>-<desktop|phone>-<lang>.png``. ``open_view(lang, width)``
    returns a page showing the question; at phone width it must not scroll sideways."""
    made = []
    for lang in languages:
        for label, width in WIDTHS.items():
            page = open_view(lang, width)
            if label == "phone":
                _no_horizontal_scroll(page)
            made.append(_screenshot(page, f"{name}-{label}-{lang}", tmp_path))
            page.close()
    return made


def _posted_responses(page) -> list[dict]:
    """The bodies of the responses the page posts (filled as it posts them)."""
    posted: list[dict] = []
    page.on(
        "request",
        lambda r: (
            posted.append(json.loads(r.post_data))
            if r.method == "POST" and r.url.endswith("/responses")
            else None
        ),
    )
    return posted


def _no_horizontal_scroll(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"page scrolls sideways: {width}"


@pytest.mark.slow
def test_dashboard_in_a_browser(browser, site, tmp_path, monkeypatch):
    """Sign in, see the questions' text and the interval method, download every format,
    watch it update when new responses arrive, close the survey; on a phone's width
    nothing scrolls sideways. Takes the screenshots shown in docs/collection.md."""
    base, store, _ = site
    data = yaml.safe_load((Path(__file__).parents[1] / "examples" / "workplace.yaml").read_text())
    data |= {"requires_invitation": False, "min_release": 30}
    survey = load_survey(data)
    store.publish(survey)
    rng = np.random.default_rng(20261123)
    truths = {"drugs": 0.2, "harassed": 0.1}

    def add(n: int) -> None:
        rows = []
        for _ in range(n):
            reports = {}
            for q in survey.questions:
                p = truths.get(q.id)
                truth = (
                    int(rng.random() < p)
                    if p is not None
                    else int(rng.integers(len(q.choice_labels)))
                )
                reports[q.id] = int(q.mechanism.randomize(np.array([truth]), rng)[0])
            rows.append(reports)
        store.submit_batch(survey, rows)

    add(400)
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/{survey.id}/results")
    page.fill("#token", ANALYST)
    page.get_by_role("button", name="Log in").click()
    page.get_by_text("Have you been harassed at work this year?").first.wait_for()
    body = page.inner_text("body")
    assert "Feldman-Cousins unified interval" in body and "constrained (MLE)" in body
    assert "400 responses to this version" in body
    # the numeric question's mean has a plot of its own, on its range in hours
    assert "Means with 95% confidence intervals, each in its range" in body
    _screenshot(page, "test-dashboard", tmp_path)
    for fmt in ("csv", "wide", "parquet", "sav", "dta", "survey"):
        link = page.locator(f"a[href$='format={fmt}']")
        with page.expect_download() as info:
            link.click()
        download = info.value
        assert Path(download.path()).stat().st_size > 100, fmt
    monkeypatch.setenv("DENIABLE_DASHBOARD_REFRESH", "1")
    page.reload()
    add(25)
    page.get_by_text("425 responses to this version").wait_for(timeout=10_000)
    monkeypatch.setenv("DENIABLE_DASHBOARD_REFRESH", "30")
    store.release()  # what waits is released at the next release time
    # a new tab (the session's cookie kept): the old one reloads every second, and a
    # navigation of its own would race that reload (net::ERR_ABORTED on a busy machine)
    page.close()
    page = context.new_page()
    page.goto(f"{base}/surveys/{survey.id}/results")
    # closing asks first: dismissed, nothing happens; accepted, the survey closes
    asked: list[str] = []

    def answer(dialog, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda d: answer(d, False))
    page.get_by_role("button", name="Close the survey").click()
    page.wait_for_timeout(300)
    assert not store.is_closed(survey.id) and asked[0].startswith("Close the survey?")
    page.once("dialog", lambda d: answer(d, True))
    page.get_by_role("button", name="Close the survey").click()
    page.get_by_role("button", name="Reopen the survey").wait_for()
    assert store.is_closed(survey.id)
    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, storage_state=context.storage_state()
    )
    small = phone.new_page()
    store.release()  # what waits is released at the next release time
    small.goto(f"{base}/surveys/{survey.id}/results")
    small.get_by_text("Have you been harassed").first.wait_for()
    _no_horizontal_scroll(small)
    _screenshot(small, "test-dashboard-phone", tmp_path)
    small.goto(f"{base}/s/{survey.id}")
    _no_horizontal_scroll(small)
    _screenshot(small, "test-respondent-phone", tmp_path)
    phone.close()
    # signing out drops the session: the results page asks for the token again
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{base}/login")
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/{survey.id}/results")
    assert page.locator("#token").is_visible()
    context.close()


def test_respondent_page_screenshot(browser, site, tmp_path):
    base, store, survey = site
    (token,) = store.invitations.issue_tokens(survey.id, 1)
    context = browser.new_context(viewport={"width": 900, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/s/health#token={token}")
    page.get_by_role("radio", name="yes").check()
    page.locator("#q-drugs [data-role=draw]").click()
    page.get_by_text("exchanged for an anonymous credential").wait_for()
    _no_horizontal_scroll(page)
    _screenshot(page, "test-respondent", tmp_path)
    context.close()


def test_the_page_in_german(browser, site):
    """Accept-Language de (or the switch) gives the German catalog and the survey's own
    German texts; the memo is the same whatever the language."""
    base, store, _ = site
    data = copy.deepcopy(SURVEY) | {
        "id": "sprache",
        "translations": {
            "de": {
                "title": "Gesundheitsumfrage",
                "questions": {
                    "drugs": {
                        "text": "Haben Sie in den letzten 12 Monaten illegale Drogen genommen?",
                        "choices": ["nein", "ja"],
                        "reports": ["nein", "ja"],
                    }
                },
            }
        },
    }
    store.publish(load_survey(data))
    context = browser.new_context(locale="de-DE")
    page = context.new_page()
    page.goto(f"{base}/s/sprache")
    assert page.locator("html").get_attribute("lang") == "de"
    assert page.get_by_role("heading", name="Gesundheitsumfrage").is_visible()
    assert page.get_by_text("So wird Ihre Privatsphäre geschützt").is_visible()
    page.get_by_text("illegale Drogen").wait_for()
    page.get_by_role("radio", name="ja").check()
    page.locator("#q-drugs").get_by_role(
        "button", name="Meine Antwort auf diesem Gerät verlosen"
    ).click()
    shown = page.locator("#report-drugs").inner_text()
    assert shown.startswith("Der Server erhält die Meldung")
    assert "3-mal so sicher" in page.locator("#q-drugs").inner_text()
    # the switch: English, and the memoized report is the same one
    page.get_by_role("link", name="English").click()
    page.get_by_text("How your privacy is protected").wait_for()
    assert "drawn earlier on this device" in page.locator("#report-drugs").inner_text()
    context.close()


def test_a_numeric_question_in_the_browser(browser, site, tmp_path):
    """A number in [low, high]: checked on the page, randomized to one bit there, never
    sent nor kept; the bit's distribution is DuchiMean's (chi-square at ALPHA)."""
    base, store, _ = site
    data = copy.deepcopy(SURVEY) | {
        "id": "hours",
        "privacy_budget": 5.0,
        "min_release": 1,
        "allow_small_release": True,
    }
    data["questions"].append(
        {
            "id": "overtime",
            "text": "How many hours of unpaid overtime did you work last week?",
            "range": {"low": 0, "high": 40, "unit": "hours"},
            "design": {"name": "duchi", "params": {"epsilon": 1.0}},
        }
    )
    survey = load_survey(data)
    store.publish(survey)
    context = browser.new_context(viewport={"width": 900, "height": 900})
    page = context.new_page()
    page.add_init_script("Math.random = () => { throw new Error('Math.random used'); };")
    seen: list[str] = []
    page.on("request", lambda r: seen.append(f"{r.url} {r.post_data or ''}"))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/s/hours")
    box = page.get_by_label("a number from 0 to 40 hours")
    box.fill("40.5")
    page.locator("#q-overtime [data-role=draw]").click()
    assert page.locator("#report-overtime").inner_text() == "Enter a number from 0 to 40."
    assert page.locator("#q-overtime [data-role=physical]").is_hidden()
    box.fill("12.75")
    page.locator("#q-overtime [data-role=draw]").click()
    report = int(page.locator("#report-overtime").get_attribute("data-report"))
    assert report in (0, 1) and box.input_value() == "" and box.is_disabled()
    page.locator("#q-overtime summary").click()
    assert "the chance rises evenly to 73% at 40" in page.locator("#q-overtime").inner_text()
    page.get_by_role("radio", name="no").check()
    page.locator("#q-drugs [data-role=draw]").click()
    page.get_by_role("radio", name="single").check()
    page.locator("#q-status [data-role=draw]").click()
    _no_horizontal_scroll(page)
    _screenshot(page, "respondent-numeric", tmp_path)
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    store.release()  # what waits is released at the next release time
    frame = store.released.export("hours")
    assert dict(zip(frame["question_id"], frame["report"], strict=True))["overtime"] == report
    stored = page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
    assert all("12.75" not in s for s in [*seen, stored]), "the number left the page"
    assert errors == []
    # the page's draw for a value v is DuchiMean's bit: 100,000 draws at each of 3 values
    q = survey.question("overtime")
    columns = q.mechanism.matrix.T.tolist()
    for value in (0.0, 12.75, 40.0):
        z = value / 40
        js = np.array(
            page.evaluate(
                "([c, z, n]) => deniable.sample(deniable.numericColumn(c, z), n)",
                [columns, z, 100_000],
            )
        )
        p1 = float(q.numeric.prob_one([value])[0])
        assert stats.chisquare(js, 100_000 * np.array([1 - p1, p1])).pvalue > ALPHA
    context.close()
    german = browser.new_context(locale="de-DE")
    page = german.new_page()
    page.goto(f"{base}/s/hours")
    page.get_by_label("eine Zahl von 0 bis 40 hours").wait_for()
    german.close()


def test_an_answer_a_report_proves_is_named_on_the_page(browser, site, tmp_path):
    """forced-response {p_yes: 0, p_no: 0.01} with sensitive: [no]: a "yes" report proves
    "yes". The page says so beside the answer and at the top, whatever `sensitive` says,
    and the consent section says a response cannot be withdrawn."""
    base, store, _ = site
    data = copy.deepcopy(SURVEY) | {"id": "exposing", "privacy_budget": 10.0}
    data["no_lifetime_budget"] = True  # a report proves "yes": no lifetime budget
    data["questions"] = [
        {
            "id": "drugs",
            "text": "Have you used an illegal drug?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.0, "p_no": 0.01}},
            "allow_infinite_epsilon": True,
            "sensitive": ["no"],
        },
        SURVEY["questions"][1],
    ]
    store.publish(load_survey(data))
    context = browser.new_context(viewport={"width": 900, "height": 1000})
    page = context.new_page()
    page.goto(f"{base}/s/exposing")
    top = page.locator("#worst").inner_text()
    assert 'in question 1, choosing "yes" can be seen for certain' in top
    yes = page.locator("label[for=truth-drugs-1]").inner_text()
    no = page.locator("label[for=truth-drugs-0]").inner_text()
    assert "can be seen for certain by whoever reads your report" in yes
    assert "seen for certain" not in no
    assert 'if your answer is "yes"' in page.locator("#q-drugs").inner_text()
    assert "cannot be withdrawn" in page.locator("#no-withdrawal").inner_text()
    assert (
        page.locator("#no-lifetime")
        .inner_text()
        .startswith(
            "This survey has no privacy budget: for some questions a report can prove an answer"
        )
    )
    _screenshot(page, "respondent-exposing", tmp_path)
    # a design that proves nothing: the top line gives the worst factor instead
    page.goto(f"{base}/s/health")
    assert page.locator("#no-lifetime").count() == 0
    assert (
        "no single report can make anyone more than 7.4 times surer"
        in page.locator("#worst").inner_text()
    )
    context.close()


def test_a_link_answers_the_version_its_invitation_was_issued_for(browser, site):
    """Invited to version 1; version 2 is published before the person opens the link:
    the page moves to version 1 (the link's v=1), and the response is stored there."""
    base, store, _ = site
    data = copy.deepcopy(SURVEY) | {"id": "bound", "requires_invitation": True}
    store.publish(load_survey(data))
    issued = store.invitations.issue_invitations("bound", 1)
    store.publish(load_survey(data | {"version": 2, "title": "Health survey, take two"}))
    page = browser.new_page()
    page.goto(f"{base}/s/bound#token={issued.tokens[0]}&v=1")
    page.wait_for_url("**/s/bound?version=1")
    assert page.locator("h1").inner_text() == "Health survey"
    _answer_and_send(page)
    assert store.response_count("bound", 1) == 1 and store.response_count("bound", 2) == 0
    page.close()


def test_a_direct_question_is_sent_as_given_and_never_kept(browser, site, tmp_path):
    """Two direct questions and a randomized one: the page says beside each direct one
    that its answer is sent as given; the top line speaks of the randomized question
    only; the direct answers are stored as given and nothing of them stays in the
    browser's storage (the randomized report does, under its memo key)."""
    from .test_direct import STUDY

    base, store, _ = site
    survey = load_survey(copy.deepcopy(STUDY) | {"min_release": 1, "allow_small_release": True})
    store.publish(survey)
    context = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/s/campus")
    note = page.locator("#q-faculty .direct").inner_text()
    assert "Sent as given: this answer is not randomized" in note
    assert page.locator("#q-cheat .direct").count() == 0
    assert page.locator("#q-faculty [data-role=draw]").count() == 0
    assert "seen for certain" not in page.locator("#q-faculty").inner_text()
    top = page.locator("#worst").inner_text()
    assert "no single report can make anyone more than 3 times surer" in top
    apart = page.locator("#direct-apart").inner_text()
    assert apart == (
        "Except questions 1, 2: they are asked directly, and your answers to them are "
        "sent as given, not randomized."
    )
    how = page.locator("#how-body").inner_text()  # the claim covers the randomized only
    assert "to the randomized questions never leave this device" in how
    assert "sent as given" in how
    small = page.locator("#small-release").inner_text()  # min_release 1, opted in
    assert small.startswith("Responses are published in groups of at least 1: the researchers")
    assert "fewer than the 10 this software otherwise requires (its default is 30)" in small
    page.locator("#q-faculty [data-role=use-answer]").click()
    assert page.locator("#report-faculty").inner_text() == "Choose your true answer first."
    page.locator("#truth-faculty-2").check()  # science
    page.locator("#q-faculty [data-role=use-answer]").click()
    assert page.locator("label[for=truth-year-none]").inner_text() == "Prefer not to say"
    page.locator("#truth-year-none").check()
    page.locator("#q-year [data-role=use-answer]").click()
    shown = page.locator("#report-year").inner_text()
    assert shown == "The server will receive no answer to this question."
    assert page.locator("#report-faculty").inner_text() == (
        'The server will receive your answer "science" as given.'
    )
    page.locator("#truth-cheat-1").check()
    page.locator("#q-cheat [data-role=draw]").click()
    _no_horizontal_scroll(page)
    _screenshot(page, "respondent-direct", tmp_path)
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    store.release()  # what waits is released at the next release time
    frame = store.released.export("campus")
    sent = dict(zip(frame["question_id"], frame["report"], strict=True))
    assert sent["faculty"] == 2 and "year" not in sent  # prefer not to say: missing
    kept = json.loads(page.evaluate("JSON.stringify(Object.assign({}, localStorage))"))
    keys = {q.id: q.memo_digest for q in survey.questions}
    assert not any(keys["faculty"] in k or keys["year"] in k for k in kept)
    assert any(keys["cheat"] in k for k in kept)
    assert errors == []
    context.close()


def test_the_german_page_translates_default_labels_and_units(browser, site):
    """No German choices in the survey: the page still shows "nein"/"ja" (the design's
    default labels, from the catalog), "verschieden"/"gleich" for the crosswise reports,
    and the unit the translation gives."""
    from .test_translations import SLEEP

    base, store, _ = site
    data = copy.deepcopy(SLEEP) | {"min_release": 1, "allow_small_release": True}
    data["translations"]["de"]["questions"]["sleep"]["unit"] = "Stunden"
    store.publish(load_survey(data))
    context = browser.new_context(locale="de-DE")
    page = context.new_page()
    page.goto(f"{base}/s/sleep")
    assert page.locator("label[for=truth-drugs-0]").inner_text().startswith("nein")
    assert page.locator("label[for=truth-drugs-1]").inner_text().startswith("ja")
    assert page.locator("label[for=outcome-cheat-1]").inner_text() == "gleich"
    page.get_by_label("eine Zahl von 0 bis 12 Stunden").wait_for()
    body = page.locator("#questions").inner_text()
    assert "different" not in body and "hours" not in body
    context.close()


def test_the_dashboard_breaks_a_question_down_by_a_direct_one(browser, site, tmp_path):
    """A study with direct questions: the dashboard shows cheat by faculty and by year
    (a table per pair, with the test of equal prevalence); on a phone's width nothing
    scrolls sideways."""
    from .test_direct import STUDY

    base, store, _ = site
    survey = load_survey(copy.deepcopy(STUDY) | {"min_release": 20})
    store.publish(survey)
    rng = np.random.default_rng(20261125)
    faculty = rng.integers(0, 4, size=400)
    truth = (rng.random(400) < np.array([0.1, 0.2, 0.35, 0.5])[faculty]).astype(np.int64)
    cheat = survey.question("cheat").mechanism.randomize(truth, rng)
    rows = [
        {"faculty": int(f), "year": int(i % 2), "cheat": int(c)}
        for i, (f, c) in enumerate(zip(faculty, cheat, strict=True))
    ]
    store.submit_batch(survey, rows)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/campus/results")
    page.fill("#token", ANALYST)
    page.get_by_role("button", name="Log in").click()
    table = page.locator("#by-cheat-faculty")
    table.wait_for()
    assert table.locator("tbody tr").count() == 4
    assert "Equal prevalence across faculty: chi-square" in page.inner_text("body")
    assert "direct, sent as given" in page.inner_text("body")
    _no_horizontal_scroll(page)
    table.scroll_into_view_if_needed()
    _screenshot(page, "test-dashboard-breakdown", tmp_path)
    context.close()


def test_a_direct_number_is_sent_as_its_bin_in_the_browser(browser, site):
    from .test_direct import AGE, STUDY

    base, store, _ = site
    data = copy.deepcopy(STUDY) | {"id": "ages", "min_release": 1, "allow_small_release": True}
    data["questions"] = [copy.deepcopy(AGE), STUDY["questions"][2]]
    store.publish(load_survey(data))
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(f"{base}/s/ages")
    box = page.get_by_label("a number from 16 to 80 years")
    label = page.locator("label[for=truth-age]").inner_text()
    assert label.startswith("Your answer,") and "is sent as given" in label
    box.fill("81")
    page.locator("#q-age [data-role=use-answer]").click()
    assert page.locator("#report-age").inner_text() == "Enter a number from 16 to 80."
    box.fill("27.5")
    page.locator("#q-age [data-role=use-answer]").click()
    shown = page.locator("#report-age").inner_text()
    assert shown == 'The server will receive your answer "25–30" as given.'
    page.locator("#truth-cheat-0").check()
    page.locator("#q-cheat [data-role=draw]").click()
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    store.release()  # what waits is released at the next release time
    frame = store.released.export("ages")
    assert dict(zip(frame["question_id"], frame["report"], strict=True))["age"] == 2
    _no_horizontal_scroll(page)
    context.close()


@pytest.mark.slow
def test_the_study_pages_pass_axe_core(browser, site):
    """axe-core (the pinned axe-playwright-python's copy) finds no violation on the
    respondent page of a study with direct questions, arms and an ECWM question, and on
    its dashboard with the tables by arm, the group fit, the breakdowns and a
    regression, at a phone's width."""
    from axe_playwright_python.sync_playwright import Axe

    from deniable.collection.respondent._devices import simulate_responses

    from .test_arms import CAMPUS, campus_truths

    base, store, _ = site
    survey = load_survey(copy.deepcopy(CAMPUS) | {"min_release": 5, "allow_small_release": True})
    store.publish(survey)
    rng = np.random.default_rng(3)
    sent = simulate_responses(survey, campus_truths(200, rng), rng)
    store.submit_batch(
        survey, [r["reports"] for r in sent], [r["arm"] for r in sent], [r["groups"] for r in sent]
    )
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    failed: list[str] = []  # every answer over 399 (a favicon's 404 among them)
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(f"{base}/s/campus")
    page.locator("#q-plagiarism").wait_for()
    axe = Axe()
    found = axe.run(page)
    assert found.violations_count == 0, found.generate_report()
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/campus/results")
    page.fill("#token", ANALYST)
    page.get_by_role("button", name="Log in").click()
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/campus/results?regress=cheat&on=faculty")
    page.locator("#regression").wait_for()
    assert page.locator("#arms-cheat").count() == 1 and page.locator("#groups-plagiarism").count()
    found = axe.run(page)
    assert found.violations_count == 0, found.generate_report()
    _no_horizontal_scroll(page)
    assert failed == [] and page.locator("link[rel=icon]").count() == 1
    context.close()


@pytest.mark.slow
def test_a_study_page_shows_one_arm_and_one_group_and_sends_them(browser, site, tmp_path):
    """The campus study with a direct control arm and an ECWM question: each new
    respondent's page draws an arm and a group (crypto.getRandomValues), shows only
    that arm's design of the cheating question and that group's innocuous question,
    names the control arm in the consent section, keeps the draw for a reload, and
    sends arm and group with the reports; the stored arm and group match the page's."""
    from .test_arms import CAMPUS

    base, store, _ = site
    survey = load_survey(copy.deepcopy(CAMPUS) | {"min_release": 1, "allow_small_release": True})
    store.publish(survey)
    complement = "Is the answer to “Is your mother's birthday in January"
    seen: dict[str, list] = {"sent_arms": [], "sent_groups": []}
    for person in range(8):
        width = 390 if person % 2 == 0 else 1200  # a phone, then a desktop
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        posted = _posted_responses(page)
        page.goto(f"{base}/s/campus")
        page.locator("#q-plagiarism").wait_for()
        assert "asked some questions directly" in page.locator("#control-arm").inner_text()
        direct_cheat = page.locator("#q-cheat .direct").count() == 1
        text = page.locator("#q-plagiarism").inner_text()
        group = 1 if complement in text else 0
        assert ("January, February or March?" in text) and (group == 1 or complement not in text)
        page.reload()  # the draw is kept: the same arm and group
        page.locator("#q-plagiarism").wait_for()
        assert (page.locator("#q-cheat .direct").count() == 1) == direct_cheat
        assert (complement in page.locator("#q-plagiarism").inner_text()) == bool(group)
        page.locator("#truth-faculty-1").check()
        page.locator("#q-faculty [data-role=use-answer]").click()
        page.locator("#truth-cheat-0").check()
        page.locator(
            "#q-cheat [data-role=use-answer]" if direct_cheat else "#q-cheat [data-role=draw]"
        ).click()
        page.locator("#truth-plagiarism-0").check()
        page.locator("#q-plagiarism [data-role=draw]").click()
        if person == 0:
            _no_horizontal_scroll(page)
            _screenshot(page, "test-respondent-study", tmp_path)
        page.get_by_role("button", name="Send my reports").click()
        page.get_by_text("Sent and stored").wait_for()
        (body,) = posted
        assert body["arm"] == ("dq" if direct_cheat else "rr")
        assert body["groups"] == {"plagiarism": group}
        seen["sent_arms"].append(body["arm"])
        seen["sent_groups"].append(group)
        assert errors == []
        context.close()
    store.release()  # what waits is released at the next release time
    long = store.released.export("campus")
    assert long.groupby("response_id")["arm"].first().value_counts().sum() == 8
    plag = long[long.question_id == "plagiarism"]
    assert sorted(plag["group"].tolist()) == sorted(seen["sent_groups"])  # stored as sent
    arms = long.groupby("response_id")["arm"].first()
    assert sorted(arms) == sorted(seen["sent_arms"])


#: The end-to-end study: two direct questions, three arms, an ECWM question.
E2E_STUDY = {
    "id": "e2e",
    "version": 1,
    "title": "Campus study, end to end",
    "privacy_budget": 4.0,
    "requires_invitation": True,
    # every response released (the release rules are attacked in test_release_control;
    # here the dashboard is compared with the library on every respondent)
    "min_release": 1,
    "allow_small_release": True,
    "expected_responses": 320,
    "arms": {
        "dq": {"weight": 1, "designs": {"cheat": {"name": "direct"}}},
        "fr": {"weight": 1},
        "cw": {"weight": 1, "designs": {"cheat": {"name": "crosswise", "params": {"p": 0.25}}}},
    },
    "questions": [
        {
            "id": "faculty",
            "text": "Which faculty are you in?",
            "choices": ["law", "medicine", "science", "arts"],
            "design": {"name": "direct"},
        },
        {
            "id": "level",
            "text": "Are you an undergraduate or a graduate student?",
            "choices": ["undergraduate", "graduate"],
            "design": {"name": "direct"},
        },
        {
            "id": "cheat",
            "text": "Have you cheated in an exam this year?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "plagiarism",
            "text": "Have you ever handed in someone else's work as your own?",
            "innocuous_question": "Is your mother's birthday in January, February or March?",
            "design": {"name": "extended-crosswise", "params": {"p": 0.25}},
        },
    ],
}


@pytest.mark.slow
def test_a_study_end_to_end_through_the_protocol_and_the_browser(browser, site, tmp_path):
    """320 invited respondents with known truths: 310 through the HTTP protocol (blind
    signature, then the response with the arm and group drawn as a device draws them),
    10 through Chromium. The dashboard's per-arm estimates, the arms' differences, the
    ECWM fit, the breakdown by faculty and the regression on the direct questions equal
    the library's results computed here from the export, and each per-arm estimate is
    within 4 standard errors of its respondents' true rate."""
    import httpx

    from deniable.analysis import estimate_channel, rr_logit, subgroup_prevalence
    from deniable.collection.exports._export import read_export
    from deniable.collection.respondent._client import request_credential
    from deniable.collection.respondent._devices import simulate_responses
    from deniable.estimation import estimate
    from deniable.mechanisms import Crosswise

    base, store, _ = site
    survey = load_survey(copy.deepcopy(E2E_STUDY))
    store.publish(survey)
    tokens = store.invitations.issue_tokens(survey.id, 900)  # more than enough of each arm
    rng = np.random.default_rng(20261126)
    n = 310
    faculty = rng.integers(0, 4, size=n)
    level = rng.integers(0, 2, size=n)
    truths = {
        "faculty": faculty,
        "level": level,
        "cheat": (rng.random(n) < np.array([0.4, 0.15, 0.1, 0.3])[faculty]).astype(np.int64),
        "plagiarism": (rng.random(n) < 0.2).astype(np.int64),
    }
    sent = simulate_responses(survey, truths, rng)
    auth = {"Authorization": f"Bearer {ANALYST}"}
    with httpx.Client(base_url=base, timeout=30) as http:
        view = http.get("/api/surveys/e2e").json()

        def post(path: str, body: dict) -> dict:
            r = http.post(path, json=body)
            assert r.status_code == 201, r.text
            return r.json()

        # each invitation is bound to the arm its link draws: a body drawn for an arm
        # goes with an invitation of that arm
        by_arm: dict[str, list[str]] = {}
        for token in tokens:
            by_arm.setdefault(token_arm(view, token), []).append(token)
        for body in sent:
            token = by_arm[body["arm"]].pop()
            credential = request_credential(view, token, post, body["arm"])
            post(
                "/api/surveys/e2e/responses",
                {"version": 1, "credential": credential.to_json()} | body,
            )
    # ten more through the browser, each answering "law", "graduate", "yes", "no"
    for token in [t for left in by_arm.values() for t in left][:10]:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        page = context.new_page()
        posted = _posted_responses(page)
        page.goto(f"{base}/s/e2e#token={token}")
        page.locator("#q-plagiarism").wait_for()
        page.locator("#truth-faculty-0").check()
        page.locator("#q-faculty [data-role=use-answer]").click()
        page.locator("#truth-level-1").check()
        page.locator("#q-level [data-role=use-answer]").click()
        page.locator("#truth-cheat-1").check()
        direct = page.locator("#q-cheat .direct").count() == 1
        page.locator(f"#q-cheat [data-role={'use-answer' if direct else 'draw'}]").click()
        page.locator("#truth-plagiarism-0").check()
        page.locator("#q-plagiarism [data-role=draw]").click()
        for q in ("faculty", "level", "cheat", "plagiarism"):  # each report drawn and shown
            page.locator(f"#report-{q}[data-report]").wait_for()
        page.get_by_role("button", name="Send my reports").click()
        page.get_by_text("Sent and stored").wait_for()
        (body,) = posted
        assert (body["arm"] == "dq") == direct and set(body["groups"]) == {"plagiarism"}
        sent.append({k: body[k] for k in ("reports", "arm", "groups")})
        context.close()
    for q, v in (("faculty", 0), ("level", 1), ("cheat", 1), ("plagiarism", 0)):
        truths[q] = np.append(truths[q], [v] * 10)
    with httpx.Client(base_url=base, timeout=60) as http:
        store.release()  # what waits is released at the next release time
        res = http.get("/api/surveys/e2e/results?regress=cheat&on=faculty&on=level", headers=auth)
        assert res.status_code == 200, res.text
        res = res.json()
        path = tmp_path / "e2e.parquet"
        path.write_bytes(http.get("/api/surveys/e2e/export?format=parquet", headers=auth).content)
    assert res["released"] == 320
    frame, _ = read_export(path)
    # the library, called directly on the export
    designs = {
        "dq": survey.questions_in("dq")[2].mechanism,
        "fr": ForcedResponse(p_yes=0.25, p_no=0.25),
        "cw": Crosswise(p=0.25),
    }
    arms = np.array([r["arm"] for r in sent])
    (cheat,) = [s for s in res["study"] if s["question"] == "cheat"]
    for row in cheat["arms"]:
        mine = frame["arm"] == row["arm"]
        est = estimate(designs[row["arm"]], frame.loc[mine, "cheat"].to_numpy(np.int64))
        assert abs(row["estimate"] - est.estimate[1]) < 1e-10
        assert abs(row["std_error"] - est.std_error[1]) < 1e-10
        rate = truths["cheat"][arms == row["arm"]].mean()
        assert abs(row["estimate"] - rate) < 4 * row["std_error"] + 1e-9
    by_arm = {a["arm"]: a for a in cheat["arms"]}
    for d in cheat["differences"]:
        assert (
            abs(d["difference"] - (by_arm[d["arm"]]["estimate"] - by_arm["dq"]["estimate"])) < 1e-12
        )
    (plag,) = [s for s in res["study"] if s["question"] == "plagiarism"]
    fit = estimate_channel(
        {0: Crosswise(p=0.25), 1: Crosswise(p=0.75)},
        frame["plagiarism"].to_numpy(np.int64),
        frame["plagiarism__group"].to_numpy(np.int64),
    )
    assert abs(plag["groups"]["estimate"] - float(fit.params["pi"])) < 1e-10
    assert abs(plag["groups"]["fit"]["statistic"] - fit.goodness_of_fit().statistic) < 1e-10
    # the breakdown of the ECWM question by faculty: a pooled estimate per faculty
    (bd,) = [b for b in res["breakdowns"] if b["question"] == "plagiarism" and b["by"] == "faculty"]
    labels = np.array(["law", "medicine", "science", "arts"])[frame["faculty"].to_numpy(int)]
    keys = frame["plagiarism__group"].to_numpy(int)
    lib = subgroup_prevalence(
        {0: Crosswise(p=0.25), 1: Crosswise(p=0.75)},
        frame["plagiarism"].to_numpy(np.int64),
        labels,
        design_keys=keys,
    ).table(0.95)
    for g in bd["groups"]:
        assert abs(g["estimate"] - lib.loc[g["group"], "estimate"]) < 1e-10
    # the regression of cheat on faculty and level, each row through its arm's design
    data = pd.DataFrame(
        {
            "cheat": frame["cheat"].astype(int),
            # each covariate's first answer is the reference, as in R
            "faculty": pd.Categorical(labels, categories=["law", "medicine", "science", "arts"]),
            "level": pd.Categorical.from_codes(
                frame["level"].to_numpy(int), categories=["undergraduate", "graduate"]
            ),
            "arm": frame["arm"],
        }
    )
    ours = rr_logit("cheat ~ faculty + level", data, designs, group="arm")
    fit = res["regression"]  # the fit's one shape: a label per term
    assert fit["labels"] == list(ours.params.index)
    assert np.allclose(fit["estimate"], ours.params, rtol=0, atol=1e-8)
    assert np.allclose(fit["std_error"], ours.bse, rtol=0, atol=1e-8)
    # the page shows the same tables
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/e2e/results?regress=cheat&on=faculty&on=level")
    page.fill("#token", ANALYST)
    page.get_by_role("button", name="Log in").click()
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/e2e/results?regress=cheat&on=faculty&on=level")
    page.locator("#arms-cheat").wait_for()
    assert page.locator("#arms-cheat tbody tr").count() == 3
    assert page.locator("#regression tbody tr").count() == len(ours.params)
    assert "test of fit G²" in page.locator("#groups-plagiarism").inner_text()
    _screenshot(page, "test-dashboard-study", tmp_path)
    context.close()


@pytest.mark.slow
def test_a_studys_arm_and_group_move_with_the_transfer_link(browser, site):
    """Start a study on the phone (the draw spends the invitation and draws arm and
    group); the transfer link carries them, so the laptop shows the same arm's and
    group's questions and sends them; stored once with that arm and group. Without the
    link, a new device would draw again (and the dashboard's sample-ratio test watches
    for it)."""
    from .test_arms import CAMPUS

    base, store, _ = site
    survey = load_survey(
        copy.deepcopy(CAMPUS)
        | {"min_release": 1, "allow_small_release": True, "requires_invitation": True}
    )
    store.publish(survey)
    complement = "Is the answer to “Is your mother's birthday in January"
    for _ in range(3):  # three people, so both arms are likely met
        (token,) = store.invitations.issue_tokens(survey.id, 1)
        phone = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
        laptop = browser.new_context()
        start = phone.new_page()
        start.goto(f"{base}/s/campus#token={token}")
        start.locator("#q-plagiarism").wait_for()
        direct = start.locator("#q-cheat .direct").count() == 1
        group = int(complement in start.locator("#q-plagiarism").inner_text())
        start.locator("#truth-plagiarism-1").check()
        start.locator("#q-plagiarism [data-role=draw]").click()
        start.locator("#report-plagiarism").wait_for()
        drawn = int(start.locator("#report-plagiarism").get_attribute("data-report"))
        start.get_by_role("button", name="Show the link for my other device").click()
        link = start.locator("#transfer-link").input_value()
        other = laptop.new_page()
        posted = _posted_responses(other)
        other.goto(link)
        other.locator("#report-plagiarism").wait_for()
        assert (other.locator("#q-cheat .direct").count() == 1) == direct
        assert int(complement in other.locator("#q-plagiarism").inner_text()) == group
        assert int(other.locator("#report-plagiarism").get_attribute("data-report")) == drawn
        other.locator("#truth-faculty-0").check()
        other.locator("#q-faculty [data-role=use-answer]").click()
        other.locator("#truth-cheat-0").check()
        other.locator(
            "#q-cheat [data-role=use-answer]" if direct else "#q-cheat [data-role=draw]"
        ).click()
        other.get_by_role("button", name="Send my reports").click()
        other.get_by_text("Sent and stored").wait_for()
        (body,) = posted
        assert body["arm"] == ("dq" if direct else "rr") and body["groups"] == {"plagiarism": group}
        phone.close()
        laptop.close()
    assert store.response_count("campus") == 3


def test_an_invitation_fixes_the_arm_on_every_device(browser, site):
    """Eight invitations to a study with a direct arm: each link opened in two fresh
    browsers (no shared storage) draws the same arm, the one the terminal client
    derives from the token (deniable.collection.respondent._client.token_uniform, equal to the
    page's to the last bit); so re-opening a link elsewhere cannot leave the direct arm."""
    from deniable.collection.respondent._client import token_uniform

    from .test_arms import CAMPUS

    base, store, _ = site
    data = copy.deepcopy(CAMPUS) | {"id": "bound-arm", "requires_invitation": True}
    store.publish(load_survey(data))
    tokens = store.invitations.issue_tokens("bound-arm", 8)
    weights = [data["arms"][a]["weight"] for a in sorted(data["arms"])]
    arms = []
    for token in tokens:
        seen = []
        for _ in range(2):
            context = browser.new_context()
            page = context.new_page()
            page.goto(f"{base}/s/bound-arm#token={token}&v=1")
            page.locator("#q-cheat").wait_for()
            stored = json.loads(page.evaluate("JSON.stringify(Object.assign({}, localStorage))"))
            (arm,) = [json.loads(v) for k, v in stored.items() if k.endswith("/arm")]
            u_page = page.evaluate("([t, s]) => deniable.tokenUniform(t, s)", [token, "bound-arm"])
            assert u_page == token_uniform(token, "bound-arm")
            seen.append(arm)
            context.close()
        assert seen[0] == seen[1]
        u = token_uniform(token, "bound-arm") * sum(weights)
        expected = sorted(data["arms"])[0 if u < weights[0] else 1]
        assert seen[0] == expected
        arms.append(seen[0])
    assert set(arms) <= {"dq", "rr"}


@pytest.mark.slow
def test_a_named_recipient_keeps_one_arm_in_every_wave_on_every_device(browser, site):
    """Four named recipients of a 3-wave study with a direct arm, each wave's link opened
    in a fresh browser (no shared storage): each keeps one arm in every wave, the arm
    the terminal client's assign draws from the owner tag their links carry."""
    from deniable.collection.respondent._client import assign
    from deniable.collection.respondent._memo import ReportMemo, owner_of
    from deniable.collection.store._recipients import RecipientKey

    from .test_arms import CAMPUS

    base, store, _ = site
    key = RecipientKey(b"b" * 32)
    people = [f"p{i}@example.org" for i in range(4)]
    seen: dict[str, list[str]] = {p: [] for p in people}
    for version in (1, 2, 3):
        data = copy.deepcopy(CAMPUS) | {"id": "waves-arm", "requires_invitation": True,
                                        "version": version, "lifetime_budget": 30}  # fmt: skip
        survey = load_survey(data)
        store.publish(survey)
        issued = store.invitations.invite_recipients("waves-arm", people, 40.0, key)
        for address, token, tag in zip(issued.recipients, issued.tokens, issued.owners,
                                       strict=True):  # fmt: skip
            context = browser.new_context()
            page = context.new_page()
            page.goto(f"{base}/s/waves-arm#token={token}&v={version}&owner={tag}")
            page.locator("#q-cheat").wait_for()
            stored = json.loads(page.evaluate("JSON.stringify(Object.assign({}, localStorage))"))
            (arm,) = [json.loads(v) for k, v in stored.items() if k.endswith("/arm")]
            context.close()
            memo = ReportMemo(Path(tempfile.mkdtemp()) / "memo.json")
            python_arm, _ = assign(
                copy.deepcopy(survey.respondent_view()), memo, owner_of(tag, token), token
            )
            assert arm == python_arm
            seen[address].append(arm)
    assert all(len(set(arms)) == 1 for arms in seen.values()), seen


@pytest.mark.slow
def test_a_panel_question_keeps_one_permanent_report_per_answer_in_the_browser(
    browser, site, tmp_path
):
    """Six browsers (one recipient each) answer a 16-choice panel question over three
    waves, c3, c7, c3 (half of them c7, c3, c7). After each wave the device's storage
    holds the owner's secret and no report or answer, the same keys whatever was
    answered; the secret stays, so waves 1 and 3 share their permanent report and wave
    2 has another; the page's HMAC uniform equals the Python client's to the last bit;
    each wave's report is a fresh instantaneous draw (waves 1 and 3 agree no more often
    than the instantaneous layer predicts)."""
    from deniable.collection.respondent._client import permanent_uniform

    from .test_waves import panel

    base, store, _ = site
    data = panel("panel16", 16)
    question = load_survey(data).questions[0]
    two = question.two_layer
    assert two is not None and question.permanent_key is not None
    n = 6
    plans = [(3, 7, 3) if i % 2 == 0 else (7, 3, 7) for i in range(n)]
    contexts = [browser.new_context() for _ in range(n)]
    pages = [c.new_page() for c in contexts]
    sent: list[list[int]] = [[] for _ in range(n)]
    secrets_seen: list[set[str]] = [set() for _ in range(n)]
    shapes = set()
    for wave in (1, 2, 3):
        store.publish(load_survey(data | {"version": wave}))
        store.audit("analyst", "publish", "panel16", wave)  # as the API records it
        for i, page in enumerate(pages):
            page.goto("about:blank")
            page.goto(_recipient_link(base, store, "panel16", f"p{i}@example.org"))
            if wave == 1 and i == 0:
                note = page.locator("#q-q .panel-note")
                assert "asked again in later waves" in note.inner_text().lower()
                assert page.locator("#q-q [data-role=physical]").is_hidden()
                _screenshot(page, "panel-question", tmp_path)
            page.get_by_role("radio", name=f"c{plans[i][wave - 1]}", exact=True).check()
            page.locator("#q-q [data-role=draw]").click()
            page.locator("#report-q").wait_for()
            sent[i].append(int(page.locator("#report-q").get_attribute("data-report")))
            if i == 0:  # a transfer link carries neither the secret nor a panel report
                page.get_by_role("button", name="Show the link for my other device").click()
                link = page.locator("#transfer-link").input_value()
                moved = json.loads(base64_bytes(link.split("#transfer=")[1]))
                assert moved["reports"] == {} and "secret" not in json.dumps(moved)
            page.get_by_role("button", name="Send my reports").click()
            page.get_by_text("Sent and stored").wait_for()
            stored = json.loads(page.evaluate("JSON.stringify(Object.assign({}, localStorage))"))
            (secret_key,) = [k for k in stored if k.endswith("/panel/secret")]
            secrets_seen[i].add(json.loads(stored[secret_key]))
            # no report kept after sending, and the same keys whatever the answers
            assert not any("/wave/" in k for k in stored)
            owner = secret_key.split("/")[2]
            shapes.add(tuple(sorted(k.replace(owner, "OWNER") for k in stored)))
    assert len(shapes) == 3  # one shape per wave (its sent/<version> flag), not per answer
    assert all(len(s) == 1 for s in secrets_seen)
    agree = 0
    key = question.permanent_key
    for i, page in enumerate(pages):
        secret_b64 = next(iter(secrets_seen[i]))
        secret = base64_bytes(secret_b64)
        for answer in (3, 7):
            u_page = page.evaluate(
                "([s, k, a]) => deniable.permanentUniform(s, k, a)", [secret_b64, key, answer]
            )
            assert u_page == permanent_uniform(secret, key, answer)
        agree += sent[i][0] == sent[i][2]
    M = two.instantaneous.matrix
    p_agree = float((M[:, 0] ** 2).sum())
    assert agree <= n * p_agree + 4 * math.sqrt(n * p_agree * (1 - p_agree))
    for c in contexts:
        c.close()
    assert store.response_count("panel16") == 3 * n
    # the dashboard: each wave's field period and response rate, and the change
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    store.release()  # what waits is released at the next release time
    page.goto(f"{base}/surveys/panel16/results")
    page.fill("#token", ANALYST)
    page.get_by_role("button", name="Log in").click()
    page.locator("#waves").wait_for()
    rows = page.locator("#waves tbody tr")
    assert rows.count() == 3
    assert "100.0%" in rows.nth(0).inner_text()  # 6 invited, 6 responses
    assert page.locator("#change-q-2").is_visible() and page.locator("#change-q-3").is_visible()
    assert "No one's own change can be known" in page.inner_text("body")
    _screenshot(page, "test-dashboard-waves", tmp_path)
    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, storage_state=context.storage_state()
    )
    small = phone.new_page()
    store.release()  # what waits is released at the next release time
    small.goto(f"{base}/surveys/panel16/results")
    small.locator("#waves").wait_for()
    _no_horizontal_scroll(small)
    phone.close()
    context.close()


def base64_bytes(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_a_direct_arm_page_offers_no_coin_and_says_what_is_released(browser, site):
    """A study whose control arm asks its one sensitive question directly: that arm's
    page offers no coin (nothing is randomized on the device) and states what the
    server's post-randomization releases (epsilon > 0, not "1 times surer ... 0.00");
    the randomizing arm's page keeps the coin and the device's budget."""
    from .test_waves import panel_study

    base, store, _ = site
    data = panel_study() | {"id": "dq-page", "requires_invitation": True}
    store.publish(load_survey(data))
    view = load_survey(data).respondent_view()
    tokens = store.invitations.issue_tokens("dq-page", 30)  # both arms drawn (all one: 2e-9)
    by_arm = {token_arm(view, t): t for t in tokens}
    assert set(by_arm) == {"dq", "rr"}
    texts = {}
    for arm, token in by_arm.items():
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{base}/s/dq-page#token={token}&v=1")
        page.locator("#q-q").wait_for()
        coin = page.locator("#own-device").is_visible()
        texts[arm] = (page.locator("#budget").inner_text(), coin)
        context.close()
    budget, coin = texts["dq"]
    assert not coin and "sent as you give them" in budget and "0.00" not in budget
    assert "1 times surer" not in budget and "epsilon = 1.52 nats" in budget
    budget, coin = texts["rr"]
    assert coin and "All your reports together" in budget

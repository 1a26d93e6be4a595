"""A list-experiment question on the respondent page, in Chromium: the group's list, the
words "can be seen for certain", the count sent as given with its group (the server
post-randomizes it before its first write), nothing kept."""

from __future__ import annotations

import copy
import json

import pytest

from deniable.collection.model._survey import load_survey

from .test_browser import (  # noqa: F401
    CHROMIUM,
    _no_horizontal_scroll,
    _posted_responses,
    _screenshot,
    browser,
    site,
)
from .test_list_question import ITEMS, _study

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)"
)


@pytest.mark.parametrize("group", [0, 1])
def test_a_list_question_shows_the_groups_list_and_sends_the_count(browser, site, tmp_path, group):  # noqa: F811
    base, store, _ = site
    survey = load_survey(copy.deepcopy(_study()) | {"min_release": 1, "allow_small_release": True})
    store.publish(survey)
    context = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    q = survey.questions[0]
    # this device's group for the question, drawn before the page reads it
    posted = _posted_responses(page)
    page.goto(f"{base}/s/upset")
    page.evaluate(
        "([key, g]) => localStorage.setItem(key, JSON.stringify(g))",
        [f"deniable/memo/device/group/{q.memo_digest}", group],
    )
    page.reload()
    shown = page.locator("#q-upset .list-items li").all_inner_texts()
    assert shown == (ITEMS if group == 0 else [*ITEMS, q.sensitive_item])
    note = page.locator("#q-upset .list-note").inner_text()
    assert "can be seen for certain" in note and f"0 or {len(shown)}" in note
    labels = page.locator("#q-upset label").all_inner_texts()
    assert labels == [str(c) for c in range(len(shown) + 1)]
    page.locator(f"#truth-upset-{len(shown)}").check()  # every item: seen for certain
    page.locator("#q-upset [data-role=use-answer]").click()
    assert "as given" in page.locator("#report-upset").inner_text()
    page.locator("#truth-cheat-0").check()
    page.locator("#q-cheat [data-role=draw]").click()
    _no_horizontal_scroll(page)
    _screenshot(page, f"respondent-list-group{group}", tmp_path)
    page.get_by_role("button", name="Send my reports").click()
    page.get_by_text("Sent and stored").wait_for()
    store.release()  # what waits is released at the next release time
    # the page sends the count as given, with its group ...
    assert [(b["reports"]["upset"], b["groups"]["upset"]) for b in posted] == [(len(shown), group)]
    # ... and the store keeps it only through the list's release channel (a count in
    # 0..J+1 for either group, issue 58), never the count as sent
    frame = store.released.export("upset")
    row = frame[frame["question_id"] == "upset"].iloc[0]
    assert 0 <= int(row["report"]) <= len(ITEMS) + 1 and int(row["group"]) == group
    kept = json.loads(page.evaluate("JSON.stringify(Object.assign({}, localStorage))"))
    assert not any(k.endswith(q.memo_digest) and "group/" not in k for k in kept)
    assert errors == []
    context.close()

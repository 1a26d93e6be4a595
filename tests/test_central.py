"""The central privacy of a release (amplification by shuffling) in the audit log and
on the dashboard: stated only where its conditions hold, from the smallest group the
release distinguishes, and read back from the stored bytes."""

from __future__ import annotations

import json
import math

import pytest

from deniable.collection.model._survey import load_survey
from deniable.collection.store._central import DELTA, release_statement, version_statement
from deniable.collection.store._recipients import RecipientKey
from deniable.collection.store._staging import StagedResponse
from deniable.collection.store._storage import Store
from deniable.planning import shuffle_amplification

from .conftest import AUTH
from .test_arms import CAMPUS, with_
from .test_recipients import store_credential_for, warner

KEY = RecipientKey(b"c" * 32)
LN3 = math.log(3)


@pytest.fixture
def store(database_url):
    s = Store(database_url)
    yield s
    s.close()


def answer_as_recipients(store, survey, answers, arms=None, groups=None, first=0):
    """Invite one named recipient per answer (person ``first``, ``first + 1``, ...) and
    submit it with their credential; the analyst asks for a release after each one (a
    release still takes only complete key cells)."""
    addresses = [f"person{first + i}@example.org" for i in range(len(answers))]
    issued = store.invitations.invite_recipients(survey.id, addresses, key=KEY)
    for i, (token, answer) in enumerate(zip(issued.tokens, answers, strict=True)):
        credential = store_credential_for(store, survey.id, token, survey.version)
        arm = arms[i] if arms else None
        store.submit(survey, answer, credential, arm=arm, groups=groups[i] if groups else None)
        store.release()


def releases(store, survey_id):
    return [e for e in store.audit_log(survey_id) if e["action"] == "release"]


def test_named_recipients_get_the_central_epsilon_of_each_release(store):
    """Warner(0.75) (binary randomized response, ln 3 a response), crowds of 6: two
    releases of 6 different people. Each audit entry states the bound of
    shuffle_amplification for its smallest group (6: no row carries a time), and
    the version's statement is the larger of the two (parallel composition)."""
    survey = load_survey(warner(min_release=6, allow_small_release=True))
    store.publish(survey)
    answer_as_recipients(store, survey, [{"q": i % 2} for i in range(12)])
    entries = releases(store, "w")
    assert len(entries) == 2
    for entry in entries:
        central = entry["detail"]["central"]
        n = central["n"]
        assert n == 6
        want = shuffle_amplification(
            n, central["epsilon_0"], DELTA, randomizer="binary_randomized_response"
        )
        assert central["randomizer"] == "binary_randomized_response"
        assert central["epsilon"] == want.epsilon == want.exact and central["delta"] == DELTA
        assert central["epsilon"] <= want.clones  # the exact curve, under the clones' bound
        assert central["epsilon_0"] == pytest.approx(LN3)
        assert central["epsilon"] < LN3
        for words in ("named recipient", "live operator", "distinct draws", "largest epsilon"):
            assert words in central["statement"]
    version = store.central_privacy(survey)
    assert version["releases"] == 2
    assert version["epsilon"] == max(e["detail"]["central"]["epsilon"] for e in entries)
    # the stored bytes of the audit log say the same
    with store.connection() as conn:
        stored = conn.exec_driver_sql(
            "SELECT detail FROM audit_log WHERE action = 'release'"
        ).scalars()
        assert all("central" in json.loads(d) for d in stored)


def test_the_smallest_group_splits_by_arm_group_hour_and_direct_answers():
    """The campus study without its control arm: a direct covariate (faculty) and a
    group design. The group is the fewest sharing arm, groups, bucket and the direct
    answers; the general bound (several questions) is used, with epsilon_0 the whole
    response's cost."""
    from deniable.collection.store._central import smallest_group

    survey = load_survey(with_(CAMPUS, arms=None, min_release=2, allow_small_release=True))
    assert survey.total_epsilon == pytest.approx(2 * LN3)
    base = dict(survey_id="campus", version=1, bucket=7, arm=0, groups=(0, 0, 0))
    crowd = [StagedResponse(codes=(0, 1, 0), **base) for _ in range(5)]
    crowd += [StagedResponse(codes=(2, 0, 1), **base) for _ in range(3)]  # faculty 2
    assert smallest_group(survey, crowd) == 3
    later = base | {"bucket": 8}
    assert smallest_group(survey, [*crowd, StagedResponse(codes=(0, 1, 0), **later)]) == 1
    grouped = base | {"groups": (0, 0, 1)}
    assert smallest_group(survey, [*crowd, *[StagedResponse(codes=(0, 1, 0), **grouped)] * 2]) == 2
    statement = release_statement(survey, 3, anonymous_invitations=0)
    assert statement is None  # the campus file does not require invitations
    invited = load_survey(with_(CAMPUS, arms=None, requires_invitation=True))
    statement = release_statement(invited, 3, anonymous_invitations=0)
    want = shuffle_amplification(3, invited.total_epsilon, DELTA)
    assert statement["randomizer"] == "general" and statement["epsilon"] == want.epsilon
    assert release_statement(invited, 1, anonymous_invitations=0) is None  # nobody to hide among
    large = release_statement(invited, 10_000, anonymous_invitations=0)
    assert large["epsilon"] < invited.total_epsilon / 4 and large["delta"] == DELTA
    huge = release_statement(invited, 1_000_000, anonymous_invitations=0)
    assert huge["delta"] == pytest.approx(1e-7, rel=1e-12)  # 1 / (10 n), below DELTA


@pytest.mark.parametrize(
    "why",
    ["anonymous link", "open survey", "control arm", "one-sided design"],
)
def test_nothing_is_said_where_a_condition_fails(why):
    invited = with_(CAMPUS, arms=None, requires_invitation=True)
    anonymous = 0
    if why == "anonymous link":
        anonymous = 1
    elif why == "open survey":
        invited["requires_invitation"] = False
    elif why == "control arm":
        invited = with_(CAMPUS, requires_invitation=True)
    else:
        mangat = {
            "id": "q",
            "text": "Have you had an abortion?",
            "design": {"name": "mangat", "params": {"p": 0.3}},
            "allow_infinite_epsilon": True,
        }
        invited = warner(questions=[mangat], no_lifetime_budget=True, lifetime_budget=None)
    survey = load_survey(invited)
    assert release_statement(survey, 1000, anonymous_invitations=anonymous) is None
    details = [{"responses": 1000, "released": 1000}]
    assert version_statement(details, survey, anonymous) is None


def test_an_anonymous_invitation_silences_the_statement(store):
    """A release before any anonymous invitation carries a statement; once one is
    issued, later releases carry none and the version says nothing (a person could now
    hold two links)."""
    survey = load_survey(warner(min_release=3, allow_small_release=True))
    store.publish(survey)
    answer_as_recipients(store, survey, [{"q": 1}] * 3)
    assert store.central_privacy(survey) is not None
    (token,) = store.invitations.issue_tokens("w", 1)
    assert store.central_privacy(survey) is None
    credential = store_credential_for(store, "w", token, 1)
    store.submit(survey, {"q": 0}, credential)
    answer_as_recipients(store, survey, [{"q": 1}] * 2, first=3)
    entries = releases(store, "w")
    assert len(entries) == 2
    assert sum("central" in e["detail"] for e in entries) == 1


@pytest.mark.slow  # the results page draws its plots
@pytest.mark.anyio
async def test_the_dashboard_states_it_only_where_it_holds(client):
    store = client.store
    survey = load_survey(warner(min_release=4, allow_small_release=True))
    store.publish(survey)
    html = (await client.get("/surveys/w/results", headers=AUTH)).text
    assert "Central privacy" not in html  # nothing released yet
    answer_as_recipients(store, survey, [{"q": 1}] * 4)
    res = (await client.get("/api/surveys/w/results", headers=AUTH)).json()
    assert res["central"]["releases"] == 1
    html = (await client.get("/surveys/w/results", headers=AUTH)).text
    assert "Central privacy of the\n1 release:" in html
    assert f"({res['central']['epsilon']:.3g}, 1e-06)-differential privacy" in html
    # pooled over versions, the figure proved is the local epsilon of the distinct draws:
    # version 2 asks the same question unchanged, so the memoized report is one draw
    store.publish(load_survey(warner(version=2, min_release=4, allow_small_release=True)))
    pooled = (await client.get("/api/surveys/w/results?pooled=true", headers=AUTH)).json()
    assert pooled["central"]["local"] is True and pooled["central"]["versions"] == [1, 2]
    assert pooled["central"]["epsilon"] == pytest.approx(LN3) and pooled["central"]["delta"] == 0
    html = (await client.get("/surveys/w/results?version=2&pooled=true", headers=AUTH)).text
    assert "releases pooled over versions:" in html and "1.1-LDP" in html
    assert "no proof of amplification by" in html


def test_across_versions_the_figure_is_the_local_epsilon_of_distinct_draws():
    """Three versions: the same Warner question twice (one memoized draw, ln 3), then a
    new question (a second draw): the pooled figure is the ledger's 2 ln 3, with no delta,
    and it never falls below any single version's local cost; a one-sided design makes
    it unbounded and says so."""
    from deniable.collection.store._central import pooled_statement

    other = {
        "id": "r",
        "text": "Have you cheated?",
        "design": {"name": "warner", "params": {"p": 0.75}},
    }
    one, two = (load_survey(warner(version=v)) for v in (1, 2))
    three = load_survey(warner(version=3, questions=[other]))
    pooled = pooled_statement([one, two])
    assert pooled["epsilon"] == pytest.approx(LN3) and pooled["versions"] == [1, 2]
    pooled = pooled_statement([three, one, two])
    assert pooled["epsilon"] == pytest.approx(2 * LN3) and pooled["versions"] == [1, 2, 3]
    assert "distinct draws: 2.2-LDP" in pooled["statement"]
    mangat = {
        "id": "q",
        "text": "Have you had an abortion?",
        "design": {"name": "mangat", "params": {"p": 0.3}},
        "allow_infinite_epsilon": True,
    }
    proof = load_survey(warner(questions=[mangat], no_lifetime_budget=True, lifetime_budget=None))
    assert math.isinf(pooled_statement([proof])["epsilon"])
    assert "not bounded" in pooled_statement([proof])["statement"]

"""A lifetime budget per person that does not rely on a memo: invitations bound to a
version, named recipients in a server-wide ledger (a keyed hash, never the address),
refusals row by row, retries that do not burn an invitation, and the terminal client's
memo keyed by owner and question content."""

from __future__ import annotations

import csv
import json
import math
import sqlite3
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.credentials import (
    finalize,
    new_credential_request,
)
from deniable.collection.model._survey import load_survey
from deniable.collection.respondent._client import parse_survey_url
from deniable.collection.store._recipients import RecipientKey, normalise_address
from deniable.collection.store._storage import Store
from deniable.errors import (
    CredentialRejectedError,
    InvitationUsedError,
    InvitationVersionError,
    RecipientsRefusedError,
    SurveyClosedError,
)

from .conftest import ANALYST, AUTH, assert_error_shape
from .test_server_process import Server

LN3 = math.log(3)
KEY = RecipientKey(b"k" * 32)


def warner(survey_id: str = "w", version: int = 1, **changes) -> dict:
    """One question, Warner p = 0.75: epsilon ln 3 = 1.0986 nats per response."""
    return {
        "format": 1,
        "id": survey_id,
        "version": version,
        "title": "Warner",
        "privacy_budget": 1.1,
        "lifetime_budget": 30,
        "requires_invitation": True,
        "questions": [
            {
                "id": "q",
                "text": "Have you ever shoplifted?",
                "design": {"name": "warner", "params": {"p": 0.75}},
            }
        ],
    } | changes


@pytest.fixture
def store(database_url):
    s = Store(database_url)
    yield s
    s.close()


def test_addresses_are_normalised_and_bad_ones_named():
    assert normalise_address("  Ada@Example.ORG \n") == "ada@example.org"
    for bad in ("", "a", "ada lovelace@example.org", "x" * 400, 7):
        with pytest.raises(ValueError):
            normalise_address(bad)
    assert KEY.recipient("ada@example.org") != KEY.recipient("bob@example.org")
    assert KEY.owner_tag("ada@example.org") == KEY.owner_tag("ada@example.org")
    assert len(KEY.owner_tag("ada@example.org")) == 24


#: Spellings that reach ada@example.org's one mailbox by a standard (not +tags or a
#: provider's dots): each is refused as not plain, or is the same person.
ONE_MAILBOX = [
    "ada@example.org",
    "<ada@example.org>",
    "mailto:ada@example.org",
    "ada@example.org.",
    "ada@example.org,",
    '"ada"@example.org',
    "ada@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.org",  # fullwidth letters
    "ada@example\u3002org",  # the ideographic full stop
    "ADA@EXAMPLE.ORG",
    "Ada Lovelace <ada@example.org>",
    " ada@Example.Org ",
]


def test_spellings_of_one_mailbox_are_one_person_or_refused_with_the_plain_form():
    plain = [a for a in ONE_MAILBOX if not any(c in a for c in "<>,") and "mailto" not in a]
    assert {normalise_address(a) for a in plain} == {"ada@example.org"}
    for decorated in sorted(set(ONE_MAILBOX) - set(plain)):
        with pytest.raises(ValueError, match=r"write it as 'ada@example\.org'"):
            normalise_address(decorated)
    # not guessed: another local part is another person, whatever a provider does
    assert normalise_address("ada+survey@example.org") == "ada+survey@example.org"
    assert normalise_address("a.da@example.org") == "a.da@example.org"
    assert normalise_address("ada@\u4f8b\u3048.jp") == "ada@xn--r8jz45g.jp"


def test_one_mailbox_spelled_eleven_ways_is_issued_one_invitation(store):
    """In one request and one spelling a request: one invitation, every other row
    refused (not plain, a repeat, or already invited), so one person draws one report
    and spends one version's cost."""
    store.publish(load_survey(warner()))
    issued = store.invitations.invite_recipients("w", ONE_MAILBOX, 2.5, KEY)
    assert len(issued.tokens) == 1 and len(issued.refused) == len(ONE_MAILBOX) - 1
    reasons = " ".join(m for _, _, m in issued.refused)
    assert "repeats row 0" in reasons and "write it as" in reasons
    for spelling in ONE_MAILBOX[1:]:
        with pytest.raises(RecipientsRefusedError, match=r"already invited|write it as"):
            store.invitations.invite_recipients("w", [spelling], 2.5, KEY)


def test_the_server_budget_caps_a_person_across_versions_and_surveys(store):
    """Budget 2.5 nats allows two invitations at ln 3 each: the third is refused with
    the sums, a second one to the same version too, whatever survey id it comes under;
    other rows of the same request are issued."""
    store.publish(load_survey(warner()))
    first = store.invitations.invite_recipients("w", [" Ada@Example.org"], 2.5, KEY)
    assert first.version == 1 and first.recipients == ["ada@example.org"]
    with pytest.raises(RecipientsRefusedError, match="already invited to w version 1") as info:
        store.invitations.invite_recipients("w", ["ada@example.org"], 2.5, KEY)
    assert info.value.errors[0][0] == "recipients.0"
    store.publish(load_survey(warner(version=2)))  # unchanged question, new version
    second = store.invitations.invite_recipients(
        "w", ["ada@example.org", "bob@example.org"], 2.5, KEY
    )
    assert second.version == 2 and second.recipients == ["ada@example.org", "bob@example.org"]
    store.publish(load_survey(warner(version=3)))
    mixed = store.invitations.invite_recipients(
        "w", ["ada@example.org", "bob@example.org", "ADA@example.org"], 2.5, KEY
    )
    assert mixed.recipients == ["bob@example.org"]  # bob: 2 x ln 3 = 2.197 <= 2.5
    assert [(r, a) for r, a, _ in mixed.refused] == [(0, "ada@example.org"), (2, "ada@example.org")]
    message = mixed.refused[0][2]
    assert "2.197 + 1.099 = 3.296" in message and "2.5 nats" in message
    assert "repeats row 0" in mixed.refused[1][2]
    # the same question under another survey id: the same person, the same cap
    store.publish(load_survey(warner("other")))
    with pytest.raises(RecipientsRefusedError, match="over the server's lifetime budget"):
        store.invitations.invite_recipients("other", ["ada@example.org"], 2.5, KEY)
    assert store.invitations.recipient_spent("ada@example.org", KEY) == pytest.approx(2 * LN3)
    assert store.invitation_counts("w")["named"] == 4


def test_an_invitation_answers_only_the_version_it_was_issued_for(store):
    store.publish(load_survey(warner()))
    (token,) = store.invitations.issue_tokens("w", 1)
    store.publish(load_survey(warner(version=2)))  # published after the invitation
    key1, key2 = store.invitations.credential_key("w", 1), store.invitations.credential_key("w", 2)
    assert key1.public_spki_b64() != key2.public_spki_b64()
    blinded, _ = new_credential_request(key2.public_key)
    with pytest.raises(InvitationVersionError, match="for version 1") as info:
        store.invitations.issue_credential("w", token, blinded, version=2)
    assert info.value.version == 1
    credential = store_credential_for(store, "w", token, 1)
    v2 = store.survey("w", 2)
    with pytest.raises(CredentialRejectedError, match="version 2"):
        store.submit(v2, {"q": 1}, credential)
    store.submit(store.survey("w", 1), {"q": 1}, credential)
    assert store.response_count("w", 1) == 1 and store.response_count("w", 2) == 0


def store_credential_for(store, survey_id, token, version):
    key = store.invitations.credential_key(survey_id, version)
    blinded, state = new_credential_request(key.public_key)
    sig = store.invitations.issue_credential(survey_id, token, blinded, version=version)
    from deniable.collection.credentials import Credential

    return Credential(state.prepared, finalize(key.public_key, state, sig))


def test_a_dropped_connection_does_not_burn_the_invitation(store):
    """The spend committed but the answer was lost: the same blinded message gets the
    same signature again; any other blinded message is refused."""
    store.publish(load_survey(warner()))
    (token,) = store.invitations.issue_tokens("w", 1)
    key = store.invitations.credential_key("w")
    blinded, state = new_credential_request(key.public_key)
    first = store.invitations.issue_credential("w", token, blinded)
    again = store.invitations.issue_credential("w", token, blinded)
    assert first == again
    finalize(key.public_key, state, again)  # verifies
    other, _ = new_credential_request(key.public_key)
    with pytest.raises(InvitationUsedError):
        store.invitations.issue_credential("w", token, other)


@pytest.mark.anyio
async def test_recipients_over_http_row_by_row_and_nothing_of_the_address_stored(
    client, monkeypatch, database_url
):
    monkeypatch.setenv("DENIABLE_RECIPIENT_KEY", "r" * 40)
    monkeypatch.setenv("DENIABLE_LIFETIME_BUDGET", "2.5")
    r = await client.post("/api/surveys", json=warner(), headers=AUTH)
    assert r.status_code == 201
    body = {"recipients": ["ada@example.org", "bob@example.org"]}
    r = await client.post("/api/surveys/w/invitations", json=body, headers=AUTH)
    assert r.status_code == 201 and r.json()["refused"] == []
    links = [item["link"] for item in r.json()["invitations"]]
    parsed = [parse_survey_url(link) for link in links]
    assert all(p.version == 1 and p.owner and p.token for p in parsed)
    assert parsed[0].owner != parsed[1].owner
    err = assert_error_shape(
        await client.post("/api/surveys/w/invitations", json=body, headers=AUTH), 422
    )
    assert err["code"] == "recipients_refused" and err["field"] == "body.recipients.0"
    await client.post("/api/surveys", json=warner(version=2), headers=AUTH)
    await client.post("/api/surveys", json=warner(version=3), headers=AUTH)
    body = {"recipients": ["ada@example.org"]}
    assert (
        await client.post("/api/surveys/w/invitations", json=body, headers=AUTH)
    ).status_code == 201
    err = assert_error_shape(
        await client.post("/api/surveys/w/invitations", json=body, headers=AUTH), 422
    )
    assert "already invited to w version 3" in err["message"]
    await client.post("/api/surveys", json=warner(version=4), headers=AUTH)
    err = assert_error_shape(
        await client.post("/api/surveys/w/invitations", json=body, headers=AUTH), 422
    )
    assert "over the server's lifetime budget of 2.5 nats" in err["message"]
    for wrong in ({}, {"count": 2, "recipients": ["a@b.c"]}, {"recipients": []}):
        assert_error_shape(
            await client.post("/api/surveys/w/invitations", json=wrong, headers=AUTH), 422
        )
    status = (await client.get("/api/surveys/w/status", headers=AUTH)).json()
    assert status["invitations"]["named"] == 3 and status["per_person"]["enforced"] is True
    await client.post("/api/surveys/w/invitations", json={"count": 1}, headers=AUTH)
    status = (await client.get("/api/surveys/w/status", headers=AUTH)).json()
    assert status["per_person"]["enforced"] is False
    assert "cannot be enforced" in status["per_person"]["note"]
    page = (await client.get("/surveys/w/results", headers=AUTH)).text
    assert "3 to named recipients, 1 anonymous" in " ".join(page.split())
    assert "cannot be enforced" in page
    if database_url.startswith("sqlite"):
        # the attacker's read of every stored byte: no address in any form, no key
        path = database_url.removeprefix("sqlite:///")
        client.store.close()
        raw = b"".join(
            Path(p).read_bytes()
            for p in (path, path + "-wal", path + "-shm", path + "-journal")
            if Path(p).exists()
        )
        for needle in (b"ada@example.org", b"ADA@EXAMPLE.ORG", b"example.org", b"r" * 40):
            assert needle not in raw
        for tag in (p.owner for p in parsed):
            assert tag.encode() not in raw  # owner tags live only in links
        with sqlite3.connect(path) as conn:
            names = [r[0] for r in conn.execute("SELECT recipient FROM recipient_ledger")]
        assert len(names) == 3 and all(len(n) == 64 for n in names)


@pytest.fixture(scope="module")
def roomy_server(tmp_path_factory):
    """A real `deniable serve` whose budget per person allows 30 invitations at ln 3."""
    tmp = tmp_path_factory.mktemp("recipients")
    s = Server(
        f"sqlite:///{tmp / 'db.sqlite'}",
        tmp,
        env={"DENIABLE_LIFETIME_BUDGET": "40", "DENIABLE_RECIPIENT_KEY": "s" * 40},
    )
    s.start()
    yield s
    s.stop()


def _cli(*args: str, base: str, data_home, input: str | None = None):
    env = {
        "DENIABLE_ANALYST_TOKEN": ANALYST,
        "DENIABLE_SERVER": base,
        "COLUMNS": "200",
        "XDG_DATA_HOME": str(data_home),
    }
    return CliRunner().invoke(app, list(args), env=env, input=input)


def _invite(http: httpx.Client, survey_id: str, address: str) -> str:
    r = http.post(f"/api/surveys/{survey_id}/invitations", json={"recipients": [address]})
    assert r.status_code == 201, r.text
    return r.json()["invitations"][0]["link"]


def _stored_reports(http: httpx.Client, survey_id: str) -> list[int]:
    """The released reports of a survey id, after asking for a release."""
    http.post(f"/api/surveys/{survey_id}/release").raise_for_status()
    frame = http.get(f"/api/surveys/{survey_id}/export", params={"format": "csv"}).text
    rows = list(csv.DictReader(frame.splitlines()))
    return [int(row["report"]) for row in rows]


@pytest.mark.slow
def test_the_terminal_client_resends_the_memoized_report_to_a_reinvited_person(
    roomy_server, tmp_path
):
    """Ada is invited to 20 unchanged versions of one survey and to the same question
    under 10 other survey ids: `deniable respond` draws once and sends that report 30
    times. Bob, on the same computer, is asked and draws his own; --forget removes it."""
    base, data_home = roomy_server.base, tmp_path / "data"
    sent: list[int] = []
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        targets = [("memo", v) for v in range(1, 21)] + [(f"memo-{i}", 1) for i in range(10)]
        for survey_id, version in targets:
            definition = warner(
                survey_id, version, title=f"T{version}", min_release=1, allow_small_release=True
            )
            r = http.post("/api/surveys", json=definition)
            assert r.status_code == 201, r.text
            link = _invite(http, survey_id, "ada@example.org")
            out = _cli(
                "respond", link, "--yes", "--json", base=base, data_home=data_home, input="2\n"
            )
            assert out.exit_code == 0, out.output
            first = not sent
            assert ("drawn earlier" in out.output) is not first
            answer = json.loads(out.stdout[out.stdout.index("{") :])  # after echoed input
            sent.append({"no": 0, "yes": 1}[answer["sent"]["q"]])
        assert len(set(sent)) == 1  # one draw, sent 30 times
        stored = [r for sid in {s for s, _ in targets} for r in _stored_reports(http, sid)]
        assert stored == [sent[0]] * 30
        # another person on this computer is asked and draws for himself
        link = _invite(http, "memo", "bob@example.org")
        out = _cli("respond", link, "--yes", base=base, data_home=data_home, input="1\n")
        assert out.exit_code == 0 and "drawn earlier" not in out.output
    memo = json.loads((data_home / "deniable" / "memo.json").read_text())
    assert len(memo) == 2 and all(len(reports) == 1 for reports in memo.values())
    assert all(v in (0, 1) for reports in memo.values() for v in reports.values())
    out = _cli("respond", "--forget", base=base, data_home=data_home)
    assert out.exit_code == 0 and not (data_home / "deniable" / "memo.json").exists()


@pytest.mark.slow
def test_the_command_line_refuses_what_the_server_budget_does_not_allow(tmp_path):
    """DENIABLE_LIFETIME_BUDGET 2.5 allows two versions at ln 3: `survey invite
    --recipients` issues the rest, names the refused rows, and exits 2 when all are."""
    s = Server(
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        tmp_path,
        env={"DENIABLE_LIFETIME_BUDGET": "2.5", "DENIABLE_RECIPIENT_KEY": "t" * 40},
    )
    s.start()
    try:
        (tmp_path / "people.csv").write_text("address\nada@example.org\n Bob@Example.org \n")
        with httpx.Client(base_url=s.base, headers=AUTH, timeout=30) as http:
            for version in (1, 2, 3):
                http.post("/api/surveys", json=warner(version=version, title=f"T{version}"))
                out = _cli(
                    "survey",
                    "invite",
                    "w",
                    "--recipients",
                    str(tmp_path / "people.csv"),
                    "--output",
                    str(tmp_path / f"links{version}.csv"),
                    base=s.base,
                    data_home=tmp_path,
                )
                if version < 3:
                    assert out.exit_code == 0, out.output
                    rows = list(csv.DictReader((tmp_path / f"links{version}.csv").open()))
                    assert [r["recipient"] for r in rows] == ["ada@example.org", "bob@example.org"]
                    assert all(parse_survey_url(r["link"]).version == version for r in rows)
                else:
                    assert out.exit_code == 2
                    assert "over the server's lifetime budget of 2.5 nats" in out.output
            again = _cli(
                "survey",
                "invite",
                "w",
                "--recipients",
                str(tmp_path / "people.csv"),
                base=s.base,
                data_home=tmp_path,
            )
            assert again.exit_code == 2 and "2.197 + 1.099 = 3.296" in again.output
            status = _cli("survey", "status", "w", base=s.base, data_home=tmp_path)
            assert "budget per person holds" in " ".join(status.output.split())
    finally:
        s.stop()


def test_a_closed_survey_issues_no_invitations_and_charges_no_ledger(store):
    store.publish(load_survey(warner()))
    store.set_closed("w", True)
    with pytest.raises(SurveyClosedError, match="issues no invitations"):
        store.invitations.invite_recipients("w", ["ada@example.org"], 2.5, KEY)
    with pytest.raises(SurveyClosedError):
        store.invitations.issue_invitations("w", 3)
    assert store.invitations.recipient_spent("ada@example.org", KEY) == 0
    assert store.invitation_counts("w")["issued"] == 0
    store.set_closed("w", False)
    assert len(store.invitations.invite_recipients("w", ["ada@example.org"], 2.5, KEY).tokens) == 1

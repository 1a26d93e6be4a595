"""Storage on SQLite and PostgreSQL: immutable surveys, hashed one-time tokens, what the
reports table can and cannot hold, atomic rejection."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from sqlalchemy import func, inspect, select

from deniable.collection.credentials import Credential
from deniable.collection.model._survey import load_survey
from deniable.collection.store._schema import invitations, reports, staging
from deniable.collection.store._storage import (
    MIGRATIONS,
    Store,
    database_url,
    hash_token,
)
from deniable.errors import (
    BudgetExceededError,
    CredentialRejectedError,
    InvitationError,
    ReportValidationError,
    SurveyClosedError,
    SurveyConflictError,
    SurveyNotFoundError,
)

from .conftest import SURVEY, store_credential


@pytest.fixture
def store(database_url: str):
    s = Store(database_url)
    yield s
    s.close()


def invited(**changes):
    data = copy.deepcopy(SURVEY) | {"requires_invitation": True}
    return load_survey(data | changes)


@pytest.mark.smoke
def test_migrations_are_named_ordered_and_idempotent(store, database_url):
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    again = Store(database_url)
    assert again.migrate() == []
    again.close()


def test_schema_has_no_place_for_identity_or_truth(store):
    columns = {c["name"] for c in inspect(store.engine).get_columns("reports")}
    assert columns == {
        "report_id",
        "response_id",
        "survey_id",
        "version",
        "question_id",
        "report",
        "release_number",  # the release that brought the row, never a time
        "arm",  # the arm drawn at random on the device (its index)
        "grp",  # a group design's group, drawn likewise
    }
    forbidden = ("truth", "answer", "ip", "address", "user", "respondent", "token", "timestamp")
    for table in ("reports", "surveys", "invitations"):
        for col in inspect(store.engine).get_columns(table):
            assert not any(word in col["name"] for word in forbidden if table != "invitations")
    assert {c["name"] for c in inspect(store.engine).get_columns("invitations")} == {
        "token_hash",
        "survey_id",
        "used",
        "version",  # the survey version it is bound to
        "blinded_hash",  # SHA-256 of the blinded message it was spent for (retries)
        "arm",  # the arm it is bound to in a study with arms (the analyst knows it)
    }


def test_published_surveys_are_immutable(store):
    s = load_survey(SURVEY)
    assert store.publish(s) is True
    assert store.publish(s) is False  # identical content: no-op
    with pytest.raises(SurveyConflictError, match="new version"):
        store.publish(load_survey(copy.deepcopy(SURVEY) | {"title": "Changed"}))
    v2 = load_survey(copy.deepcopy(SURVEY) | {"title": "Changed", "version": 2})
    assert store.publish(v2)
    assert store.survey("health").version == 2
    assert store.survey("health", 1).title == "Health survey"
    store.publish(load_survey(copy.deepcopy(SURVEY) | {"version": 5, "title": "Five"}))
    with pytest.raises(SurveyConflictError, match="greater than 5"):
        store.publish(load_survey(copy.deepcopy(SURVEY) | {"version": 3, "title": "x"}))
    with pytest.raises(SurveyNotFoundError):
        store.survey("nope")


def test_tokens_are_hashed_and_spent_once(store):
    s = invited()
    store.publish(s)
    tokens = store.invitations.issue_tokens(s.id, 3)
    assert len(set(tokens)) == 3 and all(len(t) >= 32 for t in tokens)
    with store.connection() as conn:
        stored = set(conn.execute(select(invitations.c.token_hash)).scalars())
    assert stored == {hash_token(t) for t in tokens}
    assert not any(t in h for t in tokens for h in stored)
    credential = store_credential(store, s.id, tokens[0])
    store.submit(s, {"drugs": 1, "status": 2}, credential)
    # a spent invitation gets no second credential; an unknown one gets none
    with pytest.raises(InvitationError, match="already been used"):
        store_credential(store, s.id, tokens[0])
    with pytest.raises(InvitationError, match="not valid"):
        store_credential(store, s.id, "not-a-token")
    # a credential is used once; a missing or forged one is refused; nothing stored
    # the last byte flipped (a fixed b"x" equals it once in 256 random messages)
    forged = Credential(
        credential.message[:-1] + bytes([credential.message[-1] ^ 1]), credential.signature
    )
    for bad, why in (
        (credential, "already used"),
        (None, "needs a credential"),
        (forged, "not valid"),
    ):
        with pytest.raises(CredentialRejectedError, match=why):
            store.submit(s, {"drugs": 0, "status": 0}, bad)
    assert store.response_count(s.id) == 1
    other = load_survey(copy.deepcopy(SURVEY) | {"id": "other", "requires_invitation": True})
    store.publish(other)
    with pytest.raises(InvitationError):  # a token works only for its own survey
        store_credential(store, other.id, tokens[1])
    fresh = store_credential(store, s.id, tokens[1])
    with pytest.raises(CredentialRejectedError):  # a credential only for its own survey
        store.submit(other, {"drugs": 0, "status": 0}, fresh)


@pytest.mark.parametrize(
    "response",
    [
        {"drugs": 1},
        {"drugs": 1, "status": 0, "extra": 1},
        {"drugs": 2, "status": 0},
        {"drugs": -1, "status": 0},
        {"drugs": True, "status": 0},
        {"drugs": 1.0, "status": 0},
        {"drugs": "1", "status": 0},
    ],
)
def test_invalid_response_stores_nothing_and_keeps_the_token(store, response):
    s = invited()
    store.publish(s)
    (token,) = store.invitations.issue_tokens(s.id, 1)
    credential = store_credential(store, s.id, token)
    with pytest.raises(ReportValidationError, match="responses\\[0\\]"):
        store.submit(s, response, credential)
    assert store.response_count(s.id) == 0
    store.submit(s, {"drugs": 0, "status": 1}, credential)  # the credential was not spent
    assert store.response_count(s.id) == 1


def test_batch_is_all_or_nothing(store):
    s = load_survey(SURVEY)
    store.publish(s)
    good = [{"drugs": i % 2, "status": i % 3} for i in range(500)]
    assert store.submit_batch(s, good) == 500
    store.release()
    with pytest.raises(ReportValidationError, match="responses\\[250\\]"):
        store.submit_batch(s, [*good[:250], {"drugs": 5, "status": 0}, *good[:10]])
        store.release()
    assert store.response_count(s.id) == 500
    with pytest.raises(InvitationError):
        store.submit_batch(invited(id="inv"), good)
        store.release()
    # a batch rides the one insert path (commit_group): a closed survey refuses it whole
    store.set_closed(s.id, True)
    with pytest.raises(SurveyClosedError):
        store.submit_batch(s, good)
        store.release()
    assert store.response_count(s.id) == 500
    store.set_closed(s.id, False)
    assert store.submit_batch(s, good[:3]) == 3 and store.response_count(s.id) == 503
    store.release()


def test_tallies_match_numpy_and_estimates_run(store, rng):
    s = load_survey(SURVEY)
    store.publish(s)
    drugs = rng.integers(0, 2, 3000)
    status = rng.integers(0, 3, 3000)
    store.submit_batch(
        s, [{"drugs": int(a), "status": int(b)} for a, b in zip(drugs, status, strict=True)]
    )
    store.release()
    t = store.released.tallies(s)
    assert t["drugs"].counts.tolist() == np.bincount(drugs, minlength=2).tolist()
    assert t["status"].counts.tolist() == np.bincount(status, minlength=3).tolist()
    ((hour, n),) = store.released.timeline(s.id)  # one release, at the hour (the audit log's)
    assert n == 3000 and hour % 3600 == 0


def test_export_and_storage_order_do_not_follow_arrival(store):
    """60 responses, min_release 30, released after the 30th and the 60th: two crowds of
    30, each written in random order."""
    s = load_survey(SURVEY)
    store.publish(s)
    for i in range(60):
        store.submit(s, {"drugs": i % 2, "status": i % 3})
        if i % 30 == 29:
            store.release()
    frame = store.released.export(s.id)
    assert len(frame) == 120 and frame["response_id"].nunique() == 60
    assert list(frame.columns) == [
        "response_id",
        "version",
        "question_id",
        "report",
        "report_label",
        "release",
        "arm",
        "group",
    ]
    arrival = [i % 2 for i in range(60)]
    assert frame.loc[frame.question_id == "drugs", "report"].tolist() != arrival
    with store.connection() as conn:
        ids = list(conn.execute(select(reports.c.report_id)).scalars())
        stored = list(conn.execute(select(reports.c.question_id, reports.c.report)))
    assert len(set(ids)) == 120 and all(len(i) == 32 for i in ids)
    # an unordered scan follows the random key (SQLite, WITHOUT ROWID) or the random
    # order each crowd was written in (PostgreSQL's heap), not arrival
    assert [r for q, r in stored if q == "drugs"] != arrival


def test_releases_come_in_crowds_of_min_release(store):
    """min_release 7, a release asked for after every response (the analyst who
    polls): nothing is released before the 7th response; then every release adds at
    least 7, so two releases never differ by fewer (one person never stands out);
    waiting responses are counted, never shown; each release is audited by the hour."""
    s = load_survey(copy.deepcopy(SURVEY) | {"min_release": 7, "allow_small_release": True})
    store.publish(s)
    released = []
    for i in range(30):
        store.submit(s, {"drugs": i % 2, "status": i % 3})
        store.release()
        released.append(store.released.count(s.id))
        assert store.response_count(s.id) == i + 1
        assert released[-1] + store.waiting(s.id).get(1, 0) == i + 1
        assert sum(store.released.tallies(s)["drugs"].counts) == released[-1]
    steps = sorted(set(released))
    assert steps == [0, 7, 14, 21, 28]
    assert all(b - a >= 7 for a, b in itertools.pairwise(steps))
    entries = [e for e in store.audit_log(s.id) if e["action"] == "release"]
    assert sorted(e["detail"]["released"] for e in entries) == [7, 14, 21, 28]
    assert all(e["actor"] == "server" and e["at"] % 3600 == 0 for e in entries)
    assert len(store.released.export(s.id)) == 2 * 28


def test_database_url_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("DENIABLE_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert database_url() == f"sqlite:///{tmp_path / 'deniable.sqlite'}"
    monkeypatch.setenv("DENIABLE_DATABASE_URL", "postgresql://u:p@h/db")
    assert database_url() == "postgresql+psycopg://u:p@h/db"
    assert database_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"
    with pytest.raises(ValueError, match="bucket_seconds"):
        Store(f"sqlite:///{tmp_path / 'x.sqlite'}", bucket_seconds=1)


def test_sqlite_has_a_rollback_journal_and_is_fully_synchronous(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'w.sqlite'}")
    with s.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "truncate"
        assert conn.exec_driver_sql("PRAGMA secure_delete").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    s.close()
    assert (tmp_path / "w.sqlite").exists()


def test_ten_versions_publishing_stops_at_the_lifetime_budget(store):
    """Each version changes the drugs question's text (charged ln 3 again) and keeps the
    status question (2 nats, charged once). Lifetime budget 10 nats: versions 1..7 spend
    2 + 7 ln 3 = 9.69; version 8 would spend 10.79 and is refused, naming the sums."""
    published = []
    for version in range(1, 11):
        data = copy.deepcopy(SURVEY) | {"version": version, "lifetime_budget": 10.0}
        data["questions"][0]["text"] = f"Drugs, wording {version}?"
        try:
            store.publish(load_survey(data))
        except BudgetExceededError as exc:
            assert version == 8
            assert "10.79 nats against the survey's lifetime budget of 10" in str(exc)
            assert "version 8 adds 1.099 nats" in str(exc)
            break
        published.append(version)
    assert published == list(range(1, 8))
    ledger = store.ledger("health")
    assert ledger.spent == pytest.approx(2 + 7 * np.log(3))
    assert [round(added, 4) for _, added, _ in ledger.cumulative] == [3.0986] + [1.0986] * 6
    # an unchanged question costs nothing: a version that only changes the title is free
    same = copy.deepcopy(SURVEY) | {"version": 9, "lifetime_budget": 10.0, "title": "New"}
    same["questions"][0]["text"] = "Drugs, wording 7?"
    assert store.publish(load_survey(same))
    assert store.ledger("health").cumulative[-1][1] == 0.0
    # the lifetime budget is fixed by version 1
    with pytest.raises(SurveyConflictError, match="fixed by version 1 at 10 nats"):
        store.publish(load_survey(same | {"version": 10, "lifetime_budget": 20.0}))


def test_two_processes_filling_slots_lose_nothing(tmp_path):
    """Two stores on one SQLite file (two worker processes), each with its own list of
    free slots that the other makes stale: every response is stored once."""
    url = f"sqlite:///{tmp_path / 'two.sqlite'}"
    a, b = Store(url), Store(url)
    s = load_survey(copy.deepcopy(SURVEY) | {"min_release": 11})
    a.publish(s)
    sent = 0
    for i in range(15):
        a.commit_group([a.prepare(s, {"drugs": i % 2, "status": 0}) for _ in range(7)])
        b.commit_group([b.prepare(s, {"drugs": 0, "status": i % 3}) for _ in range(5)])
        sent += 12
        (a if i % 2 else b).release()
    assert a.response_count(s.id) == sent == b.response_count(s.id)
    released = a.released.count(s.id)
    assert 0 <= sent - released < 11  # each release takes all waiting, at least 11
    assert len(a.released.export(s.id)) == 2 * released
    a.close()
    b.close()


def test_a_big_batch_grows_the_slots_and_is_released_whole(store):
    """5,000 responses in one batch with min_release 6,000: the 1,024 pre-allocated
    slots grow to hold them (at most half full), nothing is released; 1,000 more make
    the crowd, and all 6,000 are released in one crowd, the slots empty again."""
    s = load_survey(copy.deepcopy(SURVEY) | {"min_release": 6000})
    store.publish(s)
    first = [{"drugs": i % 2, "status": i % 3} for i in range(5000)]
    assert store.submit_batch(s, first) == 5000
    store.release()
    assert store.released.count(s.id) == 0 and store.waiting(s.id) == {1: 5000}
    with store.connection() as conn:
        slots = conn.execute(select(func.count()).select_from(staging)).scalar()
    assert slots >= 10_000
    store.submit_batch(s, first[:1000])
    store.release()
    assert store.released.count(s.id) == 6000 and store.waiting(s.id) == {}
    counts = store.released.tallies(s)["drugs"].counts.tolist()
    assert counts == [3000, 3000]
    with store.connection() as conn:
        filled = conn.execute(
            select(func.count()).select_from(staging).where(staging.c.filled.is_(True))
        ).scalar()
    assert filled == 0


def test_a_credential_spent_in_another_process_is_refused_while_it_waits(tmp_path):
    """Two stores on one SQLite file (two worker processes), each keeping its own copy
    of the nullifiers that wait in slots (so a commit does not scan every slot): a
    credential staged by one is refused by the other, and the first sees the second's
    in turn (its copy goes stale when another process stages, and is read again)."""
    url = f"sqlite:///{tmp_path / 'two.sqlite'}"
    a, b = Store(url), Store(url)
    s = invited(min_release=1000)  # everything waits in slots
    a.publish(s)
    tokens = a.invitations.issue_tokens(s.id, 3)
    first, second, third = (store_credential(a, s.id, t) for t in tokens)
    a.submit(s, {"drugs": 1, "status": 0}, first)
    with pytest.raises(CredentialRejectedError, match="already used"):
        b.submit(s, {"drugs": 0, "status": 1}, first)
    b.submit(s, {"drugs": 0, "status": 1}, second)
    with pytest.raises(CredentialRejectedError, match="already used"):
        a.submit(s, {"drugs": 1, "status": 2}, second)
    a.submit(s, {"drugs": 1, "status": 2}, third)
    with pytest.raises(CredentialRejectedError, match="already used"):
        a.submit(s, {"drugs": 1, "status": 2}, third)  # its own copy, just added
    assert a.waiting(s.id) == {1: 3} and a.released.count(s.id) == 0
    a.close()
    b.close()


def _distinct_responses(store, survey_id, version=None):
    q = select(func.count(func.distinct(reports.c.response_id))).where(
        reports.c.survey_id == survey_id
    )
    if version is not None:
        q = q.where(reports.c.version == version)
    with store.reader.connect() as conn:
        return int(conn.execute(q).scalar())


def test_the_released_count_is_the_distinct_responses_of_the_reports(store):
    """``Released.count`` reads the releases' running total; it equals the distinct
    responses among the report rows at every step, per version and in all, and a
    version whose rows predate the total (written straight into ``reports``, as an
    early store did) is counted too."""
    first = load_survey(copy.deepcopy(SURVEY) | {"min_release": 5, "allow_small_release": True})
    second = load_survey(copy.deepcopy(SURVEY) | {"version": 2, "min_release": 5,
                                                  "allow_small_release": True})  # fmt: skip
    early = load_survey(copy.deepcopy(SURVEY) | {"version": 3, "min_release": 5,
                                                 "allow_small_release": True})  # fmt: skip
    for s in (first, second, early):
        store.publish(s)
    assert store.released.count(first.id) == 0
    for i in range(23):
        store.submit(first if i % 3 else second, {"drugs": i % 2, "status": i % 3})
        if i % 4 == 3:
            store.release()
        for version in (1, 2, None):
            assert store.released.count(first.id, version) == _distinct_responses(
                store, first.id, version
            )
    rows = [
        {"report_id": f"e{i}{q}", "response_id": f"early{i}", "survey_id": early.id,
         "version": 3, "question_id": q, "report": i % 2, "release_number": 0}
        for i in range(6) for q in ("drugs", "status")
    ]  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(reports.insert(), rows)
    assert store.released.count(first.id, 3) == 6
    assert store.released.count(first.id) == _distinct_responses(store, first.id)
    assert store.released.count(first.id) == store.released.count(first.id, 1) + (
        store.released.count(first.id, 2) + 6
    )

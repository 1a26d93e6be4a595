"""The threat model tested as an attacker would: from every file the server wrote.

60 invitees answer one after another through the real protocol (invitation exchanged
for an RFC 9474 credential, then the response) on a real server with SQLite. The
analyst knows who received which invitation, and in which order they answered. The
attacker then reads every file in the data directory (database, WAL, shared memory) and
the server's logs, and tries to pair each invitation with its response by order (where
each response's rows lie in the file, what the WAL still holds), by content (token
hashes, nullifiers, identifiers) and by page images (which database pages changed
between two snapshots). Ground truth: invitee i sends the reports that spell i.

The bound: a guess that knows nothing is a random permutation of 60, whose number of
correct pairs is close to Poisson(1); P(6 or more correct) = 0.0006. Each strategy must
pair at most 5. The seed below fixes the invitees' order and reports.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from deniable.collection.live import serve_in_thread
from deniable.collection.storage import Store
from deniable.collection.survey import load_survey

from .conftest import ANALYST, AUTH, http_credential

SEED = 20261123
N = 60
#: most correct pairs a strategy may make. Under chance a guessed order matches the
#: true one in a Poisson(1) number of places (fixed points of a random permutation); 6
#: strategies each tried forwards and backwards are 12 looks, and P(X >= 8) = 1.0e-5
#: per look keeps a false alarm below 1.3e-4 per run. (The bound was 5, 0.0006 per
#: look: about 0.7% per run, and one CI-like run saw 6 by chance in a table scan whose
#: order is the random response ids'; a real leak pairs most of the 60, as the control
#: test's write-ahead log does.)
CHANCE_BOUND = 7
DIGITS = {
    "format": 1,
    "id": "digits",
    "version": 1,
    "title": "Attacker test",
    "privacy_budget": 4.0,
    "requires_invitation": True,
    "questions": [
        {
            "id": f"d{i}",
            "text": f"digit {i}",
            "choices": [str(j) for j in range(8)],
            "design": {"name": "kary-rr", "params": {"epsilon": 1.0}},
        }
        for i in range(2)
    ],
}


def encode(n: int) -> dict[str, int]:
    return {"d0": n % 8, "d1": n // 8}


def correct(guess: list[str], truth: list[str]) -> int:
    return sum(g == t for g, t in zip(guess, truth, strict=True))


def attack(tmp_path: Path) -> dict[str, int]:
    """Run the 60 invitees, then every strategy; the correct pairs of each."""
    data = tmp_path / "data"
    data.mkdir()
    log_file = tmp_path / "server.log"
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    # everything the server logs, at every level (not this test's HTTP client)
    server_loggers = [logging.getLogger(n) for n in ("deniable", "uvicorn")]
    old_levels = [lg.level for lg in server_loggers]
    for lg in server_loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    db = data / "deniable.sqlite"
    store = Store(f"sqlite:///{db}")
    store.publish(load_survey(DIGITS))
    rng = np.random.default_rng(SEED)
    order = rng.permutation(N)  # who answers when
    snapshots: list[bytes] = []
    try:
        with serve_in_thread(store, ANALYST) as base, httpx.Client(base_url=base) as http:
            tokens = http.post(
                "/api/surveys/digits/invitations", json={"count": N}, headers=AUTH
            ).json()["tokens"]
            snapshots.append(db.read_bytes())
            for i in order:
                credential = http_credential(http, "digits", tokens[i])
                body = {"version": 1, "credential": credential, "reports": encode(int(i))}
                assert http.post("/api/surveys/digits/responses", json=body).status_code == 201
            deadline = time.monotonic() + 5
            wal = Path(f"{db}-wal")
            while wal.exists() and wal.stat().st_size > 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            snapshots.append(db.read_bytes())
            # the files as a copy taken while the server runs (a backup) holds them
            files = {p.name: p.read_bytes() for p in data.iterdir()}
    finally:
        for lg, level in zip(server_loggers, old_levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
        handler.close()
    store.close()

    logs = log_file.read_text()
    # -- what the files hold ------------------------------------------------------------
    for token in tokens:  # no token anywhere, in any form the server saw it
        for blob in files.values():
            assert token.encode() not in blob
        assert token not in logs
    # no client address (uvicorn's access log would write "127.0.0.1:54321 - ...")
    assert not re.search(r"127\.0\.0\.1:\d+ - ", logs)
    assert "POST /api/surveys/digits/responses 201" in logs  # the access log is there

    con = sqlite3.connect(db)
    rows = con.execute("SELECT response_id, question_id, report FROM reports").fetchall()
    con.close()
    by_response: dict[str, dict[str, int]] = {}
    for rid, qid, rep in rows:
        by_response.setdefault(rid, {})[qid] = rep
    decoded = {rid: r["d0"] + 8 * r["d1"] for rid, r in by_response.items()}
    assert sorted(decoded.values()) == list(range(N))
    # ground truth: the response id of each invitee, in the order they answered
    truth = [next(r for r, v in decoded.items() if v == int(i)) for i in order]

    # -- strategy 1: order of the response ids in the database file's bytes ------------
    image = files["deniable.sqlite"]
    first_seen = {rid: image.find(rid.encode()) for rid in decoded}
    by_position = sorted(decoded, key=first_seen.__getitem__)
    # -- strategy 2: order of the pages that hold each response (page images) ----------
    page = int.from_bytes(image[16:18], "big") or 65536
    by_page = sorted(decoded, key=lambda r: (first_seen[r] // page, first_seen[r]))
    # -- strategy 3: the order a plain table scan returns ------------------------------
    by_scan = list(dict.fromkeys(rid for rid, _, _ in rows))
    # -- strategy 4: pages that changed, diffed against the snapshot before responses ---
    before, after = snapshots
    changed = [
        p
        for p in range(len(after) // page)
        if before[p * page : (p + 1) * page] != after[p * page : (p + 1) * page]
    ]
    rank = {p: i for i, p in enumerate(changed)}
    in_changed = sorted(
        decoded, key=lambda r: (rank.get(first_seen[r] // page, len(changed)), first_seen[r])
    )
    # -- strategy 5: the logs ----------------------------------------------------------
    in_logs = sorted(decoded, key=lambda r: logs.find(r) if r in logs else len(logs))
    assert not any(rid in logs for rid in decoded)
    # -- strategy 6: the write-ahead log (frames are appended in commit order) ---------
    wal = files.get("deniable.sqlite-wal", b"")
    in_wal = sorted(decoded, key=lambda r: wal.find(r.encode()) % (len(wal) + 1))

    hits: dict[str, int] = {}
    for name, guess in [
        ("file position", by_position),
        ("page", by_page),
        ("table scan", by_scan),
        ("changed pages", in_changed),
        ("logs", in_logs),
        ("write-ahead log", in_wal),
    ]:
        hits[name] = max(correct(guess, truth), correct(guess[::-1], truth))
    # the invitations table keeps no order of spending either: all are spent, keyed by hash
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), sum(used) FROM invitations").fetchone() == (N, N)
    nullifiers = [r[0] for r in con.execute("SELECT nullifier FROM nullifiers")]
    con.close()
    assert len(nullifiers) == N
    assert not re.search(r"[0-9a-f]{64}", logs)  # no hash of a token or credential logged
    hits["wal bytes"] = len(wal)
    return hits


def test_stored_files_and_logs_do_not_pair_invitations_with_responses(tmp_path: Path) -> None:
    hits = attack(tmp_path)
    print("pairs per strategy", hits)
    assert hits.pop("wal bytes") == 0, "the WAL kept history"
    for name, paired in hits.items():
        assert paired <= CHANCE_BOUND, f"{name}: {paired} of {N} paired"


def test_the_attack_succeeds_when_the_wal_keeps_history(tmp_path: Path, monkeypatch) -> None:
    """Control: without truncating the WAL, its frames pair invitees with responses, so
    the test above would catch a regression."""
    monkeypatch.setattr(Store, "forget_history", lambda self: None)
    hits = attack(tmp_path)
    print("pairs per strategy, WAL kept", hits)
    assert hits["wal bytes"] > 0
    assert hits["write-ahead log"] > N // 2, hits


def test_postgresql_xmin_orders_spends_against_responses() -> None:
    """The limit docs/collection.md states: on PostgreSQL a superuser pairs sequential
    spends with responses through the transaction ids (xmin) of their row versions."""
    from sqlalchemy import text

    from .conftest import POSTGRES_URL, reset_postgres, store_credential

    if not POSTGRES_URL:
        pytest.skip("DENIABLE_TEST_POSTGRES_URL is not set (.ci/run starts PostgreSQL)")
    reset_postgres(POSTGRES_URL)
    store = Store(POSTGRES_URL)
    try:
        survey = load_survey(DIGITS)
        store.publish(survey)
        tokens = store.issue_tokens("digits", N)
        order = np.random.default_rng(SEED).permutation(N)
        for i in order:
            credential = store_credential(store, "digits", tokens[i])
            store.submit(survey, encode(int(i)), credential)
        with store.connection() as conn:
            spends = conn.execute(
                text("SELECT xmin::text::bigint AS x, token_hash FROM invitations ORDER BY x")
            ).all()
            rows = conn.execute(
                text(
                    "SELECT xmin::text::bigint AS x, response_id, question_id, report "
                    "FROM reports ORDER BY x"
                )
            ).all()
    finally:
        store.close()
    from deniable.collection.storage import hash_token

    invitee = {hash_token(t): i for i, t in enumerate(tokens)}
    spend_order = [invitee[h] for _, h in spends]
    by_response: dict[str, dict[str, int]] = {}
    first_x: dict[str, int] = {}
    for x, rid, qid, rep in rows:
        by_response.setdefault(rid, {})[qid] = rep
        first_x.setdefault(rid, x)
    response_order = sorted(by_response, key=first_x.__getitem__)
    decoded = [by_response[r]["d0"] + 8 * by_response[r]["d1"] for r in response_order]
    paired = sum(a == b for a, b in zip(spend_order, decoded, strict=True))
    print(f"xmin pairs {paired} of {N}")
    assert paired >= N - 2, paired

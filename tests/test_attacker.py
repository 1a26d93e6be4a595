"""The threat model tested as an attacker would: from every file the server wrote.

60 invitees answer one after another through the real protocol (an invitation spent
for an RFC 9474 credential at the first draw, then the response) on a real `deniable
serve` process with SQLite. The analyst knows who received which invitation and in
which order they answered, so ordering the stored responses by arrival pairs each with
its invitee. The attacker reads every file in the data directory (the database and its
rollback journal) and the server's log, at idle and right after a SIGKILL sent within
0.1 s of the last acknowledged response while 10 other clients are sending, and orders
the responses by every physical trace: byte offsets of each response's cells (table
and index b-tree pages, the first, last and mean occurrence), a plain table scan, the
staging slot and its offset, membership in the hot journal, the log.

Two surveys: one question with 64 choices (report code = invitee; min_release 60, so
the 60 are released as one crowd), and 7 yes/no questions (the bits spell the invitee;
min_release 100, so all 60 still wait in their slots).

The bounds: a guess that knows nothing is a random permutation of 60, whose number of
correct pairs (fixed points) is close to Poisson(1): P(X >= 8) = 1.0e-5 per look, so
each strategy may pair at most CHANCE_BOUND = 7. Its order concordance with arrival
(Kendall's tau-b) must have a two-sided p-value >= ALPHA = 1e-5 per look; with about 20
looks a run's false alarm stays below 4e-4. A real leak orders most of the 60 (the
control test below, whose slots are taken in arrival order, reaches |tau| > 0.9).
The seed fixes the invitees' order.
"""

from __future__ import annotations

import re
import secrets
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from scipy import stats

from deniable.collection.model._survey import load_survey
from deniable.collection.store import _staging as staging_module
from deniable.collection.store._staging import unpack
from deniable.collection.store._storage import Store

from .conftest import AUTH, POSTGRES_URL, http_credential, store_credential
from .test_server_process import Server

SEED = 20261125
N = 60
#: most correct pairs a strategy may make (P(Poisson(1) >= 8) = 1.0e-5 per look)
CHANCE_BOUND = 7
#: smallest two-sided p-value of Kendall's tau a strategy's order may have
ALPHA = 1e-5

CHOICE64 = {
    "format": 1,
    "id": "digits",
    "version": 1,
    "title": "Attacker test, one question",
    "privacy_budget": 4.0,
    "requires_invitation": True,
    "min_release": 60,
    "questions": [
        {
            "id": "q",
            "text": "Which of 64?",
            "choices": [f"c{j}" for j in range(64)],
            "design": {"name": "kary-rr", "params": {"epsilon": 2.0}},
        }
    ],
}
BINARY7 = {
    "format": 1,
    "id": "digits",
    "version": 1,
    "title": "Attacker test, seven questions",
    "privacy_budget": 10.0,
    "requires_invitation": True,
    "min_release": 100,
    "questions": [
        {
            "id": f"b{i}",
            "text": f"bit {i}",
            "design": {"name": "warner", "params": {"p": 0.75}},
        }
        for i in range(7)
    ],
}
NOISE = {
    "format": 1,
    "id": "noise",
    "version": 1,
    "title": "Other traffic",
    "privacy_budget": 2.0,
    "min_release": 25,
    "questions": [
        {
            "id": "x",
            "text": "Noise",
            "design": {"name": "warner", "params": {"p": 0.75}},
        }
    ],
}


def encode(survey: dict, n: int) -> dict[str, int]:
    if len(survey["questions"]) == 1:
        return {"q": n}
    return {f"b{i}": (n >> i) & 1 for i in range(7)}


def decode(codes: dict[str, int]) -> int:
    if "q" in codes:
        return codes["q"]
    return sum(codes[f"b{i}"] << i for i in range(7))


def read_files(data: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in data.iterdir() if p.is_file()}


def attack(files: dict[str, bytes], arrival: list[int], logs: str, work: Path) -> dict:
    """Every strategy's correct pairs and concordance; asserts the content checks."""
    raw = files["db.sqlite"]
    journal = files.get("db.sqlite-journal", b"")
    # read the rows as the committed state (a copy with its hot journal rolls back)
    copy = work / "copy"
    copy.mkdir(exist_ok=True)
    for name, blob in files.items():
        (copy / name).write_bytes(blob)
    con = sqlite3.connect(copy / "db.sqlite")
    reports = con.execute(
        "SELECT report_id, response_id, question_id, report FROM reports WHERE survey_id = 'digits'"
    ).fetchall()
    slots = con.execute("SELECT slot, payload FROM staging WHERE filled = 1").fetchall()
    con.close()

    by_response: dict[str, dict[str, int]] = {}
    report_ids: dict[str, list[str]] = {}
    for rid, resp, qid, rep in reports:
        by_response.setdefault(resp, {})[qid] = rep
        report_ids.setdefault(resp, []).append(rid)
    features: dict[int, dict[str, float]] = {}
    for scan, (resp, codes) in enumerate(by_response.items()):
        who = decode(codes)
        offsets = [m.start() for rid in report_ids[resp] for m in re.finditer(rid.encode(), raw)]
        features[who] = {
            "first cell offset": min(offsets),
            "last cell offset": max(offsets),
            "mean cell offset": float(np.mean(offsets)),
            "table scan": scan,
            "in journal": float(any(rid.encode() in journal for rid in report_ids[resp])),
        }
    for slot, payload in slots:
        item = unpack(bytes(payload))
        if item.survey_id != "digits":
            continue
        names = [f"b{i}" for i in range(7)] if len(item.codes) == 7 else ["q"]
        who = decode(dict(zip(names, item.codes, strict=True)))
        offset = raw.find(bytes(payload))
        features[who] = {
            "first cell offset": offset,
            "last cell offset": offset,
            "mean cell offset": offset,
            "table scan": slot,
            "in journal": float(bytes(payload)[:40] in journal),
        }
    assert sorted(features) == list(range(N)), "every acknowledged response is stored once"
    # nothing in the log ties anything to anyone
    assert not re.search(r"[0-9a-f]{32}", logs)
    truth = np.argsort(arrival)  # truth[i] = when invitee i answered
    results = {}
    for name in next(iter(features.values())):
        value = np.array([features[i][name] for i in range(N)])
        guess = np.argsort(value, kind="stable")  # invitees in the order this trace gives
        position = np.empty(N, dtype=int)
        position[guess] = np.arange(N)
        paired = max(int(np.sum(position == truth)), int(np.sum(N - 1 - position == truth)))
        tau, p = stats.kendalltau(value, truth)
        results[name] = {"paired": paired, "tau": float(tau), "p": float(p)}
    return results


def run(survey: dict, tmp: Path, crash: bool) -> dict:
    data = tmp / "data"
    data.mkdir()
    server = Server(f"sqlite:///{data / 'db.sqlite'}", tmp)
    server.start()
    arrival = [int(i) for i in np.random.default_rng(SEED).permutation(N)]
    stop = threading.Event()
    noise_threads = []
    with httpx.Client(base_url=server.base, timeout=30) as http:
        for definition in (survey, NOISE):
            http.post("/api/surveys", json=definition, headers=AUTH).raise_for_status()
        tokens = http.post(
            "/api/surveys/digits/invitations", json={"count": N}, headers=AUTH
        ).json()["tokens"]
        before = (data / "db.sqlite").read_bytes()
        if crash:

            def noise() -> None:
                with httpx.Client(base_url=server.base, timeout=30) as other:
                    while not stop.is_set():
                        try:
                            other.post(
                                "/api/surveys/noise/responses",
                                json={"version": 1, "reports": {"x": 1}},
                            )
                        except httpx.HTTPError:
                            return

            noise_threads = [threading.Thread(target=noise) for _ in range(10)]
            for t in noise_threads:
                t.start()
        for i in arrival:
            credential = http_credential(http, "digits", tokens[i])
            body = {"version": 1, "credential": credential, "reports": encode(survey, i)}
            assert http.post("/api/surveys/digits/responses", json=body).status_code == 201
        if crash:
            server.kill()  # within 0.1 s of the last acknowledgement, under load
            stop.set()
            for t in noise_threads:
                t.join()
        else:
            time.sleep(0.5)
        files = read_files(data)
    if not crash:
        server.stop()
    logs = (tmp / "server.log").read_text()
    for token in tokens:  # no token anywhere, in any form the server saw it
        assert token not in logs and all(token.encode() not in b for b in files.values())
    # spends overwrite invitation cells in place: each token's hash stays where it was
    from deniable.collection.store._schema import hash_token

    after = files["db.sqlite"]
    for token in tokens:
        h = hash_token(token).encode()
        assert before.find(h) == after.find(h)
    return attack(files, arrival, logs, tmp)


@pytest.mark.slow
@pytest.mark.parametrize("survey", [CHOICE64, BINARY7], ids=["64 choices", "7 questions"])
@pytest.mark.parametrize("crash", [False, True], ids=["idle", "sigkill under load"])
def test_the_files_do_not_order_responses_or_pair_them_with_invitations(
    survey: dict, crash: bool, tmp_path: Path
) -> None:
    results = run(survey, tmp_path, crash)
    print("strategies", results)
    for name, r in results.items():
        assert r["paired"] <= CHANCE_BOUND, f"{name}: {r['paired']} of {N} paired"
        if not np.isnan(r["p"]):
            assert r["p"] >= ALPHA, f"{name}: tau {r['tau']:.3f}, p {r['p']:.2g}"


@pytest.mark.slow  # 4.4 s, an attack over many responses: the whole suite
def test_the_attack_orders_responses_when_slots_follow_arrival(tmp_path, monkeypatch):
    """Control: responses written in arrival order (slots taken first to last, crowds
    not shuffled) are ordered by the cell offsets, so the test above has teeth."""

    def lowest(self, k):  # the first free slots, in order
        taken = sorted(self.free)[:k]
        self.free = [s for s in self.free if s not in taken]
        return taken

    monkeypatch.setattr(staging_module.FreeSlots, "take", lowest)
    monkeypatch.setattr(staging_module._random, "shuffle", lambda x: None)
    data = tmp_path / "data"
    data.mkdir()
    store = Store(f"sqlite:///{data / 'db.sqlite'}")
    survey = load_survey(CHOICE64)
    store.publish(survey)
    tokens = store.invitations.issue_tokens("digits", N)
    arrival = [int(i) for i in np.random.default_rng(SEED).permutation(N)]
    for i in arrival:
        store.submit(survey, encode(CHOICE64, i), store_credential(store, "digits", tokens[i]))
    store.release()  # the crowd written in slot order, which here is arrival order
    store.close()
    results = attack(read_files(data), arrival, "", tmp_path)
    print("control", results)
    assert abs(results["first cell offset"]["tau"]) > 0.9  # content grows down the page
    assert results["first cell offset"]["p"] < ALPHA


def test_postgresql_xmin_orders_spends_against_responses() -> None:
    """The limit docs/collection.md states: on PostgreSQL a superuser orders spends
    against responses through the transaction ids (xmin) of their row versions; the
    staging slots' updates carry them (a crowd's reports are inserted in one
    transaction in random order, so after release they no longer do)."""
    from sqlalchemy import text

    from .conftest import POSTGRES_URL, reset_postgres

    if not POSTGRES_URL:
        pytest.skip("DENIABLE_TEST_POSTGRES_URL is not set (.ci/run starts PostgreSQL)")
    reset_postgres(POSTGRES_URL)
    store = Store(POSTGRES_URL)
    try:
        survey = load_survey(BINARY7)  # min_release 100: all 60 wait in their slots
        store.publish(survey)
        tokens = store.invitations.issue_tokens("digits", N)
        order = np.random.default_rng(SEED).permutation(N)
        for i in order:
            credential = store_credential(store, "digits", tokens[i])
            store.submit(survey, encode(BINARY7, int(i)), credential)
        with store.connection() as conn:
            spends = conn.execute(
                text("SELECT xmin::text::bigint AS x, token_hash FROM invitations ORDER BY x")
            ).all()
            rows = conn.execute(
                text("SELECT xmin::text::bigint AS x, payload FROM staging WHERE filled ORDER BY x")
            ).all()
    finally:
        store.close()
    from deniable.collection.store._storage import hash_token

    invitee = {hash_token(t): i for i, t in enumerate(tokens)}
    spend_order = [invitee[h] for _, h in spends]
    decoded = []
    for _, payload in rows:
        item = unpack(bytes(payload))
        decoded.append(sum(c << i for i, c in enumerate(item.codes)))
    paired = sum(a == b for a, b in zip(spend_order, decoded, strict=True))
    print(f"xmin pairs {paired} of {N}")
    assert paired >= N - 2, paired


def _waiting_survey(store: Store):
    """Three 64-choice questions (a response's three codes number its arrival up to
    262,144) and a crowd no test reaches: every response waits in its slot."""
    survey = load_survey(
        {
            "id": "slots",
            "version": 1,
            "title": "t",
            "privacy_budget": 30,
            "min_release": 100_000,
            "questions": [
                {
                    "id": f"q{i}",
                    "text": "Q?",
                    "choices": [str(c) for c in range(64)],
                    "design": {"name": "kary-rr", "params": {"epsilon": 5}},
                    "allow_large_epsilon": True,
                }
                for i in range(3)
            ],
        }
    )
    store.publish(survey)
    return survey


def _slot_order(store: Store, survey, fills: tuple[int, ...]) -> list:
    """Send responses 10 to a transaction up to each fill; Kendall's tau between each
    waiting response's slot and its arrival at each fill."""
    out, sent = [], 0
    for fill in fills:
        while sent < fill:
            group = [
                store.prepare(survey, {"q0": i // 4096, "q1": (i // 64) % 64, "q2": i % 64})
                for i in range(sent, sent + 10)
            ]
            assert store.commit_group(group) == [None] * 10  # a commit never releases
            sent += 10
        with store.connection() as conn:
            rows = conn.exec_driver_sql("SELECT slot, payload FROM staging WHERE filled").all()
        arrival = []
        for _, payload in rows:
            a, b, c = unpack(bytes(payload)).codes
            arrival.append(a * 4096 + b * 64 + c)
        assert sorted(arrival) == list(range(fill))
        out.append(stats.kendalltau([slot for slot, _ in rows], arrival))
    return out


@pytest.mark.slow
def test_no_slot_position_tells_arrival_order_at_any_fill(tmp_path, monkeypatch):
    """5,000 responses wait, sent 10 to a transaction; the table grows from 1,024 slots
    to over 10,000 on the way, moving every waiting response to a uniformly drawn slot
    each time. At 1,500 and at 5,000 waiting, Kendall's tau between slot and arrival is
    what chance gives (p >= 1e-5). Control: growing by appending a block without the
    move orders them (p < 1e-5 at 1,500)."""
    store = Store(f"sqlite:///{tmp_path / 'slots.sqlite'}")
    survey = _waiting_survey(store)
    taus = _slot_order(store, survey, (1_500, 5_000))
    for fill, tau in zip((1_500, 5_000), taus, strict=True):
        print(f"{fill} waiting: tau = {tau.statistic:+.4f}, p = {tau.pvalue:.3g}")
        assert tau.pvalue >= 1e-5, (fill, tau)
    with store.connection() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM staging").scalar() >= 10_000
    store.close()

    def append_only(conn, count):  # the table's growth before the move
        last = conn.exec_driver_sql("SELECT max(slot) FROM staging").scalar()
        conn.execute(
            staging_module.insert(staging_module.staging),
            [{"slot": last + 1 + i, "filled": False, "payload": bytes(256)} for i in range(count)],
        )

    monkeypatch.setattr(staging_module, "_grow", append_only)
    control = Store(f"sqlite:///{tmp_path / 'control.sqlite'}")
    (tau,) = _slot_order(control, _waiting_survey(control), (1_500,))
    print(f"control, appended: tau = {tau.statistic:+.4f}, p = {tau.pvalue:.3g}")
    assert tau.pvalue < 1e-5 and tau.statistic > 0
    control.close()


def _page_order(offsets: list[int], page_size: int = 4096) -> float:
    """Two-sided p-value of arrival order within the pages: each page's Kendall tau
    between its cells' byte offsets and their arrival, combined over pages (Stouffer,
    each tau's null variance 2(2n+5) / (9n(n-1))). SQLite places a new cell in a page
    below the ones before it until the page is rebalanced, so that is where order
    survives."""
    offsets_arr = np.asarray(offsets)
    pages = offsets_arr // page_size
    total, variance = 0.0, 0.0
    for page in np.unique(pages):
        idx = np.flatnonzero(pages == page)
        n = len(idx)
        if n >= 3:
            total += stats.kendalltau(offsets_arr[idx], idx).statistic
            variance += 2 * (2 * n + 5) / (9 * n * (n - 1))
    z = total / np.sqrt(variance)
    return float(2 * stats.norm.sf(abs(z)))


@pytest.mark.slow
def test_the_nullifiers_table_keeps_no_arrival_order(tmp_path):
    """60 invitees answer one after another (one crowd of 60, released once, after the
    last). Each
    credential's nullifier enters the table with the release, the crowd's in random
    order: within the pages, the byte offsets of the nullifiers do not follow arrival
    (p >= ALPHA). A second use of a credential is refused while it waits and after it
    is released. Control: the same nullifiers, and four sets of fresh ones, inserted one
    by one in arrival order (the layout before) are ordered within their pages (the five
    tables' evidence combined, p < ALPHA)."""
    import sqlite3 as sqlite

    from deniable.collection.credentials import nullifier
    from deniable.errors import CredentialRejectedError

    path = tmp_path / "n.sqlite"
    store = Store(f"sqlite:///{path}")
    survey = load_survey(
        {
            "id": "n",
            "version": 1,
            "title": "t",
            "privacy_budget": 1.2,
            "requires_invitation": True,
            "min_release": 60,
            "questions": [
                {"id": "q", "text": "Q?", "design": {"name": "warner", "params": {"p": 0.75}}}
            ],
        }
    )
    store.publish(survey)
    tokens = store.invitations.issue_tokens("n", 60)
    credentials = [store_credential(store, "n", t) for t in tokens]
    for i, credential in enumerate(credentials):
        store.submit(survey, {"q": i % 2}, credential)
        if i == 10:  # waiting in its slot: a second use is refused
            with pytest.raises(CredentialRejectedError):
                store.submit(survey, {"q": 0}, credentials[3])
    store.release()  # the scheduled release after the 60
    assert store.released.count("n") == 60
    with pytest.raises(CredentialRejectedError):  # released: refused too
        store.submit(survey, {"q": 0}, credentials[7])
    store.close()
    names = [nullifier(c.message) for c in credentials]

    def offsets(data: bytes) -> list[int]:
        found = [data.find(n.encode()) for n in names]
        assert min(found) >= 0
        return found

    p = _page_order(offsets(path.read_bytes()))
    print(f"nullifiers: p = {p:.3g}")
    assert p >= ALPHA, p
    # the control: 60 cells in one or two pages leave the detector p >= ALPHA in about
    # 6% of tables (how the random keys fall across a page split; 3e-5 was seen in CI),
    # so five such tables are tried, these nullifiers' and four of fresh ones of the
    # same form, and their evidence combined (Stouffer): the order of any one survives
    z = []
    for trial in range(5):
        control = tmp_path / f"control{trial}.sqlite"
        if trial:
            names[:] = [secrets.token_hex(32) for _ in names]
        with sqlite.connect(control) as conn:
            conn.execute(
                "CREATE TABLE nullifiers (nullifier VARCHAR(64) PRIMARY KEY, survey_id "
                "VARCHAR(64) NOT NULL) WITHOUT ROWID"
            )
            for n in names:  # one transaction per response, as the spends came
                conn.execute("INSERT INTO nullifiers VALUES (?, 'n')", (n,))
                conn.commit()
        z.append(stats.norm.isf(_page_order(offsets(control.read_bytes())) / 2))
    p = float(2 * stats.norm.sf(sum(z) / np.sqrt(len(z))))
    print(f"control, in arrival order (5 tables combined): p = {p:.3g}")
    assert p < ALPHA, p


def _kill_survey(survey_id: str) -> dict:
    """One direct question marked ``pram: true`` (epsilon ln 9: the server keeps the
    answer with chance 9/10) and a list experiment of three items (its count through
    the geometric channel over 0..4)."""
    return {
        "id": survey_id,
        "version": 1,
        "title": "Kill",
        "privacy_budget": 6.0,
        "min_release": 10,
        "questions": [
            {"id": "yes", "text": "Yes?", "design": {"name": "direct"}, "pram": True},
            {"id": "upset", "text": "How many?", "design": {"name": "list-experiment"},
             "items": ["x", "y", "z"], "sensitive_item": "s"},
        ],
    }  # fmt: skip


def _send_all_yes_and_kill(server: Server, survey: dict, n: int) -> None:
    """n responses that all say "yes" and count 4 (every item, the sensitive one
    included): n - 10 in one batch, the last ten one by one, the server SIGKILLed right
    after the last acknowledgement."""
    sid = survey["id"]
    body = {"version": 1, "reports": {"yes": 1, "upset": 4}, "groups": {"upset": 1}}
    with httpx.Client(base_url=server.base, timeout=30) as http:
        assert http.post("/api/surveys", json=survey, headers=AUTH).status_code == 201
        key = http.post(f"/api/surveys/{sid}/ingestion-keys", headers=AUTH).json()["key"]
        item = {"reports": body["reports"], "groups": body["groups"]}
        batch = {"version": 1, "responses": [item] * (n - 10)}
        auth = {"Authorization": f"Bearer {key}"}
        assert http.post(f"/api/surveys/{sid}/batch", json=batch, headers=auth).status_code == 201
        for _ in range(10):
            assert http.post(f"/api/surveys/{sid}/responses", json=body).status_code == 201
    server.kill()


def _payload_codes(raw: bytes, survey_id: str) -> dict[bytes, tuple[int, int]]:
    """Every staged payload of ``survey_id`` found in ``raw``: its first 64 bytes (the
    header, the codes and random padding: one key per response) and its two codes."""
    sid = survey_id.encode()
    header = bytes([0xA7, len(sid)]) + sid + (1).to_bytes(4, "big")
    found = {}
    at = raw.find(header)
    while at >= 0:
        codes = raw[at + len(header) + 9 : at + len(header) + 11]
        found[raw[at : at + 64]] = (codes[0], codes[1])
        at = raw.find(header, at + 1)
    return found


#: Two-sided 4 sigma of the normal law: the exact binomial tests below reject a cell at
#: this p-value (a tail of 6e-5 per cell).
FOUR_SIGMA = 2 * stats.norm.sf(4.0)


def _follow_the_channels(found, survey: dict, where: str) -> None:
    """The codes found are the channels' outputs, not the n answers as sent: the number
    of "yes" follows Binomial(m, 9/10) (the channel keeps the answer) and the number of
    each count Binomial(m, column) (the geometric channel's column for a true 4), each
    by the exact two-sided binomial test at :data:`FOUR_SIGMA` (a normal bound failed a
    cell of probability 1.4e-4 whenever one such count was drawn, 1 in 20 runs)."""
    parsed = load_survey(survey)
    keep = parsed.question("yes").release_channel.matrix[1, 1]
    column = parsed.question("upset").release_channel.matrix[:, 4]
    codes = list(found.values())
    m = len(codes)
    yes = int(sum(c[0] for c in codes))
    assert stats.binomtest(yes, m, keep).pvalue >= FOUR_SIGMA, (where, yes, m, keep)
    counts = np.bincount([c[1] for c in codes], minlength=5)
    for k, (got, want) in enumerate(zip(counts, column, strict=True)):
        assert stats.binomtest(int(got), m, float(want)).pvalue >= FOUR_SIGMA, (where, k, got)


@pytest.mark.slow
def test_the_stored_bytes_hold_no_true_direct_answer_idle_or_after_a_sigkill(tmp_path):
    """400 respondents of a real server process, each answering a direct question
    marked ``pram: true`` with "yes" and a list count of 4. Right after a SIGKILL under
    load, and again at idle after a restart, the database file and its journal are
    read byte by byte: every waiting response's payload found there holds the
    randomized values, so about a tenth of the answers read "no" and the counts are
    spread over 0..4 (the channel's column, within 4 binomial SEs), never the 400 as
    sent."""
    survey = _kill_survey("kill")
    data = tmp_path / "data"
    data.mkdir()
    server = Server(f"sqlite:///{data / 'db.sqlite'}", tmp_path)
    server.start()
    n = 400
    _send_all_yes_and_kill(server, survey, n)
    for moment in ("right after a SIGKILL", "idle"):
        files = read_files(data)
        found = _payload_codes(files["db.sqlite"], "kill")
        assert len(found) == n, (moment, len(found))
        _follow_the_channels(found, survey, moment)
        journal = _payload_codes(files.get("db.sqlite-journal", b""), "kill")
        assert set(journal) <= set(found), moment  # pre-images hold no other payload
        if moment == "idle":
            break
        server.start()  # the hot journal is rolled back; then idle
        time.sleep(0.5)
        server.stop()


def _postgres_files(conn, since: str) -> dict[str, bytes]:
    """After a CHECKPOINT, the heap file of every table of the schema (live rows and
    the dead versions no VACUUM has removed) and every WAL segment written since the
    log sequence number ``since``, read by the server itself (``pg_read_binary_file``,
    which the test role may call as a superuser)."""
    from sqlalchemy import text

    conn.execute(text("CHECKPOINT"))
    files = {}
    tables = conn.execute(
        text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    ).scalars()
    for table in tables:
        path = conn.execute(text("SELECT pg_relation_filepath(:t)"), {"t": table}).scalar()
        files[table] = conn.execute(text("SELECT pg_read_binary_file(:p)"), {"p": path}).scalar()
    first = conn.execute(text("SELECT pg_walfile_name(CAST(:l AS pg_lsn))"), {"l": since}).scalar()
    last = conn.execute(text("SELECT pg_walfile_name(pg_current_wal_lsn())")).scalar()
    segments = conn.execute(
        text("SELECT name FROM pg_ls_waldir() WHERE name BETWEEN :a AND :b ORDER BY name"),
        {"a": first, "b": last},
    ).scalars()
    for name in segments:
        raw = bytes(
            conn.execute(text("SELECT pg_read_binary_file(:p)"), {"p": f"pg_wal/{name}"}).scalar()
        )
        # a record continues across WAL pages: drop each 8 KiB page's header (40 bytes
        # on a segment's first page, 24 on the others) to read it whole
        files[f"pg_wal/{name}"] = b"".join(
            raw[at + (40 if at == 0 else 24) : at + 8192] for at in range(0, len(raw), 8192)
        )
    return {name: bytes(raw) for name, raw in files.items()}


@pytest.mark.slow
def test_postgresql_heap_and_wal_hold_no_true_direct_answer_after_a_sigkill_and_a_release(
    tmp_path,
):
    """The same 400 respondents against PostgreSQL. Right after a SIGKILL, and again
    after a restart and a release (each slot's payload overwritten by random bytes:
    updates that leave the old versions in the heap, no VACUUM run), every table's
    heap file and every WAL segment written since the survey began are read byte by
    byte: each holds exactly the 400 responses' payloads (dead versions included), and
    their codes follow the channels, never the answers as sent."""
    if not POSTGRES_URL:
        pytest.skip("DENIABLE_TEST_POSTGRES_URL is not set (.ci/run starts PostgreSQL)")
    from sqlalchemy import create_engine, text

    from deniable.collection.store._storage import database_url

    from .conftest import reset_postgres

    reset_postgres(POSTGRES_URL)
    # a survey id of its own: WAL segments recycled from earlier runs keep old bytes
    survey_id = f"kill{secrets.token_hex(4)}"
    survey = _kill_survey(survey_id)
    engine = create_engine(database_url(POSTGRES_URL), isolation_level="AUTOCOMMIT")
    # a physical replication slot keeps every WAL segment from here on: another worker's
    # load would otherwise have the server recycle segments before they are read
    slot = f"deniable_{survey_id}"
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_create_physical_replication_slot(:s, true)"), {"s": slot})
        since = conn.execute(text("SELECT CAST(pg_current_wal_lsn() AS text)")).scalar()
    server = Server(POSTGRES_URL, tmp_path)
    try:
        server.start()
        n = 400
        _send_all_yes_and_kill(server, survey, n)
        for moment in ("right after a SIGKILL", "after a release"):
            with engine.connect() as conn:
                files = _postgres_files(conn, since)
            heap = _payload_codes(files["staging"], survey_id)
            assert len(heap) == n, (moment, len(heap))
            _follow_the_channels(heap, survey, f"heap, {moment}")
            wal: dict[bytes, tuple[int, int]] = {}
            for name, raw in files.items():
                if name.startswith("pg_wal/"):
                    wal |= _payload_codes(raw, survey_id)
                elif name != "staging":
                    assert not _payload_codes(raw, survey_id), (moment, name)
            # every payload passed through the log; a record split by a WAL page
            # header can add a key, never an answer as sent (4 SEs of the channels)
            assert set(heap) <= set(wal), moment
            _follow_the_channels(wal, survey, f"WAL, {moment}")
            if moment == "after a release":
                with engine.connect() as conn:
                    released = conn.execute(
                        text("SELECT report FROM reports WHERE survey_id = :s AND "
                             "question_id = 'yes'"), {"s": survey_id}
                    ).scalars().all()  # fmt: skip
                assert len(released) == n
                break
            server.start()
            with httpx.Client(base_url=server.base, timeout=30) as http:
                r = http.post(f"/api/surveys/{survey_id}/release", headers=AUTH)
                assert r.status_code == 200, r.text
            server.stop()
    finally:
        server.stop()
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_drop_replication_slot(:s)"), {"s": slot})
        engine.dispose()

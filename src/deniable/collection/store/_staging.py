"""Responses wait in fixed-size slots, and are released in crowds.

Why
---
A database file keeps the order in which rows arrived unless the writer takes care: in
a SQLite b-tree page the pointer array is in key order, but each cell's *content* is
placed where free space is, in arrival order, so sorting the cells of an index by byte
offset gives the order responses arrived in; a write-ahead log or a later backup keeps
the same. Anyone who knows when a person answered (an analyst who watches the
dashboard, a respondent's neighbour) could then pick out that person's reports.

How
---
- ``staging`` is a table of pre-allocated slots of :data:`PAYLOAD_BYTES` random bytes.
  A response is written into a slot chosen at random among the free ones
  (``UPDATE`` of a cell of unchanged size, which SQLite overwrites in place): where a
  response lies follows the pre-allocation, not its arrival. The table is kept at most
  half full (it at least doubles, by :data:`CHUNK` slots or more), so the choice is
  among many; when it
  grows, every waiting response moves to a slot drawn uniformly from the grown table,
  so no position tells arrival order at any fill.
- At a scheduled moment, at the close or on the analyst's request (never inside an
  arrival's transaction), every key cell of a version with at least ``min_release``
  responses waiting is *released* (:func:`release_due`,
  :mod:`.release_control`): its report rows are inserted into ``reports`` in random
  order and its slots are overwritten with random bytes. Results, exports and
  tallies read ``reports`` only, so every key cell grows by 0 or by at least
  ``min_release`` between any two releases. What waits at the close is withheld for
  good.
- A payload: survey id, version, a time field kept at 0 (no time), one report code per
  question (in the order of the version's questions), the arm drawn (its index, 0
  without arms), each question's group (one bit per question, 0 but for group
  designs) and, for a survey with invitations, the credential's nullifier, then random
  padding. The nullifier enters the ``nullifiers`` table with the release, the crowd's
  in random order, so neither table keeps arrival order; a new credential is checked
  against both (:func:`waiting_nullifiers`).

The rollback journal (``journal_mode=TRUNCATE``, :func:`~.schema.sqlite_engine`) holds at
most the pages the last, unfinished transaction changed, as they were before it;
invitations are spent by overwriting cells of unchanged size too (their ``used`` flag
and a placeholder of the blinded message's hash), so spends keep no order either.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, bindparam, func, insert, select, update

from ._central import smallest_group
from ._payload import (
    _WITH_ARMS,
    _WITH_NULLIFIER,
    NO_ANSWER,
    PAYLOAD_BYTES,
    StagedResponse,
    pack,
    unpack,
)
from ._release_control import disclosure_plan, select_release
from ._schema import arrivals, nullifiers, reports, staging, staging_counts, surveys

if TYPE_CHECKING:
    from ..model import Survey

__all__ = [
    "CHUNK",
    "NO_ANSWER",
    "PAYLOAD_BYTES",
    "PG_LOCK",
    "FreeSlots",
    "Release",
    "StagedResponse",
    "WaitingNullifiers",
    "pack",
    "release_due",
    "stage",
    "surveys_in",
    "unpack",
    "waiting",
    "waiting_nullifiers",
]

#: PostgreSQL advisory lock (transaction level) that serializes writers of the slots.
PG_LOCK = 7318

#: Slots added at a time.
CHUNK = 1024
_random = secrets.SystemRandom()


@dataclass(frozen=True)
class Release:
    """A crowd of ``responses`` of one version moved into ``reports``; ``released`` is the
    version's total released since; ``smallest_group`` the fewest of the crowd that share
    arm, groups and direct answers (:func:`.central.smallest_group`); ``number`` the
    release's number in its version (1, 2, ...), which its report rows carry."""

    survey_id: str
    version: int
    responses: int
    released: int
    smallest_group: int = 0
    number: int = 0
    #: responses withheld for good at the close (0 for a scheduled release)
    withheld: int = 0


# statements built once (their construction costs more than running them)
_WAITING = select(func.sum(staging_counts.c.n))
_FILL = (
    update(staging)
    .where(staging.c.slot == bindparam("s"), staging.c.filled.is_(False))
    .values(filled=True, payload=bindparam("p"))
)
_VERSION = (staging_counts.c.survey_id == bindparam("sid")) & (
    staging_counts.c.version == bindparam("v")
)
_ADD = update(staging_counts).where(_VERSION).values(n=staging_counts.c.n + bindparam("k"))
_ARRIVED = (
    update(arrivals)
    .where(
        (arrivals.c.survey_id == bindparam("sid"))
        & (arrivals.c.version == bindparam("v"))
        & (arrivals.c.arm == bindparam("a"))
    )
    .values(n=arrivals.c.n + bindparam("k"))
)
_WAITING_BY_VERSION = select(
    staging_counts.c.survey_id, staging_counts.c.version, staging_counts.c.n
).where(staging_counts.c.n > 0)


def _raw(conn: Connection, sql: str) -> list[Any]:
    """All rows of a constant query through the driver's own cursor, in this
    transaction (a scan of the slots: SQLAlchemy's per-row result handling would cost
    more than the scan)."""
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def _grow(conn: Connection, count: int) -> None:
    """Add ``count`` slots to the table and move every waiting response to a slot drawn
    uniformly from the grown table (a random permutation onto a random subset), so that
    no slot's position tells when its response arrived, whatever the fill: without the
    move, the responses arriving after a growth would crowd into the new block at the
    table's end. Every write is an overwrite of a cell of unchanged size."""
    last = conn.execute(select(func.max(staging.c.slot))).scalar() or 0
    rows = [
        {"slot": last + 1 + i, "filled": False, "payload": os.urandom(PAYLOAD_BYTES)}
        for i in range(count)
    ]
    for start in range(0, len(rows), 500):
        conn.execute(insert(staging), rows[start : start + 500])
    filled = _raw(conn, "SELECT slot, payload FROM staging WHERE filled")
    if not filled:
        return
    every = [slot for (slot,) in _raw(conn, "SELECT slot FROM staging")]
    chosen = _random.sample(every, len(filled))
    payloads = [bytes(p) for _, p in filled]
    _random.shuffle(payloads)
    target = dict(zip(chosen, payloads, strict=True))
    vacated = [slot for slot, _ in filled if slot not in target]
    params = [{"s": s, "f": True, "p": p} for s, p in target.items()]
    params += [{"s": s, "f": False, "p": os.urandom(PAYLOAD_BYTES)} for s in vacated]
    _random.shuffle(params)
    conn.execute(
        update(staging)
        .where(staging.c.slot == bindparam("s"))
        .values(filled=bindparam("f"), payload=bindparam("p")),
        params,
    )


class FreeSlots:
    """This process's list of free slots, so that a commit need not scan the table.

    It may go stale (another worker process filled a slot, a transaction that freed
    slots rolled back): every fill is conditional on the slot being free, a short count
    is detected, and the list is then read again from the table.
    """

    def __init__(self) -> None:
        self.free: list[int] | None = None

    def load(self, conn: Connection) -> list[int]:
        self.free = [slot for (slot,) in _raw(conn, "SELECT slot FROM staging WHERE NOT filled")]
        return self.free

    def take(self, k: int) -> list[int]:
        """``k`` slots drawn at random without replacement (removed from the list)."""
        assert self.free is not None and len(self.free) >= k
        free, out = self.free, []
        for _ in range(k):
            i = _random.randrange(len(free))
            free[i], free[-1] = free[-1], free[i]
            out.append(free.pop())
        return out

    def give(self, slots: Sequence[int]) -> None:
        if self.free is not None:
            self.free.extend(slots)


def stage(
    conn: Connection, items: Sequence[StagedResponse], slots: FreeSlots | None = None
) -> None:
    """Write each response into a free slot chosen at random (in this transaction, which
    must hold the write lock: SQLite's ``BEGIN IMMEDIATE``; on PostgreSQL the caller
    takes :data:`PG_LOCK`). ``slots``: this process's list of free slots (default: read
    from the table)."""
    if not items:
        return
    slots = slots or FreeSlots()
    counts: dict[tuple[str, int], int] = {}
    for item in items:
        counts[item.survey_id, item.version] = counts.get((item.survey_id, item.version), 0) + 1
    free = slots.free if slots.free is not None else slots.load(conn)
    waiting = int(conn.execute(_WAITING).scalar() or 0)
    if 2 * (waiting + len(items)) > waiting + len(free):  # keep it at most half full
        need = 2 * (waiting + len(items)) - (waiting + len(free))
        # at least double: every growth moves every waiting response, so a fixed step
        # would make ingestion quadratic in what waits (scheduled releases let it grow)
        _grow(conn, max(CHUNK * (1 + need // CHUNK), waiting + len(free)))
        slots.load(conn)
    chosen = slots.take(len(items))
    params = [{"s": slot, "p": pack(item)} for slot, item in zip(chosen, items, strict=True)]
    if conn.execute(_FILL, params).rowcount != len(params):
        # another process took some of these slots: place the others one by one
        placed = {
            slot
            for slot, payload in _raw(conn, "SELECT slot, payload FROM staging WHERE filled")
            if any(bytes(payload) == p["p"] and slot == p["s"] for p in params)
        }
        slots.load(conn)
        for p in params:
            if p["s"] in placed:
                continue
            while True:
                (slot,) = slots.take(1)
                if conn.execute(_FILL, {"s": slot, "p": p["p"]}).rowcount == 1:
                    break
    arms: dict[tuple[str, int, int], int] = {}
    for item in items:
        key = (item.survey_id, item.version, item.arm)
        arms[key] = arms.get(key, 0) + 1
    for (sid, version, arm), n in arms.items():
        if conn.execute(_ARRIVED, {"sid": sid, "v": version, "a": arm, "k": n}).rowcount == 0:
            conn.execute(insert(arrivals).values(survey_id=sid, version=version, arm=arm, n=n))
    for (sid, version), n in counts.items():
        done = conn.execute(_ADD, {"sid": sid, "v": version, "k": n})
        if done.rowcount == 0:  # the version's first response: count what was released
            before = conn.execute(
                select(func.count(func.distinct(reports.c.response_id))).where(
                    reports.c.survey_id == sid, reports.c.version == version
                )
            ).scalar()
            conn.execute(
                insert(staging_counts).values(
                    survey_id=sid, version=version, n=n, released=int(before or 0)
                )
            )


def surveys_in(
    conn: Connection, cache: dict[tuple[str, int], Survey]
) -> Callable[[str, int], Survey]:
    """A lookup of published survey versions that reads through ``conn`` (the release's
    own transaction: on SQLite another connection would wait for the write lock it holds
    once it spills pages), keeping what it parses in ``cache``."""
    from ..model import parse_survey

    def read(survey_id: str, version: int) -> Survey:
        known = cache.get((survey_id, version))
        if known is None:
            q = select(surveys.c.definition).where(
                surveys.c.survey_id == survey_id, surveys.c.version == version
            )
            known = cache[survey_id, version] = parse_survey(conn.execute(q).scalar_one())
        return known

    return read


def release_due(
    conn: Connection,
    surveys: Any,
    free: FreeSlots | None = None,
    only: str | None = None,
    withhold: bool = False,
) -> list[Release]:
    """Release, of every version with responses waiting (of survey id ``only`` if
    given), every key cell with at least ``min_release`` waiting
    (:func:`.release_control.select_release`; the whole version for one without key
    variables): their report rows go into ``reports`` in random order, their
    nullifiers into ``nullifiers`` in random order, their slots are overwritten with
    random bytes. With ``withhold`` (the close), what still waits afterwards is
    withheld for good: its slots are overwritten, its nullifiers kept (a credential
    stays spent) and only its number is counted (``staging_counts.withheld``).
    ``surveys(id, version)`` gives the :class:`~deniable.collection.model.Survey`.

    Called at scheduled moments and at the close, never inside an arrival's
    transaction, so no arrival chooses when a release happens. Its cost is one scan of
    the filled slots, whatever waits (``bench/ingest.py``)."""
    waiting = [
        (sid, int(v))
        for sid, v, _ in conn.execute(_WAITING_BY_VERSION).all()
        if only is None or sid == only
    ]
    if not waiting:
        return []
    out: list[Release] = []
    filled = _raw(conn, "SELECT slot, payload FROM staging WHERE filled")
    for (sid, version), (slots, payloads, codes) in sorted(_by_version(filled, waiting).items()):
        survey: Survey = surveys(sid, version)
        take = select_release(disclosure_plan(survey), codes, survey.min_release)
        # only what leaves the slots is unpacked whole (its report rows, its nullifier)
        chosen = [unpack(p) for p, t in zip(payloads, take, strict=True) if t]
        kept = [unpack(p) for p, t in zip(payloads, take, strict=True) if withhold and not t]
        gone = [s for s, t in zip(slots, take, strict=True) if t or withhold]
        number = 0
        if chosen:
            number = 1 + _releases(conn, sid, version)
            ids = [q.id for q in survey.questions]
            flat = [row for item in chosen for row in _report_rows(item, ids, number)]
            _random.shuffle(flat)  # no order within the crowd
            _insert_reports(conn, flat)
        spent = [
            {"nullifier": c.nullifier.hex(), "survey_id": sid}
            for c in chosen + (kept if withhold else [])
            if c.nullifier
        ]
        if spent:  # in random order too
            _random.shuffle(spent)
            conn.execute(insert(nullifiers), spent)
        if not gone:
            continue
        _random.shuffle(gone)
        if free is not None:
            free.give(gone)
        conn.execute(
            update(staging)
            .where(staging.c.slot == bindparam("s"))
            .values(filled=False, payload=bindparam("p")),
            [{"s": s, "p": os.urandom(PAYLOAD_BYTES)} for s in gone],
        )
        withheld = len(kept) if withhold else 0
        values: dict[str, Any] = {
            "n": staging_counts.c.n - len(gone),
            "released": staging_counts.c.released + len(chosen),
            "withheld": staging_counts.c.withheld + withheld,
        }
        if chosen:
            values["releases"] = number
        conn.execute(update(staging_counts).where(_version(sid, version)).values(**values))
        total = conn.execute(select(staging_counts.c.released).where(_version(sid, version)))
        out.append(
            Release(
                sid,
                version,
                len(chosen),
                int(total.scalar() or 0),
                smallest_group(survey, chosen) if chosen else 0,
                number,
                withheld,
            )
        )
    return out


def _by_version(
    filled: Sequence[tuple[int, Any]], wanted: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], tuple[list[int], list[bytes], NDArray[np.int64]]]:
    """The filled slots of each wanted version: their slots, payloads and report codes
    (int64, shape (n, questions)), read from the payloads' fixed layout at once (a
    payload of the format before arms, which a database may still hold, by
    :func:`unpack`)."""
    out: dict[tuple[str, int], tuple[list[int], list[bytes], NDArray[np.int64]]] = {}
    if not filled:
        return out
    payloads = [bytes(p) for _, p in filled]
    slots = np.array([s for s, _ in filled])
    table = np.frombuffer(b"".join(payloads), dtype=np.uint8).reshape(len(payloads), -1)
    modern = np.isin(table[:, 0], (_WITH_ARMS, _WITH_NULLIFIER))
    # the format before arms (a database may still hold some): unpacked once
    before_arms = {int(i): unpack(payloads[i]) for i in np.flatnonzero(~modern)}
    for sid, version in wanted:
        name = sid.encode()
        head = bytes([len(name)]) + name + version.to_bytes(4, "big")
        at = 1 + len(head)
        rows = np.flatnonzero(modern & np.all(table[:, 1:at] == np.frombuffer(head, np.uint8), 1))
        old = [
            i for i, item in before_arms.items() if (item.survey_id, item.version) == (sid, version)
        ]
        if not rows.size and not old:
            continue
        k = int(table[rows[0], at + 8]) if rows.size else len(before_arms[old[0]].codes)
        codes = table[rows, at + 9 : at + 9 + k].astype(np.int64)
        if old:
            codes = np.vstack([codes, [before_arms[i].codes for i in old]])
        index: list[int] = [*rows.tolist(), *old]
        out[sid, version] = (
            slots[index].tolist(),
            [payloads[i] for i in index],
            codes.reshape(len(index), k),
        )
    return out


def _version(sid: str, version: int) -> Any:
    return (staging_counts.c.survey_id == sid) & (staging_counts.c.version == version)


def _releases(conn: Connection, sid: str, version: int) -> int:
    """How many releases the version has had."""
    q = select(staging_counts.c.releases).where(_version(sid, version))
    return int(conn.execute(q).scalar() or 0)


#: Every column of a report row, in the table's order.
_REPORT_COLUMNS = tuple(column.name for column in reports.columns)


def _insert_reports(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert report rows (tuples in the order of ``_REPORT_COLUMNS``) in the order
    given, through the driver's ``executemany``."""
    if not rows:
        return
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    sql = (
        f"INSERT INTO reports ({', '.join(_REPORT_COLUMNS)}) "
        f"VALUES ({', '.join([mark] * len(_REPORT_COLUMNS))})"
    )
    conn.exec_driver_sql(sql, list(rows))


def _report_rows(
    item: StagedResponse, question_ids: Sequence[str], release: int
) -> list[tuple[Any, ...]]:
    """The ``reports`` rows of one response (fresh random ids) in the version's release
    number ``release``, as tuples in the order of ``_REPORT_COLUMNS``."""
    response_id = secrets.token_hex(16)
    groups = item.groups or (0,) * len(item.codes)
    return [
        (
            secrets.token_hex(16),
            response_id,
            item.survey_id,
            item.version,
            qid,
            code,
            release,
            item.arm,
            group,
        )
        for qid, code, group in zip(question_ids, item.codes, groups, strict=True)
        if code != NO_ANSWER
    ]


def waiting_nullifiers(conn: Connection) -> set[str]:
    """The nullifiers (hex) of the responses waiting in slots, every survey: spent
    credentials whose rows are not yet in the ``nullifiers`` table (one scan)."""
    out = set()
    for (payload,) in _raw(conn, "SELECT payload FROM staging WHERE filled"):
        data = bytes(payload)
        if data[0] == _WITH_NULLIFIER:
            nullifier = unpack(data).nullifier
            if nullifier:
                out.add(nullifier.hex())
    return out


_STAGED_EVER = select(
    func.coalesce(
        func.sum(staging_counts.c.n + staging_counts.c.released + staging_counts.c.withheld), 0
    )
)


class WaitingNullifiers:
    """This process's copy of :func:`waiting_nullifiers`, so that a commit need not
    scan every waiting slot (which made ingestion slow down as responses waited).

    It is valid while the number of responses ever staged (``staging_counts``: waiting,
    released and withheld together, which only staging changes) is the number it last
    saw: another process's stage changes it, and the copy is then read again. The
    caller holds the write lock, so nothing is staged between the check and the
    commit; a rolled-back commit must call :meth:`forget`.
    """

    def __init__(self) -> None:
        self._known: set[str] | None = None
        self._staged = -1

    def among(self, conn: Connection, names: Iterable[str]) -> set[str]:
        """Those of ``names`` that wait in a slot (read through ``conn``)."""
        staged = int(conn.execute(_STAGED_EVER).scalar() or 0)
        if self._known is None or staged != self._staged:
            self._known, self._staged = waiting_nullifiers(conn), staged
        return self._known & set(names)

    def add(self, conn: Connection, names: Iterable[str | None]) -> None:
        """Record the nullifiers this transaction has just staged."""
        if self._known is None:
            return
        self._known |= {n for n in names if n}
        self._staged = int(conn.execute(_STAGED_EVER).scalar() or 0)

    def forget(self) -> None:
        """Read the slots again at the next check (after a release or a rollback)."""
        self._known, self._staged = None, -1


def waiting(conn: Connection, survey_id: str) -> dict[int, int]:
    """Responses waiting for their crowd, per version of a survey id."""
    q = select(staging_counts.c.version, staging_counts.c.n).where(
        staging_counts.c.survey_id == survey_id
    )
    return {int(v): int(n) for v, n in conn.execute(q) if n}

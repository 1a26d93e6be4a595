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
- Once a survey version has ``min_release`` responses waiting (the survey's crowd
  size), they are *released* (:func:`release_due`; in the transaction that completes
  the crowd, or later and larger when the server defers releases under load): their
  report rows are inserted into ``reports`` in random order and their slots are
  overwritten with random bytes.
  Results, exports and tallies read ``reports`` only, so every release adds a crowd of
  at least ``min_release`` responses, and the difference of two releases isolates a
  crowd, never a person. A version with fewer waiting is withheld until it has them.
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

from sqlalchemy import Connection, bindparam, func, insert, select, update

from ._central import smallest_group
from ._payload import _WITH_NULLIFIER, NO_ANSWER, PAYLOAD_BYTES, StagedResponse, pack, unpack
from ._release_control import DisclosurePlan, disclosure_plan, released_sensitive, select_release
from ._schema import nullifiers, reports, staging, staging_counts, surveys

if TYPE_CHECKING:
    from ..model._survey import Survey

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
        # would make ingestion quadratic in what waits
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
    from ..model._survey import parse_survey

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
    min_release: Callable[[str, int], int],
    surveys: Any,
    free: FreeSlots | None = None,
) -> list[Release]:
    """Release what may be released of every version with at least its crowd
    (``min_release(id, version)``) waiting: the responses that
    :func:`.disclosure.select_release` takes (all of them for a version without direct
    answers; otherwise whole atoms of at least ``min_release`` that keep the key cells'
    l-diversity) go into ``reports`` in random order, their slots are overwritten with
    random bytes, and the others wait, whole. ``surveys(id, version)`` gives the
    :class:`~deniable.collection.model.Survey` (for the question ids)."""
    waiting = conn.execute(_WAITING_BY_VERSION).all()
    due = [(sid, int(v)) for sid, v, n in waiting if n >= min_release(sid, int(v))]
    if not due:
        return []
    filled = _raw(conn, "SELECT slot, payload FROM staging WHERE filled")
    out: list[Release] = []
    for sid, version in due:
        survey: Survey = surveys(sid, version)
        ids = [q.id for q in survey.questions]
        slots, crowd = [], []
        for slot, payload in filled:
            item = unpack(bytes(payload))
            if item.survey_id != sid or item.version != version:
                continue
            slots.append(slot)
            crowd.append(item)
        plan = disclosure_plan(survey)
        released = (
            released_sensitive(plan, _released_responses(conn, survey, plan))
            if plan.sensitive
            else {}
        )
        take = select_release(
            plan,
            [(item.codes, item.arm) for item in crowd],
            released,
            survey.min_release,
            survey.l_diversity,
        )
        slots = [s for s, t in zip(slots, take, strict=True) if t]
        crowd = [c for c, t in zip(crowd, take, strict=True) if t]
        if not crowd:  # every waiting response would single someone out: all wait
            continue
        number = 1 + int(
            conn.execute(
                select(staging_counts.c.releases).where(
                    staging_counts.c.survey_id == sid, staging_counts.c.version == version
                )
            ).scalar()
            or 0
        )
        rows = [_report_rows(item, ids, number) for item in crowd]
        _random.shuffle(rows)
        flat = [row for response in rows for row in response]
        _random.shuffle(flat)  # no order within the crowd either
        _insert_reports(conn, flat)
        spent = [{"nullifier": c.nullifier.hex(), "survey_id": sid} for c in crowd if c.nullifier]
        if spent:  # the crowd's nullifiers, in random order too
            _random.shuffle(spent)
            conn.execute(insert(nullifiers), spent)
        _random.shuffle(slots)
        if free is not None:
            free.give(slots)
        conn.execute(
            update(staging)
            .where(staging.c.slot == bindparam("s"))
            .values(filled=False, payload=bindparam("p")),
            [{"s": s, "p": os.urandom(PAYLOAD_BYTES)} for s in slots],
        )
        conn.execute(
            update(staging_counts)
            .where(staging_counts.c.survey_id == sid, staging_counts.c.version == version)
            .values(
                n=staging_counts.c.n - len(slots),
                released=staging_counts.c.released + len(slots),
                releases=number,
            )
        )
        total = conn.execute(
            select(staging_counts.c.released).where(
                staging_counts.c.survey_id == sid, staging_counts.c.version == version
            )
        ).scalar()
        out.append(
            Release(
                sid, version, len(slots), int(total or 0), smallest_group(survey, crowd), number
            )
        )
    return out


def _released_responses(
    conn: Connection, survey: Survey, plan: DisclosurePlan
) -> list[tuple[list[int], int]]:
    """The released responses of a version in the arms that ask sensitive questions
    directly: ``(codes in question order, a skipped answer as NO_ANSWER; arm index)``,
    only the key and sensitive positions filled."""
    ids = [q.id for q in survey.questions]
    wanted = sorted({*plan.keys, *(i for pos in plan.sensitive.values() for i in pos)})
    q = select(reports.c.response_id, reports.c.arm, reports.c.question_id, reports.c.report).where(
        reports.c.survey_id == survey.id,
        reports.c.version == survey.version,
        reports.c.arm.in_(list(plan.sensitive)),
        reports.c.question_id.in_([ids[i] for i in wanted]),
    )
    position = {qid: i for i, qid in enumerate(ids)}
    responses: dict[str, tuple[list[int], int]] = {}
    for response_id, arm, qid, code in conn.execute(q):
        codes, _ = responses.setdefault(response_id, ([NO_ANSWER] * len(ids), int(arm)))
        codes[position[qid]] = int(code)
    return list(responses.values())


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
    credentials whose rows are not yet in the ``nullifiers`` table."""
    out = set()
    for (payload,) in _raw(conn, "SELECT payload FROM staging WHERE filled"):
        data = bytes(payload)
        if data[0] == _WITH_NULLIFIER:
            nullifier = unpack(data).nullifier
            if nullifier:
                out.add(nullifier.hex())
    return out


_STAGED_EVER = select(func.coalesce(func.sum(staging_counts.c.n + staging_counts.c.released), 0))


class WaitingNullifiers:
    """This process's copy of :func:`waiting_nullifiers`, so that a commit need not
    scan every waiting slot (a scan per commit made ingestion slow down as responses
    waited).

    It is valid while the number of responses ever staged (``staging_counts``: waiting
    and released together, which only staging changes) is the number it last saw:
    another process's stage changes it, and the copy is then read again. The caller
    holds the write lock, so nothing is staged between the check and the commit; a
    rolled-back commit must call :meth:`forget`.
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

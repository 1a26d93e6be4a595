"""Durable storage of surveys, invitation tokens and randomized reports (SQLAlchemy Core).

SQLite (the default: a file created on first use, WAL journal, ``synchronous=FULL`` so a
commit survives a crash of the process *and* of the machine) or PostgreSQL
(``postgresql://user:pass@host/db``, driven by psycopg 3).

What is stored, and what is not
-------------------------------
- ``surveys``: each published (id, version) with its canonical JSON and SHA-256 digest.
  Immutable: republishing the same content is a no-op, other content is refused.
- ``invitations``: SHA-256 hashes of one-time tokens and whether each was used; the
  plaintext token is returned once, when issued, and never stored. No time of use.
- ``reports``: one row per (response, question): the randomized report code only.
  There is no column for a true answer, no IP address, no respondent identifier and
  no exact time (only the start of a coarse bucket, default one hour). Rows are keyed
  by a random 128-bit id; on SQLite the table is ``WITHOUT ROWID`` so its physical
  order is that random key, not arrival order; every read orders by the random key.
  The invitation that a response spent is not linked to it.

Durability
----------
:meth:`Store.submit` returns only after the transaction that marks the token used and
inserts the reports has committed; a caller acknowledges the respondent after that.

Schema migrations are named and applied in order at start-up (:data:`MIGRATIONS`); the
``schema_migrations`` table records those applied.

Limit: on PostgreSQL the heap keeps arrival order and a superuser can correlate rows
through system columns (the transaction id ``xmin`` shared by a spent token's row
version and its reports) until ``VACUUM`` reclaims old row versions. The application's
readers (results, exports) never expose either: they read tallies or order by the
random key.
"""

from __future__ import annotations

from .._extras import require

require("sqlalchemy", "server")
require("pandas", "server")

import hashlib
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Connection,
    Engine,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from ..errors import (
    InvitationError,
    ReportValidationError,
    SurveyConflictError,
    SurveyNotFoundError,
)
from ..tallies import Tally
from .survey import Survey, parse_survey

__all__ = [
    "DEFAULT_SQLITE_FILE",
    "MIGRATIONS",
    "PendingResponse",
    "Store",
    "database_url",
    "hash_token",
]

#: File name of the default SQLite database, created in the working directory.
DEFAULT_SQLITE_FILE = "deniable.sqlite"

metadata = MetaData()

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("position", Integer, nullable=False),
)
surveys = Table(
    "surveys",
    metadata,
    Column("survey_id", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("definition", Text, nullable=False),
)
invitations = Table(
    "invitations",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("survey_id", String(64), nullable=False),
    Column("used", Boolean, nullable=False),
    sqlite_with_rowid=False,
)
reports = Table(
    "reports",
    metadata,
    Column("report_id", String(32), primary_key=True),
    Column("response_id", String(32), nullable=False),
    Column("survey_id", String(64), nullable=False),
    Column("version", Integer, nullable=False),
    Column("question_id", String(64), nullable=False),
    Column("report", Integer, nullable=False),
    Column("received_bucket", Integer, nullable=False),
    ForeignKeyConstraint(["survey_id", "version"], ["surveys.survey_id", "surveys.version"]),
    CheckConstraint("report >= 0", name="report_non_negative"),
    Index("reports_tally", "survey_id", "version", "question_id", "report"),
    sqlite_with_rowid=False,
)


def _initial(conn: Connection) -> None:
    for table in (surveys, invitations, reports):
        table.create(conn, checkfirst=True)


def _invitation_index(conn: Connection) -> None:
    # plain DDL so the index is not part of the table metadata that migration 1 creates
    conn.execute(text("CREATE INDEX IF NOT EXISTS invitations_survey ON invitations (survey_id)"))


#: Ordered, named schema migrations; never edit one that has shipped, append a new one.
MIGRATIONS: Sequence[tuple[str, Callable[[Connection], None]]] = (
    ("0001_initial", _initial),
    ("0002_invitation_survey_index", _invitation_index),
)


def database_url(url: str | None = None) -> str:
    """Resolve the database URL: the argument, else ``DENIABLE_DATABASE_URL``, else a
    SQLite file :data:`DEFAULT_SQLITE_FILE` in the working directory.

    ``postgresql://`` and ``postgres://`` URLs are given the psycopg 3 driver.
    """
    url = url or os.environ.get("DENIABLE_DATABASE_URL") or ""
    if not url:
        return f"sqlite:///{Path.cwd() / DEFAULT_SQLITE_FILE}"
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def hash_token(token: str) -> str:
    """SHA-256 (hex) of an invitation token. Tokens carry 192 random bits, so a fast
    hash suffices: there is nothing to brute-force."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _sqlite_engine(url: str, *, immediate: bool) -> Engine:
    engine = create_engine(
        url,
        connect_args={"timeout": 60, "check_same_thread": False},
        pool_size=8,
        max_overflow=32,
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy's begin event emits BEGIN
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # Writers take the write lock up front, so two writers queue on the busy
        # timeout instead of failing to upgrade a read snapshot.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


@dataclass(frozen=True)
class PendingResponse:
    """A validated response waiting for its transaction (see :meth:`Store.commit_group`)."""

    survey_id: str
    requires_invitation: bool
    token: str | None
    rows: list[dict[str, Any]]


class Store:
    """The collection database.

    Parameters
    ----------
    url : str, optional
        SQLAlchemy URL (see :func:`database_url` for the default).
    bucket_seconds : int, default 3600
        Width of the time buckets reports are filed under (seconds, >= 60).

    Raises
    ------
    ValueError
        If ``bucket_seconds < 60``.
    """

    def __init__(self, url: str | None = None, *, bucket_seconds: int = 3600) -> None:
        if bucket_seconds < 60:
            raise ValueError(f"bucket_seconds must be >= 60, got {bucket_seconds}")
        self.url = database_url(url)
        self.bucket_seconds = bucket_seconds
        self.is_sqlite = self.url.startswith("sqlite")
        if self.is_sqlite:
            self.engine = _sqlite_engine(self.url, immediate=True)
            self.reader = _sqlite_engine(self.url, immediate=False)
        else:
            self.engine = create_engine(self.url, pool_size=10, max_overflow=40)
            self.reader = self.engine
        self._cache: dict[tuple[str, int], Survey] = {}
        self.migrate()

    def close(self) -> None:
        """Release pooled connections."""
        self.engine.dispose()
        self.reader.dispose()

    # -- schema ------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply the migrations not yet recorded, in order; return their names."""
        applied: list[str] = []
        with self.engine.begin() as conn:
            if not self.is_sqlite:  # one migrator at a time across processes
                conn.execute(text("SELECT pg_advisory_xact_lock(7316)"))
            schema_migrations.create(conn, checkfirst=True)
            done = set(conn.execute(select(schema_migrations.c.name)).scalars())
            for position, (name, step) in enumerate(MIGRATIONS):
                if name not in done:
                    step(conn)
                    conn.execute(insert(schema_migrations).values(name=name, position=position))
                    applied.append(name)
        return applied

    def applied_migrations(self) -> list[str]:
        """Names of the applied migrations, in order."""
        with self.reader.connect() as conn:
            q = select(schema_migrations.c.name).order_by(schema_migrations.c.position)
            return list(conn.execute(q).scalars())

    # -- surveys -----------------------------------------------------------------
    def publish(self, survey: Survey) -> bool:
        """Publish a survey version. Returns True if new, False if already published
        with identical content.

        Raises
        ------
        SurveyConflictError
            If (id, version) exists with different content, or a newer version exists.
        """
        with self.engine.begin() as conn:
            row = conn.execute(
                select(surveys.c.digest).where(
                    surveys.c.survey_id == survey.id, surveys.c.version == survey.version
                )
            ).first()
            if row is not None:
                if row.digest == survey.digest:
                    return False
                raise SurveyConflictError(
                    f"survey {survey.id!r} version {survey.version} is already published with "
                    "different content; publish the change as a new version"
                )
            latest = conn.execute(
                select(func.max(surveys.c.version)).where(surveys.c.survey_id == survey.id)
            ).scalar()
            if latest is not None and latest > survey.version:
                raise SurveyConflictError(
                    f"survey {survey.id!r} already has version {latest}; a new version must "
                    f"be greater than {latest}"
                )
            try:
                conn.execute(
                    insert(surveys).values(
                        survey_id=survey.id,
                        version=survey.version,
                        digest=survey.digest,
                        definition=survey.canonical_json(),
                    )
                )
            except IntegrityError:  # pragma: no cover - lost a race with an identical publish
                raise SurveyConflictError(
                    f"survey {survey.id!r} version {survey.version} was published concurrently"
                ) from None
        return True

    def cached_survey(self, survey_id: str, version: int) -> Survey | None:
        """The survey if this process has already loaded it (published ones never change)."""
        return self._cache.get((survey_id, version))

    def survey(self, survey_id: str, version: int | None = None) -> Survey:
        """A published survey: the given version, or the latest.

        Raises
        ------
        SurveyNotFoundError
        """
        if version is not None and (survey_id, version) in self._cache:
            return self._cache[survey_id, version]
        q = select(surveys.c.version, surveys.c.definition).where(surveys.c.survey_id == survey_id)
        q = (
            q.where(surveys.c.version == version)
            if version is not None
            else q.order_by(surveys.c.version.desc()).limit(1)
        )
        with self.reader.connect() as conn:
            row = conn.execute(q).first()
        if row is None:
            what = f"survey {survey_id!r}" + ("" if version is None else f" version {version}")
            raise SurveyNotFoundError(f"no published {what}")
        survey = parse_survey(row.definition)
        self._cache[survey_id, row.version] = survey
        return survey

    def survey_ids(self) -> list[tuple[str, int]]:
        """All published (id, version) pairs, sorted."""
        with self.reader.connect() as conn:
            q = select(surveys.c.survey_id, surveys.c.version).order_by(
                surveys.c.survey_id, surveys.c.version
            )
            return [(r.survey_id, r.version) for r in conn.execute(q)]

    # -- invitations -------------------------------------------------------------
    def issue_tokens(self, survey_id: str, count: int) -> list[str]:
        """Create ``count`` one-time invitation tokens (1..100,000) for a published survey.

        Returns the plaintext tokens (URL-safe, 192 random bits from ``secrets``); only
        their SHA-256 hashes are stored.
        """
        if not 1 <= count <= 100_000:
            raise ValueError(f"count must be in 1..100000, got {count}")
        self.survey(survey_id)
        tokens = [secrets.token_urlsafe(24) for _ in range(count)]
        rows = [
            {"token_hash": hash_token(t), "survey_id": survey_id, "used": False} for t in tokens
        ]
        with self.engine.begin() as conn:
            conn.execute(insert(invitations), rows)
        return tokens

    # -- reports -----------------------------------------------------------------
    def _rows(
        self, survey: Survey, responses: Sequence[Mapping[str, Any]], bucket: int
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        ids = [q.id for q in survey.questions]
        sizes = {q.id: q.mechanism.n_reports for q in survey.questions}
        for i, response in enumerate(responses):
            if not isinstance(response, Mapping) or set(response) != set(ids):
                got = sorted(response) if isinstance(response, Mapping) else type(response).__name__
                raise ReportValidationError(
                    f"responses[{i}].reports must answer exactly the questions {ids}, got {got}"
                )
            response_id = secrets.token_hex(16)
            for qid in ids:
                code = response[qid]
                if type(code) is not int or not 0 <= code < sizes[qid]:
                    raise ReportValidationError(
                        f"responses[{i}].reports.{qid} must be an integer report code in "
                        f"0..{sizes[qid] - 1}, got {code!r}"
                    )
                rows.append(
                    {
                        "report_id": secrets.token_hex(16),
                        "response_id": response_id,
                        "survey_id": survey.id,
                        "version": survey.version,
                        "question_id": qid,
                        "report": code,
                        "received_bucket": bucket,
                    }
                )
        return rows

    def _bucket(self) -> int:
        now = int(time.time())
        return now - now % self.bucket_seconds

    def submit(
        self, survey: Survey, reports_by_question: Mapping[str, int], token: str | None = None
    ) -> None:
        """Store one response (a report code for every question) atomically.

        Returns after the commit. Raises before anything is stored.

        Raises
        ------
        ReportValidationError
            If a question is missing or extra, or a code is not an int in ``0..m-1``.
        InvitationError
            If the survey needs an invitation and the token is missing, unknown, for
            another survey, or used (the error does not say which).
        """
        (outcome,) = self.commit_group([self.prepare(survey, reports_by_question, token)])
        if outcome is not None:
            raise outcome

    def prepare(
        self, survey: Survey, reports_by_question: Mapping[str, int], token: str | None = None
    ) -> PendingResponse:
        """Validate one response into the rows to insert (no database access).

        Raises
        ------
        ReportValidationError
            As :meth:`submit`.
        """
        rows = self._rows(survey, [reports_by_question], self._bucket())
        return PendingResponse(survey.id, survey.requires_invitation, token, rows)

    def commit_group(self, pending: Sequence[PendingResponse]) -> list[InvitationError | None]:
        """Store many prepared responses in ONE transaction (group commit).

        Each response spends its own invitation; a response whose invitation is refused
        is left out (its entry in the result is the error) without affecting the others.
        Returns after the commit: every ``None`` entry is then durable. If the
        transaction fails, nothing is stored and the exception propagates.
        """
        outcomes: list[InvitationError | None] = []
        rows: list[dict[str, Any]] = []
        with self.engine.begin() as conn:
            for item in pending:
                if item.requires_invitation:
                    try:
                        self._spend(conn, item.survey_id, item.token)
                    except InvitationError as exc:
                        outcomes.append(exc)
                        continue
                outcomes.append(None)
                rows.extend(item.rows)
            if rows:
                conn.execute(insert(reports), rows)
        return outcomes

    def submit_batch(self, survey: Survey, responses: Sequence[Mapping[str, int]]) -> int:
        """Store many responses in one transaction (all or none); return how many.

        For telemetry clients of surveys that need no invitation.

        Raises
        ------
        InvitationError
            If the survey needs invitations (each response must then spend its own).
        ReportValidationError
            If any response is invalid; nothing is stored.
        """
        if survey.requires_invitation:
            raise InvitationError(
                "this survey needs an invitation per response; batches are refused"
            )
        rows = self._rows(survey, responses, self._bucket())
        if rows:
            with self.engine.begin() as conn:
                conn.execute(insert(reports), rows)
        return len(responses)

    @staticmethod
    def _spend(conn: Connection, survey_id: str, token: str | None) -> None:
        if not token:
            raise InvitationError("this survey needs a valid invitation token")
        res = conn.execute(
            update(invitations)
            .where(
                invitations.c.token_hash == hash_token(token),
                invitations.c.survey_id == survey_id,
                invitations.c.used.is_(False),
            )
            .values(used=True)
        )
        if res.rowcount != 1:
            raise InvitationError("the invitation token is not valid for this survey")

    # -- reading -----------------------------------------------------------------
    def tallies(self, survey: Survey) -> dict[str, Tally]:
        """Report counts per question (SQL ``GROUP BY``), as mergeable tallies."""
        counts = {q.id: np.zeros(q.mechanism.n_reports, dtype=np.int64) for q in survey.questions}
        q = (
            select(reports.c.question_id, reports.c.report, func.count())
            .where(reports.c.survey_id == survey.id, reports.c.version == survey.version)
            .group_by(reports.c.question_id, reports.c.report)
        )
        with self.reader.connect() as conn:
            for qid, code, n in conn.execute(q):
                if qid in counts and 0 <= code < counts[qid].size:
                    counts[qid][code] = n
        return {qid: Tally(c) for qid, c in counts.items()}

    def response_count(self, survey_id: str, version: int | None = None) -> int:
        """Number of stored responses of a survey (all versions unless given)."""
        q = select(func.count(func.distinct(reports.c.response_id))).where(
            reports.c.survey_id == survey_id
        )
        if version is not None:
            q = q.where(reports.c.version == version)
        with self.reader.connect() as conn:
            return int(conn.execute(q).scalar() or 0)

    def report_count(self) -> int:
        """Number of stored report rows, all surveys."""
        with self.reader.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(reports)).scalar() or 0)

    def timeline(self, survey_id: str) -> list[tuple[int, int]]:
        """``(bucket start, epoch seconds; responses)`` per time bucket, in time order."""
        q = (
            select(reports.c.received_bucket, func.count(func.distinct(reports.c.response_id)))
            .where(reports.c.survey_id == survey_id)
            .group_by(reports.c.received_bucket)
            .order_by(reports.c.received_bucket)
        )
        with self.reader.connect() as conn:
            return [(int(b), int(n)) for b, n in conn.execute(q)]

    def export(self, survey_id: str) -> pd.DataFrame:
        """All reports of a survey, one row per (response, question), ordered by the
        random report id.

        Columns: ``response_id`` (str, random), ``version`` (int), ``question_id`` (str),
        ``report`` (int code), ``report_label`` (str), ``received_bucket`` (datetime64,
        UTC, start of the bucket).
        """
        q = (
            select(
                reports.c.response_id,
                reports.c.version,
                reports.c.question_id,
                reports.c.report,
                reports.c.received_bucket,
            )
            .where(reports.c.survey_id == survey_id)
            .order_by(reports.c.report_id)
        )
        with self.reader.connect() as conn:
            rows = conn.execute(q).all()
        frame = pd.DataFrame(
            rows, columns=["response_id", "version", "question_id", "report", "received_bucket"]
        )
        labels: dict[tuple[int, str], list[str]] = {}
        for version in frame["version"].unique().tolist():
            s = self.survey(survey_id, int(version))
            for question in s.questions:
                labels[int(version), question.id] = question.report_labels
        frame.insert(
            4,
            "report_label",
            [
                labels[int(v), qid][r]
                for v, qid, r in frame[["version", "question_id", "report"]].itertuples(index=False)
            ],
        )
        frame["received_bucket"] = pd.to_datetime(frame["received_bucket"], unit="s", utc=True)
        return frame

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A read connection (for tests and administration)."""
        with self.reader.connect() as conn:
            yield conn

"""The collection database's schema, migrations and engines (SQLAlchemy Core).

Tables
------
- ``surveys``: each published (id, version), its canonical JSON and SHA-256 digest.
- ``invitations``: SHA-256 hashes of one-time invitation tokens, the survey version each
  is bound to (the version current when it was issued), whether it was spent (on
  obtaining a credential) and the SHA-256 of the blinded message it was spent for (so a
  retry after a dropped connection gets the same signature). No time of use, no link to
  anything else.
- ``credential_keys``: the RSA signing key of surveys published before version-bound
  keys (kept for reading; migration 0005 copies it to each of their versions).
- ``version_keys``: each survey version's RSA signing key for blind signatures (RFC
  9474): a credential verifies only for the version its invitation was bound to.
- ``staging``: pre-allocated fixed-size slots where responses wait, each in a slot
  chosen at random, until their version has ``min_release`` of them; then they are
  released into ``reports`` in random order (:mod:`deniable.collection.store`).
  ``staging_counts`` holds how many wait per version.
- ``recipient_ledger``: per named recipient (a keyed hash of the address, never the
  address) the survey versions they were invited to and what each costs, across every
  survey on the server (:mod:`deniable.collection.store`).
- ``nullifiers``: SHA-256 of each spent credential's message. Written in the
  transaction that stores the response's reports; it cannot be tied to an invitation
  (the signer never saw the message), so it links nothing.
- ``ingestion_keys``: SHA-256 hashes of the keys telemetry clients send batches with.
- ``reports``: one row per (response, question): the randomized report code (or a
  direct answer's code), the response's arm and the question's group only.
- ``survey_state``: whether a survey id is closed, and how many unused invitations were
  revoked (their rows are deleted).
- ``audit_log``: the analyst's actions (each release of results, export, close, reopen,
  revoke, publish, invitations issued), with their time; nothing of a respondent.

Every table that grows with responses is ``WITHOUT ROWID`` on SQLite and keyed by a
random value, and ``reports`` is written only in crowds in random order, so no physical
order (key order, cell offsets in a page) is arrival order. SQLite runs with a rollback
journal (``journal_mode=TRUNCATE``): a hot journal after a crash holds at most the last
transaction's old pages.
"""

from __future__ import annotations

from ..._extras import require

require("sqlalchemy", "server")

import hashlib
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    create_engine,
    event,
    func,
    inspect,
    select,
    text,
    update,
)

from ..model import parse_survey
from ._payload import pack, unpack
from ._pram import post_randomize

__all__ = [
    "DEFAULT_SQLITE_FILE",
    "MIGRATIONS",
    "arm_keys",
    "arrivals",
    "audit_log",
    "credential_keys",
    "database_url",
    "hash_token",
    "ingestion_keys",
    "invitations",
    "metadata",
    "nullifiers",
    "recipient_ledger",
    "reports",
    "schema_migrations",
    "sqlite_engine",
    "staging",
    "staging_counts",
    "survey_state",
    "surveys",
    "version_keys",
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
    Column("version", Integer),  # added by migration 0005 to older databases
    Column("blinded_hash", String(64)),  # likewise
    # the arm (index) the invitation is bound to in a study with arms (migration 0010)
    Column("arm", Integer),
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
    # the release (1, 2, ... within the version) that brought the row, never a time:
    # migration 0008 renamed it from received_bucket (an arrival hour, now 0)
    Column("release_number", Integer, nullable=False),
    # the response's arm (index in the survey's arms) and the question's group (0 or 1
    # for a group design): added by migration 0007, 0 for every earlier row
    Column("arm", Integer, nullable=False, server_default="0"),
    Column("grp", Integer, nullable=False, server_default="0"),
    ForeignKeyConstraint(["survey_id", "version"], ["surveys.survey_id", "surveys.version"]),
    CheckConstraint("report >= 0", name="report_non_negative"),
    Index("reports_tally", "survey_id", "version", "question_id", "report"),
    sqlite_with_rowid=False,
)


credential_keys = Table(
    "credential_keys",
    metadata,
    Column("survey_id", String(64), primary_key=True),
    Column("private_key", Text, nullable=False),
)
version_keys = Table(
    "version_keys",
    metadata,
    Column("survey_id", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("private_key", Text, nullable=False),
)
#: One blind-signature key per arm of a version with arms and invitations: a credential
#: verifies for the arm its invitation is bound to only (migration 0010).
arm_keys = Table(
    "arm_keys",
    metadata,
    Column("survey_id", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("arm", Integer, primary_key=True),
    Column("private_key", Text, nullable=False),
)
recipient_ledger = Table(
    "recipient_ledger",
    metadata,
    Column("recipient", String(64), primary_key=True),
    Column("survey_id", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("cost", Float, nullable=False),
    sqlite_with_rowid=False,
)

nullifiers = Table(
    "nullifiers",
    metadata,
    Column("nullifier", String(64), primary_key=True),
    Column("survey_id", String(64), nullable=False),
    sqlite_with_rowid=False,
)
ingestion_keys = Table(
    "ingestion_keys",
    metadata,
    Column("key_hash", String(64), primary_key=True),
    Column("survey_id", String(64), nullable=False),
    sqlite_with_rowid=False,
)


survey_state = Table(
    "survey_state",
    metadata,
    Column("survey_id", String(64), primary_key=True),
    Column("closed", Boolean, nullable=False),
    Column("revoked", Integer, nullable=False),
)
staging = Table(
    "staging",
    metadata,
    Column("slot", Integer, primary_key=True, autoincrement=False),
    Column("filled", Boolean, nullable=False),
    Column("payload", LargeBinary, nullable=False),
)
staging_counts = Table(
    "staging_counts",
    metadata,
    Column("survey_id", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("n", Integer, nullable=False),
    Column("released", Integer, nullable=False),
    Column("releases", Integer, nullable=False, server_default="0"),  # migration 0008
    # responses still waiting at a close: withheld for good (migration 0009)
    Column("withheld", Integer, nullable=False, server_default="0"),
    # responses released before migration 0009 post-randomized sensitive direct
    # answers: their direct answers and list counts were released as given
    Column("as_given", Integer, nullable=False, server_default="0"),
)
# responses that arrived per version and arm (the server knows each arm at staging): the
# sample-ratio test counts what arrived, not what a release rule let through; no time
arrivals = Table(
    "arrivals",
    metadata,
    Column("survey_id", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("arm", Integer, primary_key=True),
    Column("n", Integer, nullable=False),
)
audit_log = Table(
    "audit_log",
    metadata,
    Column("entry_id", String(32), primary_key=True),
    Column("at", Integer, nullable=False),
    Column("actor", String(64), nullable=False),
    Column("action", String(32), nullable=False),
    Column("survey_id", String(64), nullable=False),
    Column("version", Integer),
    Column("detail", Text, nullable=False),
    Index("audit_log_survey", "survey_id", "at"),
)


def _initial(conn: Connection) -> None:
    for table in (surveys, invitations, reports):
        table.create(conn, checkfirst=True)


def _credentials(conn: Connection) -> None:
    for table in (credential_keys, nullifiers, ingestion_keys):
        table.create(conn, checkfirst=True)


def _lifecycle(conn: Connection) -> None:
    for table in (survey_state, audit_log):
        table.create(conn, checkfirst=True)


def _invitation_index(conn: Connection) -> None:
    # plain DDL so the index is not part of the table metadata that migration 1 creates
    conn.execute(text("CREATE INDEX IF NOT EXISTS invitations_survey ON invitations (survey_id)"))


def _version_binding(conn: Connection) -> None:
    """Invitations bound to a version, a key per version, the recipient ledger. Unused
    invitations issued before are bound to their survey's latest version, and each
    version published before signs with its survey's old key."""
    for table in (version_keys, recipient_ledger):
        table.create(conn, checkfirst=True)
    have = {c["name"] for c in inspect(conn).get_columns("invitations")}
    for name, kind in (("version", "INTEGER"), ("blinded_hash", "VARCHAR(64)")):
        if name not in have:  # a database made before this migration
            conn.execute(text(f"ALTER TABLE invitations ADD COLUMN {name} {kind}"))
    conn.execute(
        text(
            "UPDATE invitations SET version = (SELECT max(s.version) FROM surveys s "
            "WHERE s.survey_id = invitations.survey_id)"
        )
    )
    conn.execute(
        text(
            "INSERT INTO version_keys (survey_id, version, private_key) "
            "SELECT s.survey_id, s.version, k.private_key FROM surveys s "
            "JOIN credential_keys k ON k.survey_id = s.survey_id"
        )
    )


def _staging(conn: Connection) -> None:
    """The slots responses wait in (:mod:`deniable.collection.store`), and a random
    placeholder in every unspent invitation's ``blinded_hash`` (a spend then overwrites a
    cell of unchanged size)."""
    for table in (staging, staging_counts):
        table.create(conn, checkfirst=True)
    if conn.execute(select(staging.c.slot).limit(1)).first() is None:
        rows = [{"slot": i + 1, "filled": False, "payload": os.urandom(256)} for i in range(1024)]
        conn.execute(staging.insert(), rows)
    unspent = conn.execute(
        select(invitations.c.token_hash).where(invitations.c.blinded_hash.is_(None))
    ).scalars()
    fill = (
        update(invitations)
        .where(invitations.c.token_hash == bindparam("h"))
        .values(blinded_hash=bindparam("b"))
    )
    params = [{"h": h, "b": secrets.token_hex(32)} for h in unspent]
    if params:
        conn.execute(fill, params)


def _arms(conn: Connection) -> None:
    """Each report's arm and group (0 for the reports stored before)."""
    have = {c["name"] for c in inspect(conn).get_columns("reports")}
    for name in ("arm", "grp"):
        if name not in have:
            conn.execute(text(f"ALTER TABLE reports ADD COLUMN {name} INTEGER NOT NULL DEFAULT 0"))


def _no_arrival_time(conn: Connection) -> None:
    """No time on a row: each report's arrival hour (``received_bucket``) becomes its
    release number (``release_number``; 0 for the rows released before this
    migration), each version counts its releases, and the waiting responses' payloads
    lose their hour."""
    have = {c["name"] for c in inspect(conn).get_columns("reports")}
    if "received_bucket" in have:
        conn.execute(text("ALTER TABLE reports RENAME COLUMN received_bucket TO release_number"))
        conn.execute(text("UPDATE reports SET release_number = 0"))
    counted = {c["name"] for c in inspect(conn).get_columns("staging_counts")}
    if "releases" not in counted:
        conn.execute(
            text("ALTER TABLE staging_counts ADD COLUMN releases INTEGER NOT NULL DEFAULT 0")
        )
    rewrite = [
        {"s": slot, "p": pack(replace(unpack(bytes(payload)), bucket=0))}
        for slot, payload in conn.execute(
            select(staging.c.slot, staging.c.payload).where(staging.c.filled.is_(True))
        )
    ]
    if rewrite:
        conn.execute(
            update(staging).where(staging.c.slot == bindparam("s")).values(payload=bindparam("p")),
            rewrite,
        )


def _post_randomize(conn: Connection) -> None:
    """Protection by randomization (:mod:`deniable.collection.model`): the close's
    withheld count; every waiting response's sensitive direct answers and list counts
    post-randomized once, through its version's channels, with the secure source; and,
    per version that has channels, how many responses were already released with them
    as given (``as_given``, which the dashboard and the docs report)."""
    if not inspect(conn).has_table("arrivals"):  # what arrived: released and waiting
        arrivals.create(conn)
        per_arm: dict[tuple[str, int, int], int] = {}
        for sid, version, arm, n in conn.execute(
            select(
                reports.c.survey_id,
                reports.c.version,
                reports.c.arm,
                func.count(func.distinct(reports.c.response_id)),
            ).group_by(reports.c.survey_id, reports.c.version, reports.c.arm)
        ):
            per_arm[sid, int(version), int(arm)] = int(n)
        for (payload,) in conn.execute(select(staging.c.payload).where(staging.c.filled)):
            item = unpack(bytes(payload))
            key = (item.survey_id, item.version, item.arm)
            per_arm[key] = per_arm.get(key, 0) + 1
        if per_arm:
            conn.execute(
                arrivals.insert(),
                [
                    {"survey_id": k[0], "version": k[1], "arm": k[2], "n": n}
                    for k, n in per_arm.items()
                ],
            )
    counted = {c["name"] for c in inspect(conn).get_columns("staging_counts")}
    for name in ("withheld", "as_given"):
        if name not in counted:
            conn.execute(
                text(f"ALTER TABLE staging_counts ADD COLUMN {name} INTEGER NOT NULL DEFAULT 0")
            )
    plans = {}
    for sid, version, definition in conn.execute(
        select(surveys.c.survey_id, surveys.c.version, surveys.c.definition)
    ):
        plan = parse_survey(definition).report_plan
        if any(c is not None for arm in plan.channels for c in arm):
            plans[sid, int(version)] = plan.channels
    rewrite = []
    for slot, payload in conn.execute(
        select(staging.c.slot, staging.c.payload).where(staging.c.filled.is_(True))
    ):
        item = unpack(bytes(payload))
        channels = plans.get((item.survey_id, item.version))
        if channels is not None:
            (item,) = post_randomize([item], channels)
            rewrite.append({"s": slot, "p": pack(item)})
    if rewrite:
        conn.execute(
            update(staging).where(staging.c.slot == bindparam("s")).values(payload=bindparam("p")),
            rewrite,
        )
    for sid, version in plans:
        conn.execute(
            update(staging_counts)
            .where(staging_counts.c.survey_id == sid, staging_counts.c.version == version)
            .values(as_given=staging_counts.c.released)
        )


def _arm_bound(conn: Connection) -> None:
    """Invitations bound to an arm and a key per arm (invitations issued before, and
    versions published before, keep no arm: their credentials verify for any arm, as
    they did)."""
    arm_keys.create(conn, checkfirst=True)
    if "arm" not in {c["name"] for c in inspect(conn).get_columns("invitations")}:
        conn.execute(text("ALTER TABLE invitations ADD COLUMN arm INTEGER"))


#: Ordered, named schema migrations; never edit one that has shipped, append a new one.
MIGRATIONS: Sequence[tuple[str, Callable[[Connection], None]]] = (
    ("0001_initial", _initial),
    ("0002_invitation_survey_index", _invitation_index),
    ("0003_credentials_nullifiers_ingestion_keys", _credentials),
    ("0004_survey_state_audit_log", _lifecycle),
    ("0005_version_bound_invitations_recipient_ledger", _version_binding),
    ("0006_staging_slots", _staging),
    ("0007_report_arm_group", _arms),
    ("0008_release_number_no_arrival_time", _no_arrival_time),
    ("0009_post_randomized_direct_answers", _post_randomize),
    ("0010_arm_bound_invitations", _arm_bound),
)


def database_url(url: str | None = None) -> str:
    """Resolve the database URL: the argument, else ``DENIABLE_DATABASE_URL``, else a
    SQLite file :data:`DEFAULT_SQLITE_FILE` in the working directory.

    ``postgresql://`` and ``postgres://`` URLs are given the psycopg 3 driver.

    Parameters
    ----------
    url : str, optional
        A SQLAlchemy URL.

    Returns
    -------
    str

    Examples
    --------
    >>> from deniable.collection.store import database_url
    >>> database_url("postgres://rr:secret@db.example.org/rr")
    'postgresql+psycopg://rr:secret@db.example.org/rr'
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


def sqlite_engine(url: str, *, immediate: bool) -> Engine:
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
        # a rollback journal: it holds at most the unfinished transaction's old pages
        # (a write-ahead log holds every commit since the last checkpoint, in order)
        cur.execute("PRAGMA journal_mode=TRUNCATE")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        # overwrite deleted content; the journal is truncated after each commit
        cur.execute("PRAGMA secure_delete=ON")
        cur.execute("PRAGMA journal_size_limit=0")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # Writers take the write lock up front, so two writers queue on the busy
        # timeout instead of failing to upgrade a read snapshot.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine

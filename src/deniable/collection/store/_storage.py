"""Durable storage of surveys, invitations, credentials and randomized reports.

SQLite (the default: a file created on first use, a rollback journal truncated after
each commit, ``synchronous=FULL`` so a commit survives a crash of the process *and* of
the machine) or PostgreSQL
(``postgresql://user:pass@host/db``, driven by psycopg 3). The tables are in
:mod:`deniable.collection.store`.

The invitation protocol (RFC 9474 blind signatures, :mod:`.credentials`)
--------------------------------------------------------------------------
- :meth:`Store.issue_credential` spends an invitation and returns a blind signature;
  it never sees the credential the respondent's device later unblinds.
- :meth:`Store.commit_group` stores a response with the *nullifier* of its credential
  (SHA-256 of its message) in one transaction; a nullifier is stored once, so a
  credential is used at most once, and nothing ties it to the invitation spent for it.
- A response waits in a slot chosen at random and is released with a crowd of
  ``min_release`` in random order (:mod:`.staging`); spends overwrite invitation cells
  of unchanged size in place; the hot journal after a crash holds at most the last
  transaction's old pages: the files do not keep the order in which invitations were
  spent and responses stored (``tests/test_attacker.py``).

What is stored, and what is not: reports carry no true answer, no address, no
respondent identifier and no time (a report row carries the number of the release that
brought it; the audit log has each release's hour). Rows are keyed by random 128-bit
ids and every read orders by them. Results, exports and tallies read released responses
only; :meth:`Store.waiting` counts the others.

Durability
----------
A response is acknowledged only after the transaction that stores its nullifier and
reports has committed; a credential is returned only after its invitation's spend has.

Limit (PostgreSQL): a superuser can read each row version's creating transaction id
(``xmin``); xids increase with time, so invitation spends and waiting responses (their
slots' row versions) can be ordered against each other. See the threat model in
docs/collection.md.
"""

from __future__ import annotations

from ..._extras import require

require("sqlalchemy", "server")
require("pandas", "server")

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, create_engine, insert, select, text
from sqlalchemy.exc import IntegrityError

from ...errors import (
    CredentialRejectedError,
    DeniableError,
    InvitationError,
    ReportValidationError,
    SurveyClosedError,
    SurveyConflictError,
    SurveyNotFoundError,
)
from ..credentials import Credential, nullifier
from ..model import Ledger, Survey, check_lifetime, lifetime_ledger, parse_survey
from ._invitations import Invitations, PendingSpend
from ._lifecycle import LifecycleMixin
from ._pram import post_randomize
from ._reading import Released
from ._releasing import ReleasingMixin
from ._schema import (
    DEFAULT_SQLITE_FILE,
    MIGRATIONS,
    database_url,
    hash_token,
    nullifiers,
    schema_migrations,
    sqlite_engine,
    surveys,
)
from ._staging import (
    NO_ANSWER,
    PG_LOCK,
    FreeSlots,
    StagedResponse,
    WaitingNullifiers,
    stage,
)
from ._staging import waiting as staged_waiting
from ._wave_store import WavesMixin

__all__ = [
    "DEFAULT_SQLITE_FILE",
    "MIGRATIONS",
    "PendingResponse",
    "PendingSpend",
    "Store",
    "database_url",
    "hash_token",
]


@dataclass(frozen=True)
class PendingResponse:
    """A validated response waiting for its transaction (see :meth:`Store.commit_group`).

    ``nullifier`` is the spent-credential record of a survey that needs invitations
    (its credential already verified), ``None`` otherwise; ``staged`` the response's
    report codes.
    """

    survey_id: str
    nullifier: str | None
    staged: StagedResponse


class Store(LifecycleMixin, WavesMixin, ReleasingMixin):
    """The collection database.

    Parameters
    ----------
    url : str, optional
        SQLAlchemy URL (see :func:`database_url` for the default).
    bucket_seconds : int, default 3600
        Width of the time buckets of the per-survey response cap (seconds, >= 60; memory
        only: no stored row carries a time).

    Raises
    ------
    ValueError
        If ``bucket_seconds < 60``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.collection.model import load_survey
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> store.publish(load_survey("examples/campus.yaml")), store.survey_ids()
    (True, [('campus', 1)])
    """

    def __init__(self, url: str | None = None, *, bucket_seconds: int = 3600) -> None:
        if bucket_seconds < 60:
            raise ValueError(f"bucket_seconds must be >= 60, got {bucket_seconds}")
        self.url = database_url(url)
        self.bucket_seconds = bucket_seconds
        self.is_sqlite = self.url.startswith("sqlite")
        if self.is_sqlite:
            self.engine = sqlite_engine(self.url, immediate=True)
            self.reader = sqlite_engine(self.url, immediate=False)
        else:
            self.engine = create_engine(self.url, pool_size=10, max_overflow=40)
            self.reader = self.engine
        self._cache: dict[tuple[str, int], Survey] = {}
        #: who may answer: invitation tokens, credentials, ingestion keys
        self.invitations = Invitations(self)
        #: what the releases made readable: tallies, counts, timeline, export
        self.released = Released(self)
        self._free = FreeSlots()  # this process's list of free staging slots
        self._nullifiers = WaitingNullifiers()  # this process's view of the slots' nullifiers
        self._periods: dict[str, int] = {}  # each survey id's last scheduled release period
        #: the source of the post-randomization (PRAM) of sensitive direct answers:
        #: ``None``, the secure default; a seeded Generator only to simulate
        self.pram_rng: Any = None
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
            earlier = [
                parse_survey(d)
                for d in conn.execute(
                    select(surveys.c.definition).where(surveys.c.survey_id == survey.id)
                ).scalars()
            ]
            latest = max((s.version for s in earlier), default=None)
            if latest is not None and latest > survey.version:
                raise SurveyConflictError(
                    f"survey {survey.id!r} already has version {latest}; a new version must "
                    f"be greater than {latest}"
                )
            check_lifetime(earlier, survey)
            if survey.requires_invitation:
                self.invitations.ensure_key(conn, survey)
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
        self.forget_history()
        return True

    def ledger(self, survey_id: str) -> Ledger:
        """The lifetime privacy-budget ledger of a published survey id.

        Raises
        ------
        SurveyNotFoundError
        """
        q = select(surveys.c.definition).where(surveys.c.survey_id == survey_id)
        with self.reader.connect() as conn:
            versions = [parse_survey(d) for d in conn.execute(q).scalars()]
        if not versions:
            raise SurveyNotFoundError(f"no published survey {survey_id!r}")
        return lifetime_ledger(versions)

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

    # -- reports -----------------------------------------------------------------
    def _staged(
        self,
        survey: Survey,
        responses: Sequence[Mapping[str, Any]],
        arms: Sequence[str | None] | None = None,
        groups: Sequence[Mapping[str, int] | None] | None = None,
    ) -> list[StagedResponse]:
        out: list[StagedResponse] = []
        plan = survey.report_plan
        ids, grouped, names = plan.ids, plan.grouped, plan.arms
        expected = set(ids)
        for i, response in enumerate(responses):
            if not isinstance(response, Mapping) or response.keys() != expected:
                got = sorted(response) if isinstance(response, Mapping) else type(response).__name__
                raise ReportValidationError(
                    f"responses[{i}].reports must answer exactly the questions {ids}, got {got}"
                )
            arm = arms[i] if arms is not None else None
            arm_index = plan.arm_index.get(arm)
            if arm_index is None:
                allowed = f"one of {list(names)}" if names else "absent (the survey has no arms)"
                raise ReportValidationError(f"responses[{i}].arm must be {allowed}, got {arm!r}")
            drawn = (groups[i] if groups is not None else None) or {}
            if (drawn or grouped) and (
                drawn.keys() != set(grouped)
                or any(type(g) is not int or g not in (0, 1) for g in drawn.values())
            ):
                raise ReportValidationError(
                    f"responses[{i}].groups must give 0 or 1 for exactly the questions "
                    f"{list(grouped)} (group designs), got {dict(drawn)!r}"
                )
            sizes, skippable = plan.sizes[arm_index], plan.skippable[arm_index]
            codes = []
            for qid, size, may_skip in zip(ids, sizes, skippable, strict=True):
                code = response[qid]
                if code is None and may_skip:
                    codes.append(NO_ANSWER)
                    continue
                if type(code) is not int or not 0 <= code < size:
                    skip = " or null (no answer)" if may_skip else ""
                    raise ReportValidationError(
                        f"responses[{i}].reports.{qid} must be an integer report code in "
                        f"0..{size - 1}{skip}, got {code!r}"
                    )
                limit = plan.control_counts.get(qid)
                if limit is not None and drawn.get(qid) == 0 and code >= limit:
                    raise ReportValidationError(
                        f"responses[{i}].reports.{qid} must be a count in 0..{limit - 1} "
                        f"(group 0's list has {limit - 1} items), got {code}"
                    )
                codes.append(code)
            out.append(
                StagedResponse(
                    survey.id,
                    survey.version,
                    0,  # no time: a waiting response carries none
                    tuple(codes),
                    arm_index,
                    tuple(drawn.get(qid, 0) for qid in ids) if grouped else (),
                )
            )
        return post_randomize(out, plan.channels, self.pram_rng)

    def submit(
        self,
        survey: Survey,
        reports_by_question: Mapping[str, int | None],
        credential: Credential | None = None,
        arm: str | None = None,
        groups: Mapping[str, int] | None = None,
    ) -> None:
        """Store one response (a report code for every question; its arm, one of the
        survey's arms, and the group of each group-design question) atomically.

        Returns after the commit. Raises before anything is stored.

        Raises
        ------
        ReportValidationError
            If a question is missing or extra, a code is not an int in ``0..m-1`` (of the
            arm's design), the arm is not one of the survey's, or a group design's
            group is missing or not 0 or 1.
        CredentialRejectedError
            If the survey needs invitations and the credential is missing, does not
            verify under the survey's key, or was already spent.
        """
        pending = self.prepare(survey, reports_by_question, credential, arm, groups)
        (outcome,) = self.commit_group([pending])
        if outcome is not None:
            raise outcome

    def prepare(
        self,
        survey: Survey,
        reports_by_question: Mapping[str, int | None],
        credential: Credential | None = None,
        arm: str | None = None,
        groups: Mapping[str, int] | None = None,
    ) -> PendingResponse:
        """Validate one response and its credential (no write).

        Raises
        ------
        ReportValidationError, CredentialRejectedError
            As :meth:`submit` (a spent credential is found only at the commit).
        """
        (staged,) = self._staged(survey, [reports_by_question], [arm], [groups])
        spent = None
        if survey.requires_invitation:
            if credential is None:
                raise CredentialRejectedError(
                    "this survey needs a credential (obtained with an invitation)"
                )
            index = survey.arm_names.index(arm) if arm in survey.arm_names else None
            key = self.invitations.credential_key(survey.id, survey.version, index)
            if not key.verify(credential.message, credential.signature):
                raise CredentialRejectedError(
                    f"the credential is not valid for this survey's version {survey.version}"
                    + (f" and arm {arm!r}" if index is not None else "")
                    + " (a credential answers the version, and the arm, its invitation "
                    "was issued for)"
                )
            spent = nullifier(credential.message)
            staged = replace(staged, nullifier=bytes.fromhex(spent))
        return PendingResponse(survey.id, spent, staged)

    def commit_group(
        self, pending: Sequence[PendingResponse | PendingSpend], forget: bool = True
    ) -> list[DeniableError | None]:
        """Store many prepared responses and invitation spends in ONE transaction.

        A response whose credential was already spent (earlier, or by an earlier entry of
        this group), a spend whose invitation was, and any entry for a closed survey
        (:class:`SurveyClosedError`, read in this transaction) is left out (its entry in
        the result is the error) without affecting the others. Returns after the commit:
        every ``None`` entry is then durable. If the transaction fails, nothing is stored
        and the exception propagates. With ``forget`` the WAL is then truncated
        (:meth:`forget_history`); the group committer does that when it goes idle.

        Nothing is ever released here: a release happens at a scheduled moment, at the
        close or on the analyst's request (:meth:`release`), so no arrival chooses when.
        """
        try:
            return self._commit_group(pending, forget)
        except BaseException:
            self._free.free = None  # a rolled-back fill: read the slots again
            self._nullifiers.forget()
            raise

    def _commit_group(
        self, pending: Sequence[PendingResponse | PendingSpend], forget: bool
    ) -> list[DeniableError | None]:
        outcomes: list[DeniableError | None] = [None] * len(pending)
        waiting: list[StagedResponse] = []
        with self.engine.begin() as conn:
            closed = self.closed_among(conn, (p.survey_id for p in pending))
            for i, p in enumerate(pending):
                if p.survey_id in closed:
                    outcomes[i] = SurveyClosedError(_closed_message(p.survey_id))
            live = [(i, p) for i, p in enumerate(pending) if p.survey_id not in closed]
            spends = [(i, p) for i, p in live if isinstance(p, PendingSpend)]
            answers = [(i, p) for i, p in live if isinstance(p, PendingResponse)]
            if spends:
                spent = self.invitations.spend_all(conn, [p for _, p in spends])
                for j, (i, _) in enumerate(spends):
                    outcomes[i] = spent[j]
            if answers and not self.is_sqlite:  # one writer of the slots at a time
                conn.execute(text(f"SELECT pg_advisory_xact_lock({PG_LOCK})"))
            recorded = self._record_all(conn, [p for _, p in answers])
            for j, (i, item) in enumerate(answers):
                if recorded[j]:
                    waiting.append(item.staged)
                else:
                    outcomes[i] = CredentialRejectedError("this credential was already used")
            if waiting:
                stage(conn, waiting, self._free)
                self._nullifiers.add(
                    conn, [p.nullifier for (_, p), ok in zip(answers, recorded, strict=True) if ok]
                )
        if forget:
            self.forget_history()
        return outcomes

    def forget_history(self) -> None:
        """SQLite in WAL mode (a database another version left so): checkpoint the WAL
        and truncate it. With this version's rollback journal, which is truncated at
        every commit, and on PostgreSQL: nothing to do."""
        if not self.is_sqlite:
            return
        raw = self.engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.execute("PRAGMA busy_timeout=50")
            cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.close()
        finally:
            raw.close()

    def submit_batch(
        self,
        survey: Survey,
        responses: Sequence[Mapping[str, int | None]],
        arms: Sequence[str | None] | None = None,
        groups: Sequence[Mapping[str, int] | None] | None = None,
    ) -> int:
        """Store many responses in one transaction (all or none); return how many.
        ``arms`` and ``groups``: each response's arm and groups, as :meth:`submit`.

        For telemetry clients of surveys that need no invitation (the server checks
        their ingestion key).

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
        staged = self._staged(survey, responses, arms, groups)
        if staged:  # the one insert path; with no credentials, all stored or none
            self._free.free = None  # read the slots afresh: batches are rare and large
            outcomes = self.commit_group([PendingResponse(survey.id, None, s) for s in staged])
            refused = next((o for o in outcomes if o is not None), None)
            if refused is not None:  # a closed survey: every entry refused, nothing stored
                raise refused
        return len(responses)

    def response_count(self, survey_id: str, version: int | None = None) -> int:
        """Number of stored responses of a survey (all versions unless given): those
        released and those waiting for their crowd."""
        waiting = self.waiting(survey_id)
        extra = sum(waiting.values()) if version is None else waiting.get(version, 0)
        return self.released.count(survey_id, version) + extra

    def waiting(self, survey_id: str) -> dict[int, int]:
        """Responses waiting for their crowd (``min_release``), per version."""
        with self.reader.connect() as conn:
            return staged_waiting(conn, survey_id)

    def _record_all(self, conn: Connection, items: Sequence[PendingResponse]) -> list[bool]:
        """For each response, whether it may be stored: no nullifier, or one spent
        nowhere yet (not in the ``nullifiers`` table, which holds released responses'
        nullifiers, nor in a waiting slot, nor earlier in this group). The caller holds
        the write lock (SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's :data:`PG_LOCK`), so
        no other writer can accept the same nullifier meanwhile; it is written into the
        response's slot (:mod:`.staging`) and reaches the table with the release."""
        first: dict[str, int] = {}
        for i, item in enumerate(items):
            if item.nullifier is not None:
                first.setdefault(item.nullifier, i)
        taken: set[str] = set()
        if first:
            names = list(first)
            for start in range(0, len(names), 500):
                q = select(nullifiers.c.nullifier).where(
                    nullifiers.c.nullifier.in_(names[start : start + 500])
                )
                taken.update(conn.execute(q).scalars())
            taken |= self._nullifiers.among(conn, first.keys())
        return [
            item.nullifier is None or (item.nullifier not in taken and first[item.nullifier] == i)
            for i, item in enumerate(items)
        ]

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A read connection (for tests and administration)."""
        with self.reader.connect() as conn:
            yield conn


def _closed_message(survey_id: str) -> str:
    return f"survey {survey_id!r} is closed: it takes no responses (the analyst may reopen it)"

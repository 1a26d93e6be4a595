"""Invitations, blind-signature credentials and ingestion keys of the collection store.

:class:`Invitations` is a store's ``store.invitations``: it
issues invitation tokens (anonymous, or to named recipients within the server's
lifetime budget per person, :mod:`~deniable.collection.store`), spends one for a
blind signature (RFC 9474, see :mod:`~deniable.collection.credentials`), and issues and
checks the ingestion keys of telemetry batches. Only SHA-256 hashes of tokens and keys
are stored.

Every invitation is bound to the survey version current when it was issued, and each
version has its own signing key, so the credential it buys verifies for that version
only: "charged" (the recipient ledger) and "answered" mean the same version.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, func, insert, select, text, update

from ...errors import (
    InvitationError,
    InvitationUsedError,
    InvitationVersionError,
    RecipientsRefusedError,
    SurveyClosedError,
    SurveyNotFoundError,
)
from .. import invitation_arm
from ..credentials import CredentialKey
from ..model import wave_charge
from ._recipients import (
    MAX_RECIPIENTS,
    RecipientKey,
    lifetime_budget_from_environment,
    normalise_address,
)
from ._schema import (
    arm_keys,
    hash_token,
    ingestion_keys,
    invitations,
    recipient_ledger,
    survey_state,
    version_keys,
)

if TYPE_CHECKING:
    from ..model import Survey
    from ._storage import Store

__all__ = ["INVITATION_MESSAGES", "Invitations", "IssuedInvitations", "PendingSpend"]

INVITATION_MESSAGES = {
    "unknown": "the invitation is not valid for this survey",
    "used": "this invitation has already been used",
    "arm": (
        "this invitation is bound to another arm of the study than the credential asked "
        "for (its link draws the arm: open it again)"
    ),
}


@dataclass(frozen=True)
class PendingSpend:
    """An invitation to spend for a credential (see :meth:`Store.commit_group`).

    ``version`` is the survey version the device asks a credential for (the invitation
    must be bound to it); ``blinded_hash`` the SHA-256 of the blinded message, kept so
    that the same request after a dropped connection gets the same signature back.
    """

    survey_id: str
    token_hash: str
    version: int = 0
    blinded_hash: str = ""
    #: The arm (index) the credential is asked for, in a study with arms.
    arm: int | None = None


@dataclass(frozen=True)
class IssuedInvitations:
    """Invitations just issued: the version they are bound to and the tokens (shown
    once). For named recipients, ``recipients[i]`` and ``owners[i]`` belong to
    ``tokens[i]`` and ``refused`` lists the rows not issued as ``(row, address,
    message)``."""

    survey_id: str
    version: int
    tokens: list[str]
    recipients: list[str] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    refused: list[tuple[int, str, str]] = field(default_factory=list)


class Invitations:
    """Who may answer a survey: its invitation tokens (anonymous, or to named recipients
    within the lifetime budget per person), the blind-signature credentials they buy,
    and the ingestion keys of telemetry batches. A store's ``store.invitations``.

    Parameters
    ----------
    store : Store
        The store whose database holds them (its surveys, engines and write path).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.store import Store
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> _ = store.publish(load_survey("examples/campus.yaml"))
    >>> len(store.invitations.issue_tokens("campus", 3))
    3
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        #: this process's cache of the version-bound signing keys
        self._keys: dict[tuple[str, int, int | None], CredentialKey] = {}

    # -- invitations and credentials ---------------------------------------------
    def issue_tokens(self, survey_id: str, count: int) -> list[str]:
        """Create ``count`` one-time invitation tokens (1..100,000) for the latest version
        of a published survey (:meth:`issue_invitations`); return the tokens."""
        return self.issue_invitations(survey_id, count).tokens

    def issue_invitations(self, survey_id: str, count: int) -> IssuedInvitations:
        """Create ``count`` anonymous one-time invitations (1..100,000), bound to the
        survey's latest version.

        Returns the plaintext tokens (URL-safe, 192 random bits from ``secrets``); only
        their SHA-256 hashes are stored. Across anonymous invitations the server's
        lifetime budget per person cannot be enforced: nothing says who got which.

        Raises
        ------
        ValueError
            If ``count`` is outside 1..100,000.
        SurveyNotFoundError
            If the survey is not published.
        SurveyClosedError
            If the survey is closed (checked in the transaction that would store them).
        """
        if not 1 <= count <= 100_000:
            raise ValueError(f"count must be in 1..100000, got {count}")
        survey = self._store.survey(survey_id)
        version = survey.version
        tokens = [secrets.token_urlsafe(24) for _ in range(count)]
        rows = [_invitation_row(t, survey_id, version, invitation_arm(survey, t)) for t in tokens]
        with self._store.engine.begin() as conn:
            _refuse_closed(conn, survey_id)
            conn.execute(insert(invitations), rows)
        self._store.forget_history()
        return IssuedInvitations(survey_id, version, tokens)

    def invite_recipients(
        self,
        survey_id: str,
        addresses: Sequence[object],
        lifetime_budget: float | None = None,
        key: RecipientKey | None = None,
    ) -> IssuedInvitations:
        """Invite named recipients to the survey's latest version, within the server's
        lifetime budget per person (:mod:`~deniable.collection.store`).

        Each row is charged the version's full cost (``Survey.total_epsilon``: a memo
        can be lost), a panel question (two layers) what a report from a new device
        costs at that wave (:func:`~deniable.collection.model.wave_charge`: ``k``
        epsilon_inf bounds one device only).
        A row is refused, with the row and the sums named, when the
        recipient was already invited to this version, or when the charge would take
        them past ``lifetime_budget``; the other rows are issued.

        Parameters
        ----------
        addresses : sequence of str
            1 to :data:`~deniable.collection.store.MAX_RECIPIENTS` addresses.
        lifetime_budget : float, optional
            Nats per person across the server (default ``DENIABLE_LIFETIME_BUDGET``, 10).
        key : RecipientKey, optional
            Default :meth:`RecipientKey.load` for this database.

        Raises
        ------
        RecipientsRefusedError
            If every row is refused (malformed, repeated, or over a budget); nothing is
            stored.
        ValueError
            For no rows or more than the maximum.
        SurveyNotFoundError
        SurveyClosedError
            If the survey is closed: nothing is issued and no ledger is charged.
        """
        if not 1 <= len(addresses) <= MAX_RECIPIENTS:
            raise ValueError(f"recipients must list 1..{MAX_RECIPIENTS} addresses")
        budget = lifetime_budget_from_environment() if lifetime_budget is None else lifetime_budget
        key = key or self.recipient_key()
        survey = self._store.survey(survey_id)
        charges: dict[frozenset[int], float] = {}  # earlier versions -> this one's charge

        def charge(earlier: frozenset[int]) -> float:
            if earlier not in charges:
                before = [self._store.survey(survey_id, v) for v in sorted(earlier)]
                charges[earlier] = wave_charge(survey, before)
            return charges[earlier]

        wanted, refused = _wanted(addresses, key)
        issued = IssuedInvitations(survey_id, survey.version, [])
        with self._store.engine.begin() as conn:
            if not self._store.is_sqlite:  # one ledger writer at a time (SQLite: BEGIN IMMEDIATE)
                conn.execute(text("SELECT pg_advisory_xact_lock(7317)"))
            _refuse_closed(conn, survey_id)  # nothing issued, nothing charged
            spent, here, waves = _ledger_of(conn, list(wanted), survey_id, survey.version)
            ledger_rows: list[dict[str, Any]] = []
            invitation_rows: list[dict[str, Any]] = []
            for name, (row, address) in wanted.items():
                cost = charge(frozenset(waves.get(name, ())))
                reason = _refusal(name in here, spent.get(name, 0.0), cost, budget, survey)
                if reason:
                    refused.append((row, address, reason))
                else:
                    token = secrets.token_urlsafe(24)
                    entry = {"recipient": name, "survey_id": survey_id, "cost": cost}
                    ledger_rows.append(entry | {"version": survey.version})
                    tag = key.owner_tag(address)  # the arm travels with the person
                    invitation_rows.append(
                        _invitation_row(
                            token, survey_id, survey.version, invitation_arm(survey, tag)
                        )
                    )
                    issued.tokens.append(token)
                    issued.recipients.append(address)
                    issued.owners.append(tag)
                    issued.rows.append(row)
            refused.sort()
            issued.refused.extend(refused)
            if not invitation_rows:
                raise RecipientsRefusedError(
                    [(f"recipients.{r}", f"{a}: {m}") for r, a, m in refused]
                )
            # stored in random order: neither table's layout follows the request's rows
            order = secrets.SystemRandom()
            order.shuffle(ledger_rows)
            order.shuffle(invitation_rows)
            conn.execute(insert(recipient_ledger), ledger_rows)
            conn.execute(insert(invitations), invitation_rows)
        self._store.forget_history()
        return issued

    def recipient_key(self) -> RecipientKey:
        """The key of recipient hashes and owner tags (:meth:`RecipientKey.load`)."""
        return RecipientKey.load(self._store.url)

    def recipient_spent(self, address: str, key: RecipientKey | None = None) -> float:
        """Nats charged to a recipient across the server (0 if never invited)."""
        name = (key or self.recipient_key()).recipient(normalise_address(address))
        q = select(func.sum(recipient_ledger.c.cost)).where(recipient_ledger.c.recipient == name)
        with self._store.reader.connect() as conn:
            return float(conn.execute(q).scalar() or 0.0)

    @staticmethod
    def ensure_key(conn: Connection, survey: Survey) -> None:
        """The version's blind-signature key, and one per arm in a study with arms."""
        survey_id, version = survey.id, survey.version
        exists = conn.execute(
            select(version_keys.c.version).where(
                version_keys.c.survey_id == survey_id, version_keys.c.version == version
            )
        ).first()
        if exists is None:
            pem = CredentialKey.generate().to_pem().decode()
            conn.execute(
                insert(version_keys).values(survey_id=survey_id, version=version, private_key=pem)
            )
        have = set(
            conn.execute(
                select(arm_keys.c.arm).where(
                    arm_keys.c.survey_id == survey_id, arm_keys.c.version == version
                )
            ).scalars()
        )
        rows = [
            {"survey_id": survey_id, "version": version, "arm": i,
             "private_key": CredentialKey.generate().to_pem().decode()}
            for i in range(len(survey.arm_names)) if i not in have
        ]  # fmt: skip
        if rows:
            conn.execute(insert(arm_keys), rows)

    def cached_credential_key(
        self, survey_id: str, version: int, arm: int | None = None
    ) -> CredentialKey | None:
        """The version's (or its arm's) key if this process has already loaded it."""
        return self._keys.get((survey_id, version, arm))

    def credential_key(
        self, survey_id: str, version: int | None = None, arm: int | None = None
    ) -> CredentialKey:
        """The blind-signature key of a survey version (default the latest), or of one of
        its arms (the arm's position in ``Survey.arm_names``): created when the version
        is published, if it needs invitations. A credential signed under it verifies for
        that version (and arm) only. A version published before keys per arm existed
        has none: its arms share the version's key.

        Raises
        ------
        SurveyNotFoundError
            If that version takes no invitations (or does not exist).
        """
        if version is None:
            version = self._store.survey(survey_id).version
        key = self._keys.get((survey_id, version, arm))
        if key is None:
            pem = None
            with self._store.reader.connect() as conn:
                if arm is not None:
                    pem = conn.execute(
                        select(arm_keys.c.private_key).where(
                            arm_keys.c.survey_id == survey_id,
                            arm_keys.c.version == version,
                            arm_keys.c.arm == arm,
                        )
                    ).scalar()
                if pem is None:
                    pem = conn.execute(
                        select(version_keys.c.private_key).where(
                            version_keys.c.survey_id == survey_id,
                            version_keys.c.version == version,
                        )
                    ).scalar()
            if pem is None:
                raise SurveyNotFoundError(
                    f"survey {survey_id!r} version {version} takes no invitations"
                )
            key = self._keys[survey_id, version, arm] = CredentialKey.from_pem(pem.encode())
        return key

    def issue_credential(
        self,
        survey_id: str,
        token: str,
        blinded: bytes,
        version: int | None = None,
        arm: int | None = None,
    ) -> bytes:
        """Spend an invitation and return the blind signature of ``blinded`` (RFC 9474).

        The spend is committed before the signature is made and returned. Use
        :meth:`prepare_spend`, :meth:`commit_group` and :meth:`CredentialKey.blind_sign`
        to share the commit with others, as the server does.

        Raises
        ------
        InvitationError
            If the token is unknown, for another survey, or already spent (for another
            blinded message: the same one gets the same signature again).
        InvitationVersionError
            If the invitation is bound to another version than ``version`` (default:
            the latest).
        CredentialError
            If ``blinded`` is malformed; the invitation is then not spent.
        SurveyNotFoundError
            If the survey takes no invitations.
        """
        spend = self.prepare_spend(survey_id, token, blinded, version, arm)
        (outcome,) = self._store.commit_group([spend])
        if outcome is not None:
            raise outcome
        return self.credential_key(survey_id, spend.version, arm).blind_sign(blinded)

    def prepare_spend(
        self,
        survey_id: str,
        token: str,
        blinded: bytes,
        version: int | None = None,
        arm: int | None = None,
    ) -> PendingSpend:
        """Check ``blinded`` against the version's key (no database write); the spend is
        then to commit, and the signature to make after it.

        Raises
        ------
        CredentialError, SurveyNotFoundError
            As :meth:`issue_credential`.
        """
        if version is None:
            version = self._store.survey(survey_id).version
        self.credential_key(survey_id, version, arm).check_blinded(blinded)
        return PendingSpend(
            survey_id, hash_token(token), version, hashlib.sha256(blinded).hexdigest(), arm
        )

    def add_ingestion_key(self, survey_id: str) -> str:
        """A new ingestion key for telemetry batches to a published survey (shown once;
        only its SHA-256 is stored)."""
        self._store.survey(survey_id)
        key = secrets.token_urlsafe(32)
        with self._store.engine.begin() as conn:
            conn.execute(
                insert(ingestion_keys).values(key_hash=hash_token(key), survey_id=survey_id)
            )
        self._store.forget_history()
        return key

    def ingestion_key_valid(self, survey_id: str, key: str) -> bool:
        """Whether ``key`` is an ingestion key of ``survey_id``."""
        q = select(ingestion_keys.c.survey_id).where(
            ingestion_keys.c.key_hash == hash_token(key), ingestion_keys.c.survey_id == survey_id
        )
        with self._store.reader.connect() as conn:
            return conn.execute(q).first() is not None

    @staticmethod
    def spend_all(
        conn: Connection, spends: Sequence[PendingSpend]
    ) -> dict[int, InvitationError | None]:
        """Spend invitations (one read and one batched UPDATE, in this transaction);
        the outcome of each position. A spent invitation asked again with the same
        blinded message succeeds again (the signature is the same), so a dropped
        connection does not burn it. Each spend overwrites its row's ``used`` flag and
        ``blinded_hash`` (a placeholder of the same size until then) in place."""
        outcomes: dict[int, InvitationError | None] = {}
        first: dict[str, int] = {}
        for i, item in enumerate(spends):
            first.setdefault(item.token_hash, i)
        q = select(
            invitations.c.survey_id,
            invitations.c.token_hash,
            invitations.c.version,
            invitations.c.used,
            invitations.c.blinded_hash,
            invitations.c.arm,
        ).where(invitations.c.token_hash.in_(list(first)))
        if conn.dialect.name == "postgresql":
            q = q.with_for_update()  # SQLite: the transaction already holds the write lock
        known = {r.token_hash: r for r in conn.execute(q)}
        spend: list[dict[str, str]] = []
        for token_hash, i in first.items():
            item = spends[i]
            row = known.get(token_hash)
            if row is None or row.survey_id != item.survey_id:
                outcomes[i] = InvitationError(INVITATION_MESSAGES["unknown"])
            elif row.version != item.version:
                outcomes[i] = InvitationVersionError(
                    f"this invitation is for version {row.version} of the survey, not "
                    f"{item.version}; open its link again",
                    int(row.version),
                )
            elif row.arm is not None and row.arm != item.arm:
                outcomes[i] = InvitationError(INVITATION_MESSAGES["arm"])
            elif not row.used:
                outcomes[i] = None
                spend.append({"h": token_hash, "b": item.blinded_hash})
            elif row.blinded_hash == item.blinded_hash and item.blinded_hash:
                outcomes[i] = None  # the same request again: the same signature
            else:
                outcomes[i] = InvitationUsedError(INVITATION_MESSAGES["used"])
        if spend:
            conn.execute(
                update(invitations)
                .where(invitations.c.token_hash == bindparam("h"))
                .values(used=True, blinded_hash=bindparam("b")),
                spend,
            )
        for i, item in enumerate(spends):
            if first[item.token_hash] != i:
                outcomes[i] = InvitationUsedError(INVITATION_MESSAGES["used"])
        return outcomes


def _invitation_row(
    token: str, survey_id: str, version: int, arm: int | None = None
) -> dict[str, Any]:
    return {
        "token_hash": hash_token(token),
        "survey_id": survey_id,
        "version": version,
        "used": False,
        # a placeholder of the same size: the spend overwrites the cell in place
        "blinded_hash": secrets.token_hex(32),
        "arm": arm,
    }


def _refusal(invited: bool, before: float, cost: float, budget: float, survey: Survey) -> str:
    """Why a named recipient is not invited to this version (already invited, or the
    charge would pass the lifetime budget), or ``""``."""
    if invited:
        return f"already invited to {survey.id} version {survey.version}"
    if before + cost > budget + 1e-9:
        return (
            f"would spend {before:.4g} + {cost:.4g} = {before + cost:.4g} nats, "
            f"over the server's lifetime budget of {budget:g} nats per person"
        )
    return ""


def _refuse_closed(conn: Connection, survey_id: str) -> None:
    """Raise :class:`SurveyClosedError` if the survey is closed (read in ``conn``'s
    transaction, so nothing is issued after a close has committed)."""
    closed = conn.execute(
        select(survey_state.c.closed).where(survey_state.c.survey_id == survey_id)
    ).scalar()
    if closed:
        raise SurveyClosedError(
            f"survey {survey_id!r} is closed: it issues no invitations (the analyst may reopen it)"
        )


def _wanted(
    addresses: Sequence[object], key: RecipientKey
) -> tuple[dict[str, tuple[int, str]], list[tuple[int, str, str]]]:
    """Each recipient's keyed hash -> (row, address), and the rows refused (a malformed
    address, a repeat of an earlier row)."""
    refused: list[tuple[int, str, str]] = []
    wanted: dict[str, tuple[int, str]] = {}
    for row, raw in enumerate(addresses):
        try:
            address = normalise_address(raw)
        except ValueError as exc:
            refused.append((row, str(raw)[:80], f"address {exc}"))
            continue
        name = key.recipient(address)
        if name in wanted:
            refused.append(
                (row, address, f"repeats row {wanted[name][0]}: one invitation per version")
            )
            continue
        wanted[name] = (row, address)
    return wanted, refused


def _ledger_of(
    conn: Any, names: list[str], survey_id: str, version: int
) -> tuple[dict[str, float], set[str], dict[str, set[int]]]:
    """From the recipient ledger: what each recipient has spent across the server, who
    was already invited to this version, and the other versions of this survey each
    was invited to (its waves)."""
    spent: dict[str, float] = {}
    here: set[str] = set()
    waves: dict[str, set[int]] = {}
    for start in range(0, len(names), 500):
        chunk = names[start : start + 500]
        q = select(
            recipient_ledger.c.recipient,
            recipient_ledger.c.survey_id,
            recipient_ledger.c.version,
            recipient_ledger.c.cost,
        ).where(recipient_ledger.c.recipient.in_(chunk))
        for r in conn.execute(q):
            spent[r.recipient] = spent.get(r.recipient, 0.0) + float(r.cost)
            if r.survey_id == survey_id and r.version == version:
                here.add(r.recipient)
            elif r.survey_id == survey_id:
                waves.setdefault(r.recipient, set()).add(int(r.version))
    return spent, here, waves

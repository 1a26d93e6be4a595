"""Named recipients: a keyed hash per person, the owner tag of their links, and the
server's lifetime privacy budget per person.

A survey's own ``lifetime_budget`` (:mod:`~deniable.collection.model`) counts what a
respondent spends across the versions of *one survey id*, and assumes the device keeps
its memo of reports. A person can lose that memo (cleared storage, another device) and
can be invited to many surveys. The server therefore keeps, per named recipient, a
ledger of every survey version they were invited to, across every survey it holds, and
charges each invitation its version's *full* cost (``Survey.total_epsilon``): it refuses
an invitation that could take a recipient past ``DENIABLE_LIFETIME_BUDGET`` (nats,
default 10) and a second invitation of one recipient to one version.

What is kept
------------
- The address is parsed and normalised (:func:`normalise_address`: IDNA on the domain,
  NFC and lower case on the local part) and never stored:
  the ledger holds ``HMAC-SHA256(key, "recipient|" + address)`` (hex).
- The key is ``DENIABLE_RECIPIENT_KEY`` (at least 32 characters) or, if that is unset,
  a file of 32 random bytes (hex) created beside the SQLite database
  (``<database>.recipient-key``; for PostgreSQL ``deniable.recipient-key`` in the working
  directory, or the file ``DENIABLE_RECIPIENT_KEY_FILE`` names), mode 0600. It is never
  written to the database: whoever holds the database alone cannot test an address
  against the ledger.
- Losing the key (or rotating it) makes every recipient a new person to the ledger:
  budgets start again from zero, so the cap no longer holds across that change, and
  re-invited people get new owner tags (their devices draw new reports). Keep it with
  the database's backups, apart from them.

The owner tag
-------------
Each recipient's links carry ``owner=<tag>`` in their fragment (never sent to a
server), ``base64url(HMAC-SHA256(key, "owner|" + address)[:18])``. The same for every
invitation of that person, so their device finds the reports it memoized for them
(keyed by owner and the question's content), and another person on the same device,
whose links carry another tag, never sees or sends them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_LIFETIME_BUDGET",
    "MAX_ADDRESS_CHARS",
    "MAX_LIFETIME_BUDGET",
    "MAX_RECIPIENTS",
    "RecipientKey",
    "lifetime_budget_from_environment",
    "normalise_address",
]

#: Nats one person may be charged across every survey on the server, by default.
DEFAULT_LIFETIME_BUDGET = 10.0
#: Largest ``DENIABLE_LIFETIME_BUDGET`` accepted (nats).
MAX_LIFETIME_BUDGET = 1000.0
#: Most recipients in one invitation request.
MAX_RECIPIENTS = 10_000
#: Longest address accepted (characters; RFC 5321's path limit is 256, mail merges
#: sometimes carry display forms).
MAX_ADDRESS_CHARS = 320
_MIN_KEY_CHARS = 32


def normalise_address(raw: object) -> str:
    """The address as the ledger knows it: one person per mailbox spelling that a
    standard makes equal.

    The address is parsed by ``email-validator`` (RFC 5322 and 6531 syntax, no DNS
    look-up). The domain is normalised as IDNA does (lower case, fullwidth letters and
    the ideographic full stop folded, a trailing dot dropped) to its ASCII form; a
    quoted local part that needs no quotes is unquoted; the local part is put in NFC
    (RFC 6532) and lower-cased. Lower-casing the local part goes beyond the standards
    (RFC 5321 leaves its case to the receiving server), and is kept because every
    provider in practice ignores it and because the ledger has always hashed it so: a
    false merge refuses an invitation, a false split would spend a person's budget
    twice. Provider rules that no standard states (dots and ``+tags`` at one provider)
    are not guessed: a person with several mailboxes is limited only by the
    researcher's list.

    Raises
    ------
    ValueError
        If it is not a string of 3 to :data:`MAX_ADDRESS_CHARS` characters holding
        exactly one plain address; a display name, angle brackets, ``mailto:`` or a
        trailing comma is refused with the plain form suggested.
    """
    import unicodedata

    from email_validator import EmailNotValidError, validate_email

    if not isinstance(raw, str):
        raise ValueError(f"must be a string, got {type(raw).__name__}")
    text = raw.strip()
    if not 3 <= len(text) <= MAX_ADDRESS_CHARS:
        raise ValueError(f"must have 3 to {MAX_ADDRESS_CHARS} characters, got {len(text)}")
    if any(not c.isprintable() for c in text):
        raise ValueError("must not contain control characters")
    plain = _plain_form(text)
    if plain != text:
        raise ValueError(
            f"must be one plain address, not {text!r} (no display name, angle brackets, "
            f"'mailto:' or separators); write it as {plain!r}"
        )
    if "@" in text and text.endswith(".") and not text.endswith(".."):
        text = text[:-1]  # the root's dot: "example.org." is "example.org"
    try:
        valid = validate_email(
            text, check_deliverability=False, allow_quoted_local=True, test_environment=True
        )
    except EmailNotValidError as exc:
        raise ValueError(f"is not an e-mail address: {exc}") from None
    local = unicodedata.normalize("NFC", valid.local_part).lower()
    return f"{local}@{valid.ascii_domain.lower()}"


def _plain_form(text: str) -> str:
    """The plain address inside common decorations of one (``Name <a@b>``, ``<a@b>``,
    ``mailto:a@b``, separators around it); ``text`` itself when there are none."""
    out = text
    if "<" in out and out.rstrip(",; ").endswith(">"):
        out = out[out.rindex("<") + 1 : out.rstrip(",; ").rindex(">")]
    out = out.strip().strip(",;").strip()
    if out.lower().startswith("mailto:"):
        out = out[len("mailto:") :].split("?", 1)[0]
    return out


def lifetime_budget_from_environment() -> float:
    """``DENIABLE_LIFETIME_BUDGET`` in nats (default :data:`DEFAULT_LIFETIME_BUDGET`).

    Raises
    ------
    ValueError
        If it is not a number in (0, :data:`MAX_LIFETIME_BUDGET`].
    """
    raw = os.environ.get("DENIABLE_LIFETIME_BUDGET", "")
    if not raw:
        return DEFAULT_LIFETIME_BUDGET
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_LIFETIME_BUDGET:
        raise ValueError(
            f"DENIABLE_LIFETIME_BUDGET must be a number of nats in (0, {MAX_LIFETIME_BUDGET:g}]"
            f", got {raw!r}"
        )
    return value


@dataclass(frozen=True)
class RecipientKey:
    """The server's secret for recipient hashes and owner tags (see the module).

    Parameters
    ----------
    secret : bytes
        At least 32 bytes.

    Raises
    ------
    ValueError
        For a shorter secret.
    """

    secret: bytes

    def __post_init__(self) -> None:
        if len(self.secret) < _MIN_KEY_CHARS:
            raise ValueError(f"the recipient key must have at least {_MIN_KEY_CHARS} bytes")

    @classmethod
    def load(cls, database_url: str) -> RecipientKey:
        """``DENIABLE_RECIPIENT_KEY``, else the key file (created on first use).

        Raises
        ------
        ValueError
            If the variable is shorter than 32 characters or the file holds no key.
        """
        given = os.environ.get("DENIABLE_RECIPIENT_KEY", "")
        if given:
            if len(given) < _MIN_KEY_CHARS:
                raise ValueError(
                    f"DENIABLE_RECIPIENT_KEY must have at least {_MIN_KEY_CHARS} characters; "
                    "make one with python -c 'import secrets; print(secrets.token_hex(32))'"
                )
            return cls(given.encode())
        path = cls.file_for(database_url)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another worker made it first
                pass
            else:
                with os.fdopen(fd, "w") as fh:
                    fh.write(secrets.token_hex(32) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
        text = path.read_text().strip()
        if len(text) < _MIN_KEY_CHARS:
            raise ValueError(f"the recipient key file {path.name} holds no key")
        return cls(text.encode())

    @staticmethod
    def file_for(database_url: str) -> Path:
        """Where the key file of a database lives (see the module)."""
        named = os.environ.get("DENIABLE_RECIPIENT_KEY_FILE", "")
        if named:
            return Path(named)
        prefix = "sqlite:///"
        if database_url.startswith(prefix) and database_url[len(prefix) :] not in ("", ":memory:"):
            db = Path(database_url[len(prefix) :])
            return db.with_name(db.name + ".recipient-key")
        return Path.cwd() / "deniable.recipient-key"

    def recipient(self, address: str) -> str:
        """The ledger's name for a normalised address (hex HMAC-SHA256, 64 characters)."""
        return hmac.new(self.secret, b"recipient|" + address.encode(), hashlib.sha256).hexdigest()

    def owner_tag(self, address: str) -> str:
        """The owner tag of a normalised address's links (24 base64url characters)."""
        mac = hmac.new(self.secret, b"owner|" + address.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:18]).decode()

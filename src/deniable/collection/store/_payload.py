"""The payload of a staging slot: one waiting response, packed to a fixed size.

Kept apart from :mod:`.staging` (which re-exports it) so that the schema's migrations
can read and rewrite payloads without importing the staging layer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["NO_ANSWER", "PAYLOAD_BYTES", "StagedResponse", "pack", "unpack"]

#: Bytes of every slot's payload (a response of 100 questions with a 64-character
#: survey id takes 178).
PAYLOAD_BYTES = 256
#: A staged code for a question left unanswered (``allow_no_answer``): no report row
#: is written for it, so it is missing in results and exports.
NO_ANSWER = 255
#: First byte of a payload with an arm and groups (a survey id's length, the first
#: byte of the format before, is at most 64).
_WITH_ARMS = 0xA7
#: First byte of a payload that also carries its credential's nullifier (32 bytes at
#: the end): the nullifier enters the ``nullifiers`` table with the release, in random
#: order, so that table keeps no arrival order either.
_WITH_NULLIFIER = 0xA8


@dataclass(frozen=True)
class StagedResponse:
    """One response's report codes, in its version's question order, its arm (index in
    the survey's arms, 0 without arms) and each question's group (0 or 1; empty means
    all 0)."""

    survey_id: str
    version: int
    bucket: int
    codes: tuple[int, ...]
    arm: int = 0
    groups: tuple[int, ...] = ()
    #: the spent credential's nullifier (32 bytes), empty without invitations
    nullifier: bytes = b""


def pack(item: StagedResponse) -> bytes:
    """The slot payload of a response, padded with random bytes to :data:`PAYLOAD_BYTES`.

    Raises
    ------
    ValueError
        If it does not fit (a survey id over 64 bytes, over 100 questions, a code >= 256).
    """
    sid = item.survey_id.encode()
    if len(sid) > 64 or len(item.codes) > 100 or not 0 < item.version < 2**31:
        raise ValueError(
            "a staged response needs a survey id of at most 64 bytes, at most 100 codes "
            f"and a version in 1..2^31-1; got {len(sid)} bytes, {len(item.codes)} codes, "
            f"version {item.version}"
        )
    if not 0 <= item.arm < 256 or any(g not in (0, 1) for g in item.groups):
        raise ValueError(f"a staged arm is in 0..255 and groups 0 or 1, got {item.arm}")
    if len(item.nullifier) not in (0, 32):
        raise ValueError(f"a staged nullifier has 32 bytes, got {len(item.nullifier)}")
    width = (len(item.codes) + 7) // 8
    bits = (
        sum(g << i for i, g in enumerate(item.groups)).to_bytes(width, "big")
        if item.groups
        else bytes(width)
    )
    body = (
        bytes([_WITH_NULLIFIER if item.nullifier else _WITH_ARMS, len(sid)])
        + sid
        + item.version.to_bytes(4, "big")
        + item.bucket.to_bytes(8, "big")
        + bytes([len(item.codes)])
        + bytes(item.codes)  # ValueError for a code outside 0..255
        + bytes([item.arm])
        + bits
        + item.nullifier
    )
    return body + os.urandom(PAYLOAD_BYTES - len(body))


def unpack(payload: bytes) -> StagedResponse:
    """The response in a filled slot's payload (the inverse of :func:`pack`; also reads
    the format before arms, which a database may still hold)."""
    arms = payload[0] in (_WITH_ARMS, _WITH_NULLIFIER)
    start = 1 if arms else 0
    n = payload[start]
    sid = payload[start + 1 : start + 1 + n].decode()
    at = start + 1 + n
    version = int.from_bytes(payload[at : at + 4], "big")
    bucket = int.from_bytes(payload[at + 4 : at + 12], "big")
    k = payload[at + 12]
    codes = tuple(payload[at + 13 : at + 13 + k])
    if not arms:
        return StagedResponse(sid, version, bucket, codes)
    arm = payload[at + 13 + k]
    end = at + 14 + k + (k + 7) // 8
    bits = int.from_bytes(payload[at + 14 + k : end], "big")
    nullifier = bytes(payload[end : end + 32]) if payload[0] == _WITH_NULLIFIER else b""
    return StagedResponse(
        sid, version, bucket, codes, arm, tuple((bits >> i) & 1 for i in range(k)), nullifier
    )

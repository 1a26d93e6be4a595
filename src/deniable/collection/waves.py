"""Waves of a panel: a wave is a new version of a survey with unchanged content, sent
to the same people (a baseline and a follow-up, a yearly panel).

Each response carries its version, which is its wave. What a wave costs a person is
bounded by the panel questions' permanent layer (:mod:`deniable.collection.budget`);
:func:`check_panel` refuses a wave of a survey whose randomized questions are one-layer
(their devices would re-send the first wave's reports, hiding every change).

The store's side (:class:`WavesMixin`): each wave's field period (from the audit log's
hours: its publication to the next wave's, or to the close), invitations and responses,
and the AAPOR response rate RR1 (complete responses over invitations issued, every
invited person counted eligible; AAPOR Standard Definitions 2023); and which of a
researcher's own invitations are still unused, for reminders that store nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, func, select

from ..errors import SurveyError, SurveyNotFoundError
from .schema import audit_log, invitations

if TYPE_CHECKING:
    from .survey import Survey

__all__ = ["MAX_REMIND", "WavesMixin", "check_panel", "next_wave"]

#: Most invitations one reminder request may ask about.
MAX_REMIND = 10_000

_HASH = re.compile(r"^[0-9a-f]{64}$")


def check_panel(survey: Survey) -> None:
    """Refuse a wave of ``survey`` if a randomized question (in any arm) has one layer.

    Raises
    ------
    SurveyError
        Naming each such question and how to declare its permanent layer.
    """
    arms: list[str | None] = list(survey.arm_names) or [None]
    one_layer = sorted(
        {
            q.id
            for name in arms
            for q in survey.questions_in(name)
            if not q.is_direct and q.two_layer is None
        }
    )
    if one_layer:
        raise SurveyError(
            [
                (
                    f"questions.{qid}.panel",
                    "a wave re-asks this question, but it has one layer: every device "
                    "would send its first report again and hide any change. Declare its "
                    "permanent layer (panel: {permanent: {name: warner, params: {p: 0.9}}} "
                    "for a yes/no question, kary-rr with epsilon for more answers) in a "
                    "new survey id",
                )
                for qid in one_layer
            ]
        )


def next_wave(versions: Sequence[Survey]) -> dict[str, Any]:
    """The definition of the next wave: the latest version's, one version up.

    Raises
    ------
    ValueError
        If ``versions`` is empty.
    SurveyError
        From :func:`check_panel`.
    """
    if not versions:
        raise ValueError("versions must hold the survey's published versions")
    latest = max(versions, key=lambda s: s.version)
    check_panel(latest)
    import json

    definition: dict[str, Any] = json.loads(latest.canonical_json())
    definition["version"] = latest.version + 1
    return definition


class WavesMixin:
    """Each wave's field period and response rate, and unused invitations."""

    reader: Engine

    def versions(self, survey_id: str) -> list[Survey]:
        raise NotImplementedError

    def response_count(self, survey_id: str, version: int | None = None) -> int:
        raise NotImplementedError

    def is_closed(self, survey_id: str) -> bool:
        raise NotImplementedError

    def waves(self, survey_id: str) -> list[dict[str, Any]]:
        """One row per version (wave), oldest first: ``wave``, ``title``, ``opened`` and
        ``closed`` (epoch seconds of the hour; ``closed`` ``None`` while it is the open
        wave), ``invited`` and ``started`` (invitations issued and spent),
        ``responses`` (stored: released and waiting) and ``rr1`` (responses over
        invitations issued; ``None`` without invitations).

        Raises
        ------
        SurveyNotFoundError
        """
        versions = self.versions(survey_id)
        if not versions:
            raise SurveyNotFoundError(f"no published survey {survey_id!r}")
        with self.reader.connect() as conn:
            published: dict[int, int] = {}
            q = (
                select(audit_log.c.version, func.min(audit_log.c.at))
                .where(audit_log.c.survey_id == survey_id, audit_log.c.action == "publish")
                .group_by(audit_log.c.version)
            )
            for version, at in conn.execute(q):
                if version is not None:
                    published[int(version)] = int(at)
            closes = sorted(
                int(at)
                for at in conn.execute(
                    select(audit_log.c.at).where(
                        audit_log.c.survey_id == survey_id, audit_log.c.action == "close"
                    )
                ).scalars()
            )
            issued: dict[int, list[int]] = {}
            q2 = (
                select(invitations.c.version, invitations.c.used, func.count())
                .where(invitations.c.survey_id == survey_id)
                .group_by(invitations.c.version, invitations.c.used)
            )
            for version, used, n in conn.execute(q2):
                row = issued.setdefault(int(version or 0), [0, 0])
                row[0] += int(n)
                row[1] += int(n) if used else 0
        closed_now = self.is_closed(survey_id)
        out: list[dict[str, Any]] = []
        for i, s in enumerate(versions):
            opened = published.get(s.version)
            if i + 1 < len(versions):
                ended = published.get(versions[i + 1].version)
            else:
                after = [c for c in closes if opened is None or c >= opened]
                ended = after[-1] if closed_now and after else None
            invited, started = issued.get(s.version, [0, 0])
            responses = self.response_count(survey_id, s.version)
            out.append(
                {
                    "wave": s.version,
                    "title": s.title,
                    "opened": opened,
                    "closed": ended,
                    "invited": invited,
                    "started": started,
                    "responses": responses,
                    "rr1": responses / invited if invited else None,
                }
            )
        return out

    def unused_invitations(self, survey_id: str, token_hashes: Sequence[str]) -> list[str]:
        """Which of these invitation hashes (SHA-256 hex of the token, as the links file
        lets the researcher compute) are issued and not yet spent: "not started on any
        device". Reads only; stores nothing.

        Raises
        ------
        ValueError
            For more than :data:`MAX_REMIND` hashes or one that is not 64 hex digits.
        """
        if len(token_hashes) > MAX_REMIND:
            raise ValueError(f"token_hashes must list at most {MAX_REMIND} hashes")
        bad = [i for i, h in enumerate(token_hashes) if not _HASH.match(h)]
        if bad:
            raise ValueError(f"token_hashes.{bad[0]} must be 64 lower-case hex digits")
        wanted = list(dict.fromkeys(token_hashes))
        unused: set[str] = set()
        with self.reader.connect() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                q = select(invitations.c.token_hash).where(
                    invitations.c.survey_id == survey_id,
                    invitations.c.token_hash.in_(chunk),
                    invitations.c.used.is_(False),
                )
                unused.update(conn.execute(q).scalars())
        return [h for h in wanted if h in unused]

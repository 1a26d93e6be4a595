"""Waves of a panel: a wave is a new version of a survey with unchanged content, sent
to the same people (a baseline and a follow-up, a yearly panel).

Each response carries its version, which is its wave. What a wave costs a person is
bounded by the panel questions' permanent layer (:mod:`deniable.collection.model`);
:func:`check_panel` refuses a wave of a survey whose randomized questions are one-layer
(their devices would re-send the first wave's reports, hiding every change).

The store's side (:class:`WavesMixin`): each wave's field period (to the minute its
publication and close record in the audit log: its publication to the next wave's, or
to the close), invitations and responses,
and the AAPOR response rate RR1 (complete responses over invitations issued, every
invited person counted eligible; AAPOR Standard Definitions 2023); and which of a
researcher's own invitations are still unused, for reminders that store nothing.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Engine, func, select

from ..._validation import JSON
from ...errors import RateLimitedError, SurveyError, SurveyNotFoundError
from ._schema import audit_log, invitations

if TYPE_CHECKING:
    import pandas as pd

    from ..model import Survey

__all__ = [
    "MAX_REMIND",
    "WavesMixin",
    "check_panel",
    "field_period",
    "next_wave",
    "wave_analysis",
]

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
    one_layer = {
        q.id: len(q.groups) > 1
        for name in arms
        for q in survey.questions_in(name)
        if not q.is_direct and q.two_layer is None
    }
    if one_layer:
        raise SurveyError(
            [
                (
                    f"questions.{qid}.panel",
                    "a wave re-asks this question, but it has one layer: every device "
                    "would send its first report again and hide any change. "
                    + (
                        "A group design (each group its own randomizer) cannot be a panel "
                        "question: ask it in one wave only (a survey id without it for the "
                        "waves), or in a new survey id with a one-randomizer design "
                        "(warner, kary-rr) and its permanent layer"
                        if grouped
                        else "Declare its permanent layer (panel: {permanent: {name: warner, "
                        "params: {p: 0.9}}} for a yes/no question, kary-rr with epsilon for "
                        "more answers) in a new survey id"
                    ),
                )
                for qid, grouped in sorted(one_layer.items())
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
    definition: dict[str, Any] = json.loads(latest.canonical_json())
    definition["version"] = latest.version + 1
    return definition


def field_period(opened: int | None, closed: int | None) -> str:
    """A wave's field period to the minute, UTC: ``"2026-11-27 10:42 .. open"``; ``"not
    recorded"`` for a version published without the audit log (the Python API)."""
    import datetime as dt

    if opened is None:
        return "not recorded (published outside the server's API)"

    def minute(t: int) -> str:
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M")

    return f"{minute(opened)} .. {'open' if closed is None else minute(closed)}"


def _minute(at: int, detail: str | None) -> int:
    """An audit entry's minute: the one a publication or a close records (epoch
    seconds), else its hour (entries written before minutes were recorded)."""
    try:
        minute = json.loads(detail or "{}").get("minute")
    except ValueError:
        minute = None
    return int(minute) if isinstance(minute, int) and 0 <= minute - int(at) < 3600 else int(at)


class WavesMixin:
    """Each wave's field period and response rate, and unused invitations."""

    reader: Engine
    engine: Engine

    def versions(self, survey_id: str) -> list[Survey]:
        raise NotImplementedError

    def response_count(self, survey_id: str, version: int | None = None) -> int:
        raise NotImplementedError

    def is_closed(self, survey_id: str) -> bool:
        raise NotImplementedError

    def waves(self, survey_id: str) -> list[dict[str, Any]]:
        """One row per version (wave), oldest first: ``wave``, ``title``, ``opened`` and
        ``closed`` (epoch seconds of the minute; ``closed`` ``None`` while it is the open
        wave; ``period`` the two as text), ``invited`` and ``started`` (invitations
        issued and spent), ``responses`` (stored: released and waiting) and ``rr1`` (responses over
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
            closes: list[int] = []
            q = select(
                audit_log.c.action, audit_log.c.version, audit_log.c.at, audit_log.c.detail
            ).where(
                audit_log.c.survey_id == survey_id, audit_log.c.action.in_(("publish", "close"))
            )
            for action, version, at, detail in conn.execute(q):
                when = _minute(at, detail)
                if action == "close":
                    closes.append(when)
                elif version is not None:
                    published[int(version)] = min(when, published.get(int(version), when))
            closes.sort()
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
                    "period": field_period(opened, ended),
                }
            )
        return out

    def unused_invitations(
        self,
        survey_id: str,
        token_hashes: Sequence[str],
        actor: str = "api",
        now: float | None = None,
    ) -> list[str]:
        """Which of these invitation hashes (SHA-256 hex of the token, as the links file
        lets the researcher compute) are issued and not yet spent: "not started on any
        device".

        Polled after every arrival, the answer would name each starter at once, so it is
        given once per release period of the survey (``release_every`` of its latest
        version, periods counted from the epoch) and written to the audit log (who, the
        hour, how many hashes).

        Raises
        ------
        ValueError
            For more than :data:`MAX_REMIND` hashes or one that is not 64 hex digits.
        RateLimitedError
            For a second look-up in the same release period (nothing is answered).
        """
        if len(token_hashes) > MAX_REMIND:
            raise ValueError(f"token_hashes must list at most {MAX_REMIND} hashes")
        bad = [i for i, h in enumerate(token_hashes) if not _HASH.match(h)]
        if bad:
            raise ValueError(f"token_hashes.{bad[0]} must be 64 lower-case hex digits")
        wanted = list(dict.fromkeys(token_hashes))
        every = self.survey(survey_id).release_every  # type: ignore[attr-defined]
        period = int((time.time() if now is None else now) // every)
        with self.engine.begin() as conn:  # one look-up per period, across workers
            q = select(audit_log.c.detail).where(
                audit_log.c.survey_id == survey_id, audit_log.c.action == "unused"
            )
            if any(json.loads(d).get("period") == period for d in conn.execute(q).scalars()):
                raise RateLimitedError(
                    f"invitations/unused answers survey {survey_id!r} once per release "
                    f"period (release_every = {every} s); the next period starts in "
                    f"{int(every * (period + 1) - (time.time() if now is None else now))} s"
                )
            detail = {"hashes": len(wanted), "period": period}
            self._audit(conn, actor, "unused", survey_id, None, detail)  # type: ignore[attr-defined]
        self.forget_history()  # type: ignore[attr-defined]
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


def wave_analysis(
    frame: pd.DataFrame, versions: Sequence[Survey], level: float = 0.95
) -> list[dict[str, JSON]]:
    """Each wave's prevalence and the change from each wave to the next, per arm and
    pooled over the arms, for every question asked unchanged in both waves
    (:func:`deniable.analysis._waves.wave_change`: its estimand, variance and interval).

    Parameters
    ----------
    frame : pandas.DataFrame
        A wide export of the survey id (:func:`~deniable.collection.exports.wide_frame`):
        a ``version`` column, an ``arm`` column with arms, a column of report codes per
        question (missing where not asked or not answered).
    versions : sequence of Survey
        The survey id's published versions (each a wave).
    level : float in (0, 1)
        Confidence level.

    Returns
    -------
    list of dict
        One per question and pair of consecutive waves with released responses in
        both: ``question``, ``text``, ``first`` and ``second`` (the waves), ``rows``: per
        arm (``"pooled"`` over the arms) and answer (a yes/no question: its second
        answer only; a numeric question: its mean, in its units), ``n`` (the two waves'
        respondents), ``first``, ``first_std_error``, ``second``, ``second_std_error``,
        ``difference``, ``std_error``, ``low``, ``high``, ``left_out`` and ``cells``.
        The change is on like cells (:func:`deniable.analysis._waves.wave_change_by_cell`):
        the key cells (the survey's key variables) with reports in both waves, each
        wave read at their common mix, with each wave's share left out; the key
        variables themselves are not outcomes and are left out, as are group designs
        (two randomizers per arm).

    Examples
    --------
    Two waves of the campus survey (version 2 asks the same questions again; the direct
    arm's post-randomized answer is charged in each, so the lifetime budget allows two):

    >>> from deniable.collection.exports._export import wide_frame
    >>> from deniable.collection.store import wave_analysis
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store(waves=2, release=True)  # 600 simulated responses a wave
    >>> store, (first, second) = campus.store, campus.surveys
    >>> [(w["question"], w["first"], w["second"]) for w in
    ...  wave_analysis(wide_frame(store, "campus"), [first, second])][:2]
    [('cheat', 1, 2), ('transplant', 1, 2)]
    """
    ordered = sorted(versions, key=lambda s: s.version)
    out: list[dict[str, JSON]] = []
    for before, after in itertools.pairwise(ordered):
        keys = [after.questions[i].id for i in after.key_positions]
        old = _with_cells(frame[frame["version"] == before.version], keys)
        new = _with_cells(frame[frame["version"] == after.version], keys)
        for q in after.questions:
            if q.id in {x.id for x in before.questions} and q.id in frame and q.id not in keys:
                change = _question_change(q, (before, old), (after, new), level)
                if change is not None:
                    out.append(change)
    return out


def _question_change(
    q: Any, first: tuple[Survey, Any], second: tuple[Survey, Any], level: float
) -> dict[str, Any] | None:
    """One question's change between two consecutive waves (:func:`wave_analysis`), per
    arm and pooled; ``None`` if its content changed, it is a group design, or no arm has
    a key cell with responses in both waves."""
    from ...analysis import pool_wave_changes, wave_change_by_cell
    from ..model import variants_digest

    (before, old), (after, new) = first, second
    if variants_digest(after.variants(q.id)) != variants_digest(before.variants(q.id)):
        return None  # changed content: not a wave of the same question
    if any(len(v.groups) > 1 for v in after.variants(q.id)):
        return None
    rows: list[dict[str, Any]] = []
    arms: list[str | None] = list(after.arm_names) or [None]
    parts = []  # per arm: the change on like cells
    for arm, variant in zip(arms, after.variants(q.id), strict=True):
        a = old if arm is None else old[old["arm"].astype(str) == arm]
        b = new if arm is None else new[new["arm"].astype(str) == arm]
        a, b = a[a[q.id].notna()], b[b[q.id].notna()]
        if not set(a["__cell"]) & set(b["__cell"]):
            continue
        change = wave_change_by_cell(
            (variant.mechanism, a[q.id].to_numpy(np.int64), a["__cell"].to_numpy()),
            (variant.mechanism, b[q.id].to_numpy(np.int64), b["__cell"].to_numpy()),
            level,
        )
        parts.append(change)
        rows.extend(_wave_rows(q, "pooled" if arm is None else arm, change))
    if not parts:
        return None
    if len(parts) > 1:  # arms drawn at random: their estimates weighted by size
        rows.extend(_wave_rows(q, "pooled", pool_wave_changes(parts, level)))
    return {
        "question": q.id,
        "text": q.text,
        "first": before.version,
        "second": after.version,
        "rows": rows,
    }


def _with_cells(rows: Any, keys: list[str]) -> Any:
    """``rows`` with a ``__cell`` column: each row's key cell (its key answers joined;
    one cell for a survey without keys)."""
    if not keys:
        return rows.assign(__cell="all")
    cell = rows[keys[0]].astype("string").fillna("-")
    for key in keys[1:]:  # column by column: an empty frame stays a column
        cell = cell + "|" + rows[key].astype("string").fillna("-")
    return rows.assign(__cell=cell)


def _wave_rows(q: Any, arm: str, change: Any) -> list[dict[str, Any]]:
    """The rows of one arm: a yes/no question's second answer, a numeric question's
    mean (its share of ``high`` scaled to the range), every answer otherwise."""
    labels = q.choice_labels
    answers = [1] if len(labels) == 2 else list(range(len(labels)))
    scale, shift, name = 1.0, 0.0, None
    if q.numeric is not None and q.range is not None:
        scale, shift, name = q.range.high - q.range.low, q.range.low, "mean"
    rows = []
    for j in answers:
        row = {k: v for k, v in change.to_dict()["answers"][j].items()}
        for key in ("first", "second"):
            row[key] = shift + scale * row[key]
        for key in ("first_std_error", "second_std_error", "difference", "std_error"):
            row[key] = scale * row[key]
        row["low"], row["high"] = scale * row["low"], scale * row["high"]
        rows.append(
            {"arm": arm, "answer": name or labels[j], "n": list(change.n),
             "left_out": list(change.left_out), "cells": change.cells} | row
        )  # fmt: skip
    return rows

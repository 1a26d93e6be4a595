"""The lifetime privacy budget of a survey id across its versions.

A respondent may answer every version of a survey. Their device memoizes each report
under the survey id and the question's
:attr:`~deniable.collection.model.Question.content_digest` (web/respond.js),
so a question that is unchanged across versions (same id, text, answer and report
labels, design and matrix) is answered once and costs once, and a
changed or new question draws again and is charged again. By sequential composition
(Dwork & Roth 2014, Thm 3.16) a respondent of every version spends at most the sum of
the costs of the *distinct* questions of all versions; that sum must stay within the
lifetime budget, which the first version fixes.

A panel question (``panel``: two layers, :mod:`deniable.mechanisms`) is drawn
afresh in every wave, so that a changed answer is seen. On one device what it can cost
is bounded by its permanent layer: epsilon_inf for each distinct answer (RAPPOR's
``k`` epsilon_inf; Erlingsson, Pihur & Korolova 2014). That bound is the device's, not
the person's: a person who answers a wave from a new device (another browser, a cleared
data directory) draws a new permanent report, and what they spend grows with every
wave. The ledger holds whatever the device: the ``n``-th version asking a panel question
adds :meth:`~deniable.mechanisms.TwoLayerDesign.waves_bound` of ``n`` waves less that of
``n - 1`` (``epsilon_1``, what a report from a new device costs, for the usual designs),
with no end after ``k`` waves. The page and the docs state ``k`` epsilon_inf as the
per-device bound it is.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import BudgetExceededError, SurveyConflictError
from ._survey import BUDGET_SLACK, Question, Survey

__all__ = [
    "Ledger",
    "LedgerEntry",
    "check_lifetime",
    "lifetime_ledger",
    "panel_answers",
    "panel_charge",
    "variants_digest",
    "wave_charge",
]


@dataclass(frozen=True)
class LedgerEntry:
    """One distinct question content: its cost (nats) and the versions that ask it."""

    question_id: str
    digest: str
    cost: float
    versions: tuple[int, ...]
    #: For a panel question, its number of answers ``k``; ``None`` otherwise.
    panel_answers: int | None = None
    #: A panel question's epsilon_1 (what one wave's report from a new device costs).
    per_wave: float = 0.0
    #: A panel question's epsilon_inf (per distinct answer on one device).
    per_answer: float = 0.0

    def in_words(self) -> str:
        """How the entry is charged, in words."""
        if self.panel_answers is None:
            return (
                f"{self.question_id}: {self.cost:.4g} nats once (its report is kept on the "
                "device and sent again in later versions)"
            )
        k = self.panel_answers
        return (
            f"{self.question_id} (panel): charged what a report from a new device costs, "
            f"in every wave (epsilon_1 {self.per_wave:.4g} nats a wave); "
            f"{self.cost:.4g} charged over {len(self.versions)} version(s). One device "
            f"alone spends at most {k} x {self.per_answer:.4g} = {k * self.per_answer:.4g} "
            "nats over any number of waves (epsilon_inf per distinct answer): a bound per "
            "device, not per person"
        )


@dataclass(frozen=True)
class Ledger:
    """The lifetime ledger of a survey id.

    Attributes
    ----------
    survey_id : str
    lifetime_budget : float
        Nats, fixed by the first version; ``inf`` for a survey without one
        (``no_lifetime_budget``: a design that can prove an answer).
    entries : list of LedgerEntry
        Distinct question contents in order of first appearance.
    cumulative : list of (int, float, float)
        ``(version, nats that version adds, nats spent through it)``.
    """

    survey_id: str
    lifetime_budget: float
    entries: list[LedgerEntry]
    cumulative: list[tuple[int, float, float]]

    @property
    def spent(self) -> float:
        """Nats a respondent of every version spends at most."""
        return math.fsum(e.cost for e in self.entries)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "survey": self.survey_id,
            # None: no lifetime budget (JSON has no infinity)
            "lifetime_budget": (
                self.lifetime_budget if math.isfinite(self.lifetime_budget) else None
            ),
            "spent": self.spent,
            "versions": [{"version": v, "added": a, "spent": c} for v, a, c in self.cumulative],
            "questions": [
                {
                    "id": e.question_id,
                    "digest": e.digest,
                    "cost": e.cost,
                    "versions": list(e.versions),
                    "panel_answers": e.panel_answers,
                    "charged": e.in_words(),
                }
                for e in self.entries
            ],
        }


def variants_digest(variants: Sequence[Question]) -> str:
    """What identifies a question across versions: its content digest, or with arms
    that ask it in several ways, SHA-256 of the arms' digests (a change in any arm is a
    changed question, charged again)."""
    digests = sorted({v.content_digest for v in variants})
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256(" ".join(digests).encode()).hexdigest()


def charged(variants: Sequence[Question]) -> bool:
    """Whether a question (its variant in each arm) is charged to the budget: randomized
    in some arm, or post-randomized by the server (a key, sent as given and stored as
    sent, protects nothing and is listed apart)."""
    return not all(v.is_direct and v.release_channel is None for v in variants)


def panel_answers(variants: Sequence[Question]) -> int | None:
    """A question's number of answers if any of its variants is a panel question (drawn
    afresh each wave), else ``None``."""
    if any(v.two_layer is not None for v in variants):
        return max(v.mechanism.n_truths for v in variants)
    return None


def panel_charge(variants: Sequence[Question], asked: int) -> float:
    """Nats the ``asked``-th version asking a panel question adds (``asked`` >= 1),
    whatever device answers: the largest over the arms of
    ``waves_bound(asked) - waves_bound(asked - 1)`` of a panel variant, or of another
    variant's cost (a direct arm's post-randomization is drawn afresh each version)."""
    out = 0.0
    for v in variants:
        two = v.two_layer
        if two is None:
            out = max(out, v.cost)
        else:
            out = max(out, two.waves_bound(asked) - two.waves_bound(asked - 1))
    return out


def wave_charge(survey: Survey, earlier: Sequence[Survey]) -> float:
    """Nats one more invitation to ``survey`` can cost a person already invited to the
    ``earlier`` versions of its id, whatever device answers: every randomized question's
    full cost (a device can lose its memo), a panel question's :func:`panel_charge`
    at its count of versions asking it (a new device draws a new permanent report).
    """
    total = 0.0
    for q in survey.questions:
        variants = survey.variants(q.id)
        if not charged(variants):
            continue
        if panel_answers(variants) is not None:
            digest = variants_digest(variants)
            asked = sum(
                1
                for e in earlier
                if any(
                    variants_digest(e.variants(x.id)) == digest for x in e.questions if x.id == q.id
                )
            )
            total += panel_charge(variants, asked + 1)
            continue
        total += survey.question_cost(q.id)
    return total


def lifetime_ledger(versions: Sequence[Survey]) -> Ledger:
    """The ledger of the given versions of one survey id (any order; sorted here).

    Raises
    ------
    ValueError
        If the versions are empty, of several survey ids, or repeat a version number.
    """
    if not versions:
        raise ValueError("versions must hold at least one survey version")
    ordered = sorted(versions, key=lambda s: s.version)
    if len({s.id for s in ordered}) != 1 or len({s.version for s in ordered}) != len(ordered):
        raise ValueError("versions must be distinct versions of one survey id")
    entries: dict[str, LedgerEntry] = {}
    cumulative: list[tuple[int, float, float]] = []
    spent = 0.0
    for survey in ordered:
        added = 0.0
        for q in survey.questions:
            variants = survey.variants(q.id)
            if not charged(variants):  # a key, sent as given: charges nothing
                continue
            digest = variants_digest(variants)
            seen = entries.get(digest)
            panel = panel_answers(variants)
            asked = 1 if seen is None else len(seen.versions) + 1
            if panel is not None:  # a new device draws again: charged every wave
                cost = panel_charge(variants, asked)
            elif seen is None or any(v.release_channel is not None for v in variants):
                # the largest over arms and groups; the server post-randomizes afresh in
                # every version, so no memo spares a channelled question
                cost = survey.question_cost(q.id)
            else:
                cost = 0.0  # the device sends its memoized report again
            two = next((v.two_layer for v in variants if v.two_layer is not None), None)
            entries[digest] = LedgerEntry(
                q.id if seen is None else seen.question_id,
                digest,
                (0.0 if seen is None else seen.cost) + cost,
                (*(() if seen is None else seen.versions), survey.version),
                panel,
                0.0 if two is None else two.epsilon_1,
                0.0 if two is None else two.epsilon_inf,
            )
            added += cost
        spent += added
        cumulative.append((survey.version, added, spent))
    return Ledger(ordered[0].id, ordered[0].lifetime, list(entries.values()), cumulative)


def check_lifetime(published: Sequence[Survey], new: Survey) -> Ledger:
    """Refuse a new version that changes the lifetime budget or would take a respondent
    of the earlier versions past it; return the ledger with it.

    Raises
    ------
    SurveyConflictError
        If ``new`` states another lifetime budget than the first version.
    BudgetExceededError
        Naming the charged questions and the sums.
    """
    if published:
        first = min(published, key=lambda s: s.version)
        if not math.isclose(new.lifetime, first.lifetime, rel_tol=0, abs_tol=BUDGET_SLACK):
            raise SurveyConflictError(
                f"lifetime_budget of survey {new.id!r} is fixed by version {first.version} at "
                f"{first.lifetime:g} nats; version {new.version} states {new.lifetime:g} "
                f"(set lifetime_budget: {first.lifetime:g})"
            )
    ledger = lifetime_ledger([*published, new])
    if ledger.spent > ledger.lifetime_budget + BUDGET_SLACK:
        charged = ", ".join(
            f"{e.question_id} (v{e.versions[0]})={e.cost:.4g}" for e in ledger.entries
        )
        version, added, _ = ledger.cumulative[-1]
        raise BudgetExceededError(
            [
                (
                    "lifetime_budget",
                    f"a respondent of every version would spend {ledger.spent:.4g} nats "
                    f"against the survey's lifetime budget of {ledger.lifetime_budget:g}: "
                    f"version {version} adds {added:.4g} nats of changed or new questions "
                    "and of direct answers the server post-randomizes afresh in every "
                    f"version; charged: {charged}. Keep randomized questions unchanged to "
                    "reuse their reports, or raise lifetime_budget",
                )
            ]
        )
    return ledger

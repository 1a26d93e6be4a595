"""Statistical disclosure control of the direct answers, release by release.

What a release shows
--------------------
A randomized report is deniable; a direct answer is not. Two kinds of direct answers
are told apart, as sdcMicro does (Templ, Kowarik & Meindl 2015):

- *Key variables* (quasi-identifiers): the questions asked directly in every arm (the
  covariates: faculty, year of study; a number's declared ``bins``) and the version
  (the wave). A combination of their answers is a *key cell*. The arm is a random draw
  on the device that no outsider knows, so it is not a key; a skipped answer
  (``allow_no_answer``) is an ordinary category.
- *Sensitive variables*: a question that some arm asks directly and another
  randomizes (the control arm of a validation study). Its direct answers are what the
  release must not tie to a key cell.

The rules (:func:`select_release`), for every release of a version:

1. Every response belongs to an *atom*: its key cell, and in an arm that asks
   sensitive questions directly, that arm and its sensitive answers. Each atom grows
   by 0 or by at least ``min_release`` responses: so every key cell, every (key cell,
   sensitive answer) and every (key cell, arm, sensitive answer) grows by 0 or by at
   least ``min_release``, between any two releases, not only consecutive ones (a sum
   of such growths). Released counts never decrease.
2. l-diversity (Machanavajjhala et al. 2007, sdcMicro's ``ldiversity``): among the
   rows of a key cell in an arm that asks sensitive questions directly, every
   sensitive question has at least ``l_diversity`` distinct answers (each held by at
   least ``min_release`` rows, by rule 1), or those rows wait. A homogeneous cell
   ("every law student in the first year who was asked directly said yes") is never
   released.
3. Waiting, not recoding: a response that would break a rule waits, whole, for a
   later release; nothing is recoded to missing, nothing is dropped. What still waits
   at the close is withheld and counted in one total per version.

Rule 1 is k-anonymity of the release's *increments*: tau-Argus's and sdcMicro's
threshold rule applied to the difference of any two releases, which is what an
attacker who keeps every export compares. The module also gives the planning report
of ``survey check`` and the dashboard (:func:`disclosure_report`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model._survey import Survey

__all__ = [
    "Atom",
    "DisclosurePlan",
    "cell_warning",
    "disclosure_plan",
    "disclosure_report",
    "released_sensitive",
    "select_release",
]

#: An atom: (key codes, arm index or -1 in an arm that asks nothing sensitive
#: directly, the sensitive codes in that arm).
Atom = tuple[tuple[int, ...], int, tuple[int, ...]]


@dataclass(frozen=True)
class DisclosurePlan:
    """Where a version's key and sensitive variables are.

    Attributes
    ----------
    keys : tuple of int
        Positions (in the version's question order) of the key variables: the questions
        asked directly in every arm.
    sensitive : dict of int -> tuple of int
        Per arm index (0 without arms), the positions of the questions that arm asks
        directly and another arm randomizes; only arms that have some.
    """

    keys: tuple[int, ...]
    sensitive: Mapping[int, tuple[int, ...]]

    @property
    def trivial(self) -> bool:
        """Nothing to control: no direct answer at all (every response is one atom)."""
        return not self.keys and not self.sensitive

    def atom(self, codes: Sequence[int], arm: int) -> Atom:
        """The atom of a response (its report codes in question order, its arm index)."""
        key = tuple(codes[i] for i in self.keys)
        positions = self.sensitive.get(arm)
        if positions is None:
            return (key, -1, ())
        return (key, arm, tuple(codes[i] for i in positions))


def disclosure_plan(survey: Survey) -> DisclosurePlan:
    """The key and sensitive variables of a survey version (see the module docstring).

    Parameters
    ----------
    survey : Survey
        One version.

    Returns
    -------
    DisclosurePlan
        ``keys``: the indices of the questions asked directly of everyone (the key
        variables); ``sensitive``: per directly asked sensitive question, its sensitive
        answer codes.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.store import disclosure_plan
    >>> disclosure_plan(load_survey("examples/campus.yaml"))
    DisclosurePlan(keys=(0, 1), sensitive={0: (2,)})
    """
    direct_everywhere = {q.id for q in survey.direct_questions}
    keys = tuple(i for i, q in enumerate(survey.questions) if q.id in direct_everywhere)
    sensitive: dict[int, tuple[int, ...]] = {}
    names: list[str | None] = list(survey.arm_names) or [None]
    for a, name in enumerate(names):
        asked = survey.questions_in(name)
        positions = tuple(
            i
            for i, q in enumerate(asked)
            if q.is_direct and survey.questions[i].id not in direct_everywhere
        )
        if positions:
            sensitive[a] = positions
    return DisclosurePlan(keys, sensitive)


def select_release(
    plan: DisclosurePlan,
    waiting: Sequence[tuple[Sequence[int], int]],
    released: Mapping[tuple[tuple[int, ...], int], Sequence[set[int]]],
    min_release: int,
    l_diversity: int,
) -> list[bool]:
    """Which waiting responses a release may take (the rules of the module docstring).

    Parameters
    ----------
    plan : DisclosurePlan
        The version's key and sensitive variables.
    waiting : sequence of (codes, arm index)
        The waiting responses of one version (codes in question order, a skipped answer
        as its own code).
    released : mapping of (key codes, arm index) -> list of sets of int
        For every key cell and arm that asks sensitive questions directly, the
        sensitive answers already released, one set per sensitive question (in the
        order of ``plan.sensitive[arm]``).
    min_release : int >= 1
        The smallest growth of an atom.
    l_diversity : int >= 1
        The distinct answers each sensitive question needs among a key cell's rows of
        an arm that asks it directly.

    Returns
    -------
    list of bool
        One per waiting response: released now (True) or waiting (False). Nothing is
        taken unless the whole selection keeps every rule.
    """
    if plan.trivial:
        take = len(waiting) >= min_release
        return [take] * len(waiting)
    atoms = [plan.atom(codes, arm) for codes, arm in waiting]
    sizes: dict[Atom, int] = defaultdict(int)
    for atom in atoms:
        sizes[atom] += 1
    due = {atom for atom, n in sizes.items() if n >= min_release}
    # l-diversity per (key cell, arm asking sensitive questions directly)
    by_cell: dict[tuple[tuple[int, ...], int], list[Atom]] = defaultdict(list)
    for atom in due:
        if atom[1] >= 0:
            by_cell[atom[0], atom[1]].append(atom)
    for cell, candidates in by_cell.items():
        width = len(plan.sensitive[cell[1]])
        before = released.get(cell, [set() for _ in range(width)])
        for j in range(width):
            values = set(before[j]) | {atom[2][j] for atom in candidates}
            if len(values) < l_diversity:
                due.difference_update(candidates)
                break
    return [atom in due for atom in atoms]


def released_sensitive(
    plan: DisclosurePlan, rows: Iterable[tuple[Sequence[int], int]]
) -> dict[tuple[tuple[int, ...], int], list[set[int]]]:
    """The ``released`` argument of :func:`select_release` from the released responses
    of a version (``(codes, arm index)``, codes in question order)."""
    out: dict[tuple[tuple[int, ...], int], list[set[int]]] = {}
    for codes, arm in rows:
        positions = plan.sensitive.get(arm)
        if positions is None:
            continue
        key = tuple(codes[i] for i in plan.keys)
        seen = out.setdefault((key, arm), [set() for _ in positions])
        for j, i in enumerate(positions):
            seen[j].add(codes[i])
    return out


def cell_warning(survey: Survey) -> str | None:
    """A warning when ``expected_responses`` spread over the survey's
    :meth:`~deniable.collection.model.Survey.direct_cells` leaves fewer than
    ``min_release`` per cell (an even spread: real cells are uneven), naming the
    direct questions; ``None`` otherwise."""
    cells = survey.direct_cells()
    if survey.expected_responses is None or cells == 1:
        return None
    per_cell = survey.expected_responses / cells
    if per_cell >= survey.min_release:
        return None
    names = ", ".join(q.id for q in survey.direct_questions)
    return (
        f"the direct questions ({names}) make {cells} cells together: "
        f"{survey.expected_responses} expected responses leave {per_cell:.3g} per cell "
        f"on average, below min_release ({survey.min_release}); a response in a small "
        "cell waits until its cell has min_release (and is withheld if it never does). "
        "Ask fewer direct questions, merge categories, or expect more responses"
    )


def disclosure_report(
    survey: Survey, released_cells: Mapping[Any, int] | None = None
) -> dict[str, Any]:
    """What ``survey check`` and the dashboard say about the direct answers.

    Planning figures come from ``expected_responses`` spread evenly over the cells
    (real cells are uneven: the figures are optimistic); released figures only from
    what is already released (never from responses that wait).

    Parameters
    ----------
    survey : Survey
    released_cells : mapping of key codes -> released responses, optional
        The released key cells of the version (from the released rows).

    Returns
    -------
    dict
        ``keys`` (question ids), ``sensitive`` (per arm, question ids), ``cells`` (how
        many key cells), ``min_release``, ``l_diversity``, ``expected_per_cell`` and
        ``expected_per_sensitive_cell`` (per arm: expected responses of one key cell,
        that arm and one sensitive answer, at an even spread), ``released_cells`` and
        ``released_responses`` (where given), ``wait`` (sentences naming the
        categories that will make responses wait) and ``suggestions``.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.store import disclosure_report
    >>> report = disclosure_report(load_survey("examples/campus.yaml"))
    >>> report["cells"], report["min_release"]
    (25, 30)
    """
    plan = disclosure_plan(survey)
    keys = [survey.questions[i] for i in plan.keys]
    cells = math.prod(q.mechanism.n_truths + (1 if q.allow_no_answer else 0) for q in keys)
    weights = {name: arm.weight for name, arm in (survey.arms or {}).items()}
    total_weight = sum(weights.values()) or 1.0
    names: list[str | None] = list(survey.arm_names) or [None]
    out: dict[str, Any] = {
        "keys": [q.id for q in keys],
        "sensitive": {
            str(names[a] or ""): [survey.questions[i].id for i in pos]
            for a, pos in plan.sensitive.items()
        },
        "cells": cells,
        "min_release": survey.min_release,
        "l_diversity": survey.l_diversity,
        "expected_per_cell": None,
        "expected_per_sensitive_cell": {},
        "wait": [],
        "suggestions": [],
    }
    m = survey.min_release
    expected = survey.expected_responses
    if expected is not None and plan.keys:
        per_cell = expected / cells
        out["expected_per_cell"] = per_cell
        if per_cell < m:
            biggest = max(keys, key=lambda q: q.mechanism.n_truths)
            out["wait"].append(
                f"the key questions ({', '.join(q.id for q in keys)}) make {cells} cells: "
                f"{expected} expected responses leave {per_cell:.3g} per cell, below "
                f"min_release ({m}); responses in smaller cells wait until their cell "
                f"has {m}"
            )
            out["suggestions"].append(
                f"merge categories of {biggest.id!r} ({biggest.mechanism.n_truths} answers) "
                "or bin it coarser, ask fewer key questions, or expect more responses"
            )
    if expected is not None:
        for a, positions in plan.sensitive.items():
            name = names[a]
            share = weights.get(name, 1.0) / total_weight if name is not None else 1.0
            values = math.prod(
                survey.questions_in(name)[i].mechanism.n_truths
                + (1 if survey.questions_in(name)[i].allow_no_answer else 0)
                for i in positions
            )
            per = expected * share / cells / values
            out["expected_per_sensitive_cell"][str(name or "")] = per
            if per < m:
                asked = ", ".join(survey.questions[i].id for i in positions)
                out["wait"].append(
                    f"arm {name!r} asks {asked} directly: {per:.3g} expected responses per "
                    f"key cell and answer, below min_release ({m}); its rows of a cell "
                    f"wait until each answer has {m} and at least {survey.l_diversity} "
                    "answers are present (a rare answer may wait until the close, and be "
                    "withheld)"
                )
                out["suggestions"].append(
                    f"give arm {name!r} more weight, use fewer key cells, or lower "
                    "l_diversity only if a homogeneous cell may be published"
                )
    if released_cells is not None:
        out["released_cells"] = sum(1 for n in released_cells.values() if n > 0)
        out["released_responses"] = int(sum(released_cells.values()))
    return out

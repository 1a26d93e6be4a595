"""Statistical disclosure control of the key variables, release by release.

What a release shows
--------------------
Sensitive values are protected by randomization: the device randomizes each report,
and the server post-randomizes every sensitive direct answer and list count before its
first write (:mod:`deniable.collection.model`, PRAM). What is left to a release rule is
the *key variables* (quasi-identifiers, as sdcMicro names them: Templ, Kowarik & Meindl
2015): the questions asked directly in every arm *before* treatment (the first question
whose design differs by arm or that draws a group), stored as sent. A combination of
their answers is a *key cell*, the arms together; "prefer not to say" is a category
like any other.

The rule (:func:`select_release`), for every release of a version: a release takes a
key cell only when at least ``min_release`` of its responses wait, and then all of
them. So between any two releases, not only consecutive ones, every key cell grows by 0
or by at least ``min_release`` (k-anonymity of the release's *increments*: tau-Argus's
and sdcMicro's threshold rule applied to the difference of any two releases). No rule
selects on a sensitive answer, a list count, a report or an arm: the key answers come
before treatment, so what waits is independent of the arm and of every answer the study
measures, and every arm's released share is the same in expectation.

What the rule protects: against an outsider who knows a person's key answers and lines
up two releases, a crowd of at least ``min_release``. Nothing against an analyst who
injects responses into a person's key cell: against that analyst only the
randomization protects (each sensitive value is epsilon-LDP whatever they know).

Waiting, not recoding: a response in a key cell with fewer than ``min_release``
waiting waits, whole; what still waits when the survey closes is withheld for good
(also after a reopen) and counted in one total per version. The module also gives the
planning report of ``survey check`` and the dashboard (:func:`disclosure_report`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from ...mechanisms import Direct

if TYPE_CHECKING:
    from ...mechanisms import Design
    from ..model import Survey

__all__ = [
    "DisclosurePlan",
    "cell_warning",
    "channel_costs",
    "disclosure_plan",
    "disclosure_report",
    "released_share",
    "select_release",
]


@dataclass(frozen=True)
class DisclosurePlan:
    """Where a version's key variables are.

    Attributes
    ----------
    keys : tuple of int
        Positions (in the version's question order) of the key variables: the questions
        asked directly in every arm before treatment, stored as sent.
    """

    keys: tuple[int, ...]

    @property
    def trivial(self) -> bool:
        """No key variable: the version is one key cell."""
        return not self.keys

    def cell(self, codes: Sequence[int]) -> tuple[int, ...]:
        """The key cell of a response (its codes in question order)."""
        return tuple(codes[i] for i in self.keys)


def disclosure_plan(survey: Survey) -> DisclosurePlan:
    """The key variables of a survey version (see the module docstring).

    Parameters
    ----------
    survey : Survey
        One version.

    Returns
    -------
    DisclosurePlan
        ``keys``: the positions of the questions asked directly in every arm before
        treatment and stored as sent.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.store import disclosure_plan
    >>> disclosure_plan(load_survey("examples/campus.yaml"))
    DisclosurePlan(keys=(0, 1))
    """
    return DisclosurePlan(survey.key_positions)


def select_release(
    plan: DisclosurePlan, waiting: Sequence[Sequence[int]] | np.ndarray, min_release: int
) -> list[bool]:
    """Which waiting responses a release takes: every response of each key cell with at
    least ``min_release`` waiting.

    Parameters
    ----------
    plan : DisclosurePlan
    waiting : sequence of sequences of int, or int array of shape (n, questions)
        The waiting responses of one version, each its codes in question order.
    min_release : int >= 1

    Returns
    -------
    list of bool
        One per waiting response: released now (True) or waiting (False).

    Examples
    --------
    >>> select_release(DisclosurePlan((0,)), [(0, 1), (0, 0), (1, 1)], 2)
    [True, True, False]
    """
    codes = np.asarray(waiting, dtype=np.int64).reshape(len(waiting), -1)
    if not len(codes):
        return []
    keys = codes[:, list(plan.keys)] if plan.keys else np.zeros((len(codes), 1), np.int64)
    _, cell, sizes = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    taken: list[bool] = (sizes[cell.reshape(-1)] >= min_release).tolist()
    return taken


def released_share(expected: float, cells: int, min_release: int) -> float:
    """The expected share of responses released by the close when ``expected``
    responses fall evenly at random into ``cells`` key cells: a response is released
    when its cell holds at least ``min_release``, ``Pr(Binomial(n - 1, 1 / cells) >=
    min_release - 1)``. The same in every arm (the cells are the arms together)."""
    n = max(round(expected), 1)
    if cells <= 1:
        return 1.0 if n >= min_release else 0.0
    return float(stats.binom.sf(min_release - 2, n - 1, 1.0 / cells))


def _width(design: Design, n: float | None, weights: np.ndarray, z: float) -> float | None:
    """Width of the Wald interval of ``weights @ pi`` (a share, or a list's mean count)
    at a uniform truth, from ``n`` reports of ``design`` (``None`` without ``n``)."""
    if n is None:
        return None
    P = design.matrix
    lam = P @ np.full(P.shape[1], 1.0 / P.shape[1])
    inverse = np.linalg.pinv(P)
    cov = inverse @ (np.diag(lam) - np.outer(lam, lam)) @ inverse.T / max(n, 1.0)
    return 2.0 * z * math.sqrt(max(float(weights @ cov @ weights), 0.0))


def channel_costs(survey: Survey, z: float = 1.959963984540054) -> list[dict[str, Any]]:
    """Per post-randomized question and arm: its channel, epsilon, and the 95% interval
    width it costs at ``expected_responses`` (that arm's planned share, half of it per
    list group; a uniform truth), beside the width of the answers as sent: of the share
    of the first sensitive answer, or of a list's mean count (``None`` without
    ``expected_responses``)."""
    weights = {name: arm.weight for name, arm in (survey.arms or {}).items()}
    total = sum(weights.values()) or 1.0
    out = []
    arms: list[str | None] = list(survey.arm_names) or [None]
    for name in arms:
        share = weights[name] / total if name is not None else 1.0
        for q in survey.questions_in(name):
            channel = q.release_channel
            if channel is None:
                continue
            k = channel.n_truths
            n = None if survey.expected_responses is None else survey.expected_responses * share
            if q.is_list:
                n = None if n is None else n / 2
                w = np.arange(k, dtype=np.float64)
            else:
                w = np.zeros(k)
                w[(q.sensitive_indices or [k - 1])[0]] = 1.0
            out.append(
                {
                    "question": q.id,
                    "arm": name or "",
                    "channel": channel.spec,
                    "epsilon": channel.epsilon,
                    "width": _width(channel, n, w, z),
                    "width_as_sent": _width(Direct(k=k), n, w, z),
                }
            )
    return out


def cell_warning(survey: Survey) -> str | None:
    """A warning when ``expected_responses`` spread over the survey's key cells
    (:meth:`~deniable.collection.model.Survey.direct_cells`) leaves fewer than
    ``min_release`` per cell (an even spread: real cells are uneven), naming the key
    questions; ``None`` otherwise."""
    cells = survey.direct_cells()
    if survey.expected_responses is None or cells == 1:
        return None
    per_cell = survey.expected_responses / cells
    if per_cell >= survey.min_release:
        return None
    names = ", ".join(survey.questions[i].id for i in survey.key_positions)
    return (
        f"the key questions ({names}) make {cells} cells together: "
        f"{survey.expected_responses} expected responses leave {per_cell:.3g} per cell "
        f"on average, below min_release ({survey.min_release}); a response in a small "
        "cell waits until its cell has min_release (and is withheld if it never does). "
        "Ask fewer key questions, merge categories, or expect more responses"
    )


def disclosure_report(
    survey: Survey, released_cells: Mapping[Any, int] | None = None
) -> dict[str, Any]:
    """What ``survey check`` and the dashboard say about the key cells and the
    post-randomized answers.

    Planning figures come from ``expected_responses`` spread evenly over the key cells
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
        ``keys`` (question ids), ``after_treatment`` (direct questions asked after
        treatment: released as sent, never keys), ``cells``, ``min_release``,
        ``release_every`` (seconds), ``expected_per_cell``, ``released_share`` (per arm:
        the expected share released by the close, equal across arms), ``channels``
        (:func:`channel_costs`), ``unprotected`` (question ids stored as sent under
        ``allow_unprotected_release``), ``released_cells`` and ``released_responses``
        (where given), ``wait`` (sentences) and ``suggestions``.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.store import disclosure_report
    >>> report = disclosure_report(load_survey("examples/campus.yaml"))
    >>> report["cells"], report["min_release"], report["channels"][0]["question"]
    (25, 30, 'cheat')
    """
    keys = [survey.questions[i] for i in survey.key_positions]
    cells = math.prod(q.mechanism.n_truths + (1 if q.allow_no_answer else 0) for q in keys)
    names: list[str] = survey.arm_names or [""]
    m, expected = survey.min_release, survey.expected_responses
    after = [
        q.id for q in survey.direct_questions if q.id not in {k.id for k in keys} and not q.is_list
    ]
    unprotected = []
    if survey.allow_unprotected_release:
        unprotected = [
            q.id
            for q in survey.questions
            if any(v.is_direct for v in survey.variants(q.id))
            and (q.is_list or q.pram or not all(v.is_direct for v in survey.variants(q.id)))
        ]
    out: dict[str, Any] = {
        "keys": [q.id for q in keys],
        "after_treatment": after,
        "cells": cells,
        "min_release": m,
        "release_every": survey.release_every,
        "expected_per_cell": None,
        "released_share": {},
        "channels": channel_costs(survey),
        "unprotected": unprotected,
        "wait": [],
        "suggestions": [],
    }
    if expected is not None:
        share = released_share(expected, cells, m)
        out["released_share"] = {str(name): share for name in names}
        if keys:
            per_cell = expected / cells
            out["expected_per_cell"] = per_cell
            if per_cell < m:
                biggest = max(keys, key=lambda q: q.mechanism.n_truths)
                out["wait"].append(
                    f"the key questions ({', '.join(q.id for q in keys)}) make {cells} cells: "
                    f"{expected} expected responses leave {per_cell:.3g} per cell, below "
                    f"min_release ({m}); responses in smaller cells wait until their cell "
                    f"has {m} (about {share:.0%} released by the close, the same in every arm)"
                )
                out["suggestions"].append(
                    f"merge categories of {biggest.id!r} ({biggest.mechanism.n_truths} "
                    "answers) or bin it coarser, ask fewer key questions, or expect more "
                    "responses"
                )
    if released_cells is not None:
        out["released_cells"] = sum(1 for n in released_cells.values() if n > 0)
        out["released_responses"] = int(sum(released_cells.values()))
    return out

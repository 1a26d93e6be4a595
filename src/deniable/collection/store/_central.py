"""The central privacy of a release: what the released reports say of one person to
whoever reads them, by amplification by shuffling (Feldman, McMillan & Talwar 2021;
:func:`deniable.planning.shuffle_amplification`).

A release (:func:`.staging.release_due`) moves a crowd of staged responses of one
version into ``reports`` in random order, with no link to who sent them. Each response
is ``epsilon_0``-LDP, ``epsilon_0`` its whole cost (:attr:`Survey.total_epsilon`: the
sum over its randomized questions, each the largest over arms and groups). Shuffled
among ``n`` others' responses, it is also ``(epsilon, delta)``-DP in the central sense,
for an ``epsilon`` far below ``epsilon_0`` when ``n`` is large. The statement is made
only where the theorem's conditions hold, and then spelled out with it
(:func:`release_statement`):

- every invitation of the survey id went to a named recipient, so each person sends at
  most one response to a version (no open survey, no batch ingestion, no anonymous
  link: one person could send several);
- every randomized question of every arm has a finite epsilon: no one-sided design
  and no arm that asks a randomized question directly (a control arm);
- ``n`` is the smallest group the release distinguishes: responses of the same arm,
  the same groups of group designs and the same answers to the
  questions asked directly in every arm (the covariates, sent as given); one person's
  report hides only among the others of its group;
- ``delta = min(10^-6, 1 / (10 n))``.

Composition. The releases of one version hold different people (one response per
named invitation), so together they are ``(max epsilon, delta)``-DP (parallel
composition): :func:`version_statement`. A person who answers several versions is in
one release of each; their epsilons and deltas add up (basic composition).

Against whom. The statement is about readers of the released reports (the results,
exports and tallies, and whoever later holds them). It says nothing against the live
operator, who sees each response arrive with its connection before the crowd is
released.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..model._survey import Survey
    from ._staging import StagedResponse

__all__ = [
    "DELTA",
    "conditions_hold",
    "release_statement",
    "smallest_group",
    "version_statement",
]

#: The largest delta stated (smaller for releases of more than 100,000 responses).
DELTA = 1e-6

#: The designs whose clone probability is ``2 / (e^eps0 + 1)`` (randomized response).
_RANDOMIZED_RESPONSE = ("warner", "kary-rr")


def smallest_group(survey: Survey, crowd: Sequence[StagedResponse]) -> int:
    """The fewest responses of ``crowd`` (one version's release) that share what the
    release shows of them: arm, groups and the answers of the questions
    asked directly in every arm; 0 for an empty crowd."""
    direct = {q.id for q in survey.direct_questions}
    covariates = [i for i, q in enumerate(survey.questions) if q.id in direct]
    cells = Counter(
        (item.arm, item.groups, item.bucket, tuple(item.codes[i] for i in covariates))
        for item in crowd
    )
    return min(cells.values(), default=0)


def _randomized(survey: Survey) -> list[Any]:
    """Every randomized question as each arm asks it (covariates left out)."""
    covariates = {q.id for q in survey.direct_questions}
    return [v for q in survey.questions if q.id not in covariates for v in survey.variants(q.id)]


def conditions_hold(survey: Survey, anonymous_invitations: int) -> bool:
    """Whether the survey meets the conditions on who answers and how (the module's
    list, but for the group size)."""
    asked = _randomized(survey)
    return (
        survey.requires_invitation
        and anonymous_invitations == 0
        and bool(asked)
        and all(not v.is_direct and math.isfinite(v.epsilon) for v in asked)
    )


def release_statement(survey: Survey, n: int, anonymous_invitations: int) -> dict[str, Any] | None:
    """The central ``(epsilon, delta)`` of a release whose smallest group holds ``n``
    responses, or ``None`` when the conditions do not hold (then nothing is said).

    Returns
    -------
    dict or None
        ``{"epsilon", "delta", "epsilon_0", "n", "randomizer", "closed_form",
        "statement"}``: ``epsilon`` the numerical upper bound (nats), ``closed_form``
        the looser closed form (``inf`` outside its range), ``statement`` the plain
        words: what holds, against whom, under which conditions.
    """
    from ...planning._shuffle import shuffle_amplification

    if n < 2 or not conditions_hold(survey, anonymous_invitations):
        return None
    asked = _randomized(survey)
    epsilon_0 = survey.total_epsilon
    one = len({v.id for v in asked}) == 1
    rr = one and all(v.design.name in _RANDOMIZED_RESPONSE for v in asked)
    randomizer: Literal["general", "randomized_response"] = (
        "randomized_response" if rr else "general"
    )
    delta = min(DELTA, 0.1 / n)
    bound = shuffle_amplification(n, epsilon_0, delta, randomizer=randomizer)
    return {
        "epsilon": bound.epsilon,
        "delta": delta,
        "epsilon_0": epsilon_0,
        "n": n,
        "randomizer": randomizer,
        "closed_form": bound.closed_form,
        "statement": (
            "to a reader of the released reports, each person in the release is protected "
            f"at ({bound.epsilon:.3g}, {delta:.1g})-differential privacy (amplification by "
            "shuffling; Feldman, McMillan & Talwar 2021): their response is "
            f"{epsilon_0:.3g}-LDP and hides among the {n} or more responses of its group "
            "(arm, groups, hour, direct answers). This holds because every invitation went "
            "to a named recipient and every randomized question has a finite epsilon. "
            "Releases of one version hold different people (take the largest epsilon); a "
            "person in several versions adds up their epsilons and deltas. It does not hold "
            "against the live operator, who sees responses arrive"
        ),
    }


def version_statement(
    releases: Iterable[Mapping[str, Any]], survey: Survey, anonymous_invitations: int
) -> dict[str, Any] | None:
    """The statement for all the releases of one version (the ``detail`` of their
    audit entries): the one with the largest ``epsilon`` (parallel composition), with
    ``releases`` their count; ``None`` when any release has none, there are none, or
    the conditions no longer hold (an anonymous invitation issued since)."""
    details = list(releases)
    if not details or not conditions_hold(survey, anonymous_invitations):
        return None
    statements = [d.get("central") for d in details]
    if any(s is None for s in statements):
        return None
    worst = max(statements, key=lambda s: float(s["epsilon"]))  # type: ignore[index]
    return dict(worst) | {"releases": len(details)}  # type: ignore[arg-type]

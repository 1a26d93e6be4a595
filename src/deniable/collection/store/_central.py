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
composition): :func:`version_statement`. A person who answers several versions sends
the report their device memoized (one draw per question content), so the same draw
appears in a release of each version. Composition theorems need fresh randomness in each
mechanism, and no proof here covers amplification by shuffling of a draw released more
than once, so across versions and waves the figure stated is the one that can be
proved: the local epsilon of the person's distinct draws (every release is a
post-processing of them and of the others' reports), which is what the survey id's
lifetime ledger counts (one draw per distinct question content, a panel question what a
report from a new device costs in every wave): :func:`pooled_statement`.

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
    from ..model import Survey
    from ._staging import StagedResponse

__all__ = [
    "DELTA",
    "conditions_hold",
    "pooled_statement",
    "release_statement",
    "smallest_group",
    "version_statement",
]

#: The largest delta stated (smaller for releases of more than 100,000 responses).
DELTA = 1e-6

#: The designs whose clone probability is ``2 / (e^eps0 + 1)`` (randomized response).
_RANDOMIZED_RESPONSE = ("warner", "kary-rr")

#: The largest group whose release the server states exactly for binary randomized
#: response (Warner); the exact sum takes under a second up to here, seconds beyond
#: (:data:`deniable.planning._shuffle.MAX_EXACT_REPORTS`), and a larger group gets the
#: clones' bound.
EXACT_IN_SERVICE = 20_000


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
    from ...planning import shuffle_amplification

    if n < 2 or not conditions_hold(survey, anonymous_invitations):
        return None
    asked = _randomized(survey)
    epsilon_0 = survey.total_epsilon
    one = len({v.id for v in asked}) == 1
    rr = one and all(v.design.name in _RANDOMIZED_RESPONSE for v in asked)
    # binary randomized response at a smaller epsilon than epsilon_0 (another arm's
    # Warner) is a post-processing of it at epsilon_0, report by report
    binary = rr and all(v.design.name == "warner" for v in asked) and n <= EXACT_IN_SERVICE
    randomizer: Literal["general", "randomized_response", "binary_randomized_response"] = (
        "binary_randomized_response" if binary else "randomized_response" if rr else "general"
    )
    delta = min(DELTA, 0.1 / n)
    bound = shuffle_amplification(n, epsilon_0, delta, randomizer=randomizer)
    how = (
        "exact for binary randomized response, over every answer of the others"
        if binary
        else "amplification by shuffling; Feldman, McMillan & Talwar 2021"
    )
    return {
        "epsilon": bound.epsilon,
        "delta": delta,
        "epsilon_0": epsilon_0,
        "n": n,
        "randomizer": randomizer,
        "closed_form": bound.closed_form,
        "statement": (
            "to a reader of the released reports, each person in the release is protected "
            f"at ({bound.epsilon:.3g}, {delta:.1g})-differential privacy ({how}): their "
            "response is "
            f"{epsilon_0:.3g}-LDP and hides among the {n} or more responses of its group "
            "(arm, groups, hour, direct answers). This holds because every invitation went "
            "to a named recipient and every randomized question has a finite epsilon. "
            "Releases of one version hold different people (take the largest epsilon); a "
            "person in several versions sends the same memoized report to each, and across "
            "versions only the local epsilon of their distinct draws is proved. It does not hold "
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


def pooled_statement(versions: Sequence[Survey]) -> dict[str, Any]:
    """What the releases of several versions (waves) of one survey id say of one person,
    together: the local epsilon of the person's distinct draws (module text).

    Returns
    -------
    dict
        ``{"epsilon", "delta", "local", "versions", "statement"}``: ``epsilon`` the
        lifetime ledger's count over ``versions`` (nats; ``inf`` where a design can
        prove an answer), ``delta`` 0, ``local`` True, ``versions`` their numbers.

    Raises
    ------
    ValueError
        If ``versions`` is empty or mixes survey ids (``lifetime_ledger``).
    """
    from ..model import lifetime_ledger

    ledger = lifetime_ledger(versions)
    numbers = [v for v, _, _ in ledger.cumulative]
    proves = any(
        not math.isfinite(v.epsilon)
        for s in versions
        for q in s.questions
        for v in s.variants(q.id)
        if not v.is_direct
    )
    spent = math.inf if proves else ledger.spent
    figure = (
        f"{spent:.3g}-LDP" if math.isfinite(spent) else "not bounded (a design can prove an answer)"
    )
    return {
        "epsilon": spent,
        "delta": 0.0,
        "local": True,
        "versions": numbers,
        "statement": (
            f"pooled over versions {', '.join(map(str, numbers))}, what holds for each person is "
            f"the local epsilon of their distinct draws: {figure}. Their device sends the "
            "report it memoized to every version that asks the question unchanged, so one "
            "draw can appear in a release of each version; no proof of amplification by "
            "shuffling covers a draw released more than once, while every release is a "
            "post-processing of the person's draws (the lifetime ledger counts them: one per "
            "distinct question, a panel question what a new device's report costs in every "
            "wave). A device that lost "
            "its memo draws again, up to the server's per-person cap"
        ),
    }

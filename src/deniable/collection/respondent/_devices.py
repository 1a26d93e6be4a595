"""What a respondent's device draws and sends, for simulated respondents.

The respondent page (``web/respond.js``, ``crypto.getRandomValues``) and the terminal
client (:mod:`deniable.collection.respondent`, ``secrets``) draw a respondent's arm by the
arms' weights and each group design's group with equal chances, then randomize each
answer through the design of that arm and group. :func:`simulate_responses` does the
same for many simulated respondents at once from a seeded generator (simulation only:
a real device draws from a cryptographically secure source), so that studies can be
run end to end with known truths (``deniable demo``, the tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ..model import Survey

__all__ = ["simulate_responses"]


def simulate_responses(
    survey: Survey,
    truths: Mapping[str, NDArray[np.int64]],
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """Responses as devices would send them: ``{"reports", "arm", "groups"}`` each.

    Parameters
    ----------
    survey : Survey
    truths : mapping of question id -> ndarray of int64, shape (n,)
        Each respondent's true answer code per question (``0..k-1``; ``-1`` for no
        answer to a question that allows none; a number for a numeric question; for a
        list experiment of ``J`` control items, ``c + (J + 1) z`` with ``c`` in
        ``0..J`` the control items that apply and ``z`` the sensitive answer).
    rng : numpy.random.Generator
        Seeded, for simulation only.

    Returns
    -------
    list of dict, length n
        The bodies a device posts (without version and credential).

    Raises
    ------
    ValueError
        If a question's truths are missing or of another length.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.respondent import simulate_responses
    >>> survey = load_survey("examples/campus.yaml")
    >>> truths = {q.id: np.zeros(3, dtype=np.int64) for q in survey.questions}
    >>> bodies = simulate_responses(survey, truths, np.random.default_rng(0))
    >>> len(bodies), sorted(bodies[0])
    (3, ['arm', 'groups', 'reports'])
    """
    ids = [q.id for q in survey.questions]
    missing = sorted(set(ids) - set(truths))
    if missing:
        raise ValueError(f"truths must give every question; missing {missing}")
    n = len(next(iter(truths.values())))
    if any(len(truths[q]) != n for q in ids):
        raise ValueError("truths must have one entry per respondent for every question")
    names = survey.arm_names
    if names:
        assert survey.arms is not None
        w = np.array([a.weight for a in survey.arms.values()])
        arm_index = rng.choice(len(names), size=n, p=w / w.sum())
    else:
        arm_index = np.zeros(n, dtype=np.int64)
    reports = {qid: np.zeros(n, dtype=np.int64) for qid in ids}
    groups = {q.id: rng.integers(0, 2, size=n) for q in survey.questions if len(q.groups) > 1}
    for a, arm in enumerate(names or [None]):
        mine = arm_index == a
        for q in survey.questions_in(arm):
            t = np.asarray(truths[q.id])[mine]
            if q.is_list:  # truth c + (J + 1) z: c control items apply, z the sensitive one
                size = len(q.items or ()) + 1
                reports[q.id][mine] = t % size + (t // size) * groups[q.id][mine]
                continue
            if q.is_direct:
                if q.bins is not None:  # the bin of the number (Question.bin_of)
                    edges = np.asarray(q.bins)
                    t = np.minimum(np.searchsorted(edges, t, side="right") - 1, edges.size - 2)
                reports[q.id][mine] = t
                continue
            if q.numeric is not None:
                assert q.range is not None
                z = (t - q.range.low) / (q.range.high - q.range.low)
                t = (rng.random(t.size) < z).astype(np.int64)  # rounded at random
            g = groups[q.id][mine] if q.id in groups else np.zeros(t.size, dtype=np.int64)
            out = np.empty(t.size, dtype=np.int64)
            for j, design in enumerate(q.groups):
                sel = g == j
                out[sel] = design.randomize(t[sel].astype(np.int64), rng)
            reports[q.id][mine] = out
    return [
        {
            "reports": {
                qid: None
                if truths[qid][i] == -1 and survey.question(qid).allow_no_answer
                else int(reports[qid][i])
                for qid in ids
            },
            "arm": names[arm_index[i]] if names else None,
            "groups": {qid: int(g[i]) for qid, g in groups.items()} or None,
        }
        for i in range(n)
    ]

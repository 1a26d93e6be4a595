"""The rows of ``deniable survey check``: each randomized question's cost and disclosure
risk, per arm and per group of a group design, and each arm's cost."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..collection.model import Question, Survey
    from ..mechanisms import Design


__all__ = ["arm_rows", "cost_rows"]


def cost_rows(survey: Survey, prior: float) -> list[dict[str, Any]]:
    """One row per randomized question, arm (where arms ask it differently) and group:
    design, epsilon and cost (nats), the posterior after each report at ``prior`` (the
    prior prevalence of "yes", in [0, 1]) and each answer's largest odds factor."""
    rows = []
    for q in survey.questions:
        variants = survey.variants(q.id)
        same = len({v.content_digest for v in variants}) == 1
        arms: list[str | None] = [None] if same else list(survey.arm_names)
        for arm, v in zip(arms, variants, strict=False):
            if v.is_direct:
                continue
            for g, design in enumerate(v.groups):
                rows.append(_row(v, design, prior, arm, g if len(v.groups) > 1 else None))
    return rows


def _row(
    q: Question, d: Design, prior: float, arm: str | None, group: int | None
) -> dict[str, Any]:
    import numpy as np

    from ..collection.model import catalog
    from ..planning import answer_odds_factors, disclosure_risk

    risk = disclosure_risk(d, q.prior(prior))
    if group is None:
        epsilon, cost, factors = q.epsilon, q.cost, q.odds_factors
    else:
        epsilon = d.epsilon
        cost = epsilon if math.isfinite(epsilon) else _protected(q, d)
        factors = [float(x) for x in answer_odds_factors(d.matrix)]
    row: dict[str, Any] = {
        "id": q.id,
        "arm": arm,
        "group": group,
        "design": repr(q.numeric if q.numeric is not None else d),
        "epsilon": epsilon if math.isfinite(epsilon) else "inf",
        "cost": cost,
        "sensitive": [q.choice_labels[i] for i in q.sensitive_indices],
        "prior": q.prior(prior).tolist(),
        "posterior_after_report": {
            q.report_labels[r]: None
            if np.isnan(risk.posterior[r]).all()
            else risk.posterior[r].tolist()
            for r in range(d.n_reports)
        },
        "disclosure": risk.describe() if q.range is None else _numeric_risk(q),
        "max_odds_factor": dict(
            zip(q.choice_labels, [f if math.isfinite(f) else None for f in factors], strict=True)
        ),
    }
    if q.two_layer is not None and group is None:  # two layers: what waves cost
        row["epsilon_1"], row["epsilon_inf"] = q.epsilon, q.epsilon_inf
        row["answers"] = q.mechanism.n_truths
    exposed = [q.choice_labels[i] for i, f in enumerate(factors) if math.isinf(f)]
    for label in exposed:
        row["disclosure"].insert(0, f'"{label}": {catalog("en")["answer_exposed"]}.')
    return row


def _protected(q: Question, d: Design) -> float:
    from ..mechanisms import protected_epsilon

    return protected_epsilon(d.matrix, q.sensitive_indices)


def arm_rows(survey: Survey) -> list[dict[str, Any]]:
    """Each arm: its chance of being drawn, what a respondent in it spends (nats: the
    sum of its questions' costs) and the questions it asks directly."""
    if not survey.arms:
        return []
    total = sum(a.weight for a in survey.arms.values())
    return [
        {
            "id": name,
            "weight": arm.weight,
            "share": arm.weight / total,
            "cost": math.fsum(q.cost for q in survey.questions_in(name)),
            "direct": [q.id for q in survey.questions_in(name) if q.is_direct],
        }
        for name, arm in survey.arms.items()
    ]


def _numeric_risk(q: Question) -> list[str]:
    """What one report of a numeric question reveals, in plain words."""
    assert q.range is not None
    p_low, p_high = q.mechanism.matrix[1]
    return [
        f"The report is 1 with chance {p_low:.0%} if the answer is {q.range.low:g}, rising "
        f"evenly to {p_high:.0%} at {q.range.high:g}: whatever the report, an observer's "
        f"odds between any two answers move by at most a factor of {math.exp(q.epsilon):.2f}."
    ]

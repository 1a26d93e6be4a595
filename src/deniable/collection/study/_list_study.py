"""A list-experiment question's results (:mod:`deniable.collection.model._list_question`):
the difference of the two groups' mean counts (Imai 2011; through the server's
post-randomization of the counts where there is one), its constrained maximum
likelihood (:func:`deniable.analysis.list_regression` with an intercept), and Blair &
Imai's (2012) design-effect test with the floor and ceiling shares."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..exports import GROUP_SUFFIX

__all__ = ["list_item"]


def list_item(
    frame: pd.DataFrame,
    q: Any,
    level: float,
    waiting: int = 0,
    version: int | None = None,
    channel: Any = None,
) -> dict[str, Any]:
    """The ``list`` entry of a released list-experiment question.

    Parameters
    ----------
    frame : pandas.DataFrame
        The wide export of the released rows (the count in column ``q.id``, the group
        in ``q.id + "__group"``); only ``version``'s rows are used when it is given.
    q : Question
        A list-experiment question.
    level : float in (0, 1)
    waiting : int
        Responses of the version not yet released (kept for the callers; no rule
        selects on a count, so what waits does not bias the estimate).
    channel : Design, optional
        The channel the counts went through before they were stored: the question's
        ``release_channel`` for rows this server stored; ``None`` for counts as given
        (a survey tool's export, which the server never saw).

    Returns
    -------
    dict
        ``{"list": {...}}``: the difference in means in the one JSON shape of every
        estimate (:meth:`ListEstimate.to_dict`: ``result``, ``n``, ``labels``,
        ``estimate``, ``std_error``, ``interval``, ``warnings``, ``n_treated``,
        ``n_control``, ``items``, ``method``) with ``mle``, ``sensitive_item``,
        ``channel`` (the post-randomization's spec, or ``None``) and
        ``design_effect`` (``pvalue``, ``revealed_yes``, ``revealed_no``: through a
        channel the test undoes it and the revealed shares are estimated); or with a
        ``note`` while either group has fewer than 2 rows.
    """
    from ...analysis import list_design_effect_test, list_difference_in_means, list_regression

    j = len(q.items)
    if version is not None:
        frame = frame[frame["version"] == version]
    rows = frame[[q.id, q.id + GROUP_SUFFIX]].dropna()
    counts = rows[q.id].to_numpy(dtype=np.int64)
    treated = rows[q.id + GROUP_SUFFIX].to_numpy(dtype=np.int64)
    base: dict[str, Any] = {"items": j, "sensitive_item": q.sensitive_item}
    n1, n0 = int(treated.sum()), int((1 - treated).sum())
    if min(n1, n0) < 2:
        return {
            "list": base | {"n_treated": n1, "n_control": n0, "note": "each group needs 2 rows"}
        }
    est = list_difference_in_means(counts, treated, items=j, channel=channel)
    data = pd.DataFrame({"count": counts, "treat": treated})
    said: list[str] = []  # a pilot's few rows: the estimate, and why the rest is missing
    try:
        fit = list_regression("count ~ 1", data, treat="treat", items=j, channel=channel)
        mle: float | None = fit.prevalence if math.isfinite(fit.prevalence) else None
    except ValueError as exc:
        mle = None
        said.append(f"no maximum likelihood estimate: {exc}")
    effect: dict[str, float] | None = None
    try:
        test = list_design_effect_test(counts, treated, items=j, channel=channel)
        effect = {
            "pvalue": test.pvalue,
            "revealed_yes": test.revealed_yes,
            "revealed_no": test.revealed_no,
        }
    except ValueError as exc:
        said.append(f"no design-effect test: {exc}")
    out = est.to_dict(level)
    warned = out.get("warnings")
    return {
        "list": base
        | out
        | {
            "mle": mle,
            "channel": None if channel is None else channel.spec,
            "design_effect": effect,
            "warnings": [*(warned if isinstance(warned, list) else []), *said],
        }
    }

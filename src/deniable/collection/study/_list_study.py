"""A list-experiment question's results (:mod:`deniable.collection.model._list_question`):
the difference of the two groups' mean counts (Imai 2011), its constrained maximum
likelihood (:func:`deniable.analysis.list_regression` with an intercept), and Blair &
Imai's (2012) design-effect test with the floor and ceiling shares."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..exports._export import GROUP_SUFFIX

__all__ = ["list_item"]


def list_item(
    frame: pd.DataFrame, q: Any, level: float, waiting: int = 0, version: int | None = None
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
        Responses of the version not yet released: a count of 0 or of every item is a
        key of the release rule, so such rows wait more often, and the estimate from
        the released rows leans away from them until they are released (a warning).

    Returns
    -------
    dict
        ``{"list": {...}}`` with ``estimate``, ``std_error``, ``low``, ``high``,
        ``mle``, ``n_treated``, ``n_control``, ``items``, ``sensitive_item`` and
        ``design_effect`` (``pvalue``, ``revealed_yes``, ``revealed_no``); or with a
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
    est = list_difference_in_means(counts, treated, items=j)
    low, high = est.confidence_interval(level)
    test = list_design_effect_test(counts, treated, items=j)
    data = pd.DataFrame({"count": counts, "treat": treated})
    mle = list_regression("count ~ 1", data, treat="treat", items=j).prevalence
    return {
        "list": base
        | {
            "estimate": est.estimate,
            "std_error": est.std_error,
            "low": low,
            "high": high,
            "mle": mle if math.isfinite(mle) else None,
            "n_treated": n1,
            "n_control": n0,
            "warnings": [
                f"{waiting} responses wait for release; counts of 0 and of every item wait "
                "more often than others (they are keys of the release rule), so this "
                "estimate from the released rows is biased until they are released"
            ]
            if waiting
            else [],
            "design_effect": {
                "pvalue": test.pvalue,
                "revealed_yes": test.revealed_yes,
                "revealed_no": test.revealed_no,
            },
        }
    }

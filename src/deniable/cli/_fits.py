"""The regression and subgroup fits of ``deniable analyze`` (``--formula``, ``--by``), for
a reports file with ``--design`` and for a deniable export (designs by row)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from ..mechanisms import Design


from ..errors import DeniableError
from ._common import console, emit_json, fail, require_columns

__all__ = ["_analyze_by", "_analyze_formula"]


def _analyze_formula(
    frame: pd.DataFrame,
    d: Design | Mapping[Hashable, Design],
    formula: str,
    confidence_level: float,
    as_json: bool,
    group: str | None = None,
) -> None:
    from rich.table import Table

    from ..analysis import rr_logit

    try:
        fit = rr_logit(formula, frame, d, group=group)
        ci = fit.conf_int(confidence_level)
    except (ValueError, TypeError, DeniableError) as exc:
        raise fail(f"--formula: {exc}") from None
    if as_json:
        emit_json(fit.to_dict(confidence_level))
        return
    name = (
        f"designs by row: {', '.join(map(repr, d.values()))}" if isinstance(d, Mapping) else repr(d)
    )
    table = Table(title=f"{formula}  ({name}; n = {fit.nobs:,}, log-likelihood {fit.llf:.3f})")
    for col in ("term", "coef", "SE", "z", "p", f"{confidence_level:.0%} CI"):
        table.add_column(col, justify="left" if col == "term" else "right")
    for t in fit.params.index:
        table.add_row(
            str(t),
            f"{fit.params[t]:.4f}",
            f"{fit.bse[t]:.4f}",
            f"{fit.tvalues[t]:.2f}",
            f"{fit.pvalues[t]:.3g}",
            f"{ci.loc[t, 'low']:.4f} - {ci.loc[t, 'high']:.4f}",
        )
    console.print(table)


def _analyze_by(
    frame: pd.DataFrame,
    d: Design | Mapping[Hashable, Design],
    column: str,
    by: str,
    confidence_level: float,
    as_json: bool,
    design_key: str | None = None,
) -> None:
    import warnings

    import numpy as np
    from rich.table import Table

    from ..analysis import subgroup_prevalence
    from ..errors import IntervalCoverageWarning

    require_columns(frame, {"--column": column, "--by": by})
    rows = frame[[column, by, *([design_key] if design_key else [])]].dropna()
    try:
        with warnings.catch_warnings():  # a pooled estimate's only interval is Wald's
            if design_key:
                warnings.simplefilter("ignore", IntervalCoverageWarning)
            res = subgroup_prevalence(
                d,
                rows[column].to_numpy(dtype=np.int64),
                rows[by].to_numpy(),
                design_keys=rows[design_key].to_numpy(dtype=str) if design_key else None,
            )
            table_df = res.table(confidence_level)
            shape = res.to_dict(confidence_level)  # the one shape of an estimate
        test = res.test_equal() if len(table_df) > 1 else None  # one group: no test
    except (ValueError, TypeError, DeniableError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        emit_json(
            shape
            | {
                "groups": table_df.reset_index().to_dict(orient="records"),
                "test_equal": None if test is None else asdict(test),
            }
        )
        return
    name = "designs by row" if isinstance(d, Mapping) else repr(d)
    truth = next(iter(d.values())) if isinstance(d, Mapping) else d
    table = Table(title=f"{name}: prevalence of '{truth.truth_labels[1]}' by {by}")
    for col in ("group", "n", "estimate", "SE", f"{confidence_level:.0%} CI"):
        table.add_column(col, justify="left" if col == "group" else "right")
    for g, row in table_df.iterrows():
        table.add_row(
            str(g),
            f"{int(row['n']):,}",
            f"{row['estimate']:.4f}",
            f"{row['std_error']:.4f}",
            f"{row['low']:.4f} - {row['high']:.4f}",
        )
    console.print(table)
    console.print(
        f"equal prevalence: {test}" if test is not None else "one group: nothing to compare"
    )

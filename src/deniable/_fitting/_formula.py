"""Model matrices from Wilkinson formulas (private; built on ``formulaic``).

R users write column names with dots (``cov.asset.index``); in formulaic a dot would be
attribute access, so names of ``data``'s columns that contain characters other than
letters, digits and ``_`` are quoted with backticks before parsing. ``**`` is the
power operator inside ``I(...)`` (R's ``^``); ``^`` is accepted there too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["ModelFrame", "model_frame", "quote_columns"]


def quote_columns(formula: str, columns: list[str]) -> str:
    """Wrap every column name that is not a Python identifier in backticks."""
    odd = sorted((c for c in columns if not c.isidentifier()), key=len, reverse=True)
    if not odd:
        return formula
    pattern = re.compile(r"(?<![\w.`])(" + "|".join(re.escape(c) for c in odd) + r")(?![\w.`])")
    return pattern.sub(lambda m: f"`{m.group(1)}`", formula)


def _r_power(formula: str) -> str:
    """R's ``^`` inside ``I(...)`` becomes Python's ``**``."""
    out, depth_i, i = [], 0, 0
    while i < len(formula):
        if formula.startswith("I(", i) and (i == 0 or not formula[i - 1].isalnum()):
            depth_i = 1
            out.append("I(")
            i += 2
            while i < len(formula) and depth_i:
                ch = formula[i]
                depth_i += {"(": 1, ")": -1}.get(ch, 0)
                out.append("**" if ch == "^" else ch)
                i += 1
            continue
        out.append(formula[i])
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class ModelFrame:
    """Response, design matrix and the rows used.

    Attributes
    ----------
    y : ndarray, shape (n,), float64
        The left-hand side (report codes, or a clear outcome).
    X : ndarray, shape (n, p), float64
        The model matrix (intercept first when present).
    terms : list of str
        Column names of ``X`` (formulaic's term names).
    rows : pandas.Index
        Labels of the rows of ``data`` kept (rows with a missing value are dropped).
    response : str
        Name of the response.
    spec : formulaic.ModelSpec
        Rebuilds the right-hand side for new data (predictions).
    """

    y: NDArray[np.float64]
    X: NDArray[np.float64]
    terms: list[str]
    rows: pd.Index
    response: str
    spec: Any


def model_frame(formula: str, data: pd.DataFrame) -> ModelFrame:
    """Parse ``"y ~ x1 + I(x2 / 10)"`` against ``data``; drop rows with missing values.

    Raises
    ------
    TypeError
        If ``data`` is not a pandas DataFrame.
    ValueError
        If the formula has no ``~`` or names a column ``data`` lacks (the message
        lists the columns), or if no complete row remains.
    """
    from formulaic import model_matrix

    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if not isinstance(formula, str) or "~" not in formula:
        raise ValueError(f"formula must read 'response ~ terms', got {formula!r}")
    text = quote_columns(_r_power(formula), [str(c) for c in data.columns])
    try:
        lhs, rhs = model_matrix(text, data, na_action="drop")
    except Exception as exc:  # formulaic raises several types; name the formula
        raise ValueError(
            f"cannot build the model matrix of {formula!r}: {exc}. Columns of data: "
            + ", ".join(map(str, data.columns))
        ) from None
    if len(lhs.columns) != 1:
        raise ValueError(f"the formula needs exactly one response, got {list(lhs.columns)}")
    if len(rhs) == 0:
        raise ValueError(f"no complete rows for {formula!r}")
    terms = [str(t).replace("`", "") for t in rhs.columns]
    return ModelFrame(
        y=np.asarray(lhs, dtype=np.float64)[:, 0],
        X=np.asarray(rhs, dtype=np.float64),
        terms=terms,
        rows=rhs.index,
        response=str(lhs.columns[0]).replace("`", ""),
        spec=rhs.model_spec,
    )

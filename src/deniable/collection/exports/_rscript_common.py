"""R literals for the study bundle's script: strings, vectors and matrices of doubles
written so that R reads back exactly the doubles Python holds."""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["r_matrix", "r_str", "r_vector"]


def r_vector(values: Iterable[float]) -> str:
    """``c(...)`` of doubles, each written as Python's shortest round-trip ``repr``
    (R parses it to the same double)."""
    return "c(" + ", ".join(repr(float(v)) for v in values) + ")"


def r_matrix(values: ArrayLike) -> str:
    """``matrix(c(...), nrow = r, byrow = TRUE)`` of a 2-D array of doubles."""
    m = np.asarray(values, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"values must be a 2-D array, got shape {m.shape}")
    return f"matrix({r_vector(m.ravel())}, nrow = {m.shape[0]}, byrow = TRUE)"


def r_str(text: str) -> str:
    """An R string literal (JSON's escapes are R's for these characters)."""
    return json.dumps(text, ensure_ascii=False)

"""Reports as named columns (for CSV and Parquet files), shared by every mechanism.

Each mechanism turns its reports into columns with ``report_columns(reports)`` and
back, validated, with ``reports_from_columns(columns)``; these helpers do the parts
they share: finding a column, and packed bits as hexadecimal strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ReportValidationError

__all__ = ["column", "hex_rows", "hex_strings", "integer_array", "packed_rows"]


def column(columns: Mapping[str, Any], name: str) -> Any:
    """The column ``name``.

    Raises
    ------
    ReportValidationError
        If it is missing (the message lists the columns there are).
    """
    if name not in columns:
        have = ", ".join(map(str, columns))
        raise ReportValidationError(f"reports need a column {name!r} (have: {have})")
    return columns[name]


def hex_strings(packed: NDArray[np.uint8]) -> list[str]:
    """One hexadecimal string per row of packed report bits, shape (n, nbytes) -> n."""
    return [row.tobytes().hex() for row in packed]


def hex_rows(values: Sequence[Any], nbytes: int) -> NDArray[np.uint8]:
    """Inverse of :func:`hex_strings`: shape (n, nbytes), uint8.

    Raises
    ------
    ReportValidationError
        For a string that is not hexadecimal or not ``2 nbytes`` digits long.
    """
    try:
        raw = b"".join(bytes.fromhex(str(x)) for x in values)
    except ValueError:
        raise ReportValidationError("column 'report' must hold hexadecimal bit strings") from None
    if len(raw) != len(values) * nbytes:
        raise ReportValidationError(f"each report must be {nbytes} bytes ({2 * nbytes} hex digits)")
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(values), nbytes)


def integer_array(arrays: Mapping[str, Any], name: str) -> NDArray[Any]:
    """The binary column ``name`` as a 1-D integer array.

    Raises
    ------
    ReportValidationError
        If it is missing, not 1-D or not integers.
    """
    arr = np.asarray(column(arrays, name))
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ReportValidationError(f"column {name!r} must hold integers, shape (n,)")
    return arr


def packed_rows(arrays: Mapping[str, Any], name: str, width: int) -> NDArray[np.uint8]:
    """The binary column ``name`` as rows of ``width`` bytes, uint8, shape (n, width).

    Raises
    ------
    ReportValidationError
        If it is missing or of another shape or type.
    """
    arr = np.asarray(column(arrays, name))
    if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != width:
        raise ReportValidationError(
            f"column {name!r} must hold {width} bytes per report (uint8, shape (n, {width}))"
        )
    return arr

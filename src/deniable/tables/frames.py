"""Reading and writing reports as tables (CSV, Parquet) for every mechanism.

Each mechanism gives its reports' table form (``report_columns`` and
``reports_from_columns``): designs ``report`` (codes); unary encoding ``report`` (hex of
the packed bits); RAPPOR ``cohort`` and ``report``; local hashing ``a``, ``b`` (decimal
strings of the 64-bit seed) and ``y``; Hadamard response ``report`` (the column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from .._extras import require
from ..errors import ReportValidationError
from ..mechanisms._protocol import Mechanism

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["reports_from_frame", "reports_to_frame"]

#: A mechanism's report type.
_R = TypeVar("_R")


def reports_to_frame(mechanism: Mechanism[Any, Any], reports: Any) -> pd.DataFrame:
    """Reports as a pandas DataFrame for CSV/Parquet files (columns as above).

    Raises
    ------
    ReportValidationError
        For malformed reports.
    ModuleNotFoundError
        Without pandas (``pip install 'deniable[analysis]'``).
    """
    pandas = require("pandas", "analysis")
    frame: pd.DataFrame = pandas.DataFrame(mechanism.report_columns(reports))
    return frame


def reports_from_frame(mechanism: Mechanism[_R, Any], frame: pd.DataFrame) -> _R:
    """Inverse of :func:`reports_to_frame`, validating every report.

    Raises
    ------
    ReportValidationError
        For a missing column or a malformed report, naming the column.
    """
    columns: dict[str, Any] = {str(name): frame[name] for name in frame.columns}
    try:
        return mechanism.reports_from_columns(columns)
    except (OverflowError, TypeError, ValueError) as exc:
        if isinstance(exc, ReportValidationError):
            raise
        raise ReportValidationError(f"malformed reports: {exc}") from None

"""Reading and writing reports as tables (CSV, Parquet) for every mechanism, and the
files people have read as one table (:func:`read_table_file`: CSV in any common
encoding, Excel, SPSS, Stata, Parquet).

Each mechanism gives its reports' table form (``report_columns`` and
``reports_from_columns``): designs ``report`` (codes); unary encoding ``report`` (hex of
the packed bits); RAPPOR ``cohort`` and ``report``; local hashing ``a``, ``b`` (decimal
strings of the 64-bit seed) and ``y``; Hadamard response ``report`` (the column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from .._extras import require
from ..errors import ReportValidationError
from ..mechanisms import Mechanism
from ._files import ENCODINGS_TRIED, MAX_TABLE_BYTES, TableFile, read_table_file

if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "ENCODINGS_TRIED",
    "MAX_TABLE_BYTES",
    "TableFile",
    "read_table_file",
    "reports_from_frame",
    "reports_to_frame",
]

#: A mechanism's report type.
_R = TypeVar("_R")


def reports_to_frame(mechanism: Mechanism[Any, Any], reports: Any) -> pd.DataFrame:
    """Reports as a pandas DataFrame for CSV/Parquet files (columns as above).

    Parameters
    ----------
    mechanism : Mechanism
    reports : ndarray
        The mechanism's reports.

    Returns
    -------
    pandas.DataFrame
        The columns of the mechanism's ``report_columns`` (text forms for CSV).

    Raises
    ------
    ReportValidationError
        For malformed reports.
    ModuleNotFoundError
        Without pandas (``pip install 'deniable[analysis]'``).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.array([0, 1, 1, 0, 1]), np.random.default_rng(0))
    >>> from deniable.tables.frames import reports_to_frame
    >>> reports_to_frame(design, reports)["report"].tolist()
    [0, 1, 1, 1, 0]
    """
    pandas = require("pandas", "analysis")
    frame: pd.DataFrame = pandas.DataFrame(mechanism.report_columns(reports))
    return frame


def reports_from_frame(mechanism: Mechanism[_R, Any], frame: pd.DataFrame) -> _R:
    """Inverse of :func:`reports_to_frame`, validating every report.

    Parameters
    ----------
    mechanism : Mechanism
    frame : pandas.DataFrame
        As :func:`reports_to_frame` writes it (or a CSV read back).

    Returns
    -------
    ndarray
        The reports, validated.

    Raises
    ------
    ReportValidationError
        For a missing column or a malformed report, naming the column.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.array([0, 1, 1, 0, 1]), np.random.default_rng(0))
    >>> from deniable.tables.frames import reports_from_frame, reports_to_frame
    >>> reports_from_frame(design, reports_to_frame(design, reports)).tolist()
    [0, 1, 1, 1, 0]
    """
    columns: dict[str, Any] = {str(name): frame[name] for name in frame.columns}
    try:
        return mechanism.reports_from_columns(columns)
    except (OverflowError, TypeError, ValueError) as exc:
        if isinstance(exc, ReportValidationError):
            raise
        raise ReportValidationError(f"malformed reports: {exc}") from None

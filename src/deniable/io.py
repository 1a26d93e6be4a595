"""Reading and writing reports as tables (CSV, Parquet) for every mechanism."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .errors import ReportValidationError
from .mechanisms.designs import Design
from .mechanisms.local_hashing import OLH_DTYPE, LocalHashing
from .mechanisms.oracle import FrequencyOracle
from .mechanisms.protocol import Mechanism
from .mechanisms.rappor import Rappor, RapporReports
from .mechanisms.unary import UnaryEncoding
from .validation import as_codes

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["reports_from_frame", "reports_to_frame"]


def reports_to_frame(oracle: Mechanism, reports: Any) -> pd.DataFrame:
    """Reports as a pandas DataFrame for CSV/Parquet files.

    Columns: unary encoding and RAPPOR ``report`` (hex of the packed bits; RAPPOR also
    ``cohort``), local hashing ``a``, ``b`` (decimal strings of the 64-bit seed) and
    ``y``, Hadamard response ``report`` (the column).
    """
    import pandas as pd

    if isinstance(oracle, Rappor):
        return pd.DataFrame(
            {"cohort": reports.cohort, "report": [row.tobytes().hex() for row in reports.bits]}
        )
    if isinstance(oracle, UnaryEncoding):
        return pd.DataFrame({"report": [row.tobytes().hex() for row in reports]})
    if isinstance(oracle, LocalHashing):
        return pd.DataFrame(
            {"a": reports["a"].astype(str), "b": reports["b"].astype(str), "y": reports["y"]}
        )
    return pd.DataFrame({"report": reports})


def reports_from_frame(oracle: Mechanism, frame: pd.DataFrame) -> NDArray[Any] | RapporReports:
    """Inverse of :func:`reports_to_frame`, validating every report.

    Raises
    ------
    ReportValidationError
        For a missing column or a malformed report, naming the column.
    """

    def column(name: str) -> Any:
        if name not in frame.columns:
            raise ReportValidationError(
                f"reports need a column {name!r} (have: {', '.join(map(str, frame.columns))})"
            )
        return frame[name]

    def hex_rows(col: Any, nbytes: int) -> NDArray[np.uint8]:
        try:
            raw = b"".join(bytes.fromhex(str(x)) for x in col)
        except ValueError:
            raise ReportValidationError(
                "column 'report' must hold hexadecimal bit strings"
            ) from None
        if len(raw) != len(col) * nbytes:
            raise ReportValidationError(
                f"each report must be {nbytes} bytes ({2 * nbytes} hex digits)"
            )
        return np.frombuffer(raw, dtype=np.uint8).reshape(len(col), nbytes)

    try:
        if isinstance(oracle, Rappor):
            cohort = np.asarray(column("cohort"), dtype=np.int64)
            bits = hex_rows(column("report"), oracle.n_bytes)
            return oracle.check_reports(RapporReports(cohort.astype(np.uint32), bits))
        if isinstance(oracle, UnaryEncoding):
            return oracle.check_reports(hex_rows(column("report"), oracle.n_bytes))
        if isinstance(oracle, LocalHashing):
            out = np.empty(len(frame), dtype=OLH_DTYPE)
            out["a"] = [int(x) for x in column("a")]
            out["b"] = [int(x) for x in column("b")]
            y = np.asarray(column("y"), dtype=np.int64)
            if y.size and (y.min() < 0 or y.max() >= oracle.g):
                raise ReportValidationError(f"column 'y' must hold buckets 0..{oracle.g - 1}")
            out["y"] = y
            return oracle.check_reports(out)
        codes = np.asarray(column("report"), dtype=np.int64)
        if isinstance(oracle, FrequencyOracle):
            return oracle.check_reports(codes)
        if isinstance(oracle, Design):
            return as_codes("report", codes, oracle.n_reports)
        raise TypeError(f"no table format for {type(oracle).__name__} reports")
    except (OverflowError, TypeError, ValueError) as exc:
        if isinstance(exc, ReportValidationError):
            raise
        raise ReportValidationError(f"malformed reports: {exc}") from None

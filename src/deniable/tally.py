"""Tallies: the sufficient statistics of a randomized-response survey.

Estimators never need individual reports, only the count of each report symbol. A
:class:`Tally` is mergeable (``t1 + t2``), so counts may come from NumPy
(:meth:`Tally.from_reports`), from a SQL ``GROUP BY``, or from many machines, and the
same estimator runs afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import as_codes
from .errors import ReportValidationError

__all__ = ["Tally"]


@dataclass(frozen=True)
class Tally:
    """Counts of each report symbol.

    Parameters
    ----------
    counts : array_like of int, shape (m,)
        ``counts[r]`` = number of reports equal to ``r``; non-negative integers.

    Raises
    ------
    ReportValidationError
        If ``counts`` is not 1-D, has a negative or non-integer entry.

    Examples
    --------
    >>> t = Tally.from_reports(np.array([0, 1, 1, 0, 1]), n_reports=2)
    >>> t.counts.tolist(), t.n
    ([2, 3], 5)
    >>> (t + Tally([1, 0])).counts.tolist()
    [3, 3]
    """

    counts: NDArray[np.int64] = field()

    def __post_init__(self) -> None:
        raw = np.asarray(self.counts)
        if raw.ndim != 1 or raw.size < 2:
            raise ReportValidationError(
                f"counts must be a 1-D array of shape (m,) with m >= 2, got shape {raw.shape}"
            )
        if raw.dtype.kind == "f":
            if not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
                raise ReportValidationError("counts must be whole numbers")
        elif raw.dtype.kind not in "iu":
            raise ReportValidationError(f"counts must be integers, got dtype {raw.dtype}")
        arr = raw.astype(np.int64)
        if np.any(arr < 0):
            raise ReportValidationError(f"counts must be >= 0, got {arr.tolist()}")
        arr.setflags(write=False)
        object.__setattr__(self, "counts", arr)

    @classmethod
    def from_reports(cls, reports: ArrayLike, n_reports: int) -> Tally:
        """Count report codes ``0..n_reports-1`` in ``reports`` (int or bool array, shape (n,)).

        Raises
        ------
        ReportValidationError
            If a report code lies outside ``0..n_reports-1`` or ``reports`` is not 1-D.
        TypeError
            If ``reports`` is not an integer or bool array.
        """
        codes = as_codes("reports", reports, n_reports, error=ReportValidationError)
        if n_reports == 2:
            ones = int(np.count_nonzero(codes))
            return cls(np.array([codes.size - ones, ones], dtype=np.int64))
        return cls(np.bincount(codes, minlength=n_reports).astype(np.int64))

    @property
    def n(self) -> int:
        """Number of reports."""
        return int(self.counts.sum())

    @property
    def n_reports(self) -> int:
        """Number ``m`` of report symbols."""
        return int(self.counts.size)

    @property
    def shares(self) -> NDArray[np.float64]:
        """Report shares ``counts / n``, shape (m,)."""
        n = self.n
        if n == 0:
            raise ReportValidationError("an empty tally has no report shares")
        return self.counts / n

    def __add__(self, other: object) -> Tally:
        if not isinstance(other, Tally):
            return NotImplemented
        if other.counts.shape != self.counts.shape:
            raise ReportValidationError(
                f"cannot merge tallies over {self.n_reports} and {other.n_reports} report symbols"
            )
        return Tally(self.counts + other.counts)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form: ``{"counts": [...], "n": n}``."""
        return {"counts": self.counts.tolist(), "n": self.n}

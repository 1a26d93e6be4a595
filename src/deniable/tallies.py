"""Tallies: the sufficient statistics of a randomized-response survey.

Estimators never need individual reports, only the count of each report symbol. A
:class:`Tally` is mergeable (``t1 + t2``), so counts may come from NumPy
(:meth:`Tally.from_reports`), from a SQL ``GROUP BY``, or from many machines, and the
same estimator runs afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import as_codes
from .errors import ReportValidationError

if TYPE_CHECKING:
    from .mechanisms import DBitFlip, DBitFlipReports

__all__ = ["DBitFlipTally", "MeanTally", "RapporTally", "SupportTally", "Tally"]


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


@dataclass(frozen=True)
class SupportTally:
    """Support counts of a frequency oracle: mergeable sufficient statistics.

    Parameters
    ----------
    counts : ndarray of int64, shape (k,)
        ``counts[v]`` = number of reports that support candidate ``v``, in units of
        ``1 / scale`` report.
    n : int
        Number of reports.
    scale : 1 or 2, default 1
        2 when reports carry half supports (Hadamard response with several blocks:
        ``counts[v]`` is twice the summed weight, in ``0..2n``).

    Raises
    ------
    ReportValidationError
        If counts are negative, exceed ``scale * n``, ``n`` is negative or ``scale`` is
        not 1 or 2.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import LocalHashing, SupportTally
    >>> oracle = LocalHashing(k=5, epsilon=1.0)
    >>> tally = oracle.tally(oracle.randomize(np.arange(5), np.random.default_rng(0)))
    >>> isinstance(tally, SupportTally), tally.n, tally.counts.shape
    (True, 5, (5,))
    """

    counts: NDArray[np.int64] = field()
    n: int
    scale: int = 1

    def __post_init__(self) -> None:
        arr = np.asarray(self.counts)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ReportValidationError(
                f"support counts must be a 1-D integer array, got shape {arr.shape} "
                f"dtype {arr.dtype}"
            )
        arr = arr.astype(np.int64)
        if isinstance(self.scale, bool) or self.scale not in (1, 2):
            raise ReportValidationError(f"support tally scale must be 1 or 2, got {self.scale}")
        top = self.scale * self.n
        if self.n < 0 or (arr.size and (arr.min() < 0 or arr.max() > top)):
            raise ReportValidationError(f"support counts must lie in 0..{top} (scale * n)")
        arr.setflags(write=False)
        object.__setattr__(self, "counts", arr)
        object.__setattr__(self, "n", int(self.n))

    @property
    def shares(self) -> NDArray[np.float64]:
        """``counts / (scale n)``: mean support weight of the reports, shape (k,)."""
        return self.counts / max(self.scale * self.n, 1)

    def __add__(self, other: object) -> SupportTally:
        if not isinstance(other, SupportTally):
            return NotImplemented
        if other.scale != self.scale:
            raise ReportValidationError(
                f"cannot merge support tallies of scales {self.scale} and {other.scale}"
            )
        if other.counts.shape != self.counts.shape:
            raise ReportValidationError(
                f"cannot merge support tallies over {self.counts.size} and "
                f"{other.counts.size} candidates"
            )
        return SupportTally(self.counts + other.counts, self.n + other.n, self.scale)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready ``{"n": ..., "counts": [...]}`` (and ``"scale"`` when it is 2)."""
        out: dict[str, object] = {"n": self.n, "counts": self.counts.tolist()}
        if self.scale != 1:
            out["scale"] = self.scale
        return out


@dataclass(frozen=True)
class RapporTally:
    """Per-cohort bit counts: mergeable sufficient statistics of RAPPOR reports.

    ``counts``: int64 (n_cohorts, n_bloom_bits), number of reports of cohort j with bit i set;
    ``n_per_cohort``: int64 (n_cohorts,), reports per cohort.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Rappor, RapporTally
    >>> rappor = Rappor(n_bloom_bits=16, h=2, n_cohorts=2)
    >>> tally = rappor.tally(rappor.randomize(["x", "y", "x"], rng=np.random.default_rng(0)))
    >>> isinstance(tally, RapporTally), tally.n
    (True, 3)
    """

    counts: NDArray[np.int64]
    n_per_cohort: NDArray[np.int64] = field()

    @property
    def n(self) -> int:
        """Number of reports."""
        return int(self.n_per_cohort.sum())

    def __add__(self, other: object) -> RapporTally:
        if not isinstance(other, RapporTally):
            return NotImplemented
        if other.counts.shape != self.counts.shape:
            raise ReportValidationError("cannot merge RAPPOR tallies of different shapes")
        return RapporTally(self.counts + other.counts, self.n_per_cohort + other.n_per_cohort)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready counts."""
        return {"n_per_cohort": self.n_per_cohort.tolist(), "counts": self.counts.tolist()}


@dataclass(frozen=True)
class MeanTally:
    """Count, sum and sum of squares of debiased reports (mergeable with ``+``).

    Attributes
    ----------
    n : int
        Number of reports (>= 0).
    total : float
        Sum of the debiased reports (units of the value).
    total_sq : float
        Sum of their squares.

    Examples
    --------
    >>> from deniable.estimation import MeanTally
    >>> tally = MeanTally(n=2, total=3.0, total_sq=5.0) + MeanTally(n=1, total=1.0, total_sq=1.0)
    >>> tally.n, tally.total
    (3, 4.0)
    """

    n: int
    total: float
    total_sq: float

    @classmethod
    def from_values(cls, debiased: NDArray[np.float64]) -> MeanTally:
        """Tally debiased reports, float64, shape (n,)."""
        y = np.asarray(debiased, dtype=np.float64)
        return cls(int(y.size), float(y.sum()), float(np.dot(y, y)))

    def __add__(self, other: MeanTally) -> MeanTally:
        if not isinstance(other, MeanTally):
            return NotImplemented
        return MeanTally(self.n + other.n, self.total + other.total, self.total_sq + other.total_sq)


@dataclass(frozen=True)
class DBitFlipTally:
    """Per bucket: how many reports sampled it and how many of those sent 1.

    Attributes
    ----------
    n : int
        Number of reports.
    sampled : ndarray, shape (k,), int64
    ones : ndarray, shape (k,), int64

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import DBitFlip
    >>> mechanism = DBitFlip(k=8, d=2, epsilon=1.0)
    >>> reports = mechanism.randomize(np.array([0, 3, 5, 7, 1]), np.random.default_rng(0))
    >>> tally = mechanism.tally(reports)
    >>> tally.n, int(tally.sampled.sum())
    (5, 10)
    """

    n: int
    sampled: NDArray[np.int64]
    ones: NDArray[np.int64]

    @classmethod
    def from_reports(cls, oracle: DBitFlip, reports: DBitFlipReports) -> DBitFlipTally:
        """Count validated reports."""
        r = oracle.check_reports(reports)
        b = r.buckets.ravel()
        sampled = np.bincount(b, minlength=oracle.k).astype(np.int64)
        ones = np.bincount(b, weights=r.bits.ravel(), minlength=oracle.k).astype(np.int64)
        return cls(int(r.buckets.shape[0]), sampled, ones)

    def __add__(self, other: DBitFlipTally) -> DBitFlipTally:
        if not isinstance(other, DBitFlipTally) or other.sampled.shape != self.sampled.shape:
            return NotImplemented
        return DBitFlipTally(self.n + other.n, self.sampled + other.sampled, self.ones + other.ones)

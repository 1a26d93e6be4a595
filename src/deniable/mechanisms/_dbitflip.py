"""dBitFlip: histograms of bucketed numeric values (Ding, Kulkarni & Yekhanin 2017).

Microsoft's telemetry mechanism for histograms: each client reports ``d`` randomly
sampled bucket bits of its one-hot bucket vector, each flipped as in randomized
response; memoization (:meth:`DBitFlip.memoize`) makes repeated collection reveal no
more than one report while the value stays in its bucket. Estimation:
:func:`deniable.estimation.estimate_histogram`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_integer
from ..errors import ReportValidationError
from ..tallies import DBitFlipTally
from ._columns import column, hex_rows, hex_strings, packed_rows
from ._numeric import MAX_VALUES
from ._protocol import BucketChannel, ReportField, check_epsilon, spec_string, warn_large_epsilon
from ._randomness import RandomSource, uniforms

__all__ = ["DBitFlip", "DBitFlipMemo", "DBitFlipReports"]


@dataclass(frozen=True)
class DBitFlipReports:
    """dBitFlip reports: sampled buckets and their bits.

    Attributes
    ----------
    buckets : ndarray, shape (n, d), int64
        Each report's ``d`` distinct sampled bucket indices in ``0..k-1``.
    bits : ndarray, shape (n, d), uint8
        The randomized bit for each sampled bucket.
    """

    buckets: NDArray[np.int64]
    bits: NDArray[np.uint8]


@dataclass(frozen=True)
class DBitFlipMemo:
    """A client's permanent dBitFlip state: sampled buckets, and two bits per bucket.

    ``bits[i, j, 1]`` is sent when the client's value lies in bucket ``buckets[i, j]``,
    ``bits[i, j, 0]`` when it does not (Ding et al. 2017, memoization).
    """

    buckets: NDArray[np.int64]
    bits: NDArray[np.uint8]


class DBitFlip:
    """dBitFlip histograms (Ding, Kulkarni & Yekhanin 2017).

    Each client samples ``d`` distinct buckets of ``k`` uniformly (independent of its
    value) and sends, for each, a bit that is 1 with probability ``e^b / (e^b + 1)`` if
    its value lies in that bucket and ``1 / (e^b + 1)`` otherwise. Two values differ in
    at most two buckets' bits, so the report's epsilon is ``2 b`` when ``d >= 2`` and
    ``b`` when ``d = 1``; the per-bit ``b`` is chosen so that the exact epsilon is the one
    asked for (``b = eps / 2``, or ``eps`` when ``d = 1``). The unbiased share of bucket
    ``t`` is ``k / (n d) * sum over reports sampling t of (b (e^b + 1) - 1) / (e^b - 1)``
    (:func:`deniable.estimation.estimate_histogram`).

    Parameters
    ----------
    k : int
        Number of buckets, 2..4096.
    epsilon : float in (0, 30]
        Exact epsilon of one report, in nats.
    d : int, default 1
        Buckets sampled per report, ``1..k``.

    Raises
    ------
    ValueError
        For ``k`` or ``d`` out of range, or ``epsilon`` outside ``(0, 30]``.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import estimate
    >>> from deniable.mechanisms import DBitFlip
    >>> dbf = DBitFlip(k=10, epsilon=1.0)
    >>> reports = dbf.randomize(np.arange(5000) % 10, np.random.default_rng(0))
    >>> estimate(dbf, reports).estimate.shape
    (10,)
    """

    spec_name = "dbitflip"
    MAX_K = 4096

    def __init__(self, k: int, epsilon: float, d: int = 1) -> None:
        self.k = check_integer("k", k, minimum=2)
        if self.k > self.MAX_K:
            raise ValueError(f"k must be in 2..{self.MAX_K}, got {k}")
        self.d = check_integer("d", d, minimum=1)
        if self.d > self.k:
            raise ValueError(f"d must be in 1..k = 1..{self.k}, got {d}")
        self._epsilon = check_epsilon(epsilon)
        warn_large_epsilon(self._epsilon, repr(self))

    @property
    def epsilon(self) -> float:
        """Exact epsilon of one report, in nats."""
        return self._epsilon

    @property
    def bit_epsilon(self) -> float:
        """Epsilon of one bucket bit: ``eps / 2`` (``eps`` when ``d = 1``)."""
        return self._epsilon / min(self.d, 2)

    @property
    def params(self) -> dict[str, Any]:
        """Constructor parameters (JSON-ready)."""
        return {"k": self.k, "epsilon": self._epsilon, "d": self.d}

    @property
    def spec(self) -> str:
        """``"dbitflip:k=...,epsilon=...,d=..."``."""
        return spec_string(self.spec_name, self.params)

    def to_dict(self) -> dict[str, Any]:
        """``{"mechanism": name, "params": {...}, "epsilon": ...}``."""
        return {"mechanism": self.spec_name, "params": self.params, "epsilon": self.epsilon}

    def _codes(self, values: ArrayLike) -> NDArray[np.int64]:
        v = np.asarray(values)
        if v.ndim != 1 or v.dtype.kind not in "iu":
            raise ValueError("values must be 1-D integer bucket codes, shape (n,)")
        if v.size > MAX_VALUES // self.d:
            raise ValueError(f"values: at most {MAX_VALUES // self.d} per call")
        if v.size and (v.min() < 0 or v.max() >= self.k):
            raise ValueError(f"values must be bucket codes in 0..{self.k - 1}")
        return v.astype(np.int64)

    def _sample(self, n: int, rng: RandomSource | np.random.Generator | None) -> NDArray[np.int64]:
        """``d`` distinct buckets per client (sequential draws without replacement)."""
        u = uniforms(rng, n * self.d).reshape(n, self.d)
        out = np.empty((n, self.d), dtype=np.int64)
        for j in range(self.d):  # pick among the k - j buckets not taken yet
            pick = np.minimum((u[:, j] * (self.k - j)).astype(np.int64), self.k - j - 1)
            for prev in np.sort(out[:, :j], axis=1).T:  # shift past taken buckets
                pick += pick >= prev
            out[:, j] = pick
        return out

    def _p(self) -> tuple[float, float]:
        e = math.exp(self.bit_epsilon)
        return 1.0 / (e + 1.0), e / (e + 1.0)

    def memoize(
        self, n: int, rng: RandomSource | np.random.Generator | None = None
    ) -> DBitFlipMemo:
        """Draw ``n`` clients' permanent states (secure randomness by default)."""
        n = check_integer("n", n, minimum=0)
        if n > MAX_VALUES // (3 * self.d):
            raise ValueError(f"n: at most {MAX_VALUES // (3 * self.d)} clients per call")
        buckets = self._sample(n, rng)
        u = uniforms(rng, 2 * n * self.d).reshape(n, self.d, 2)
        return DBitFlipMemo(buckets, (u < np.array(self._p())).view(np.uint8))

    def randomize(
        self,
        values: ArrayLike,
        rng: RandomSource | np.random.Generator | None = None,
        memo: DBitFlipMemo | None = None,
    ) -> DBitFlipReports:
        """Reports for bucket codes ``values`` (int, shape (n,)); from ``memo`` if given."""
        codes = self._codes(values)
        if memo is None:
            memo = self.memoize(codes.size, rng)
        elif memo.buckets.shape != (codes.size, self.d):
            raise ValueError(f"memo must hold one client per value: shape ({codes.size}, {self.d})")
        mine = (memo.buckets == codes[:, None]).astype(np.int64)
        bits = np.take_along_axis(memo.bits, mine[..., None], axis=2)[..., 0]
        return DBitFlipReports(memo.buckets, bits)

    def check_reports(self, reports: DBitFlipReports) -> DBitFlipReports:
        """Validate shapes, bucket range and bits; return the reports.

        Raises
        ------
        ReportValidationError
            Naming the field and the allowed values.
        """
        b, bits = np.asarray(reports.buckets), np.asarray(reports.bits)
        if b.ndim != 2 or b.shape[1] != self.d or bits.shape != b.shape:
            raise ReportValidationError(f"buckets and bits must both have shape (n, {self.d})")
        if b.size and (b.min() < 0 or b.max() >= self.k):
            raise ReportValidationError(f"buckets must be in 0..{self.k - 1}")
        if bits.size and (bits.min() < 0 or bits.max() > 1):
            raise ReportValidationError("bits must be 0 or 1")
        return DBitFlipReports(b.astype(np.int64), bits.astype(np.uint8))

    @property
    def channel(self) -> BucketChannel:
        """Each sampled bucket's bit: 1 with ``e^b / (e^b + 1)`` if the value is in it."""
        q, p = self._p()
        return BucketChannel(p, q)

    def tally(self, reports: DBitFlipReports) -> DBitFlipTally:
        """Per bucket, the reports that sampled it and the 1 bits they sent (validated)."""
        return DBitFlipTally.from_reports(self, reports)

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """``buckets``: ``d`` int32 (little-endian) per report; ``bits``: ``d`` bytes."""
        return (ReportField("buckets", "bytes", 4 * self.d), ReportField("bits", "bytes", self.d))

    def report_arrays(self, reports: DBitFlipReports) -> dict[str, NDArray[Any]]:
        """The reports as rows of bytes (see :attr:`report_fields`), validated."""
        r = self.check_reports(reports)
        buckets = np.ascontiguousarray(r.buckets.astype("<i4")).view(np.uint8)
        return {"buckets": buckets.reshape(-1, 4 * self.d), "bits": r.bits}

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> DBitFlipReports:
        """Reports from binary ``buckets`` and ``bits`` columns, validated."""
        raw = np.ascontiguousarray(packed_rows(arrays, "buckets", 4 * self.d))
        buckets = raw.view("<i4").reshape(-1, self.d).astype(np.int64)
        return self.check_reports(DBitFlipReports(buckets, packed_rows(arrays, "bits", self.d)))

    def report_columns(self, reports: DBitFlipReports) -> dict[str, Any]:
        """``buckets`` and ``bits`` as hexadecimal strings of the binary form."""
        return {name: hex_strings(rows) for name, rows in self.report_arrays(reports).items()}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> DBitFlipReports:
        """Reports from hexadecimal ``buckets`` and ``bits`` columns, validated."""
        return self.reports_from_arrays(
            {
                "buckets": hex_rows(column(columns, "buckets"), 4 * self.d),
                "bits": hex_rows(column(columns, "bits"), self.d),
            }
        )

    def __repr__(self) -> str:
        return f"DBitFlip(k={self.k}, epsilon={self._epsilon!r}, d={self.d})"

"""Optimal local hashing (OLH; Wang, Blocki, Li & Jha 2017)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MEMORY_LIMIT, check_integer
from ..errors import ReportValidationError
from ..tallies import SupportTally
from ._columns import column, integer_array
from ._oracle import (
    TWO32,
    FrequencyOracle,
    RandomBytes,
    largest_threshold,
    threshold_probability,
)
from ._protocol import ReportField
from ._randomness import RandomSource

if TYPE_CHECKING:
    from scipy import sparse

__all__ = ["OLH_DTYPE", "LocalHashing"]


OLH_DTYPE = np.dtype([("a", "<u8"), ("b", "<u8"), ("y", "<u4")])
_OLH_RANDOM = np.dtype([("a", "<u8"), ("b", "<u8"), ("keep", "<u4"), ("other", "<u4")])


class LocalHashing(FrequencyOracle):
    """(Optimal) local hashing, OLH (Wang, Blocki, Li & Jha 2017).

    Each respondent draws a hash function ``h`` from a strongly universal family,
    hashes the value into ``g`` buckets, and reports ``(h, y)`` where ``y`` is the
    bucket ``h(v)`` with probability ``p`` and each other bucket otherwise (``g``-ary
    randomized response). A report supports ``v`` when ``h(v) = y``.

    Hash family: Dietzfelbinger's (1996) multiply-add-shift
    ``x = ((a v + b) mod 2^64) >> 32`` with ``a, b`` uniform 64-bit, which is strongly
    universal (pairwise independent and uniform) on 32-bit outputs for 32-bit keys;
    the bucket is ``floor(x g / 2^32)``. The collision probability is then exactly
    ``c = sum_j (|B_j| / 2^32)^2`` (``1/g`` up to ``~g / 2^64``), and ``q*`` follows
    exactly from ``c``, ``p`` and the other-bucket draw.

    Parameters
    ----------
    k : int, 2 <= k < 2^32
        Domain size.
    epsilon : float in (0, 30]
        Privacy parameter in nats.
    g : int >= 2, optional
        Number of buckets; default ``round(e^eps) + 1``, the choice that minimises the
        variance (``4 e^eps / (n (e^eps - 1)^2)`` for rare values at ``g = e^eps + 1``).

    Reports
    -------
    structured ndarray of dtype ``OLH_DTYPE`` = (``a``: uint64, ``b``: uint64,
    ``y``: uint32), shape (n,).

    Randomness: 24 bytes per report: ``a`` and ``b`` (little-endian 64-bit), the keep
    word and the other-bucket word (little-endian 32-bit). The other bucket is
    ``(h(v) + 1 + floor(w (g - 1) / 2^32)) mod g``.

    Raises
    ------
    ValueError, TypeError
        For ``k`` out of range, epsilon outside (0, 30], ``g < 2`` or ``g >= 2^21``.

    Examples
    --------
    >>> from deniable import LocalHashing
    >>> oracle = LocalHashing(k=1000, epsilon=2.0)
    >>> oracle.g, round(oracle.epsilon, 4)
    (8, 2.0)
    """

    spec_name = "olh"

    def __init__(self, k: int, epsilon: float, g: int | None = None) -> None:
        super().__init__(k, epsilon)
        if self.k >= TWO32:
            raise ValueError(f"k must be < 2^32 for local hashing, got {self.k}")
        eps = self.requested_epsilon
        self.g_requested = g
        self.g = round(math.exp(eps)) + 1 if g is None else check_integer("g", g, minimum=2)
        if self.g >= 1 << 21:
            raise ValueError(f"g must be < 2^21, got {self.g}")
        g_ = self.g
        self.bucket_lows = np.array([(j * TWO32 + g_ - 1) // g_ for j in range(g_ + 1)], np.uint64)
        widths = np.diff(self.bucket_lows.astype(np.float64))
        self._bucket_weights = widths / TWO32
        self._collision = float(np.sum(self._bucket_weights**2))
        o = g_ - 1
        self._other_weights = (
            np.diff([(d * TWO32 + o - 1) // o for d in range(o + 1)]).astype(np.float64) / TWO32
        )
        m_min = float(self._other_weights.min())

        def eps_of(tp: int) -> float:
            p = threshold_probability(tp)
            return math.log(p / ((1 - p) * m_min))

        e = math.exp(eps)
        self.threshold_p = largest_threshold(eps, eps_of, e / (e + g_ - 1))

    @property
    def keep_probability(self) -> float:
        """``p``: probability of reporting the true bucket."""
        return threshold_probability(self.threshold_p)

    @property
    def epsilon(self) -> float:
        p = self.keep_probability
        return math.log(p / ((1 - p) * float(self._other_weights.min())))

    @property
    def p_star(self) -> float:
        return self.keep_probability

    @property
    def q_star(self) -> float:
        p = self.keep_probability
        w = self._bucket_weights
        g = self.g
        other = np.zeros(g)  # other[j'] = Pr(y = j | bucket of truth = j') summed against w_j
        for d, od in enumerate(self._other_weights):
            other += od * np.roll(w, -(1 + d))
        return float(p * self._collision + (1 - p) * np.sum(w * other))

    @property
    def bytes_per_report(self) -> int:
        return 24

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "epsilon": self.requested_epsilon, "g": self.g}

    def client_params(self) -> dict[str, Any]:
        """What a respondent's encoder (``web/oracles.js``: ``encodeOLH``) needs."""
        return {"k": self.k, "g": self.g, "threshold_p": self.threshold_p}

    def hash_buckets(
        self, a: NDArray[np.uint64], b: NDArray[np.uint64], values: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """Bucket ``floor((((a v + b) mod 2^64) >> 32) g / 2^32)`` (arrays broadcast)."""
        with np.errstate(over="ignore"):
            x = (a * values.astype(np.uint64) + b) >> np.uint64(32)
            return ((x * np.uint64(self.g)) >> np.uint64(32)).astype(np.int64)

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.void]:
        """Reports of ``OLH_DTYPE`` (seed ``a``, ``b`` and bucket ``y``), shape (n,) (see
        :meth:`deniable.mechanisms.FrequencyOracle.randomize`)."""
        reports: NDArray[np.void] = super().randomize(values, rng)  # type: ignore[assignment]
        return reports

    def encode(self, values: ArrayLike, randomness: RandomBytes) -> NDArray[np.void]:
        from ._kernels import olh_encode

        codes = self._values(values)
        raw = self._bytes(randomness, codes.size)
        fields = raw.reshape(-1).view(_OLH_RANDOM)
        a, b = fields["a"], fields["b"]
        keep_word, other_word = fields["keep"], fields["other"]
        # compiled: bucket = ((((a v + b) mod 2^64) >> 32) g) >> 32, then g-ary RR
        y = olh_encode(codes, a, b, keep_word, other_word, self.g, self.threshold_p)
        out = np.empty(codes.size, dtype=OLH_DTYPE)
        out["a"], out["b"], out["y"] = a, b, y
        return out

    def report_columns(self, reports: Any) -> dict[str, Any]:
        """``{"a", "b"}``: the 64-bit hash seed as decimal strings; ``{"y"}``: the bucket."""
        arr = self.check_reports(reports)
        return {"a": arr["a"].astype(str), "b": arr["b"].astype(str), "y": arr["y"]}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> NDArray[Any]:
        """Reports from columns ``a``, ``b`` (decimal strings) and ``y``, validated.

        Raises
        ------
        ReportValidationError
            For a missing column, a seed outside 64 bits or a bucket outside ``0..g-1``.
        """
        a, b, y = (column(columns, name) for name in ("a", "b", "y"))
        out = np.empty(len(y), dtype=OLH_DTYPE)
        out["a"] = [int(x) for x in a]
        out["b"] = [int(x) for x in b]
        buckets = np.asarray(y, dtype=np.int64)
        if buckets.size and (buckets.min() < 0 or buckets.max() >= self.g):
            raise ReportValidationError(f"column 'y' must hold buckets 0..{self.g - 1}")
        out["y"] = buckets
        return self.check_reports(out)

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """``a``, ``b``: the bits of the 64-bit hash seed as int64; ``y``: the bucket."""
        return (ReportField("a", "int"), ReportField("b", "int"), ReportField("y", "int"))

    def report_arrays(self, reports: Any) -> dict[str, NDArray[Any]]:
        """``{"a", "b"}``: the seeds' bits as int64 (Spark has no unsigned type); ``y``: int32."""
        arr = self.check_reports(reports)
        return {
            "a": np.ascontiguousarray(arr["a"]).view(np.int64),
            "b": np.ascontiguousarray(arr["b"]).view(np.int64),
            "y": arr["y"].astype(np.int32),
        }

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> NDArray[Any]:
        """Reports from binary ``a``, ``b`` (int64 or uint64) and ``y`` columns, validated.

        Raises
        ------
        ReportValidationError
            For a missing column, a bucket outside ``0..g-1`` or unequal lengths.
        """
        a, b, y = (integer_array(arrays, name) for name in ("a", "b", "y"))
        a, b = (s.view(np.uint64) if s.dtype == np.int64 else s for s in (a, b))
        if not a.size == b.size == y.size:
            raise ReportValidationError("columns 'a', 'b' and 'y' must have the same length")
        if y.size and (y.min() < 0 or y.max() >= self.g):
            raise ReportValidationError(f"column 'y' must hold buckets 0..{self.g - 1}")
        out = np.empty(len(y), dtype=OLH_DTYPE)
        out["a"], out["b"], out["y"] = a, b, y
        return self.check_reports(out)

    def check_reports(self, reports: Any) -> NDArray[Any]:
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.names is None or set(arr.dtype.names) != {"a", "b", "y"}:
            raise ReportValidationError(
                "local-hashing reports must be a 1-D structured array with fields a, b "
                f"(uint64 seed) and y (bucket), got dtype {arr.dtype} shape {arr.shape}"
            )
        y = np.asarray(arr["y"])
        if y.size and (y.min() < 0 or y.max() >= self.g):
            raise ReportValidationError(f"report buckets y must lie in 0..{self.g - 1}")
        return arr.astype(OLH_DTYPE, copy=False)

    def _kernel_args(
        self, arr: NDArray[Any]
    ) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
        y = arr["y"].astype(np.int64)
        lo = self.bucket_lows[y]
        width = self.bucket_lows[y + 1] - lo
        return (
            np.ascontiguousarray(arr["a"], dtype=np.uint64),
            np.ascontiguousarray(arr["b"], dtype=np.uint64),
            lo,
            width,
        )

    def tally(self, reports: Any) -> SupportTally:
        from ._kernels import olh_support_counts

        arr = self.check_reports(reports)
        if arr.size == 0:
            return SupportTally(np.zeros(self.k, np.int64), 0)
        return SupportTally(olh_support_counts(*self._kernel_args(arr), self.k), arr.size)

    def support_matrix(
        self, reports: Any, *, memory_limit: int = MEMORY_LIMIT
    ) -> sparse.csr_matrix:
        from scipy import sparse

        from ._kernels import olh_support_pairs

        arr = self.check_reports(reports)
        self._check_support_memory(arr.size, memory_limit)
        indptr, indices = olh_support_pairs(*self._kernel_args(arr), self.k)
        data = np.ones(indices.size, dtype=bool)
        return sparse.csr_matrix((data, indices, indptr), shape=(arr.size, self.k))

    def _support_bytes(self, n: int) -> int:
        """About ``n (k / g + 1)`` support entries at 40 bytes each: the NumPy path's
        transient row and column indices (int64), their sort order and the float64
        copy EM works on."""
        return 40 * n * (-(-self.k // self.g) + 1)

    def likelihood_ratio(self) -> float:
        """Ratio of a report's probability under a supported vs an unsupported truth.

        Exact when the other-bucket draw is uniform (``g - 1`` divides ``2^32``);
        otherwise it differs by at most ``g / 2^32`` relatively.
        """
        p = self.keep_probability
        return p * (self.g - 1) / (1 - p)

    def report_probabilities(self, a: int, b: int) -> NDArray[np.float64]:
        """Exact ``Pr(y | truth)`` for the hash ``(a, b)``: shape (g, k) (rows y, columns v)."""
        seed_a, seed_b = np.full(1, a, dtype=np.uint64), np.full(1, b, dtype=np.uint64)
        buckets = self.hash_buckets(seed_a, seed_b, np.arange(self.k, dtype=np.int64))
        p = self.keep_probability
        out = np.zeros((self.g, self.k))
        for v, hb in enumerate(buckets):
            out[hb, v] = p
            for d, od in enumerate(self._other_weights):
                out[(hb + 1 + d) % self.g, v] += (1 - p) * od
        return out

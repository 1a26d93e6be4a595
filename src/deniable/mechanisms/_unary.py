"""Unary encoding: symmetric (SUE) and optimized (OUE) (Wang, Blocki, Li & Jha 2017)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MEMORY_LIMIT, check_memory
from ..errors import ReportValidationError
from ..tallies import SupportTally
from ._columns import column, hex_rows, hex_strings, packed_rows
from ._oracle import (
    TWO32,
    FrequencyOracle,
    RandomBytes,
    largest_threshold,
    threshold_probability,
)
from ._protocol import ReportField
from ._randomness import RandomSource, random_bytes

if TYPE_CHECKING:
    from scipy import sparse

__all__ = ["MAX_REPORT_BYTES", "UnaryEncoding", "packed_bit_counts"]

#: Random bytes of first nibbles drawn at once by ``UnaryEncoding.randomize``.
_LAZY_CHUNK_BYTES = 1 << 21
#: Default largest array of packed reports one ``UnaryEncoding.randomize`` call returns
#: (bytes, its ``memory_limit``): refused up front, before anything is allocated, beyond it.
MAX_REPORT_BYTES = MEMORY_LIMIT


def _tie_bytes(comparisons: int) -> int:
    """Bytes of tie nibbles to draw for ``comparisons`` lazy 32-bit comparisons.

    Each comparison needs ``Geometric(15/16) - 1`` nibbles beyond its first (mean
    1/15, variance 16/225): the mean plus 8 standard deviations, rarely too few (then
    the stream is extended).
    """
    mean = comparisons / 15.0
    return int(mean + 8.0 * math.sqrt(comparisons * 16.0 / 225.0) + 64.0) // 2


class UnaryEncoding(FrequencyOracle):
    """Unary encoding: one randomized bit per domain value (Wang et al. 2017).

    The value ``v`` becomes the one-hot vector ``e_v``; bit ``v`` is reported as 1 with
    probability ``p``, every other bit as 1 with probability ``q``, independently.
    ``epsilon = ln(p (1 - q) / ((1 - p) q))``.

    - ``optimized=True`` (OUE): ``p = 1/2``, ``q = 1 / (e^eps + 1)``, the choice that
      minimises the variance ``4 e^eps / (n (e^eps - 1)^2)`` for rare values.
    - ``optimized=False`` (SUE, basic one-time RAPPOR of Erlingsson et al. 2014):
      ``p = e^(eps/2) / (e^(eps/2) + 1)``, ``q = 1 - p``.

    Parameters
    ----------
    k : int >= 2
        Domain size; reports are ``k`` bits.
    epsilon : float in (0, 30]
        Privacy parameter in nats.
    optimized : bool, default True

    Reports
    -------
    ndarray of uint8, shape (n, ceil(k / 8)): the bits packed little-endian (bit ``v``
    is bit ``v % 8`` of byte ``v // 8``); padding bits are 0.

    Randomness: :meth:`encode` reads ``4 k`` bytes per report, one 32-bit word per
    bit; :meth:`randomize` draws the same words lazily, about ``k / 2 + k / 30 + 1``
    bytes per report, and encodes in compiled code on two threads.

    Raises
    ------
    ValueError, TypeError
        For ``k < 2`` or epsilon outside (0, 30].

    Examples
    --------
    >>> oue = UnaryEncoding(k=100, epsilon=1.0)
    >>> round(oue.p_star, 6), round(oue.q_star, 6), round(oue.epsilon, 6)
    (0.5, 0.268941, 1.0)
    """

    def __init__(self, k: int, epsilon: float, optimized: bool = True) -> None:
        super().__init__(k, epsilon)
        self.optimized = bool(optimized)
        eps = self.requested_epsilon
        if self.optimized:
            self.threshold_p = TWO32 // 2

            def eps_q(tq_complement: int) -> float:  # T_q = 2^32 - x, decreasing in x
                tq = TWO32 - tq_complement
                return math.log((TWO32 - tq) / tq)

            x = largest_threshold(eps, eps_q, 1.0 - 1.0 / (math.exp(eps) + 1.0))
            self.threshold_q = TWO32 - x
        else:

            def eps_sym(tp: int) -> float:
                return 2.0 * math.log(tp / (TWO32 - tp))

            half = math.exp(eps / 2.0)
            self.threshold_p = largest_threshold(eps, eps_sym, half / (half + 1.0))
            self.threshold_q = TWO32 - self.threshold_p
        self.spec_name = "oue" if self.optimized else "sue"

    @property
    def p_star(self) -> float:
        return threshold_probability(self.threshold_p)

    @property
    def q_star(self) -> float:
        return threshold_probability(self.threshold_q)

    @property
    def epsilon(self) -> float:
        p, q = self.p_star, self.q_star
        return math.log(p * (1 - q) / ((1 - p) * q))

    @property
    def bytes_per_report(self) -> int:
        return 4 * self.k

    @property
    def n_bytes(self) -> int:
        """Bytes per packed report, ``ceil(k / 8)``."""
        return (self.k + 7) // 8

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "epsilon": self.requested_epsilon, "optimized": self.optimized}

    def client_params(self) -> dict[str, Any]:
        """What a respondent's encoder (``web/oracles.js``: ``encodeOUE``) needs."""
        return {"k": self.k, "threshold_p": self.threshold_p, "threshold_q": self.threshold_q}

    def _memory_advice(self, memory_limit: int) -> str:
        """What to do when reports pass ``memory_limit``: fewer values a call, or (when
        one report alone passes it) another oracle."""
        fits = memory_limit // self.n_bytes
        if fits:
            start = f"randomize at most {fits:,} values a call, or use"
        else:
            start = (
                "one report alone is over the limit, so unary encoding cannot serve "
                f"k = {self.k:,}: use"
            )
        return f"{start} LocalHashing or HadamardResponse (reports of 8-24 bytes)"

    def randomize(
        self,
        values: ArrayLike,
        rng: RandomSource | np.random.Generator | None = None,
        *,
        memory_limit: int = MAX_REPORT_BYTES,
    ) -> NDArray[np.uint8]:
        """Randomize each value into a packed report (vectorised, compiled).

        Draws the same reports, with the same probabilities, as :meth:`encode` on
        ``4 k`` fresh bytes per report, but reads those bytes lazily: ``word < T`` is
        decided by the most significant 4 bits of ``word`` unless they equal ``T``'s
        (probability 1/16), and only then are the next 4 bits drawn, and so on. That
        takes about ``k / 2 + k / 30 + 1`` random bytes per report instead of ``4 k``.

        Parameters
        ----------
        values : array_like of int, shape (n,)
            True values in ``0..k-1``.
        rng : numpy.random.Generator or RandomSource, optional
            Source of the random bytes. Default: the secure source (an AES-256-CTR
            keystream keyed from ``os.urandom``; see
            :mod:`deniable.mechanisms`); a seeded generator is for simulation only.
        memory_limit : int, default :data:`MAX_REPORT_BYTES` (2 GiB)
            Bytes the packed reports (``n * ceil(k / 8)``) may take.

        Returns
        -------
        ndarray of uint8, shape (n, ceil(k / 8)): packed reports, as :meth:`encode`.

        Raises
        ------
        ValueError, TypeError
            For values outside ``0..k-1`` or of a non-integer type.
        MemoryLimitError
            (a ValueError) For reports that would take more than ``memory_limit``,
            before anything is allocated: randomize in chunks, or use an oracle with
            short reports (local hashing, Hadamard response).
        """
        from ._kernels import kernel_backend

        size = int(np.size(values))
        check_memory(
            f"values: {size:,} reports of {self.n_bytes:,} bytes (k = {self.k:,})",
            size * self.n_bytes,
            memory_limit,
            self._memory_advice(memory_limit),
        )
        codes = self._values(values)
        if kernel_backend() == "numpy":
            return self._randomize_bytewise(codes, rng)
        from ._kernels_numba import ue_lazy_encode

        n, nb = codes.size, self.n_bytes
        out = np.empty((n, nb), dtype=np.uint8)
        tq, tp = self._threshold_nibbles
        words = (nb + 1) // 2
        rows = max(1, _LAZY_CHUNK_BYTES // (8 * words))

        def draw(start: int) -> list[Any]:
            # the calling thread only, so a seeded generator is read in a fixed order
            chunk = codes[start : start + rows]
            m = chunk.size
            top = np.frombuffer(random_bytes(rng, 8 * words * m), dtype="<u8").reshape(m, words)
            pbytes = np.frombuffer(random_bytes(rng, m), dtype=np.uint8)
            ties = np.frombuffer(random_bytes(rng, _tie_bytes(m * self.k)), np.uint8)
            return [chunk, top, pbytes, ties, out[start : start + m]]

        def run(job: list[Any]) -> int:  # compiled, releases the GIL
            return ue_lazy_encode(job[0], job[1], job[2], job[3], tq, tp, self.k, job[4])

        def finish(job: list[Any], used: int) -> None:
            while used < 0:  # ties ran out: extend the stream, encode the chunk again
                more = np.frombuffer(random_bytes(rng, job[3].size), np.uint8)
                job[3] = np.concatenate([job[3], more])
                used = run(job)

        starts = range(0, n, rows)
        if len(starts) == 1:
            job = draw(0)
            finish(job, run(job))
            return out
        # pipeline: this thread draws the next chunks' random bytes (AES, holding the
        # GIL) while two workers encode earlier chunks
        with ThreadPoolExecutor(max_workers=2) as pool:
            pending: deque[tuple[list[Any], Future[int]]] = deque()
            for start in starts:
                job = draw(start)
                pending.append((job, pool.submit(run, job)))
                while len(pending) > 2:
                    done, future = pending.popleft()
                    finish(done, future.result())
            while pending:
                done, future = pending.popleft()
                finish(done, future.result())
        return out

    def _randomize_bytewise(
        self, codes: NDArray[np.int64], rng: RandomSource | np.random.Generator | None
    ) -> NDArray[np.uint8]:
        """The NumPy path of :meth:`randomize`: the same reports, the same probabilities.

        ``word < T`` for a uniform 32-bit word is decided by its top byte ``B``: 1 if
        ``B < T >> 24``, 0 if above, and on a tie (probability 1/256) by its low 24
        bits against ``T``'s. One byte per bit, plus three per tie.
        """
        n, k = codes.size, self.k
        out = np.empty((n, self.n_bytes), dtype=np.uint8)
        rows = max(1, _LAZY_CHUNK_BYTES // k)
        high = np.array([self.threshold_q >> 24, self.threshold_p >> 24])
        low = np.array([self.threshold_q & 0xFFFFFF, self.threshold_p & 0xFFFFFF])
        for start in range(0, n, rows):
            chunk = codes[start : start + rows]
            m = chunk.size
            top = np.frombuffer(random_bytes(rng, m * k), dtype=np.uint8).reshape(m, k)
            bits = top < high[0]
            ties = top == high[0]
            at = np.arange(m)
            truth_byte = top[at, chunk]
            bits[at, chunk] = truth_byte < high[1]
            ties[at, chunk] = truth_byte == high[1]
            where = np.flatnonzero(ties)
            if where.size:
                raw = np.frombuffer(random_bytes(rng, 3 * where.size), dtype=np.uint8)
                rest = raw.reshape(-1, 3).astype(np.int64) @ np.array([1 << 16, 1 << 8, 1])
                is_truth = where % k == chunk[where // k]
                bits.flat[where] = rest < low[is_truth.astype(np.int64)]
            out[start : start + m] = np.packbits(bits, axis=1, bitorder="little")
        return out

    @property
    def _threshold_nibbles(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The 8 nibbles of ``T_q`` and of ``T_p``, most significant first."""
        shifts = np.arange(28, -1, -4)
        return (self.threshold_q >> shifts) & 15, (self.threshold_p >> shifts) & 15

    def encode(self, values: ArrayLike, randomness: RandomBytes) -> NDArray[np.uint8]:
        codes = self._values(values)
        n = codes.size
        words = self._bytes(randomness, n).view("<u4")  # (n, k)
        bits = words < np.uint32(self.threshold_q)
        rows = np.arange(n)
        bits[rows, codes] = words[rows, codes] < np.uint32(self.threshold_p)
        return np.packbits(bits, axis=1, bitorder="little")

    def report_columns(self, reports: Any) -> dict[str, Any]:
        """``{"report": hex}``: the packed bits of each report as a hexadecimal string."""
        return {"report": hex_strings(self.check_reports(reports))}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> NDArray[np.uint8]:
        """Packed reports from hexadecimal ``report`` strings, validated.

        Raises
        ------
        ReportValidationError
            For a missing column or a malformed report.
        """
        return self.check_reports(hex_rows(column(columns, "report"), self.n_bytes))

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """``report``: ``ceil(k / 8)`` bytes of packed bits per report."""
        return (ReportField("report", "bytes", self.n_bytes),)

    def report_arrays(self, reports: Any) -> dict[str, NDArray[Any]]:
        """``{"report": packed bits}``, uint8 (n, ceil(k / 8)), validated."""
        return {"report": self.check_reports(reports)}

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> NDArray[np.uint8]:
        """Packed reports from a binary ``report`` column, validated."""
        return self.check_reports(packed_rows(arrays, "report", self.n_bytes))

    def check_reports(self, reports: Any) -> NDArray[np.uint8]:
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != self.n_bytes or arr.dtype != np.uint8:
            raise ReportValidationError(
                f"unary-encoding reports must be a uint8 array of shape (n, {self.n_bytes}) "
                f"(k = {self.k} bits packed little-endian), got dtype {arr.dtype} shape {arr.shape}"
            )
        pad = 8 * self.n_bytes - self.k
        if pad and arr.size and np.any(arr[:, -1] >> np.uint8(8 - pad)):
            raise ReportValidationError(
                f"unary-encoding reports must have their {pad} padding bits set to 0"
            )
        return arr

    def tally(self, reports: Any) -> SupportTally:
        arr = self.check_reports(reports)
        return SupportTally(packed_bit_counts(arr, self.k), arr.shape[0])

    def unique_reports(self, reports: Any) -> tuple[Any, NDArray[np.int64]]:
        arr = self.check_reports(reports)
        uniq, counts = np.unique(arr, axis=0, return_counts=True)
        return uniq, counts.astype(np.int64)

    def support_matrix(
        self, reports: Any, *, memory_limit: int = MEMORY_LIMIT
    ) -> sparse.csr_matrix:
        from scipy import sparse

        arr = self.check_reports(reports)
        self._check_support_memory(arr.shape[0], memory_limit)
        bits = np.unpackbits(arr, axis=1, count=self.k, bitorder="little")
        return sparse.csr_matrix(bits.astype(bool))

    def _support_bytes(self, n: int) -> int:
        """The unpacked ``n x k`` bits (1 byte each) and about ``n k q*`` entries of the
        sparse matrix and its float64 copy (13 bytes each), ``q* <= 1``."""
        return n * self.k * 14

    def likelihood_ratio(self) -> float:
        """``Pr(report | truth in support) / Pr(report | truth not in support)`` per report."""
        p, q = self.p_star, self.q_star
        return p * (1 - q) / ((1 - p) * q)

    def report_probability(self, report_bits: NDArray[np.bool_], truth: int) -> float:
        """Exact probability of one unpacked report (bool, shape (k,)) given the truth."""
        probs = np.where(np.arange(self.k) == truth, self.p_star, self.q_star)
        return float(np.prod(np.where(report_bits, probs, 1 - probs)))


def packed_bit_counts(packed: NDArray[np.uint8], n_bits: int) -> NDArray[np.int64]:
    """Count the 1 bits at each position of little-endian packed rows.

    ``packed``: uint8, shape (n, nbytes); returns int64 shape (n_bits,) (see
    ``_kernels.packed_column_bit_counts`` for how each path counts).
    """
    from ._kernels import packed_column_bit_counts

    if packed.shape[0] == 0:
        return np.zeros(n_bits, dtype=np.int64)
    return packed_column_bit_counts(packed)[:n_bits]

"""Hadamard response for every privacy level (Acharya, Sun & Zhang 2019)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MEMORY_LIMIT, check_integer
from ..errors import ReportValidationError
from ..tallies import SupportTally
from ._oracle import (
    TWO32,
    FrequencyOracle,
    RandomBytes,
)
from ._randomness import RandomSource

if TYPE_CHECKING:
    from scipy import sparse

__all__ = ["HadamardResponse", "fwht"]


def fwht(x: ArrayLike, block: int | None = None) -> NDArray[np.int64] | NDArray[np.float64]:
    """Fast Walsh-Hadamard transform (Sylvester order, unnormalised), ``O(K log K)``.

    ``x``: shape (K,) with K a power of two; returns ``H_K x`` with
    ``H[r, c] = (-1)^popcount(r & c)``, same dtype kind (int64 or float64). With
    ``block`` (a power of two dividing K), transforms each run of ``block`` entries
    on its own: ``H_block`` applied to ``x.reshape(-1, block)`` row by row.

    Raises
    ------
    ValueError
        If K or ``block`` is not a power of two, or ``block`` does not divide K.
    """
    a = np.asarray(x)
    a = a.astype(np.int64) if a.dtype.kind in "iub" else a.astype(np.float64)
    size = a.size
    if size & (size - 1) or size == 0:
        raise ValueError(f"fwht needs a length that is a power of two, got {size}")
    span = size if block is None else int(block)
    if span < 1 or span & (span - 1) or size % span:
        raise ValueError(f"fwht block must be a power of two dividing {size}, got {block}")
    h = 1
    while h < span:
        v = a.reshape(-1, 2, h)
        a = np.stack((v[:, 0] + v[:, 1], v[:, 0] - v[:, 1]), axis=1).reshape(-1)
        h *= 2
    return a


def _popcount(x: NDArray[np.uint32]) -> NDArray[np.uint8]:
    return np.bitwise_count(x)


class HadamardResponse(FrequencyOracle):
    """Hadamard response, for every privacy level (Acharya, Sun & Zhang 2019).

    The outputs are ``K = B b`` columns in ``B`` blocks of ``b`` (powers of two), ``H``
    the ``b x b`` Sylvester-Hadamard matrix. Value ``v`` lives in block
    ``j = v // (b - 1)`` and owns row ``r = v % (b - 1) + 1`` of it, i.e. the set
    ``S_v`` of the ``b / 2`` columns ``c`` of block ``j`` with ``H[r, c] = +1``. The
    respondent reports a column with probability ``p_in`` each inside ``S_v`` and
    ``p_out`` each outside it, ``p_in / p_out = e^eps``, and ``b = 2^ceil(log2(k / B + 1))``.
    The paper (its Section 5, "general privacy") takes ``B = 2^floor(log2 min(2k,
    e^eps))``; by default we take, among the powers of two from 1/8 to 4 times that,
    the ``B`` with the smallest exact variance summed over a uniform population (15-25%
    lower than the paper's at epsilon = 1, 27% at epsilon = 4 and k = 100 or 1000).
    ``B = 1`` is the high-privacy scheme: ``K/2`` columns per value, ``K`` the power
    of two above ``k``.

    Estimator: a report ``c`` gives ``v`` the weight ``w = 1`` if ``c`` is in ``S_v``,
    ``0`` if it is in ``v``'s block but not in ``S_v``, and ``1/2`` outside the block.
    ``E[w] = p* = 1/2 + (b/4)(p_in - p_out)`` if the truth is ``v`` and exactly
    ``q* = 1/2`` otherwise (other rows of the block meet ``S_v`` in ``b/4`` columns),
    so ``f_v = (W_v / n - 1/2) / (p* - q*)`` is unbiased. The weights sum to
    ``W_v = (n + T[j, r]) / 2`` with ``T`` the per-block fast Walsh-Hadamard
    transform of the column histogram: ``O(n + K log b)``. With ``B > 1`` the tally
    holds ``2 W_v`` (``SupportTally.scale == 2``), the variance depends on the
    frequency of ``v``'s whole block (:meth:`variance`) and intervals are Wald
    (``normal``) or ``chebyshev``.

    Sampling (exact, 8 random bytes per report): a uniform column ``y`` (``log2 K``
    bits of the first little-endian 32-bit word) is reported if it lies in ``S_v``
    or if the second word is below ``T_rho``; otherwise the report is ``y``'s position
    moved into block ``j`` and, if outside ``S_v``, into it by flipping the lowest set
    bit of ``r``. Each column of ``S_v`` has ``2B - 1`` such preimages, so
    ``p_in = (1 + (2B - 1)(1 - rho)) / K`` and ``p_out = rho / K``,
    ``rho = T_rho / 2^32``; ``T_rho`` is the smallest threshold whose exact epsilon
    ``ln(p_in / p_out)`` is at most the one asked for.

    Reports: ndarray of uint32, shape (n,), columns in ``0..K-1`` (``log2 K`` bits).

    Parameters
    ----------
    k : int, 2 <= k < 2^31
    epsilon : float in (0, 30], nats
    blocks : int, power of two, optional
        ``B``; default the paper's choice above. ``blocks=1`` forces the
        high-privacy scheme.

    Raises
    ------
    ValueError, TypeError
        For ``k`` out of range, epsilon outside (0, 30] or ``blocks`` not a power of
        two in ``1..2^20``.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import HadamardResponse, estimate
    >>> oracle = HadamardResponse(k=8, epsilon=2.0)
    >>> reports = oracle.randomize(np.zeros(2000, dtype=np.int64), np.random.default_rng(0))
    >>> int(np.argmax(estimate(oracle, reports).estimate))
    0
    """

    spec_name = "hadamard"

    def __init__(self, k: int, epsilon: float, blocks: int | None = None) -> None:
        super().__init__(k, epsilon)
        if self.k >= 1 << 31:
            raise ValueError(f"k must be < 2^31 for Hadamard response, got {self.k}")
        e = math.exp(self.requested_epsilon)
        if blocks is None:
            # the paper's B = 2^floor(log2 min(2k, e^eps)) or the power of two near it
            # with the smallest exact variance over a uniform population
            paper = max(0, math.floor(math.log2(min(2.0 * self.k, e))))
            self.B = min(
                (1 << j for j in range(max(0, paper - 3), paper + 3)),
                key=lambda B: HadamardResponse(
                    self.k, self.requested_epsilon, blocks=B
                )._uniform_variance(),
            )
        else:
            self.B = check_integer("blocks", blocks, minimum=1)
            if self.B & (self.B - 1) or self.B > 1 << 20:
                raise ValueError(f"blocks must be a power of two in 1..2^20, got {blocks}")
        self.blocks_given = blocks
        # with several blocks a report gives half a support outside its block
        self.support_scale = 1 if self.B == 1 else 2
        self.b = 1 << math.ceil(math.log2(self.k / self.B + 1.0))  # b - 1 values a block
        self.K = self.B * self.b
        if self.K > 1 << 32 and blocks is not None:
            raise ValueError(f"Hadamard response needs K = B b <= 2^32 columns, got {self.K}")
        two_b = 2 * self.B

        def eps_of(t: int) -> float:  # decreasing in the threshold t
            rho = t / TWO32
            return math.log((1.0 + (two_b - 1) * (1.0 - rho)) / rho)

        t = max(1, min(TWO32 - 1, math.ceil(two_b / (e + two_b - 1) * TWO32)))
        while t + 1 < TWO32 and eps_of(t) > self.requested_epsilon:
            t += 1
        while t > 1 and eps_of(t - 1) <= self.requested_epsilon:
            t -= 1
        self.threshold_rho = t

    @property
    def _column_probabilities(self) -> tuple[float, float]:
        """Probability of each column inside ``S_v`` and outside it."""
        rho = self.threshold_rho / TWO32
        return (1.0 + (2 * self.B - 1) * (1.0 - rho)) / self.K, rho / self.K

    @property
    def epsilon(self) -> float:
        p_in, p_out = self._column_probabilities
        return math.log(p_in / p_out)

    @property
    def p_star(self) -> float:
        p_in, p_out = self._column_probabilities
        return 0.5 + self.b / 4.0 * (p_in - p_out)

    @property
    def q_star(self) -> float:
        return 0.5

    def support_probabilities(self, truth: int, k: int | None = None) -> NDArray[np.float64]:
        """``Pr(a report supports v | truth)`` (a report in ``S_v``), shape (k,), float64.

        With one block it is ``p*`` and ``q*``. With several, ``q*`` is an expected
        weight with half a support outside the value's block, and a report lies in
        ``S_v`` with ``(b/2) p_in`` for ``v = truth``, ``(b/4)(p_in + p_out)`` for another
        value of the truth's block and ``(b/2) p_out`` outside it.

        Raises
        ------
        ValueError
            For ``truth`` or ``k`` out of range.

        Examples
        --------
        >>> h = HadamardResponse(k=6, epsilon=3.0, blocks=2)
        >>> h.support_probabilities(0).round(3).tolist()
        [0.87, 0.457, 0.457, 0.043, 0.043, 0.043]
        """
        size = self._support_size(truth, k)
        if self.B == 1:
            return super().support_probabilities(truth, k)
        p_in, p_out = self._column_probabilities
        values = np.arange(size)
        same = values // (self.b - 1) == truth // (self.b - 1)
        rates = np.where(same, self.b / 4 * (p_in + p_out), self.b / 2 * p_out)
        return np.asarray(np.where(values == truth, self.b / 2 * p_in, rates), dtype=np.float64)

    @property
    def bytes_per_report(self) -> int:
        return 8

    @property
    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k, "epsilon": self.requested_epsilon}
        if self.blocks_given is not None:
            out["blocks"] = self.B
        return out

    def _block_and_row(
        self, codes: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Block ``v // (b - 1)`` and Hadamard row ``v % (b - 1) + 1`` of each value."""
        return codes // (self.b - 1), codes % (self.b - 1) + 1

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.uint32]:
        """Reports: each value's index in ``0..K-1`` (uint32), shape (n,) (see
        :meth:`deniable.mechanisms.FrequencyOracle.randomize`)."""
        reports: NDArray[np.uint32] = super().randomize(values, rng)  # type: ignore[assignment]
        return reports

    def encode(self, values: ArrayLike, randomness: RandomBytes) -> NDArray[np.uint32]:
        codes = self._values(values)
        words = self._bytes(randomness, codes.size).view("<u4")
        tail = self.b.bit_length() - 1
        block, row = self._block_and_row(codes)
        y = words[:, 0].astype(np.int64) & (self.K - 1)
        pos = y & (self.b - 1)
        odd = (_popcount((row & pos).astype(np.uint32)) & 1).astype(bool)
        inside = ((y >> tail) == block) & ~odd
        keep = inside | (words[:, 1] < np.uint32(self.threshold_rho))
        moved = (block << tail) | np.where(odd, pos ^ (row & -row), pos)
        return np.where(keep, y, moved).astype(np.uint32)

    def check_reports(self, reports: Any) -> NDArray[np.int64]:
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ReportValidationError(
                f"Hadamard reports must be a 1-D integer array of columns 0..{self.K - 1}, "
                f"got dtype {arr.dtype} shape {arr.shape}"
            )
        if arr.size and (arr.min() < 0 or arr.max() >= self.K):
            raise ReportValidationError(f"Hadamard report columns must lie in 0..{self.K - 1}")
        return arr.astype(np.int64)

    def tally(self, reports: Any) -> SupportTally:
        arr = self.check_reports(reports)
        hist = np.bincount(arr, minlength=self.K)
        transform = fwht(hist, block=self.b).reshape(self.B, self.b)
        block, row = self._block_and_row(np.arange(self.k))
        doubled = (arr.size + transform[block, row]).astype(np.int64)  # 2 W_v
        if self.support_scale == 1:  # no report falls outside a value's block: W_v is a count
            return SupportTally(doubled // 2, arr.size)
        return SupportTally(doubled, arr.size, scale=2)

    def unique_reports(self, reports: Any) -> tuple[Any, NDArray[np.int64]]:
        arr = self.check_reports(reports)
        uniq, counts = np.unique(arr, return_counts=True)
        return uniq, counts.astype(np.int64)

    def support_matrix(
        self, reports: Any, *, memory_limit: int = MEMORY_LIMIT
    ) -> sparse.csr_matrix:
        """``[c in S_v]``, shape (n, k) bool: the reports' likelihood is ``p_in`` or ``p_out``.

        Raises
        ------
        MemoryLimitError
            When the distinct reports x ``k`` masks (about 14 bytes an entry) would take
            more than ``memory_limit`` bytes.
        """
        from scipy import sparse

        arr = self.check_reports(reports)
        self._check_support_memory(min(arr.size, self.K), memory_limit)
        cols, inverse = np.unique(arr, return_inverse=True)
        tail = self.b.bit_length() - 1
        block, row = self._block_and_row(np.arange(self.k))
        pos = (cols & (self.b - 1)).astype(np.uint32)
        same = (cols[:, None] >> tail) == block[None, :]
        even = (_popcount(pos[:, None] & row[None, :].astype(np.uint32)) & 1) == 0
        return sparse.csr_matrix(same & even)[inverse]

    def _support_bytes(self, n: int) -> int:
        """Dense masks over ``n`` distinct reports x ``k``: uint32 words and two bool
        masks (about 10 bytes an entry), then the sparse matrix (about 4 more)."""
        return 14 * n * self.k

    def likelihood_ratio(self) -> float:
        """``Pr(report | truth in support) / Pr(report | not)``: ``p_in / p_out``."""
        p_in, p_out = self._column_probabilities
        return p_in / p_out

    def _weight_variances(self) -> tuple[float, float, float]:
        """Variance of one report's weight ``w`` for ``v``: truth ``v``, same block, other block."""
        p_in, p_out = self._column_probabilities
        b, K = self.b, self.K
        p = self.p_star
        own = b / 2 * p_in + (K - b) * p_out / 4 - p * p
        same = b / 4 * (p_in + p_out) + (K - b) * p_out / 4 - 0.25
        other = b / 2 * p_out + (b / 2 * p_in + (K - 1.5 * b) * p_out) / 4 - 0.25
        return own, same, other

    def variance(self, frequencies: ArrayLike, n: int) -> NDArray[np.float64]:
        """Exact variance of the unbiased estimate of each ``f_v`` from ``n`` reports.

        ``[f_v V_own + (F_v - f_v) V_same + (1 - F_v) V_other] / (n (p* - q*)^2)``,
        with ``F_v`` the total frequency of ``v``'s block and ``V_*`` the variance of
        one report's weight when the truth is ``v``, another value of its block, or a
        value of another block. ``frequencies``: shape (k,) (a scalar is spread over
        every value), in [0, 1]. Returns float64, shape (k,).
        """
        f = np.broadcast_to(np.asarray(frequencies, dtype=np.float64), (self.k,))
        block, _ = self._block_and_row(np.arange(self.k))
        total = np.bincount(block, weights=f)[block]
        own, same, other = self._weight_variances()
        gap = self.p_star - self.q_star
        return np.asarray((f * own + (total - f) * same + (1.0 - total) * other) / (n * gap * gap))

    def variance_line(
        self, frequencies: ArrayLike, n: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``Var(f_v) = intercept_v + slope_v * f_v`` with the rest of ``v``'s block fixed.

        With ``R_v = F_v - f_v`` taken from ``frequencies`` (shape (k,), in [0, 1]):
        ``intercept = [R_v V_same + (1 - R_v) V_other] / (n (p* - q*)^2)`` and
        ``slope = (V_own - V_other) / (n (p* - q*)^2)`` (see :meth:`variance`).
        Returns two float64 arrays of shape (k,).
        """
        f = np.broadcast_to(np.asarray(frequencies, dtype=np.float64), (self.k,))
        block, _ = self._block_and_row(np.arange(self.k))
        rest = np.bincount(block, weights=f)[block] - f
        own, same, other = self._weight_variances()
        scale = n * (self.p_star - self.q_star) ** 2
        intercept = (rest * same + (1.0 - rest) * other) / scale
        return np.asarray(intercept), np.full(self.k, (own - other) / scale)

    def _uniform_variance(self) -> float:
        """``n * sum_v Var(f_v)`` when every value has frequency ``1 / k``."""
        if self.K > 1 << 32:
            return math.inf
        full, rest = divmod(self.k, self.b - 1)
        squares = (full * (self.b - 1) ** 2 + rest**2) / self.k  # sum_v F_v
        own, same, other = self._weight_variances()
        gap = self.p_star - self.q_star
        return (own + (squares - 1.0) * same + (self.k - squares) * other) / (gap * gap)

    @property
    def worst_case_variance(self) -> float:
        """``n * Var(f_v)`` maximised over the population (a vertex of ``0 <= f_v <= F_v <= 1``)."""
        gap = self.p_star - self.q_star
        return max(self._weight_variances()) / (gap * gap)

    @property
    def variance_at_zero(self) -> float:
        """``n * Var(f_v)`` at ``f_v = 0``, every other value of frequency ``1 / k``.

        ``v``'s block then holds ``F_v = (min(b - 1, k) - 1) / k`` of the population.
        """
        block_share = (min(self.b - 1, self.k) - 1) / self.k
        _, same, other = self._weight_variances()
        gap = self.p_star - self.q_star
        return (same * block_share + other * (1.0 - block_share)) / (gap * gap)

"""Frequency oracles: local differential privacy over large domains.

A frequency oracle lets each of ``n`` respondents report one value ``v`` of a domain
``0..k-1`` under epsilon-local differential privacy, and lets the analyst estimate
the frequency ``f_v`` of every value. Every oracle here defines, for each report and
candidate ``v``, whether the report *supports* ``v``, with

``Pr(support | truth = v) = p*`` and ``Pr(support | truth != v) = q*``,

so the support count ``C_v`` of ``n`` reports gives the unbiased estimator
``f_v = (C_v / n - q*) / (p* - q*)`` with exact variance
``[f_v p*(1 - p*) + (1 - f_v) q*(1 - q*)] / (n (p* - q*)^2)`` (Wang et al. 2017).

Oracles
-------
:class:`UnaryEncoding`
    Symmetric (SUE, basic one-time RAPPOR) and optimized (OUE) unary encoding
    (Wang, Blocki, Li & Jha 2017). Reports: ``k`` bits, packed.
:class:`LocalHashing`
    Optimal local hashing (OLH; Wang et al. 2017): each respondent draws a hash
    function from a strongly universal family, hashes the value into ``g`` buckets and
    applies ``g``-ary randomized response. Reports: ``(a, b, y)`` = hash seed and bucket.
:class:`HadamardResponse`
    Hadamard response (Acharya, Sun & Zhang 2019) for every privacy level: one of
    ``K = B b`` columns, ``B`` blocks of a ``b x b`` Hadamard matrix; decoded by fast
    Walsh-Hadamard transforms in ``O(n + K log b)``. With ``B > 1`` a report gives
    half a support to the values outside its block (``SupportTally.scale == 2``).
:class:`Rappor`
    RAPPOR (Erlingsson, Pihur & Korolova 2014): see :mod:`deniable.rappor`.

Randomness and exact epsilon
----------------------------
Every encoder is a deterministic function ``encode(values, random_bytes)`` of a fixed
number of random bytes per report (:attr:`FrequencyOracle.bytes_per_report`), so the
Python and JavaScript encoders can be checked bit for bit on shared test vectors;
``randomize(values, rng=None)`` feeds it bytes from the secure source (``os.urandom``,
or for large draws an AES-256-CTR keystream keyed from it: :mod:`deniable.randomness`)
or a seeded generator's, for simulation. Unary encoding's ``randomize`` reads the same
bytes lazily, most significant nibble first, drawing the rest of a word only when
that nibble ties with the threshold's; it gives exactly ``encode``'s reports on the
bytes it read (``tests/test_unary_lazy.py``). A Bernoulli(p) draw is ``word < T`` for a
little-endian 32-bit
``word`` and an integer threshold ``T``, so it happens with probability exactly
``T / 2^32``. Thresholds are chosen as the largest whose *exact* epsilon does not
exceed the one asked for; :attr:`FrequencyOracle.epsilon` is that exact value
(smaller than the request by at most about 1e-9 nats), and the estimators use the
exact ``p*`` and ``q*``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from ._validation import as_codes, check_integer, check_real
from .errors import ReportValidationError
from .randomness import RandomSource, random_bytes

__all__ = [
    "FrequencyOracle",
    "HadamardResponse",
    "LocalHashing",
    "SupportTally",
    "UnaryEncoding",
    "frequency_oracle",
    "fwht",
    "heavy_hitters",
    "kary_rr_variance_at_zero",
    "oracle_from_spec",
    "packed_bit_counts",
    "reports_from_frame",
    "reports_to_frame",
]

TWO32 = 1 << 32
#: What an encoder reads its random bytes from.
RandomBytes = bytes | bytearray | NDArray[np.uint8]
#: Largest number of random bytes drawn at once while randomizing (memory bound).
_CHUNK_BYTES = 1 << 26
#: Random bytes of first nibbles drawn at once by ``UnaryEncoding.randomize``.
_LAZY_CHUNK_BYTES = 1 << 21


def _tie_bytes(comparisons: int) -> int:
    """Bytes of tie nibbles to draw for ``comparisons`` lazy 32-bit comparisons.

    Each comparison needs ``Geometric(15/16) - 1`` nibbles beyond its first (mean
    1/15, variance 16/225): the mean plus 8 standard deviations, rarely too few (then
    the stream is extended).
    """
    mean = comparisons / 15.0
    return int(mean + 8.0 * math.sqrt(comparisons * 16.0 / 225.0) + 64.0) // 2


def _prob(threshold: int) -> float:
    return threshold / TWO32


def _largest_threshold(epsilon: float, eps_of: Any, start: float) -> int:
    """Largest integer ``T`` in (0, 2^32) with ``eps_of(T) <= epsilon`` (eps_of increasing)."""
    t = int(min(max(start * TWO32, 1.0), TWO32 - 1))
    while t > 1 and eps_of(t) > epsilon:
        t -= 1 + (t >> 40)
    while t + 1 < TWO32 and eps_of(t + 1) <= epsilon:
        t += 1
    return t


def _check_epsilon(epsilon: object) -> float:
    eps = check_real("epsilon", epsilon)
    if not 0.0 < eps <= 30.0:
        raise ValueError(f"epsilon must be in (0, 30] nats, got {eps}")
    return eps


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


class FrequencyOracle(ABC):
    """A local-DP frequency oracle over the domain ``0..k-1`` (abstract).

    Attributes
    ----------
    k : int
        Domain size (>= 2).
    requested_epsilon : float
        The epsilon asked for, in nats.
    epsilon : float
        The exact epsilon of the implemented mechanism, in nats (<= requested).
    p_star, q_star : float
        Probabilities that a report supports a candidate equal to / different from the
        respondent's value.
    bytes_per_report : int
        Random bytes the encoder consumes per report, whatever the value.
    """

    #: Short name (``oue``, ``sue``, ``olh``, ``hadamard``, ``rappor``).
    name: str = "oracle"

    def __init__(self, k: int, epsilon: float) -> None:
        self.k = check_integer("k", k, minimum=2)
        self.requested_epsilon = _check_epsilon(epsilon)

    # -- mechanism ----------------------------------------------------------------
    @property
    @abstractmethod
    def epsilon(self) -> float:
        """Exact epsilon of the mechanism, in nats."""

    @property
    @abstractmethod
    def p_star(self) -> float:
        """Pr(a report supports v | truth = v)."""

    @property
    @abstractmethod
    def q_star(self) -> float:
        """Pr(a report supports v | truth != v)."""

    @property
    @abstractmethod
    def bytes_per_report(self) -> int:
        """Random bytes consumed per report."""

    @abstractmethod
    def encode(self, values: ArrayLike, randomness: RandomBytes) -> Any:
        """Deterministic encoder: reports from values and ``bytes_per_report`` bytes each.

        Parameters
        ----------
        values : array_like of int, shape (n,)
            True values in ``0..k-1``.
        randomness : bytes or ndarray of uint8, ``n * bytes_per_report`` bytes
            Uniform random bytes, consumed in order, ``bytes_per_report`` per report.
        """

    @abstractmethod
    def support_counts(self, reports: Any) -> SupportTally:
        """Tally the reports: how many support each candidate."""

    @abstractmethod
    def check_reports(self, reports: Any) -> Any:
        """Validate reports (shape, dtype, ranges); return them normalised.

        Raises
        ------
        ReportValidationError
            For malformed reports, naming what is wrong.
        """

    @abstractmethod
    def support_matrix(self, reports: Any) -> sparse.csr_matrix:
        """Which candidates each report supports, as a sparse bool matrix (n, k)."""

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Constructor parameters."""

    @abstractmethod
    def likelihood_ratio(self) -> float:
        """``Pr(report | truth supported) / Pr(report | truth not supported)`` (for EM)."""

    def unique_reports(self, reports: Any) -> tuple[Any, NDArray[np.int64]]:
        """Distinct reports and how often each occurs (EM works on these)."""
        arr = self.check_reports(reports)
        return arr, np.ones(len(arr), dtype=np.int64)

    # -- shared -------------------------------------------------------------------
    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> Any:
        """Randomize each value into a report (vectorised).

        Parameters
        ----------
        values : array_like of int, shape (n,)
            True values in ``0..k-1``.
        rng : numpy.random.Generator or RandomSource, optional
            Source of the random bytes. Default: the secure source (``os.urandom``, or
            for draws of 64 KiB and more an AES-256-CTR keystream keyed from it; use
            the default on a respondent's device, a seeded generator only to simulate).

        Returns
        -------
        Reports of this oracle for the ``n`` values (see the class).

        Raises
        ------
        ValueError, TypeError
            For values outside ``0..k-1`` or of a non-integer type.
        """
        codes = self._values(values)
        per = self.bytes_per_report
        rows = max(1, _CHUNK_BYTES // per)
        parts = [
            self.encode(codes[i : i + rows], random_bytes(rng, per * codes[i : i + rows].size))
            for i in range(0, max(codes.size, 1), rows)
        ]
        return self._concat(parts) if len(parts) > 1 else parts[0]

    def _values(self, values: ArrayLike) -> NDArray[np.int64]:
        return as_codes("values", values, self.k).astype(np.int64)

    def _bytes(self, randomness: RandomBytes, n: int) -> NDArray[np.uint8]:
        buf = (
            np.frombuffer(randomness, dtype=np.uint8)
            if isinstance(randomness, bytes | bytearray)
            else (np.ascontiguousarray(randomness, dtype=np.uint8).reshape(-1))
        )
        need = n * self.bytes_per_report
        if buf.size != need:
            raise ValueError(
                f"randomness must hold bytes_per_report * n = {self.bytes_per_report} * {n} "
                f"= {need} bytes, got {buf.size}"
            )
        return buf.reshape(n, self.bytes_per_report)

    @staticmethod
    def _concat(parts: list[Any]) -> Any:
        return np.concatenate(parts)

    def variance(self, frequencies: ArrayLike, n: int) -> NDArray[np.float64]:
        """Exact variance of the unbiased estimate of each ``f_v`` from ``n`` reports.

        ``[f p*(1 - p*) + (1 - f) q*(1 - q*)] / (n (p* - q*)^2)`` (the support indicators
        are independent Bernoulli draws, ``p*`` for holders of ``v`` and ``q*`` for the
        others). ``frequencies``: shape (k,) or broadcastable, in [0, 1].
        """
        f = np.asarray(frequencies, dtype=np.float64)
        p, q = self.p_star, self.q_star
        return (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2)

    def variance_line(
        self, frequencies: ArrayLike, n: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``Var(f_v)`` as a line in ``f_v``: ``intercept_v + slope_v * f_v``, others fixed.

        Every oracle's variance is affine in a value's own frequency when the other
        frequencies are held at ``frequencies`` (shape (k,), in [0, 1]; used only by
        oracles whose variance depends on them). Here
        ``intercept = q*(1 - q*) / (n (p* - q*)^2)`` and
        ``slope = [p*(1 - p*) - q*(1 - q*)] / (n (p* - q*)^2)`` for every value.
        Returns two float64 arrays of shape (k,).
        """
        p, q = self.p_star, self.q_star
        scale = n * (p - q) ** 2
        ones = np.ones(self.k)
        return ones * (q * (1 - q) / scale), ones * ((p * (1 - p) - q * (1 - q)) / scale)

    @property
    def worst_case_variance(self) -> float:
        """``n * Var(f_v)`` maximised over ``f_v`` in [0, 1]."""
        p, q = self.p_star, self.q_star
        return max(p * (1 - p), q * (1 - q)) / (p - q) ** 2

    @property
    def variance_at_zero(self) -> float:
        """``n * Var(f_v)`` at ``f_v = 0``: ``q*(1 - q*) / (p* - q*)^2`` (rare values)."""
        p, q = self.p_star, self.q_star
        return q * (1 - q) / (p - q) ** 2

    @property
    def truth_labels(self) -> tuple[str, ...]:
        """Category labels ``"0" .. "k-1"``."""
        return tuple(str(i) for i in range(self.k))

    @property
    def n_truths(self) -> int:
        """Domain size ``k`` (the number of estimated frequencies)."""
        return self.k

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: name, parameters, exact epsilon, p*, q*."""
        return {
            "name": self.name,
            "params": self.params(),
            "epsilon": self.epsilon,
            "p_star": self.p_star,
            "q_star": self.q_star,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FrequencyOracle)
            and type(other) is type(self)
            and (self.params() == other.params())
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.params().items()))))


# ---------------------------------------------------------------------------------
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

            x = _largest_threshold(eps, eps_q, 1.0 - 1.0 / (math.exp(eps) + 1.0))
            self.threshold_q = TWO32 - x
        else:

            def eps_sym(tp: int) -> float:
                return 2.0 * math.log(tp / (TWO32 - tp))

            half = math.exp(eps / 2.0)
            self.threshold_p = _largest_threshold(eps, eps_sym, half / (half + 1.0))
            self.threshold_q = TWO32 - self.threshold_p
        self.name = "oue" if self.optimized else "sue"

    @property
    def p_star(self) -> float:
        return _prob(self.threshold_p)

    @property
    def q_star(self) -> float:
        return _prob(self.threshold_q)

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

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "epsilon": self.requested_epsilon, "optimized": self.optimized}

    def client_params(self) -> dict[str, Any]:
        """What a respondent's encoder (``web/oracles.js``: ``encodeOUE``) needs."""
        return {"k": self.k, "threshold_p": self.threshold_p, "threshold_q": self.threshold_q}

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
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
            Source of the random bytes. Default: the secure source (``os.urandom``, or
            an AES-256-CTR keystream keyed from it for large draws; see
            :mod:`deniable.randomness`); a seeded generator is for simulation only.

        Returns
        -------
        ndarray of uint8, shape (n, ceil(k / 8)): packed reports, as :meth:`encode`.

        Raises
        ------
        ValueError, TypeError
            For values outside ``0..k-1`` or of a non-integer type.
        """
        from ._kernels import ue_lazy_encode

        codes = self._values(values)
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

    def support_counts(self, reports: Any) -> SupportTally:
        arr = self.check_reports(reports)
        return SupportTally(packed_bit_counts(arr, self.k), arr.shape[0])

    def unique_reports(self, reports: Any) -> tuple[Any, NDArray[np.int64]]:
        arr = self.check_reports(reports)
        uniq, counts = np.unique(arr, axis=0, return_counts=True)
        return uniq, counts.astype(np.int64)

    def support_matrix(self, reports: Any) -> sparse.csr_matrix:
        arr = self.check_reports(reports)
        bits = np.unpackbits(arr, axis=1, count=self.k, bitorder="little")
        return sparse.csr_matrix(bits.astype(bool))

    def likelihood_ratio(self) -> float:
        """``Pr(report | truth in support) / Pr(report | truth not in support)`` per report."""
        p, q = self.p_star, self.q_star
        return p * (1 - q) / ((1 - p) * q)

    def report_probability(self, report_bits: NDArray[np.bool_], truth: int) -> float:
        """Exact probability of one unpacked report (bool, shape (k,)) given the truth."""
        probs = np.where(np.arange(self.k) == truth, self.p_star, self.q_star)
        return float(np.prod(np.where(report_bits, probs, 1 - probs)))


_BIT_TABLE = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.int64)


def packed_bit_counts(packed: NDArray[np.uint8], n_bits: int) -> NDArray[np.int64]:
    """Count the 1 bits at each position of little-endian packed rows.

    ``packed``: uint8, shape (n, nbytes); returns int64 shape (n_bits,). Narrow rows
    (under 64 bytes): a compiled pass histograms the byte values of each column (one
    increment per byte), then a 256 x 8 table turns byte-value counts into bit counts.
    Wider rows: bit-sliced counters add whole rows at a time, 32 columns per vector
    instruction (1.5-2x faster at 125 bytes a row, 4x at 1,250).
    """
    from ._kernels import byte_histograms, packed_column_bit_counts

    if packed.shape[0] == 0:
        return np.zeros(n_bits, dtype=np.int64)
    if packed.shape[1] >= 64:
        return packed_column_bit_counts(packed)[:n_bits]
    return (byte_histograms(packed) @ _BIT_TABLE).reshape(-1)[:n_bits]


# ---------------------------------------------------------------------------------
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
    """

    name = "olh"

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
            p = _prob(tp)
            return math.log(p / ((1 - p) * m_min))

        e = math.exp(eps)
        self.threshold_p = _largest_threshold(eps, eps_of, e / (e + g_ - 1))

    @property
    def keep_probability(self) -> float:
        """``p``: probability of reporting the true bucket."""
        return _prob(self.threshold_p)

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

    def encode(self, values: ArrayLike, randomness: RandomBytes) -> NDArray[Any]:
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

    def support_counts(self, reports: Any) -> SupportTally:
        from ._kernels import olh_support_counts

        arr = self.check_reports(reports)
        if arr.size == 0:
            return SupportTally(np.zeros(self.k, np.int64), 0)
        return SupportTally(olh_support_counts(*self._kernel_args(arr), self.k), arr.size)

    def support_matrix(self, reports: Any) -> sparse.csr_matrix:
        from ._kernels import olh_support_pairs

        arr = self.check_reports(reports)
        indptr, indices = olh_support_pairs(*self._kernel_args(arr), self.k)
        data = np.ones(indices.size, dtype=bool)
        return sparse.csr_matrix((data, indices, indptr), shape=(arr.size, self.k))

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


# ---------------------------------------------------------------------------------
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
    respondent reports a column with probability ``alpha`` each inside ``S_v`` and
    ``beta`` each outside it, ``alpha / beta = e^eps``, and ``b = 2^ceil(log2(k / B + 1))``.
    The paper (its Section 5, "general privacy") takes ``B = 2^floor(log2 min(2k,
    e^eps))``; by default we take, among the powers of two from 1/8 to 4 times that,
    the ``B`` with the smallest exact variance summed over a uniform population (15-25%
    lower than the paper's at epsilon = 1, 27% at epsilon = 4 and k = 100 or 1000).
    ``B = 1`` is the high-privacy scheme: ``K/2`` columns per value, ``K`` the power
    of two above ``k``.

    Estimator: a report ``c`` gives ``v`` the weight ``w = 1`` if ``c`` is in ``S_v``,
    ``0`` if it is in ``v``'s block but not in ``S_v``, and ``1/2`` outside the block.
    ``E[w] = p* = 1/2 + (b/4)(alpha - beta)`` if the truth is ``v`` and exactly
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
    ``alpha = (1 + (2B - 1)(1 - rho)) / K`` and ``beta = rho / K``,
    ``rho = T_rho / 2^32``; ``T_rho`` is the smallest threshold whose exact epsilon
    ``ln(alpha / beta)`` is at most the one asked for.

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
    """

    name = "hadamard"

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
    def _alpha_beta(self) -> tuple[float, float]:
        """Probability of each column inside ``S_v`` and outside it."""
        rho = self.threshold_rho / TWO32
        return (1.0 + (2 * self.B - 1) * (1.0 - rho)) / self.K, rho / self.K

    @property
    def epsilon(self) -> float:
        alpha, beta = self._alpha_beta
        return math.log(alpha / beta)

    @property
    def p_star(self) -> float:
        alpha, beta = self._alpha_beta
        return 0.5 + self.b / 4.0 * (alpha - beta)

    @property
    def q_star(self) -> float:
        return 0.5

    @property
    def bytes_per_report(self) -> int:
        return 8

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

    def support_counts(self, reports: Any) -> SupportTally:
        arr = self.check_reports(reports)
        hist = np.bincount(arr, minlength=self.K)
        transform = fwht(hist, block=self.b).reshape(self.B, self.b)
        block, row = self._block_and_row(np.arange(self.k))
        doubled = (arr.size + transform[block, row]).astype(np.int64)  # 2 W_v
        if self.B == 1:  # no report falls outside a value's block: W_v is a count
            return SupportTally(doubled // 2, arr.size)
        return SupportTally(doubled, arr.size, scale=2)

    def unique_reports(self, reports: Any) -> tuple[Any, NDArray[np.int64]]:
        arr = self.check_reports(reports)
        uniq, counts = np.unique(arr, return_counts=True)
        return uniq, counts.astype(np.int64)

    def support_matrix(self, reports: Any) -> sparse.csr_matrix:
        """``[c in S_v]``, shape (n, k) bool: the reports' likelihood is ``alpha`` or ``beta``."""
        arr = self.check_reports(reports)
        cols, inverse = np.unique(arr, return_inverse=True)
        tail = self.b.bit_length() - 1
        block, row = self._block_and_row(np.arange(self.k))
        pos = (cols & (self.b - 1)).astype(np.uint32)
        same = (cols[:, None] >> tail) == block[None, :]
        even = (_popcount(pos[:, None] & row[None, :].astype(np.uint32)) & 1) == 0
        return sparse.csr_matrix(same & even)[inverse]

    def likelihood_ratio(self) -> float:
        """``Pr(report | truth in support) / Pr(report | not)``: ``alpha / beta``."""
        alpha, beta = self._alpha_beta
        return alpha / beta

    def _weight_variances(self) -> tuple[float, float, float]:
        """Variance of one report's weight ``w`` for ``v``: truth ``v``, same block, other block."""
        alpha, beta = self._alpha_beta
        b, K = self.b, self.K
        p = self.p_star
        own = b / 2 * alpha + (K - b) * beta / 4 - p * p
        same = b / 4 * (alpha + beta) + (K - b) * beta / 4 - 0.25
        other = b / 2 * beta + (b / 2 * alpha + (K - 1.5 * b) * beta) / 4 - 0.25
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


# ---------------------------------------------------------------------------------
def kary_rr_variance_at_zero(k: int, epsilon: float) -> float:
    """``n * Var(f_v)`` at ``f_v = 0`` for k-ary randomized response (Kairouz et al. 2016).

    ``p = e^eps / (e^eps + k - 1)``, ``q = 1 / (e^eps + k - 1)``:
    ``q (1 - q) / (p - q)^2 = (e^eps + k - 2) / (e^eps - 1)^2``.
    """
    e = math.exp(epsilon)
    return (e + k - 2) / (e - 1) ** 2


def frequency_oracle(
    k: int,
    epsilon: float,
    *,
    max_report_bytes: int | None = 256,
    max_kary_k: int = 2048,
) -> Any:
    """The oracle with the lowest variance for rare values at this domain size and epsilon.

    Candidates: k-ary randomized response (:class:`~deniable.designs.KaryRR`, when
    ``k <= max_kary_k``; it wins while ``k - 2 < 3 e^eps`` roughly), optimized unary
    encoding (when its ``ceil(k/8)``-byte reports fit ``max_report_bytes``), optimal
    local hashing and Hadamard response. They are compared on the exact
    ``n * Var(f_v)`` at ``f_v = 0`` (Wang et al. 2017): ``(e^eps + k - 2)/(e^eps - 1)^2``
    for k-RR, ``4 e^eps / (e^eps - 1)^2`` for OUE, about the same for OLH and
    ``((e^eps + 1)/(e^eps - 1))^2`` for Hadamard response. Ties go to the smaller report.

    Parameters
    ----------
    k : int >= 2
        Domain size.
    epsilon : float in (0, 30]
        Nats.
    max_report_bytes : int or None, default 256
        Largest acceptable report for unary encoding (None: no limit).
    max_kary_k : int, default 2048
        Largest domain for k-ary RR (its design keeps a dense k x k matrix).

    Returns
    -------
    KaryRR or FrequencyOracle

    Raises
    ------
    ValueError, TypeError
        For ``k < 2`` or epsilon outside (0, 30].

    Examples
    --------
    >>> frequency_oracle(4, 2.0)
    KaryRR(k=4, epsilon=2.0)
    >>> frequency_oracle(10_000, 1.0)
    LocalHashing(k=10000, epsilon=1.0, g=4)
    """
    from .designs import KaryRR

    k = check_integer("k", k, minimum=2)
    eps = _check_epsilon(epsilon)
    candidates: list[tuple[float, int, Any]] = []
    if k <= max_kary_k:
        candidates.append((kary_rr_variance_at_zero(k, eps), 0, lambda: KaryRR(k=k, epsilon=eps)))
    if k < TWO32:
        olh = LocalHashing(k, eps)
        candidates.append((olh.variance_at_zero, 1, lambda: olh))
    if k < 1 << 31:
        hr = HadamardResponse(k, eps)
        candidates.append((hr.variance_at_zero, 2, lambda: hr))
    if max_report_bytes is None or (k + 7) // 8 <= max_report_bytes:
        oue = UnaryEncoding(k, eps)
        candidates.append((oue.variance_at_zero, 3, lambda: oue))
    best = min(candidates, key=lambda c: (round(c[0], 9), c[1]))
    return best[2]()


# ---------------------------------------------------------------------------------
ORACLE_NAMES = ("oue", "sue", "olh", "hadamard", "rappor")


def oracle_from_spec(spec: str) -> Any:
    """Build a frequency oracle from ``"name:param=value,..."``.

    Names: ``oue`` and ``sue`` (k, epsilon), ``olh`` (k, epsilon, optional g),
    ``hadamard`` (k, epsilon, optional blocks), ``rappor`` (k, h, m, f, p, q).

    Raises
    ------
    ValueError
        For an unknown name or a bad parameter.

    Examples
    --------
    >>> oracle_from_spec("olh:k=1000,epsilon=2")
    LocalHashing(k=1000, epsilon=2.0, g=8)
    """
    from .designs import parse_spec
    from .rappor import Rappor

    name, kwargs = parse_spec(spec)
    builders: dict[str, Any] = {
        "oue": lambda **kw: UnaryEncoding(optimized=True, **kw),
        "sue": lambda **kw: UnaryEncoding(optimized=False, **kw),
        "olh": LocalHashing,
        "hadamard": HadamardResponse,
        "rappor": Rappor,
    }
    if name not in builders:
        raise ValueError(f"unknown oracle {name!r}; allowed: {', '.join(ORACLE_NAMES)}")
    try:
        return builders[name](**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad parameters for oracle {name!r}: {exc}") from None


def reports_to_frame(oracle: Any, reports: Any) -> Any:
    """Reports as a pandas DataFrame for CSV/Parquet files.

    Columns: unary encoding and RAPPOR ``report`` (hex of the packed bits; RAPPOR also
    ``cohort``), local hashing ``a``, ``b`` (decimal strings of the 64-bit seed) and
    ``y``, Hadamard response ``report`` (the column).
    """
    import pandas as pd

    from .rappor import Rappor

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


def reports_from_frame(oracle: Any, frame: Any) -> Any:
    """Inverse of :func:`reports_to_frame`, validating every report.

    Raises
    ------
    ReportValidationError
        For a missing column or a malformed report, naming the column.
    """
    from .rappor import Rappor, RapporReports

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
        return oracle.check_reports(np.asarray(column("report"), dtype=np.int64))
    except (OverflowError, TypeError, ValueError) as exc:
        if isinstance(exc, ReportValidationError):
            raise
        raise ReportValidationError(f"malformed reports: {exc}") from None


def heavy_hitters(result: Any, alpha: float = 0.05, labels: Sequence[str] | None = None) -> Any:
    """Values whose estimated frequency passes the detection threshold.

    A value is detected when ``estimate / SE > z_{1 - alpha / k}`` (one-sided, Bonferroni
    over the ``k`` candidates), the rule of the RAPPOR analysis (Erlingsson et al. 2014).

    Parameters
    ----------
    result : PrevalenceEstimate
        From :func:`deniable.estimate` on an oracle (or a design).
    alpha : float in (0, 1), default 0.05
        Family-wise false-detection rate.
    labels : sequence of str, optional
        Names of the ``k`` values (default: the result's truth labels).

    Returns
    -------
    pandas.DataFrame
        Columns ``value``, ``estimate``, ``std_error``, ``ci_low``, ``ci_high``,
        ``z``; one row per detected value, largest estimate first.
    """
    import pandas as pd
    from scipy import stats

    from ._validation import check_probability

    alpha = check_probability("alpha", alpha, low_open=True, high_open=True)
    est = result.prevalence
    se = result.std_error
    k = est.size
    names = list(labels) if labels is not None else list(result.design.truth_labels)
    if len(names) != k:
        raise ValueError(f"labels must name all {k} values, got {len(names)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, est / se, 0.0)
    threshold = float(stats.norm.ppf(1 - alpha / k))
    keep = np.nonzero(z > threshold)[0]
    ci = result.confidence_interval(1 - alpha, "normal")
    frame = pd.DataFrame(
        {
            "value": [names[i] for i in keep],
            "estimate": est[keep],
            "std_error": se[keep],
            "ci_low": ci.low[keep],
            "ci_high": ci.high[keep],
            "z": z[keep],
        }
    )
    frame.attrs["threshold_z"] = threshold
    return frame.sort_values("estimate", ascending=False, ignore_index=True)

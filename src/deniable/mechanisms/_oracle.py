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
    RAPPOR (Erlingsson, Pihur & Korolova 2014): see :mod:`deniable.mechanisms`.

Randomness and exact epsilon
----------------------------
Every encoder is a deterministic function ``encode(values, random_bytes)`` of a fixed
number of random bytes per report (:attr:`FrequencyOracle.bytes_per_report`), so the
Python and JavaScript encoders can be checked bit for bit on shared test vectors;
``randomize(values, rng=None)`` feeds it bytes from the secure source (an AES-256-CTR
keystream keyed from ``os.urandom``: :mod:`deniable.mechanisms`)
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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MEMORY_LIMIT, as_codes, check_integer, check_memory
from ..tallies import SupportTally
from ._columns import column, integer_array
from ._protocol import (
    ReportField,
    SupportChannel,
    check_epsilon,
    spec_string,
    warn_large_epsilon,
)
from ._randomness import RandomSource, random_bytes

if TYPE_CHECKING:
    from scipy import sparse

__all__ = [
    "TWO32",
    "FrequencyOracle",
    "OracleReports",
    "RandomBytes",
    "kary_rr_variance_at_zero",
    "largest_threshold",
    "threshold_probability",
]

TWO32 = 1 << 32
#: An oracle's reports: unary encoding's packed bits (uint8, shape (n, bytes)), local
#: hashing's records (``OLH_DTYPE``: seed ``a``, ``b`` and bucket ``y``), Hadamard
#: response's indices (uint32).
OracleReports = NDArray[np.uint8] | NDArray[np.void] | NDArray[np.uint32]
#: What an encoder reads its random bytes from.
RandomBytes = bytes | bytearray | memoryview | NDArray[np.uint8]
#: Largest number of random bytes drawn at once while randomizing (memory bound).
_CHUNK_BYTES = 1 << 26


def threshold_probability(threshold: int) -> float:
    """``threshold / 2^32``: the probability that a uniform 32-bit word is below it."""
    return threshold / TWO32


def largest_threshold(epsilon: float, eps_of: Any, start: float) -> int:
    """Largest integer ``T`` in (0, 2^32) with ``eps_of(T) <= epsilon`` (eps_of increasing)."""
    t = int(min(max(start * TWO32, 1.0), TWO32 - 1))
    while t > 1 and eps_of(t) > epsilon:
        t -= 1 + (t >> 40)
    while t + 1 < TWO32 and eps_of(t + 1) <= epsilon:
        t += 1
    return t


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

    Examples
    --------
    >>> from deniable import FrequencyOracle, LocalHashing
    >>> oracle = LocalHashing(k=10, epsilon=1.0)
    >>> isinstance(oracle, FrequencyOracle), oracle.k
    (True, 10)
    """

    #: Registry name (``oue``, ``sue``, ``olh``, ``hadamard``).
    spec_name: str = "oracle"

    def __init__(self, k: int, epsilon: float) -> None:
        self.k = check_integer("k", k, minimum=2)
        self.requested_epsilon = check_epsilon(epsilon)
        warn_large_epsilon(self.requested_epsilon, f"{type(self).__name__}(k={self.k})")

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
    def encode(self, values: ArrayLike, randomness: RandomBytes) -> NDArray[Any]:
        """Deterministic encoder: reports from values and ``bytes_per_report`` bytes each.

        Parameters
        ----------
        values : array_like of int, shape (n,)
            True values in ``0..k-1``.
        randomness : bytes or ndarray of uint8, ``n * bytes_per_report`` bytes
            Uniform random bytes, consumed in order, ``bytes_per_report`` per report.
        """

    @abstractmethod
    def tally(self, reports: Any) -> SupportTally:
        """Tally the reports: how many support each candidate (validated)."""

    def report_columns(self, reports: Any) -> dict[str, Any]:
        """The reports as table columns (CSV, Parquet); here ``{"report": reports}``."""
        return {"report": self.check_reports(reports)}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> NDArray[Any]:
        """Reports from table columns, validated (inverse of :meth:`report_columns`).

        Raises
        ------
        ReportValidationError
            For a missing column or a malformed report, naming the column.
        """
        return self.check_reports(np.asarray(column(columns, "report"), dtype=np.int64))

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """The binary columns: here ``report``, an integer per report."""
        return (ReportField("report", "int"),)

    def report_arrays(self, reports: Any) -> dict[str, NDArray[Any]]:
        """The reports as binary columns (see :attr:`report_fields`), validated."""
        return {"report": np.asarray(self.check_reports(reports), dtype=np.int32)}

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> NDArray[Any]:
        """Reports from binary columns, validated (inverse of :meth:`report_arrays`).

        Raises
        ------
        ReportValidationError
            For a missing column or a malformed report, naming the column.
        """
        return self.check_reports(integer_array(arrays, "report").astype(np.int64))

    @abstractmethod
    def check_reports(self, reports: Any) -> NDArray[Any]:
        """Validate reports (shape, dtype, ranges); return them normalised.

        Raises
        ------
        ReportValidationError
            For malformed reports, naming what is wrong.
        """

    @abstractmethod
    def support_matrix(
        self, reports: Any, *, memory_limit: int = MEMORY_LIMIT
    ) -> sparse.csr_matrix:
        """Which candidates each report supports, as a sparse bool matrix (n, k).

        Raises
        ------
        MemoryLimitError
            Before building it, when it would take more than ``memory_limit`` bytes
            (default 2 GiB; see :meth:`_support_bytes`).
        """

    def _support_bytes(self, n: int) -> int:
        """Bytes that building and using the support matrix of ``n`` reports takes: the
        dense ``n x k`` default (a subclass with sparse supports says less)."""
        return n * self.k

    def _check_support_memory(self, n: int, memory_limit: int) -> None:
        check_memory(
            f"the support matrix of {n:,} reports x k = {self.k:,} candidates",
            self._support_bytes(n),
            memory_limit,
            "use the moment estimate (estimate, project_simplex or norm_sub), or fewer "
            "distinct reports",
        )

    @property
    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Constructor parameters."""

    @property
    def channel(self) -> SupportChannel:
        """``Pr(support | truth = v) = p*``, ``Pr(support | truth != v) = q*``."""
        return SupportChannel(self.p_star, self.q_star, self.support_scale)

    #: 2 when a report gives half a support to some values (Hadamard response).
    support_scale: int = 1

    def support_probabilities(self, truth: int, k: int | None = None) -> NDArray[np.float64]:
        """``Pr(a report supports v | truth)`` for ``v`` in ``0..k-1``: what
        :meth:`support_matrix`'s columns average to, ``p*`` for ``v = truth`` and ``q*``
        otherwise (Wang et al. 2017); the privacy auditor tests an encoder against it.

        Parameters
        ----------
        truth : int in 0..k-1
        k : int, optional
            How many values, at most the oracle's ``k`` (default all of them).

        Returns
        -------
        ndarray of float64, shape (k,)

        Raises
        ------
        ValueError
            For ``truth`` or ``k`` out of range.

        Examples
        --------
        >>> from deniable.mechanisms import UnaryEncoding
        >>> UnaryEncoding(k=4, epsilon=1.0, optimized=False).support_probabilities(1).round(3)
        array([0.378, 0.622, 0.378, 0.378])
        """
        size = self._support_size(truth, k)
        return np.where(np.arange(size) == truth, float(self.p_star), float(self.q_star))

    def _support_size(self, truth: int, k: int | None) -> int:
        size = self.k if k is None else check_integer("k", k, minimum=1)
        if size > self.k:
            raise ValueError(f"k must be at most the oracle's k = {self.k}, got {size}")
        check_integer("truth", truth, minimum=0)
        if truth >= self.k:
            raise ValueError(f"truth must be in 0..{self.k - 1}, got {truth}")
        return size

    @property
    def spec(self) -> str:
        """``"name:param=value,..."`` (see :mod:`deniable.mechanisms`)."""
        return spec_string(self.spec_name, self.params)

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
    ) -> OracleReports:
        """Randomize each value into a report (vectorised).

        Parameters
        ----------
        values : array_like of int, shape (n,)
            True values in ``0..k-1``.
        rng : numpy.random.Generator or RandomSource, optional
            Source of the random bytes. Default: the secure source (an AES-256-CTR
            keystream keyed from ``os.urandom``; use
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
        reports: OracleReports = self._concat(parts) if len(parts) > 1 else parts[0]
        return reports

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
        """JSON-ready description: mechanism name, parameters, exact epsilon, p*, q*."""
        return {
            "mechanism": self.spec_name,
            "params": self.params,
            "epsilon": self.epsilon,
            "p_star": self.p_star,
            "q_star": self.q_star,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FrequencyOracle)
            and type(other) is type(self)
            and (self.params == other.params)
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.params.items()))))


def kary_rr_variance_at_zero(k: int, epsilon: float) -> float:
    """``n * Var(f_v)`` at ``f_v = 0`` for k-ary randomized response (Kairouz et al. 2016).

    ``p = e^eps / (e^eps + k - 1)``, ``q = 1 / (e^eps + k - 1)``:
    ``q (1 - q) / (p - q)^2 = (e^eps + k - 2) / (e^eps - 1)^2``.
    """
    e = math.exp(epsilon)
    return (e + k - 2) / (e - 1) ** 2

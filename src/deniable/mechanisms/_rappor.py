"""RAPPOR: Randomized Aggregatable Privacy-Preserving Ordinal Response.

Erlingsson, Pihur & Korolova (2014), "RAPPOR: Randomized aggregatable
privacy-preserving ordinal response", CCS. A client in cohort ``c`` reporting the
string ``v``:

1. **Bloom filter** ``B``: ``h`` bits of ``k`` set by hashing ``(c, v)``; here bit ``j``
   is ``u32_be(SHA-256(u32_be(c) || utf8(v))[4j : 4j + 4]) mod k`` (``h <= 8``).
2. **Permanent randomized response** ``B'``: each bit is replaced by a fair coin with
   probability ``f``; memoized per (client secret, value) by deriving its coins from
   ``HMAC-SHA256(secret, utf8(v) || u32_be(block))`` (32 bytes per block, one byte per
   bit: low bit = the coin, ``byte >> 1 < round(128 f)`` = replace), so the same client
   always gets the same ``B'`` for the same value and no state is kept.
3. **Instantaneous randomized response** ``S``, fresh per report: bit ``i`` is 1 with
   probability ``q`` if ``B'_i = 1`` and ``p`` if ``B'_i = 0`` (a 32-bit word per bit
   against ``round(2^32 q)`` or ``round(2^32 p)``).

The cohort is ``floor(u32_be(HMAC-SHA256(secret, "cohort")[:4]) m / 2^32)``.

Privacy (the paper's Theorems 1 and 2, with the exact realised ``f``, ``p``, ``q``):
``epsilon_lifetime = 2 h ln((1 - f/2) / (f/2))`` bounds everything an observer of
all of one client's reports about one value learns; one report alone gives
``epsilon_report = h |ln(p* (1 - q*) / (q* (1 - p*)))|`` with
``p* = Pr(report bit 1 | Bloom bit 1) = (1 - f/2) q + (f/2) p`` and
``q* = Pr(report bit 1 | Bloom bit 0) = (f/2) q + (1 - f/2) p`` (the paper names these
the other way round; here ``p*`` and ``q*`` have the same roles as in every frequency
oracle).

Decoding (the paper's Section 4 and Google's ``analysis/R/decode.R``): per cohort,
the number of clients with each Bloom bit set is estimated by
``t_ij = (c_ij - (p + f q / 2 - f p / 2) N_j) / ((1 - f)(q - p))``; the shares
``t_ij / N_j`` are regressed on the candidates' Bloom bits (weighted by ``N_j``):
LASSO (scikit-learn, non-negative, penalty by cross-validation) selects candidates,
non-negative least squares (SciPy) fits them, standard errors come from the
heteroscedasticity-consistent sandwich with the binomial variance of each count, and
a candidate is *detected* when its estimate exceeds ``z_{1 - alpha / M}`` standard
errors (one-sided, Bonferroni over the ``M`` candidates).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MEMORY_LIMIT, check_integer, check_memory, check_probability
from ..errors import ReportValidationError
from ..tallies import RapporTally
from ._columns import column, hex_rows, hex_strings, integer_array, packed_rows
from ._oracle import TWO32
from ._protocol import BloomChannel, ReportField, spec_string, warn_large_epsilon
from ._randomness import RandomSource, random_bytes
from ._unary import packed_bit_counts

__all__ = ["Rappor", "RapporReports"]


@dataclass(frozen=True)
class RapporReports:
    """RAPPOR reports.

    Attributes
    ----------
    cohort : ndarray of uint32, shape (n,)
    bits : ndarray of uint8, shape (n, ceil(k / 8))
        The IRR bits, packed little-endian (bit ``i`` = bit ``i % 8`` of byte ``i // 8``).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Rappor
    >>> rappor = Rappor(n_bloom_bits=16, h=2, n_cohorts=2)
    >>> reports = rappor.randomize(["x", "y"], rng=np.random.default_rng(0))
    >>> reports.cohort.shape, reports.bits.shape
    ((2,), (2, 2))
    """

    cohort: NDArray[np.uint32]
    bits: NDArray[np.uint8]

    def __len__(self) -> int:
        return int(self.cohort.shape[0])

    def __getitem__(self, index: Any) -> RapporReports:
        return RapporReports(self.cohort[index], self.bits[index])


def _u32_be(x: int) -> bytes:
    return int(x).to_bytes(4, "big")


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"Rappor's {old!r} is deprecated; use {new!r} (removed in 0.3)",
        DeprecationWarning,
        stacklevel=3,
    )


class Rappor:
    """RAPPOR client and decoder (Erlingsson, Pihur & Korolova 2014).

    Parameters
    ----------
    n_bloom_bits : int, 8 <= n_bloom_bits <= 4096
        Bloom filter bits (report size; the paper's ``k``).
    h : int, 1 <= h <= 8
        Hash functions.
    n_cohorts : int, 1 <= n_cohorts <= 4096
        Cohorts (the paper's ``m``). The old keywords ``k=`` and ``m=`` still work
        until 0.3, with a ``DeprecationWarning`` (``k`` means a domain size everywhere
        else in the package).
    f : float in [0, 1)
        Permanent randomized response: probability of replacing a bit by a fair coin
        (realised on the 1/128 grid).
    p, q : float in [0, 1], p != q
        Instantaneous randomized response: Pr(report 1 | B' = 0) and Pr(report 1 | B' = 1)
        (realised on the 2^-32 grid).
    candidates : sequence of str, optional
        The candidate strings to decode against (see :meth:`with_candidates`).

    Raises
    ------
    ValueError, TypeError
        For parameters out of range.

    Examples
    --------
    >>> r = Rappor(n_bloom_bits=32, h=2, n_cohorts=8, f=0.5, p=0.5, q=0.75)
    >>> round(r.epsilon_lifetime, 4), round(r.epsilon_report, 4)
    (4.3944, 1.0743)
    """

    spec_name = "rappor"

    def __init__(
        self,
        n_bloom_bits: int = 128,
        h: int = 2,
        n_cohorts: int = 64,
        f: float = 0.5,
        p: float = 0.5,
        q: float = 0.75,
        candidates: Sequence[str] | None = None,
        *,
        k: int | None = None,
        m: int | None = None,
    ) -> None:
        if k is not None:
            _renamed("k", "n_bloom_bits")
            n_bloom_bits = k
        if m is not None:
            _renamed("m", "n_cohorts")
            n_cohorts = m
        self.n_bloom_bits = check_integer("n_bloom_bits", n_bloom_bits, minimum=8)
        if self.n_bloom_bits > 4096:
            raise ValueError(f"n_bloom_bits must be <= 4096, got {self.n_bloom_bits}")
        self.h = check_integer("h", h, minimum=1)
        if self.h > 8:
            raise ValueError(f"h must be <= 8 hash functions, got {self.h}")
        self.n_cohorts = check_integer("n_cohorts", n_cohorts, minimum=1)
        if self.n_cohorts > 4096:
            raise ValueError(f"n_cohorts must be <= 4096, got {self.n_cohorts}")
        self.f_requested = check_probability("f", f, high_open=True)
        self.p_requested = check_probability("p", p)
        self.q_requested = check_probability("q", q)
        self.threshold_f = round(128 * self.f_requested)
        self.threshold_p = min(round(TWO32 * self.p_requested), TWO32 - 1)
        self.threshold_q = min(round(TWO32 * self.q_requested), TWO32 - 1)
        if self.threshold_p == self.threshold_q:
            raise ValueError(f"p and q must differ, got p = {p}, q = {q}")
        if self.threshold_f >= 128:
            raise ValueError(f"f must be below 1 (on the 1/128 grid), got {f}")
        self.candidates: tuple[str, ...] = tuple(candidates) if candidates is not None else ()
        self._design: NDArray[np.float64] | None = None
        warn_large_epsilon(self.epsilon_report, repr(self))

    # -- parameters -----------------------------------------------------------------
    @property
    def k(self) -> int:
        """Deprecated name of :attr:`n_bloom_bits` (removed in 0.3)."""
        _renamed("k", "n_bloom_bits")
        return self.n_bloom_bits

    @property
    def m(self) -> int:
        """Deprecated name of :attr:`n_cohorts` (removed in 0.3)."""
        _renamed("m", "n_cohorts")
        return self.n_cohorts

    @property
    def f(self) -> float:
        """Realised permanent-RR probability ``round(128 f) / 128``."""
        return self.threshold_f / 128

    @property
    def p(self) -> float:
        """Realised IRR ``Pr(1 | B' = 0)``."""
        return self.threshold_p / TWO32

    @property
    def q(self) -> float:
        """Realised IRR ``Pr(1 | B' = 1)``."""
        return self.threshold_q / TWO32

    @property
    def p_star(self) -> float:
        """``Pr(report bit = 1 | Bloom bit = 1) = (1 - f/2) q + (f/2) p``.

        The role of :attr:`FrequencyOracle.p_star`: the probability that a set Bloom bit
        shows in the report (the paper's ``q*``).
        """
        return (1 - self.f / 2) * self.q + self.f / 2 * self.p

    @property
    def q_star(self) -> float:
        """``Pr(report bit = 1 | Bloom bit = 0) = (f/2) q + (1 - f/2) p`` (the paper's ``p*``)."""
        return self.f / 2 * self.q + (1 - self.f / 2) * self.p

    @property
    def channel(self) -> BloomChannel:
        """Each Bloom bit's channel: ``Pr(1 | bit 1) = p*``, ``Pr(1 | bit 0) = q*``."""
        return BloomChannel(self.p_star, self.q_star)

    @property
    def spec(self) -> str:
        """``"rappor:n_bloom_bits=...,h=...,n_cohorts=...,f=...,p=...,q=..."``: the requested
        parameters."""
        return spec_string(self.spec_name, self.params)

    @property
    def epsilon_lifetime(self) -> float:
        """``2 h ln((1 - f/2) / (f/2))`` nats (``inf`` when ``f = 0``)."""
        if self.threshold_f == 0:
            return math.inf
        return 2 * self.h * math.log((1 - self.f / 2) / (self.f / 2))

    @property
    def epsilon_report(self) -> float:
        """``h |ln(p* (1 - q*) / (q* (1 - p*)))|`` nats for one report."""
        ps, qs = self.p_star, self.q_star
        if min(ps, qs) == 0 or max(ps, qs) == 1:
            return math.inf
        return self.h * abs(math.log(qs * (1 - ps) / (ps * (1 - qs))))

    @property
    def epsilon(self) -> float:
        """Epsilon of one report (:attr:`epsilon_report`), nats."""
        return self.epsilon_report

    @property
    def n_bytes(self) -> int:
        """Bytes per packed report, ``ceil(k / 8)``."""
        return (self.n_bloom_bits + 7) // 8

    @property
    def bytes_per_report(self) -> int:
        """Fresh random bytes per report (IRR): ``4 k``."""
        return 4 * self.n_bloom_bits

    @property
    def params(self) -> dict[str, Any]:
        """Constructor parameters (without candidates)."""
        return {
            "n_bloom_bits": self.n_bloom_bits,
            "h": self.h,
            "n_cohorts": self.n_cohorts,
            "f": self.f_requested,
            "p": self.p_requested,
            "q": self.q_requested,
        }

    def client_params(self) -> dict[str, Any]:
        """What a respondent's encoder (``web/oracles.js``: ``encodeRappor``) needs."""
        return {
            "n_bloom_bits": self.n_bloom_bits,
            "h": self.h,
            "n_cohorts": self.n_cohorts,
            "threshold_f": self.threshold_f,
            "threshold_p": self.threshold_p,
            "threshold_q": self.threshold_q,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description with both epsilons."""
        return {
            "mechanism": self.spec_name,
            "params": self.params,
            "epsilon": self.epsilon_report,
            "epsilon_lifetime": self.epsilon_lifetime,
            "candidates": len(self.candidates),
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"Rappor({args})"

    def with_candidates(self, candidates: Sequence[str]) -> Rappor:
        """The same mechanism decoding against ``candidates`` (distinct strings)."""
        if len(set(candidates)) != len(candidates) or not candidates:
            raise ValueError("candidates must be a non-empty sequence of distinct strings")
        return Rappor(**self.params, candidates=candidates)

    @property
    def truth_labels(self) -> tuple[str, ...]:
        """The candidate strings."""
        return self.candidates

    @property
    def n_truths(self) -> int:
        """Number of candidates."""
        return len(self.candidates)

    # -- client -----------------------------------------------------------------------
    def bloom_bits(self, cohort: int, value: str) -> list[int]:
        """Bloom bit positions (``h`` of them, maybe repeated) of ``value`` in ``cohort``."""
        digest = hashlib.sha256(_u32_be(cohort) + value.encode()).digest()
        return [
            int.from_bytes(digest[4 * j : 4 * j + 4], "big") % self.n_bloom_bits
            for j in range(self.h)
        ]

    def cohort_of(self, secret: bytes) -> int:
        """The cohort of the client with this secret."""
        word = int.from_bytes(hmac.digest(secret, b"cohort", "sha256")[:4], "big")
        return (word * self.n_cohorts) >> 32

    def prr_bytes(self, secret: bytes, value: str) -> bytes:
        """The ``k`` bytes that fix the permanent randomized response of ``value``."""
        blocks = -(-self.n_bloom_bits // 32)
        key = value.encode()
        stream = b"".join(hmac.digest(secret, key + _u32_be(i), "sha256") for i in range(blocks))
        return stream[: self.n_bloom_bits]

    def encode(
        self,
        values: Sequence[str],
        cohorts: ArrayLike,
        prr: NDArray[np.uint8] | bytes,
        irr: NDArray[np.uint8] | bytes,
    ) -> RapporReports:
        """Deterministic encoder.

        Parameters
        ----------
        values : sequence of str, length n
        cohorts : array_like of int, shape (n,), in ``0..n_cohorts-1``
        prr : uint8, ``n * k`` bytes: the permanent-RR byte of each Bloom bit
        irr : uint8, ``n * 4 k`` bytes: the IRR word (little-endian uint32) of each bit

        Returns
        -------
        RapporReports
        """
        n = len(values)
        coh = np.asarray(cohorts, dtype=np.int64).reshape(-1)
        if coh.size != n or (n and (coh.min() < 0 or coh.max() >= self.n_cohorts)):
            raise ValueError(f"cohorts must be n = {n} integers in 0..{self.n_cohorts - 1}")
        prr_b = np.frombuffer(bytes(prr), np.uint8) if isinstance(prr, bytes) else prr
        irr_b = np.frombuffer(bytes(irr), np.uint8) if isinstance(irr, bytes) else irr
        if prr_b.size != n * self.n_bloom_bits or irr_b.size != n * 4 * self.n_bloom_bits:
            raise ValueError(
                f"prr must hold n * n_bloom_bits = {n * self.n_bloom_bits} bytes and irr "
                f"4 times that, {n * 4 * self.n_bloom_bits}"
            )
        prr_b = prr_b.reshape(n, self.n_bloom_bits)
        words = np.ascontiguousarray(irr_b).reshape(n, 4 * self.n_bloom_bits).view("<u4")
        bloom = np.zeros((n, self.n_bloom_bits), dtype=bool)
        pairs: dict[tuple[int, str], list[int]] = {}
        for i, (c, v) in enumerate(zip(coh.tolist(), values, strict=True)):
            key = (c, v)
            if key not in pairs:
                pairs[key] = self.bloom_bits(c, v)
            bloom[i, pairs[key]] = True
        replace = (prr_b >> 1) < self.threshold_f
        coin = (prr_b & 1).astype(bool)
        permanent = np.where(replace, coin, bloom)
        thresholds = np.where(permanent, np.uint32(self.threshold_q), np.uint32(self.threshold_p))
        report = words < thresholds
        return RapporReports(coh.astype(np.uint32), np.packbits(report, axis=1, bitorder="little"))

    def randomize(
        self,
        values: Sequence[str] | ArrayLike,
        rng: RandomSource | np.random.Generator | None = None,
        *,
        secrets: Sequence[bytes] | None = None,
    ) -> RapporReports:
        """One report per value.

        Parameters
        ----------
        values : sequence of str, length n
            Strings (anything else raises TypeError, naming it).
        rng : numpy.random.Generator or RandomSource, optional
            Source of the IRR bytes; default the secure source (:class:`SecureRandom`).
            With a seeded generator and no ``secrets`` (simulation), the cohorts and
            permanent coins are drawn from it too, as for clients reporting once.
        secrets : sequence of bytes, optional
            Each client's secret (>= 16 bytes): cohorts and permanent coins are derived
            from it by HMAC, so a client always reports the same ``B'`` for a value.
            Drawn from ``os.urandom`` when neither ``secrets`` nor a seeded ``rng`` is given.

        Raises
        ------
        ValueError, TypeError
            For values that are not strings, or secrets that are too short.
        """
        values = values if isinstance(values, list) else np.asarray(values, dtype=object).tolist()
        if not all(isinstance(v, str) for v in values):
            raise TypeError("values must be strings")
        n = len(values)
        simulate = secrets is None and rng is not None
        if simulate:
            raw = np.frombuffer(random_bytes(rng, 4 * n + n * self.n_bloom_bits), np.uint8)
            cohorts = (raw[: 4 * n].view("<u4").astype(np.uint64) * np.uint64(self.n_cohorts)) >> 32
            prr = raw[4 * n :]
        else:
            if secrets is None:
                secret_bytes = bytes(random_bytes(None, 32 * n))
                secrets = [secret_bytes[32 * i : 32 * i + 32] for i in range(n)]
            if len(secrets) != n or any(len(s) < 16 for s in secrets):
                raise ValueError("secrets must give one secret of >= 16 bytes per value")
            cohorts = np.array([self.cohort_of(s) for s in secrets], dtype=np.int64)
            prr = np.frombuffer(
                b"".join(self.prr_bytes(s, v) for s, v in zip(secrets, values, strict=True)),
                np.uint8,
            )
        irr = np.frombuffer(random_bytes(rng, n * self.bytes_per_report), np.uint8)
        return self.encode(values, cohorts, prr, irr)

    # -- server -----------------------------------------------------------------------
    def report_columns(self, reports: RapporReports) -> dict[str, Any]:
        """``{"cohort": ..., "report": hex}``: the cohort and the packed bits in hexadecimal."""
        checked = self.check_reports(reports)
        return {"cohort": checked.cohort, "report": hex_strings(checked.bits)}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> RapporReports:
        """Reports from ``cohort`` and hexadecimal ``report`` columns, validated.

        Raises
        ------
        ReportValidationError
            For a missing column, a cohort outside ``0..m-1`` or malformed bits.
        """
        cohort = np.asarray(column(columns, "cohort"), dtype=np.int64)
        bits = hex_rows(column(columns, "report"), self.n_bytes)
        if cohort.size and (cohort.min() < 0 or cohort.max() >= TWO32):
            raise ReportValidationError(
                f"column 'cohort' must hold cohorts 0..{self.n_cohorts - 1}"
            )
        return self.check_reports(RapporReports(cohort.astype(np.uint32), bits))

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """``cohort``: int32; ``report``: ``ceil(k / 8)`` bytes of packed Bloom bits."""
        return (ReportField("cohort", "int"), ReportField("report", "bytes", self.n_bytes))

    def report_arrays(self, reports: RapporReports) -> dict[str, NDArray[Any]]:
        """``{"cohort": int32, "report": packed bits (n, ceil(k / 8))}``, validated."""
        checked = self.check_reports(reports)
        return {"cohort": np.asarray(checked.cohort, dtype=np.int32), "report": checked.bits}

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> RapporReports:
        """Reports from binary ``cohort`` and ``report`` columns, validated.

        Raises
        ------
        ReportValidationError
            For a missing column, a cohort outside ``0..m-1`` or malformed bits.
        """
        cohort = integer_array(arrays, "cohort")
        bits = packed_rows(arrays, "report", self.n_bytes)
        if cohort.size and (cohort.min() < 0 or cohort.max() >= self.n_cohorts):
            raise ReportValidationError(
                f"column 'cohort' must hold cohorts 0..{self.n_cohorts - 1}"
            )
        return self.check_reports(RapporReports(cohort.astype(np.uint32), bits))

    def check_reports(self, reports: Any) -> RapporReports:
        """Validate reports (types, shapes, cohort range, padding bits)."""
        if not isinstance(reports, RapporReports):
            raise ReportValidationError("RAPPOR reports must be a RapporReports(cohort, bits)")
        bits, coh = np.asarray(reports.bits), np.asarray(reports.cohort)
        if bits.dtype != np.uint8 or bits.ndim != 2 or bits.shape[1] != self.n_bytes:
            raise ReportValidationError(
                f"RAPPOR report bits must be uint8 of shape (n, {self.n_bytes}), "
                f"got {bits.dtype} {bits.shape}"
            )
        if coh.shape != (bits.shape[0],) or coh.dtype.kind not in "iu":
            raise ReportValidationError("RAPPOR cohorts must be an integer array of shape (n,)")
        if coh.size and (coh.min() < 0 or coh.max() >= self.n_cohorts):
            raise ReportValidationError(f"RAPPOR cohorts must lie in 0..{self.n_cohorts - 1}")
        pad = 8 * self.n_bytes - self.n_bloom_bits
        if pad and bits.size and np.any(bits[:, -1] >> np.uint8(8 - pad)):
            raise ReportValidationError("RAPPOR report padding bits must be 0")
        return reports

    def tally(self, reports: RapporReports) -> RapporTally:
        """Bit counts per cohort."""
        reports = self.check_reports(reports)
        coh = reports.cohort.astype(np.int64)
        counts = np.zeros((self.n_cohorts, self.n_bloom_bits), dtype=np.int64)
        order = np.argsort(coh, kind="stable")
        bounds = np.searchsorted(coh[order], np.arange(self.n_cohorts + 1))
        for j in np.nonzero(np.diff(bounds))[0]:
            rows = order[bounds[j] : bounds[j + 1]]
            counts[j] = packed_bit_counts(reports.bits[rows], self.n_bloom_bits)
        return RapporTally(counts, np.bincount(coh, minlength=self.n_cohorts).astype(np.int64))

    def design_matrix(self, *, memory_limit: int = MEMORY_LIMIT) -> NDArray[np.float64]:
        """Bloom bits of every candidate in every cohort: 0/1 float64, shape
        (n_cohorts * n_bloom_bits, M); dense (see :meth:`sparse_design_matrix`).

        Raises
        ------
        MemoryLimitError
            (a ValueError) Before allocating more than ``memory_limit`` bytes (default
            2 GiB): ``8 n_cohorts n_bloom_bits M``.
        """
        if self._design is None:
            rows = self.n_cohorts * self.n_bloom_bits
            check_memory(
                f"the dense design matrix ({rows:,} x {len(self.candidates):,} float64)",
                8 * rows * len(self.candidates),
                memory_limit,
                "use sparse_design_matrix",
            )
            X = self.sparse_design_matrix(memory_limit=memory_limit)
            self._design = np.asarray(X.toarray(), dtype=np.float64)
        return self._design

    def sparse_design_matrix(self, *, memory_limit: int = MEMORY_LIMIT) -> Any:
        """:meth:`design_matrix` as a SciPy CSC matrix (at most ``h`` ones a column per
        cohort): ``n_cohorts * M`` digests, the bit positions computed at once; the
        decoder works on it, so memory grows with ``n_cohorts M h``, not with
        ``n_cohorts n_bloom_bits M``.

        Raises
        ------
        ValueError
            Without candidates.
        MemoryLimitError
            (a ValueError) Before building it, when its construction would take more
            than ``memory_limit`` bytes (default 2 GiB): about 48 bytes for each of the
            ``n_cohorts M h`` ones (digests, bit positions, indices, values).
        """
        if not self.candidates:
            raise ValueError("no candidates: use Rappor(..., candidates=[...]) or with_candidates")
        ones = self.n_cohorts * len(self.candidates) * self.h
        check_memory(
            f"the design matrix of {len(self.candidates):,} candidates in {self.n_cohorts} "
            f"cohorts ({ones:,} Bloom bits)",
            48 * ones,
            memory_limit,
            "use fewer candidates or cohorts",
        )
        from scipy import sparse

        encoded = [value.encode() for value in self.candidates]
        digests = b"".join(
            hashlib.sha256(_u32_be(j) + value).digest()[: 4 * self.h]
            for j in range(self.n_cohorts)
            for value in encoded
        )
        m = len(encoded)
        words = np.frombuffer(digests, dtype=">u4").reshape(self.n_cohorts, m, self.h)
        bits = (words % np.uint32(self.n_bloom_bits)).astype(np.int64)
        rows = (np.arange(self.n_cohorts)[:, None, None] * self.n_bloom_bits + bits).ravel()
        cols = np.broadcast_to(np.arange(m)[None, :, None], bits.shape).ravel()
        X = sparse.csc_matrix(
            (np.ones(rows.size), (rows, cols)), shape=(self.n_cohorts * self.n_bloom_bits, m)
        )
        X.data[:] = 1.0  # a bit two hashes share is set once
        return X

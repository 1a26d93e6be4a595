"""Heavy hitters over strings of any length (up to ``max_bytes`` of UTF-8), no candidates.

The prefix extending method (PEM; Wang, Li, Jha, Xiao, Ye et al. 2021, "Locally
differentially private heavy hitter identification") over the bytes of a value: its
UTF-8 bytes (NFC-normalised, at most ``max_bytes``, no NUL) padded with zero bytes to
``max_bytes``; level ``j`` (of ``L = max_bytes / step``) holds the prefixes of
``step (j + 1)`` bytes. Each respondent is assigned a level at random, independently of
the value, with probability proportional to ``level_decay^j`` (front-loaded: every value
must survive the pruning of each level up to the one where it ends, and most real values
are short; ``level_decay = 1`` is PEM's uniform assignment), and reports that level's
prefix through local hashing (Wang, Blocki, Li & Jha 2017) with a *binary linear* hash:

- The prefix ``s`` of level ``j`` is identified by ``id(s) = G_j(parent) XOR x`` (64
  bits), where ``parent`` is ``s`` without its last ``step`` bytes, ``G_j`` a fixed
  64-bit mixing hash of the parent (:func:`prefix_hashes`; the SplitMix64 finaliser,
  Steele, Lea & Flood 2014, over its 8-byte words: an identifier, not a secret) and
  ``x`` the last ``step`` bytes as a little-endian integer (the low ``8 step`` bits).
- The report is ``(level, A, y)`` with ``A`` ``r`` uniformly random 64-bit rows and
  ``y`` an ``r``-bit bucket: ``y = A id`` over GF(2) (bit ``k`` is the parity of
  ``A_k AND id``) with probability ``kappa``, otherwise ``r`` uniformly random bits.

Distinct identifiers collide under a random ``A`` with probability exactly ``2^-r =
1/g`` (pairwise independence), so local hashing's estimator and variance hold exactly
with ``p* = kappa + (1 - kappa) / g`` and ``q* = 1 / g``, and one report's epsilon is
exactly ``ln(p* / ((1 - kappa) / g)) = ln(1 + kappa g / (1 - kappa))`` (``kappa`` is the
rational ``T / 2^32`` the client draws against). ``g = 2^r`` (``r <= 8``) is the power of
two with the least variance: OLH's optimum ``e^eps + 1`` rounded, within 1.08x of OLH's
variance up to epsilon 6 (the worst, 1.077x, near 0.55); past 6.6 the cap of 256
buckets costs more (1.6x at 7, 3.4x at 8).

Because the hash is linear in ``x``, the analyst counts the support of *all*
``2^(8 step)`` extensions of a parent at once with one fast Walsh-Hadamard transform
(:mod:`deniable.estimation`): decoding costs ``O(n g + 8 step 2^(8 step))``
per parent instead of ``n`` hash tests per candidate, which is what makes 2-byte steps
(32 levels for 64 bytes, 65,536 extensions a parent) affordable.

Epsilon per user: one report a value, at :attr:`epsilon`. A device that reports the
same value again should send the same report (permanent randomized response, as
RAPPOR: :class:`MemoizedBytePrefixClient`); a device's lifetime epsilon is then
:attr:`epsilon` times the number of distinct values it ever reports.

Randomness per report: ``13 + 8 r`` bytes: the level word (little-endian uint32 ``w``;
the level is the number of :attr:`~BytePrefixExtension.level_bounds` at most ``w``), the
``r`` rows of ``A`` (little-endian uint64), the keep word
(uint32, kept when ``< T``) and one byte whose low ``r`` bits are the random bucket.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_integer
from ..errors import ReportValidationError
from ._columns import column, hex_rows, hex_strings, integer_array
from ._protocol import (
    BytePrefixChannel,
    ReportField,
    check_epsilon,
    spec_string,
    warn_large_epsilon,
)
from ._randomness import RandomSource, random_bytes

__all__ = [
    "MAX_VALUES",
    "BytePrefixExtension",
    "MemoizedBytePrefixClient",
    "prefix_hashes",
]

#: Largest number of values randomized per call.
MAX_VALUES = 1 << 26
_TWO32 = 1 << 32
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The SplitMix64 finaliser (Steele, Lea & Flood 2014), elementwise, mod 2^64."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def prefix_hashes(padded: NDArray[np.uint8], length: int) -> NDArray[np.uint64]:
    """``G``: the 64-bit hash of the first ``length`` bytes of each row, shape (n,).

    ``padded``: uint8, shape (n, max_bytes) with ``max_bytes`` a multiple of 8. Starting
    from ``h = mix(length * 0x9E3779B97F4A7C15)``, each 8-byte little-endian word ``w``
    of the prefix (the last one zero-filled past ``length``) gives ``h = mix(h XOR w)``.
    The browser encoder (``web/oracles.js``: ``prefixHash``) computes the same.
    """
    n = padded.shape[0]
    with np.errstate(over="ignore"):
        h = _mix(np.full(n, np.uint64(length) * _GOLDEN, dtype=np.uint64))
        words = (length + 7) // 8
        if words:
            part = np.zeros((n, 8 * words), dtype=np.uint8)
            part[:, :length] = padded[:, :length]
            as_words = part.view("<u8")
            for w in range(words):
                h = _mix(h ^ as_words[:, w])
    return h


def _level_bounds(decay: float, levels: int) -> tuple[int, ...]:
    """``ceil(2^32 W_j / W)`` for ``W_j = sum_{i <= j} decay^i`` and ``W = W_{levels-1}``,
    in exact rational arithmetic (the float ``decay`` taken as the rational it is): a
    level word ``w`` (uniform on 0..2^32-1) falls at level ``j`` when ``bound_{j-1} <=
    w < bound_j``. With ``decay = 1`` this is PEM's ``floor(w levels / 2^32)``.

    Raises
    ------
    ValueError
        When a level would get no level word (``decay`` too small for ``levels``).
    """
    d, term, total, partial = Fraction(decay), Fraction(1), Fraction(0), []
    for _ in range(levels):
        total += term
        partial.append(total)
        term *= d
    bounds = tuple(-((-_TWO32 * w) // total) for w in partial)  # ceil, exactly
    empty = np.flatnonzero(np.diff((0, *bounds)) <= 0)
    if empty.size:
        raise ValueError(
            f"level_decay = {decay} leaves level {int(empty[0])} of {levels} with no "
            "reports: use a level_decay nearer 1"
        )
    return tuple(int(b) for b in bounds)


def _parity(x: NDArray[np.uint64]) -> NDArray[np.uint8]:
    return (np.bitwise_count(x) & np.uint8(1)).astype(np.uint8)


class BytePrefixExtension:
    """PEM over UTF-8 bytes with a binary linear local hash (see the module docstring).

    Parameters
    ----------
    epsilon : float in (0, 30]
        Epsilon of one report, in nats (the realised value is :attr:`epsilon`).
    max_bytes : int, default 64
        Longest value in UTF-8 bytes after NFC normalisation; a multiple of 8, at most 248.
    step : int, 1 or 2, default 2
        Bytes added per level (levels = ``max_bytes / step``).
    level_decay : float in [0.5, 1], default 0.95
        Level ``j`` is drawn with probability proportional to ``level_decay^j`` (exactly
        :attr:`level_probabilities`). The default puts 6.2% of the reports on the first
        level and 1.3% on the last of 32 (uniform: 3.1%): at n = 10^7, epsilon 1, a
        10-byte value is found (recall 0.9) from 1.60% instead of 2.11% with ``1``
        (uniform), a 32-byte one from 2.15% instead of 2.28%, a 64-byte one from 4.45%
        instead of 3.01% (:func:`~deniable.estimation.detection_limit` with
        ``length``). Epsilon does not depend on it: the level is drawn independently of
        the value, and decoding uses each level's own report count.

    Raises
    ------
    ValueError
        For an epsilon outside ``(0, 30]``, a ``max_bytes`` that is not a multiple of 8
        in 8..248, a ``step`` other than 1 or 2, or a ``level_decay`` outside [0.5, 1]
        or so small that a level would get no reports.

    Examples
    --------
    >>> bpem = BytePrefixExtension(2.0)
    >>> bpem.levels, bpem.g, round(float(bpem.level_probabilities[0]), 4)
    (32, 8, 0.062)
    """

    spec_name = "pem-bytes"

    def __init__(
        self, epsilon: float, max_bytes: int = 64, step: int = 2, level_decay: float = 0.95
    ) -> None:
        self._epsilon_requested = check_epsilon(epsilon)
        self.max_bytes = check_integer("max_bytes", max_bytes, minimum=8)
        if self.max_bytes % 8 or self.max_bytes > 248:
            raise ValueError(f"max_bytes must be a multiple of 8 in 8..248, got {max_bytes}")
        if step not in (1, 2):
            raise ValueError(f"step must be 1 or 2 (bytes a level), got {step!r}")
        self.step = int(step)
        self.levels = self.max_bytes // self.step
        self.level_decay = float(level_decay)
        if not 0.5 <= self.level_decay <= 1:  # also NaN
            raise ValueError(f"level_decay must be in [0.5, 1], got {level_decay!r}")
        self.level_bounds: tuple[int, ...] = _level_bounds(self.level_decay, self.levels)
        e = math.exp(self._epsilon_requested)

        def variance(r: int) -> float:
            g = 1 << r
            p, q = e / (e + g - 1), 1 / g
            return q * (1 - q) / (p - q) ** 2

        self.r: int = min(range(1, 9), key=variance)
        self.g: int = 1 << self.r
        kappa = (e - 1) / (e - 1 + self.g)
        self.threshold: int = min(_TWO32 - 1, max(1, round(kappa * _TWO32)))
        self.dtype = np.dtype([("level", "u1"), ("a", "<u8", (self.r,)), ("y", "u1")])
        warn_large_epsilon(self.epsilon, repr(self))

    @property
    def level_probabilities(self) -> NDArray[np.float64]:
        """Pr(a report is at level ``j``), shape (levels,), float64: the exact rationals
        ``(bound_j - bound_{j-1}) / 2^32`` of :attr:`level_bounds`."""
        return np.diff(np.array((0, *self.level_bounds), dtype=np.float64)) / _TWO32

    @property
    def keep_probability(self) -> float:
        """``kappa = T / 2^32``: the chance a report is the true bucket by construction."""
        return self.threshold / _TWO32

    @property
    def p_star(self) -> float:
        """``Pr(report supports the true prefix) = kappa + (1 - kappa) / g``."""
        kappa = self.keep_probability
        return kappa + (1 - kappa) / self.g

    @property
    def q_star(self) -> float:
        """``Pr(report supports another prefix) = 1 / g`` (exact for a linear hash)."""
        return 1.0 / self.g

    @property
    def epsilon(self) -> float:
        """Exact epsilon of one report, in nats: ``ln(1 + kappa g / (1 - kappa))``."""
        kappa = self.keep_probability
        return math.log1p(kappa * self.g / (1 - kappa))

    @property
    def bytes_per_report(self) -> int:
        """Random bytes one report consumes: ``13 + 8 r``."""
        return 13 + 8 * self.r

    @property
    def params(self) -> dict[str, Any]:
        """Constructor parameters (JSON-ready)."""
        return {
            "epsilon": self._epsilon_requested,
            "max_bytes": self.max_bytes,
            "step": self.step,
            "level_decay": self.level_decay,
        }

    @property
    def spec(self) -> str:
        """``"pem-bytes:epsilon=...,max_bytes=...,step=...,level_decay=..."``."""
        return spec_string(self.spec_name, self.params)

    def client_params(self) -> dict[str, Any]:
        """What the browser encoder (``web/oracles.js``: ``encodeBytePEM``) needs."""
        return {
            "max_bytes": self.max_bytes,
            "step": self.step,
            "levels": self.levels,
            "level_bounds": list(self.level_bounds),
            "r": self.r,
            "threshold": self.threshold,
        }

    def encode_values(self, values: ArrayLike) -> NDArray[np.uint8]:
        """Values as NFC UTF-8 bytes zero-padded to ``max_bytes``: uint8, (n, max_bytes).

        Raises
        ------
        ValueError
            For a value that is not a string, contains NUL, or takes more than
            ``max_bytes`` bytes of UTF-8 after NFC normalisation (named, with its size).
        """
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise ValueError(f"values must be 1-D, shape (n,), got shape {arr.shape}")
        if arr.size > MAX_VALUES:
            raise ValueError(f"values: at most {MAX_VALUES} per call, got {arr.size}")
        if arr.size and arr.dtype.kind not in "OU":
            raise ValueError(f"values must be strings, got dtype {arr.dtype}")
        if arr.dtype.kind == "O" and not all(isinstance(v, str) for v in arr.tolist()):
            raise ValueError("values must be strings")
        text = arr.astype(str) if arr.size else np.zeros(0, dtype="U1")
        # only values outside ASCII can change under NFC: normalise those one by one
        chars = np.strings.str_len(text)
        encoded = np.strings.encode(text, "utf-8")
        wide = np.flatnonzero(np.strings.str_len(encoded) != chars)
        if wide.size:
            text = text.astype(object)
            for i in wide.tolist():
                text[i] = unicodedata.normalize("NFC", text[i])
            encoded = np.strings.encode(text.astype(str), "utf-8")
        size = np.strings.str_len(encoded)
        if size.size and int(size.max()) > self.max_bytes:
            bad = int(np.argmax(size))
            raise ValueError(
                f"values must take at most max_bytes = {self.max_bytes} bytes of UTF-8 (NFC); "
                f"{str(text[bad])[:20]!r}... takes {int(size[bad])}"
            )
        out = np.zeros((arr.size, self.max_bytes), dtype=np.uint8)
        width = encoded.dtype.itemsize
        if arr.size and width:
            out[:, :width] = encoded.view(np.uint8).reshape(arr.size, width)
        inside = np.arange(self.max_bytes)[None, :] < size[:, None]
        if np.any((out == 0) & inside):
            raise ValueError("values must not contain NUL (U+0000)")
        return out

    def decode(self, padded: bytes) -> str | None:
        """The string of zero-padded bytes, or None when they are not UTF-8."""
        try:
            return padded.rstrip(b"\x00").decode("utf-8")
        except UnicodeDecodeError:
            return None

    def prefix_ids(self, padded: NDArray[np.uint8], level: int) -> NDArray[np.uint64]:
        """``id`` of each row's prefix of level ``level``, shape (n,), uint64."""
        start = self.step * level
        x = padded[:, start].astype(np.uint64)
        if self.step == 2:
            x |= padded[:, start + 1].astype(np.uint64) << np.uint64(8)
        return prefix_hashes(padded, start) ^ x

    def prefix_supports(self, reports: Any, value: str) -> NDArray[np.bool_]:
        """Whether each report supports ``value``'s prefix at the report's own level.

        A report supports a prefix when its bucket ``y`` is ``A id`` of the prefix: with
        probability :attr:`p_star` for the respondent's own value and :attr:`q_star` for
        another (exactly, the hash being linear over GF(2)).

        Parameters
        ----------
        reports : ndarray of :attr:`dtype`, shape (n,)
        value : str
            At most :attr:`max_bytes` bytes of UTF-8 after NFC, no NUL.

        Returns
        -------
        ndarray of bool, shape (n,)

        Raises
        ------
        ReportValidationError
            For malformed reports.
        ValueError
            For a value too long or with a NUL.

        Examples
        --------
        >>> bpem = BytePrefixExtension(2.0, max_bytes=8)
        >>> reports = bpem.randomize(["ab"] * 4000, np.random.default_rng(1))
        >>> own, other = (bpem.prefix_supports(reports, v).mean() for v in ("ab", "b"))
        >>> bool(own > other)
        True
        """
        arr = self.check_reports(reports)
        padded = self.encode_values([value])
        ids = np.array([self.prefix_ids(padded, j)[0] for j in range(self.levels)], np.uint64)
        buckets = self.buckets(arr["a"], ids[arr["level"].astype(np.int64)])
        return np.asarray(buckets == arr["y"], dtype=np.bool_)

    def buckets(self, a: NDArray[np.uint64], ids: NDArray[np.uint64]) -> NDArray[np.uint8]:
        """``A id`` over GF(2): bit ``k`` is the parity of ``a[:, k] & id``; (n,) uint8."""
        out = np.zeros(ids.shape[0], dtype=np.uint8)
        for k in range(self.r):
            out |= _parity(a[:, k] & ids) << np.uint8(k)
        return out

    def encode(
        self, values: ArrayLike, randomness: bytes | bytearray | memoryview
    ) -> NDArray[np.void]:
        """Reports from values and :attr:`bytes_per_report` random bytes each, shape (n,).

        Raises
        ------
        ValueError
            For bad values or randomness of the wrong length.
        """
        padded = self.encode_values(values)
        n, width = padded.shape[0], self.bytes_per_report
        raw = np.frombuffer(randomness, dtype=np.uint8)  # read only: no copy
        if raw.size != width * n:
            raise ValueError(f"randomness must be {width * n} bytes, got {raw.size}")
        rows = raw.reshape(n, width)
        level_word = rows[:, :4].copy().view("<u4")[:, 0].astype(np.int64)
        bounds = np.array(self.level_bounds, dtype=np.int64)
        level = np.searchsorted(bounds, level_word, side="right")
        a = rows[:, 4 : 4 + 8 * self.r].copy().view("<u8")
        keep = rows[:, 4 + 8 * self.r : 8 + 8 * self.r].copy().view("<u4")[:, 0] < self.threshold
        noise = rows[:, 8 + 8 * self.r] & np.uint8(self.g - 1)
        ids = np.zeros(n, dtype=np.uint64)
        for j in np.unique(level):
            mask = level == j
            ids[mask] = self.prefix_ids(padded[mask], int(j))
        out = np.empty(n, dtype=self.dtype)
        out["level"], out["a"] = level, a
        out["y"] = np.where(keep, self.buckets(a, ids), noise)
        return out

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.void]:
        """Reports for ``values`` (strings, shape (n,)); secure randomness by default."""
        items = np.asarray(values)
        chunk = 1 << 20
        parts = [
            self.encode(part, random_bytes(rng, self.bytes_per_report * part.size))
            for part in (items[i : i + chunk] for i in range(0, items.size, chunk))
        ]
        return np.concatenate(parts) if parts else np.empty(0, dtype=self.dtype)

    def check_reports(self, reports: Any) -> NDArray[np.void]:
        """Validate reports (fields, level and bucket ranges); return them.

        Raises
        ------
        ReportValidationError
            Naming the field and the allowed values.
        """
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype != self.dtype:
            raise ReportValidationError(
                f"byte-PEM reports need the dtype {self.dtype} (fields level, a, y), shape (n,)"
            )
        if arr.size and int(arr["level"].max()) >= self.levels:
            raise ReportValidationError(f"field 'level' must be in 0..{self.levels - 1}")
        if arr.size and int(arr["y"].max()) >= self.g:
            raise ReportValidationError(f"field 'y' must be a bucket 0..{self.g - 1}")
        return arr

    @property
    def channel(self) -> BytePrefixChannel:
        """Local hashing on each level's byte prefixes, with ``levels`` levels."""
        return BytePrefixChannel(self.p_star, self.q_star, self.levels)

    def tally(self, reports: Any) -> NDArray[np.void]:
        """The validated reports (the search decides level by level what to count)."""
        return self.check_reports(reports)

    def _search_shape(self) -> tuple[int, float, tuple[float, ...], float, float]:
        """``(levels, first level's candidates, extensions a survivor per level, p*, q*)``."""
        width = float(2 ** (8 * self.step))
        return self.levels, width, (width,) * self.levels, self.p_star, self.q_star

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """``level`` and ``y`` (integers) and ``a`` (``8 r`` bytes a report)."""
        return (
            ReportField("level", "int"),
            ReportField("a", "bytes", 8 * self.r),
            ReportField("y", "int"),
        )

    def report_arrays(self, reports: Any) -> dict[str, NDArray[Any]]:
        """The reports as binary columns (see :attr:`report_fields`), validated."""
        arr = self.check_reports(reports)
        return {
            "level": arr["level"].astype(np.int32),
            "a": np.ascontiguousarray(arr["a"]).view(np.uint8).reshape(arr.size, 8 * self.r),
            "y": arr["y"].astype(np.int32),
        }

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> NDArray[np.void]:
        """Reports from binary columns, validated (inverse of :meth:`report_arrays`).

        Raises
        ------
        ReportValidationError
            For a missing column, columns of different lengths or values out of range.
        """
        level, y = integer_array(arrays, "level"), integer_array(arrays, "y")
        if "a" not in arrays:
            raise ReportValidationError("column 'a' is missing")
        a = np.asarray(arrays["a"], dtype=np.uint8)
        if a.ndim != 2 or a.shape[1] != 8 * self.r or not level.size == y.size == a.shape[0]:
            raise ReportValidationError(
                f"column 'a' must hold {8 * self.r} bytes a report, as many as 'level' and 'y'"
            )
        if level.size and (level.min() < 0 or y.min() < 0 or level.max() > 255 or y.max() > 255):
            raise ReportValidationError("columns 'level' and 'y' must be in 0..255")
        out = np.empty(level.size, dtype=self.dtype)
        out["level"], out["y"] = level, y
        out["a"] = np.ascontiguousarray(a).view("<u8").reshape(level.size, self.r)
        return self.check_reports(out)

    def report_columns(self, reports: Any) -> dict[str, Any]:
        """``level``, ``y`` (integers) and ``a`` (the hash rows as hexadecimal strings)."""
        arrays = self.report_arrays(reports)
        return {"level": arrays["level"], "a": hex_strings(arrays["a"]), "y": arrays["y"]}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> NDArray[np.void]:
        """Reports from ``level``, ``a`` (hexadecimal) and ``y``, validated.

        Raises
        ------
        ReportValidationError
            For a missing column or a malformed value, naming the column.
        """
        try:
            level = np.array([int(x) for x in column(columns, "level")], dtype=np.int64)
            y = np.array([int(x) for x in column(columns, "y")], dtype=np.int64)
        except (OverflowError, ValueError):
            raise ReportValidationError("columns level and y must hold integers") from None
        a = hex_rows(list(column(columns, "a")), 8 * self.r)
        return self.reports_from_arrays({"level": level, "a": a, "y": y})

    def to_dict(self) -> dict[str, Any]:
        """``{"mechanism": "pem-bytes", "params": {...}, "epsilon": ...}``."""
        return {"mechanism": self.spec_name, "params": self.params, "epsilon": self.epsilon}

    def __repr__(self) -> str:
        return (
            f"BytePrefixExtension(epsilon={self._epsilon_requested!r}, "
            f"max_bytes={self.max_bytes}, step={self.step}, level_decay={self.level_decay!r})"
        )


class MemoizedBytePrefixClient:
    """A device's client that sends the same report whenever it reports the same value
    (permanent randomized response, as RAPPOR's; Erlingsson, Pihur & Korolova 2014).

    Averaging repeated reports of one value cannot cancel the noise: the device's
    lifetime epsilon is ``mechanism.epsilon`` times the number of distinct values it
    reports (:attr:`lifetime_epsilon`). The memo is keyed by an HMAC-SHA-256 of the
    value under a random per-device key (``secrets``), so the table alone does not
    list the values in the clear; whoever holds the key and the table can test guesses.

    Parameters
    ----------
    mechanism : BytePrefixExtension
    key : bytes, optional
        The device's 32-byte memo key (default: fresh from ``secrets``).

    Examples
    --------
    >>> import os
    >>> from deniable.mechanisms import BytePrefixExtension, MemoizedBytePrefixClient
    >>> client = MemoizedBytePrefixClient(BytePrefixExtension(2.0, max_bytes=8), key=os.urandom(32))
    >>> bool((client.report("tea") == client.report("tea")).all())
    True
    """

    def __init__(self, mechanism: BytePrefixExtension, key: bytes | None = None) -> None:
        self.mechanism = mechanism
        self.key = secrets.token_bytes(32) if key is None else bytes(key)
        self._memo: dict[bytes, NDArray[np.void]] = {}

    def _slot(self, value: str) -> bytes:
        raw = unicodedata.normalize("NFC", value).encode("utf-8")
        return hmac.new(self.key, raw, hashlib.sha256).digest()

    def report(
        self, value: str, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.void]:
        """The report of ``value``: drawn once, then the same every time (shape (1,))."""
        slot = self._slot(value)
        if slot not in self._memo:
            self._memo[slot] = self.mechanism.randomize([value], rng)
        return self._memo[slot].copy()

    @property
    def distinct_values(self) -> int:
        """Distinct values reported so far."""
        return len(self._memo)

    @property
    def lifetime_epsilon(self) -> float:
        """``epsilon x distinct values``: what this device has revealed, in nats."""
        return self.mechanism.epsilon * self.distinct_values

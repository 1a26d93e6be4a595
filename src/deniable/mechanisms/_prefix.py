"""Heavy hitters without a candidate list: the prefix extending method (PEM).

Wang, Li, Jha, Xiao, Ye & ... (2021), "Locally differentially private heavy hitter
identification" (IEEE TDSC; first as Wang, Li & Jha 2018): values are strings over a
published alphabet, at most ``max_length`` symbols long. Each respondent is assigned
to one of several *levels* (uniformly at random, independently of the value) and
reports the prefix of its value of that level's length through optimal local hashing
(Wang, Blocki, Li & Jha 2017). The analyst estimates the frequency of every prefix of
the first level's length, keeps the prefixes that may be frequent, extends each by the
next symbols, and so on down to whole values
(:func:`deniable.estimation.find_heavy_hitters`).

A value is encoded as the base-``B`` integer of its symbol codes, ``B = len(alphabet) +
1`` (code 0 pads a short value), and its prefix of length ``l`` is that integer divided
by ``B^(max_length - l)``. Every report is one OLH report at exact epsilon ``eps``: the
level is chosen without looking at the value, so the report's epsilon is OLH's.

Randomness: 28 bytes per report: the level word (little-endian uint32, level
``floor(w L / 2^32)``), then OLH's 24 bytes (:class:`LocalHashing`). The browser client
(``web/oracles.js``: ``encodePEM``) consumes the same bytes the same way.
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_integer
from ..errors import ReportValidationError
from ._columns import column, integer_array
from ._local_hashing import _OLH_RANDOM, LocalHashing
from ._protocol import PrefixChannel, ReportField, check_epsilon, spec_string, warn_large_epsilon
from ._randomness import RandomSource, random_bytes

__all__ = [
    "DEFAULT_ALPHABET",
    "MAX_VALUES",
    "PEM_DTYPE",
    "PrefixExtension",
]

#: Lower-case letters, digits and ``-_.``.
DEFAULT_ALPHABET = string.ascii_lowercase + string.digits + "-_."
#: One report: the level, OLH's hash seed ``(a, b)`` and bucket ``y``.
PEM_DTYPE = np.dtype([("level", "<u1"), ("a", "<u8"), ("b", "<u8"), ("y", "<u4")])
#: Largest number of values randomized per call.
MAX_VALUES = 1 << 28
_TWO32 = 1 << 32


def _default_lengths(base: int, max_length: int) -> tuple[int, ...]:
    """Level lengths: the first has at most 2^16 prefixes, each step at most 2^12 extensions."""
    first = max(1, min(max_length, int(math.log(1 << 16) // math.log(base))))
    step = max(1, int(math.log(1 << 12) // math.log(base)))
    lengths = [first]
    while lengths[-1] < max_length:
        lengths.append(min(max_length, lengths[-1] + step))
    return tuple(lengths)


class PrefixExtension:
    """The prefix extending method (PEM) for heavy hitters over strings.

    Parameters
    ----------
    epsilon : float in (0, 30]
        Exact epsilon of one report, in nats.
    max_length : int, default 5
        Longest value, in symbols (>= 1); ``(len(alphabet) + 1) ** max_length`` must be
        below 2^32 (local hashing's domain).
    alphabet : str, default ``DEFAULT_ALPHABET``
        The symbols values may use (distinct characters, 1..255 of them).
    lengths : sequence of int, optional
        Prefix length of each level, increasing, ending at ``max_length`` (at most 16
        levels). Default: :func:`_default_lengths`.

    Raises
    ------
    ValueError
        For an epsilon outside ``(0, 30]``, a repeated symbol, a domain of 2^32 values or
        more, or lengths that do not increase to ``max_length``.

    Examples
    --------
    >>> pem = PrefixExtension(4.0, max_length=5, alphabet="abcdefghijklmnopqrstuvwxyz")
    >>> pem.lengths, pem.base
    ((3, 5), 27)
    """

    spec_name = "pem"

    def __init__(
        self,
        epsilon: float,
        max_length: int = 5,
        alphabet: str = DEFAULT_ALPHABET,
        lengths: tuple[int, ...] | list[int] | None = None,
    ) -> None:
        self._epsilon_requested = check_epsilon(epsilon)
        self.max_length = check_integer("max_length", max_length, minimum=1)
        if not isinstance(alphabet, str) or not 1 <= len(alphabet) <= 255:
            raise ValueError("alphabet must be a string of 1..255 distinct characters")
        if len(set(alphabet)) != len(alphabet):
            raise ValueError(f"alphabet must not repeat a character, got {alphabet!r}")
        self.alphabet = alphabet
        self.base = len(alphabet) + 1
        if self.base**self.max_length >= _TWO32:
            longest = int(math.log(_TWO32 - 1) // math.log(self.base))
            raise ValueError(
                f"max_length must be at most {longest} for an alphabet of {len(alphabet)} "
                f"symbols (the domain must stay below 2^32)"
            )
        chosen = tuple(lengths) if lengths is not None else _default_lengths(self.base, max_length)
        if (
            not chosen
            or len(chosen) > 16
            or any(not isinstance(x, int) or x < 1 for x in chosen)
            or any(b <= a for a, b in itertools.pairwise(chosen))
            or chosen[-1] != self.max_length
        ):
            raise ValueError(
                f"lengths must increase from >= 1 to max_length = {self.max_length} "
                f"(at most 16 levels), got {list(chosen)}"
            )
        self.lengths = chosen
        self.oracles = tuple(LocalHashing(self.base**length, epsilon) for length in chosen)
        self._codes = np.zeros(0x110000 if max(map(ord, alphabet)) >= 256 else 256, np.int64)
        self._codes[:] = -1
        self._codes[[ord(c) for c in alphabet]] = np.arange(1, self.base)
        self._codes[0] = 0  # numpy pads short strings with NUL
        warn_large_epsilon(self.epsilon, repr(self))

    @property
    def epsilon(self) -> float:
        """Exact epsilon of one report (local hashing's), in nats."""
        return self.oracles[0].epsilon

    @property
    def levels(self) -> int:
        """Number of levels."""
        return len(self.lengths)

    @property
    def bytes_per_report(self) -> int:
        """Random bytes one report consumes: 4 (level) + 24 (local hashing)."""
        return 28

    @property
    def level_probabilities(self) -> NDArray[np.float64]:
        """Pr(a report is at level ``j``), shape (levels,), float64: the 32-bit words
        ``w`` with ``floor(w levels / 2^32) = j``, over ``2^32`` (exactly uniform when
        ``levels`` divides ``2^32``)."""
        starts = [-(-j * _TWO32 // self.levels) for j in range(self.levels + 1)]
        return np.diff(np.array(starts, dtype=np.float64)) / _TWO32

    def prefix_supports(self, reports: Any, value: str) -> NDArray[np.bool_]:
        """Whether each report supports ``value``'s prefix at the report's own level.

        A report supports a prefix when its bucket ``y`` is the prefix's hash under the
        report's ``(a, b)``: with probability ``p*`` for the respondent's own value and
        ``q*`` for another (:attr:`channel`; Wang et al. 2017's support sets).

        Parameters
        ----------
        reports : ndarray of PEM_DTYPE, shape (n,)
        value : str
            Over :attr:`alphabet`, at most :attr:`max_length` symbols.

        Returns
        -------
        ndarray of bool, shape (n,)

        Raises
        ------
        ReportValidationError
            For malformed reports.
        ValueError
            For a value outside the alphabet or too long.

        Examples
        --------
        >>> pem = PrefixExtension(2.0, max_length=3, alphabet="abc")
        >>> reports = pem.randomize(["ab"] * 4000, np.random.default_rng(1))
        >>> own, other = (pem.prefix_supports(reports, v).mean() for v in ("ab", "c"))
        >>> bool(own > other)
        True
        """
        arr = self.check_reports(reports)
        (code,) = self.encode_values([value])
        divisors = np.array([self.base ** (self.max_length - x) for x in self.lengths], np.uint64)
        prefix = (code // divisors[arr["level"].astype(np.int64)]).astype(np.int64)
        buckets = self.oracles[0].hash_buckets(arr["a"], arr["b"], prefix)
        return np.asarray(buckets == arr["y"].astype(np.int64), dtype=np.bool_)

    @property
    def params(self) -> dict[str, Any]:
        """Constructor parameters (JSON-ready)."""
        return {
            "epsilon": self._epsilon_requested,
            "max_length": self.max_length,
            "alphabet": self.alphabet,
            "lengths": list(self.lengths),
        }

    @property
    def spec(self) -> str:
        """``"pem:epsilon=...,max_length=..."`` (alphabet and lengths in :attr:`params`)."""
        return spec_string(self.spec_name, self.params)

    def client_params(self) -> dict[str, Any]:
        """What the browser encoder (``web/oracles.js``: ``encodePEM``) needs."""
        olh = self.oracles[0]
        return {
            "alphabet": self.alphabet,
            "max_length": self.max_length,
            "lengths": list(self.lengths),
            "g": olh.g,
            "threshold_p": olh.threshold_p,
        }

    def encode_values(self, values: ArrayLike) -> NDArray[np.uint64]:
        """Values (strings) as base-``B`` integers, shape (n,), uint64.

        Raises
        ------
        ValueError
            For a value longer than ``max_length`` or with a symbol outside the alphabet.
        """
        arr = np.asarray(values, dtype=str)
        if arr.ndim != 1:
            raise ValueError(f"values must be 1-D, shape (n,), got shape {arr.shape}")
        if arr.size > MAX_VALUES:
            raise ValueError(f"values: at most {MAX_VALUES} per call, got {arr.size}")
        if arr.size == 0:
            return np.zeros(0, np.uint64)
        width = arr.dtype.itemsize // 4
        if width > self.max_length:
            longest = int(np.char.str_len(arr).max())
            if longest > self.max_length:
                raise ValueError(f"values must have at most {self.max_length} symbols")
        points = np.zeros((arr.size, self.max_length), np.uint32)
        raw = arr.view(np.uint32).reshape(arr.size, width)[:, : self.max_length]
        points[:, : raw.shape[1]] = raw
        if points.max() >= self._codes.size:
            raise ValueError(f"values must use only the symbols {self.alphabet!r}")
        symbols = self._codes[points]
        if symbols.min() < 0:
            bad = chr(int(points[symbols < 0][0]))
            raise ValueError(f"values must use only the symbols {self.alphabet!r}; got {bad!r}")
        weights = self.base ** np.arange(self.max_length - 1, -1, -1, dtype=np.int64)
        return (symbols @ weights).astype(np.uint64)

    def decode(self, code: int, length: int | None = None) -> str:
        """The string of a base-``B`` code of ``length`` symbols (default ``max_length``)."""
        length = self.max_length if length is None else length
        out = []
        for power in range(length - 1, -1, -1):
            digit = (code // self.base**power) % self.base
            if digit == 0:
                break
            out.append(self.alphabet[digit - 1])
        return "".join(out)

    def prefixes(self, codes: NDArray[np.uint64], level: int) -> NDArray[np.uint64]:
        """Prefix codes of level ``level`` (its length's leading symbols), shape (n,)."""
        return codes // np.uint64(self.base ** (self.max_length - self.lengths[level]))

    def encode(
        self, values: ArrayLike, randomness: bytes | bytearray | memoryview
    ) -> NDArray[np.void]:
        """Reports from values and 28 random bytes each (deterministic), shape (n,).

        Raises
        ------
        ValueError
            For bad values or ``len(randomness) != 28 n``.
        """
        from ._kernels import olh_encode

        codes = self.encode_values(values)
        raw = np.frombuffer(randomness, dtype=np.uint8)  # read only: no copy
        if raw.size != 28 * codes.size:
            raise ValueError(f"randomness must be {28 * codes.size} bytes, got {raw.size}")
        rows = raw.reshape(codes.size, 28)
        level_word = rows[:, :4].copy().view("<u4")[:, 0].astype(np.uint64)
        level = ((level_word * np.uint64(self.levels)) >> np.uint64(32)).astype(np.int64)
        fields = rows[:, 4:].copy().reshape(-1).view(_OLH_RANDOM)
        divisors = np.array([self.base ** (self.max_length - x) for x in self.lengths], np.uint64)
        prefix = (codes // divisors[level]).astype(np.int64)
        olh = self.oracles[0]
        y = olh_encode(
            prefix,
            fields["a"],
            fields["b"],
            fields["keep"],
            fields["other"],
            olh.g,
            olh.threshold_p,
        )
        out = np.empty(codes.size, dtype=PEM_DTYPE)
        out["level"], out["a"], out["b"], out["y"] = level, fields["a"], fields["b"], y
        return out

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.void]:
        """Reports for ``values`` (strings, shape (n,)); secure randomness by default."""
        arr = np.asarray(values, dtype=str)
        if arr.ndim != 1:
            raise ValueError(f"values must be 1-D, shape (n,), got shape {arr.shape}")
        out = np.empty(0, dtype=PEM_DTYPE)
        chunk = 1 << 22
        parts = []
        for start in range(0, arr.size, chunk):
            part = arr[start : start + chunk]
            parts.append(self.encode(part, random_bytes(rng, 28 * part.size)))
        return np.concatenate(parts) if parts else out

    def check_reports(self, reports: Any) -> NDArray[np.void]:
        """Validate reports (dtype, level and bucket ranges); return them.

        Raises
        ------
        ReportValidationError
            Naming the field and the allowed values.
        """
        arr = np.asarray(reports)
        if (
            arr.ndim != 1
            or arr.dtype.names is None
            or set(PEM_DTYPE.names or ()) - set(arr.dtype.names)
        ):
            raise ReportValidationError("PEM reports need fields level, a, b, y, shape (n,)")
        if arr.size and int(arr["level"].max()) >= self.levels:
            raise ReportValidationError(f"field 'level' must be in 0..{self.levels - 1}")
        if arr.size and int(arr["y"].max()) >= self.oracles[0].g:
            raise ReportValidationError(f"field 'y' must be a bucket 0..{self.oracles[0].g - 1}")
        return arr.astype(PEM_DTYPE, copy=False)

    @property
    def channel(self) -> PrefixChannel:
        """Local hashing on each level's prefixes, with ``levels`` levels."""
        first = self.oracles[0]
        return PrefixChannel(first.p_star, first.q_star, self.levels)

    def tally(self, reports: Any) -> NDArray[np.void]:
        """The validated reports: which candidates to count is decided level by level,
        so PEM's reports are their own sufficient statistic."""
        return self.check_reports(reports)

    def _search_shape(self) -> tuple[int, float, tuple[float, ...], float, float]:
        """``(levels, first level's candidates, extensions a survivor per level, p*, q*)``."""
        steps = zip(self.lengths, self.lengths[1:], strict=False)
        widths = (1.0, *(float(self.base ** (b - a)) for a, b in steps))
        olh = self.oracles[0]
        return self.levels, float(self.base ** self.lengths[0]), widths, olh.p_star, olh.q_star

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """``level``, ``a``, ``b`` (the seed's bits as int64) and ``y``, integers."""
        return tuple(ReportField(name, "int") for name in ("level", "a", "b", "y"))

    def report_arrays(self, reports: Any) -> dict[str, NDArray[Any]]:
        """The reports as integer columns (see :attr:`report_fields`), validated."""
        arr = self.check_reports(reports)
        return {
            "level": arr["level"].astype(np.int32),
            "a": np.ascontiguousarray(arr["a"]).view(np.int64),
            "b": np.ascontiguousarray(arr["b"]).view(np.int64),
            "y": arr["y"].astype(np.int32),
        }

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> NDArray[np.void]:
        """Reports from binary columns, validated (inverse of :meth:`report_arrays`).

        Raises
        ------
        ReportValidationError
            For a missing column or a level or bucket out of range.
        """
        level, a, b, y = (integer_array(arrays, name) for name in ("level", "a", "b", "y"))
        if not level.size == a.size == b.size == y.size:
            raise ReportValidationError("columns level, a, b and y must have the same length")
        if level.size and (level.min() < 0 or y.min() < 0):
            raise ReportValidationError("columns 'level' and 'y' must not be negative")
        out = np.empty(level.size, dtype=PEM_DTYPE)
        out["level"] = np.minimum(level.astype(np.int64), 255)
        out["a"] = a.view(np.uint64) if a.dtype == np.int64 else a
        out["b"] = b.view(np.uint64) if b.dtype == np.int64 else b
        out["y"] = np.minimum(y.astype(np.int64), 2**32 - 1)
        return self.check_reports(out)

    def report_columns(self, reports: Any) -> dict[str, Any]:
        """``level``, ``y``; ``a`` and ``b``, the 64-bit seed, as decimal strings."""
        arr = self.check_reports(reports)
        return {
            "level": arr["level"],
            "a": arr["a"].astype(str),
            "b": arr["b"].astype(str),
            "y": arr["y"],
        }

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> NDArray[np.void]:
        """Reports from ``level``, ``a``, ``b`` (decimal strings) and ``y``, validated."""
        try:
            arrays = {
                name: np.array([int(x) for x in column(columns, name)], dtype=kind)
                for name, kind in (
                    ("level", np.int64),
                    ("a", np.uint64),
                    ("b", np.uint64),
                    ("y", np.int64),
                )
            }
        except (OverflowError, ValueError):
            raise ReportValidationError("columns level, a, b and y must hold integers") from None
        return self.reports_from_arrays(arrays)

    def to_dict(self) -> dict[str, Any]:
        """``{"mechanism": "pem", "params": {...}, "epsilon": ...}``."""
        return {"mechanism": self.spec_name, "params": self.params, "epsilon": self.epsilon}

    def __repr__(self) -> str:
        return (
            f"PrefixExtension(epsilon={self._epsilon_requested!r}, "
            f"max_length={self.max_length}, lengths={self.lengths})"
        )

"""Numeric values under local differential privacy: means and bucket histograms.

Each respondent holds a number ``v`` in a published range ``[low, high]``; the mechanism
turns it into one report whose (debiased) value is an unbiased estimate of ``v``, so the
average of the reports is an unbiased estimate of the population mean
(:func:`deniable.estimation.estimate_mean`).

=====================  ==============================================================
class                  report and source
=====================  ==============================================================
:class:`DuchiMean`     one bit: ``+-C`` (Duchi, Jordan & Wainwright 2018, one-dimensional)
:class:`Piecewise`     a number in ``[-C, C]`` (Wang et al. 2019, piecewise mechanism)
:class:`HybridMean`    piecewise with probability ``alpha``, else Duchi (Wang et al. 2019)
:class:`OneBitMean`    one bit, with alpha-point rounding and memoization for repeated
                       collection (Ding, Kulkarni & Yekhanin 2017, Microsoft telemetry)
``DBitFlip``           ``d`` of ``k`` bucket bits: a histogram (Ding et al. 2017;
                       :mod:`deniable.mechanisms`)
=====================  ==============================================================

Every mechanism has an exact epsilon (nats; the largest ratio of report densities over
any two inputs, attained), a vectorised ``randomize(values, rng=None)`` that draws from
the secure source by default, ``debias(reports)`` (each report's unbiased value, in the
units of ``v``), ``report_variance(values)`` (the exact ``Var[debiased report | v]``,
for planning and for tests) and ``report_bounds`` (the range of debiased reports, for
Hoeffding intervals). Values are mapped to ``x = 2 (v - low) / (high - low) - 1`` in
``[-1, 1]`` for Duchi, piecewise and hybrid, and to ``(v - low) / (high - low)`` in
``[0, 1]`` for 1BitMean.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_integer, check_real
from ..errors import ReportValidationError
from ..tallies import MeanTally
from ._columns import column, integer_array
from ._protocol import MeanChannel, ReportField, check_epsilon, spec_string, warn_large_epsilon
from ._randomness import RandomSource, uniforms

__all__ = [
    "MAX_VALUES",
    "DuchiMean",
    "HybridMean",
    "NumericMechanism",
    "OneBitMean",
    "OneBitMemo",
    "Piecewise",
]

#: Largest number of values randomized per call (bounds memory before allocation).
MAX_VALUES = 1 << 30


class NumericMechanism:
    """Base of the mean mechanisms: a range, an epsilon, and unbiased reports.

    Parameters
    ----------
    epsilon : float in (0, 30]
        Privacy loss of one report, in nats.
    low, high : float
        The published range of the values, ``low < high`` (finite).

    Raises
    ------
    ValueError
        If ``epsilon`` is outside ``(0, 30]`` or ``low >= high`` or either is not finite.
    """

    spec_name = ""

    def __init__(self, epsilon: float, low: float = -1.0, high: float = 1.0) -> None:
        self._epsilon = check_epsilon(epsilon)
        self.low = check_real("low", low)
        self.high = check_real("high", high)
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ValueError(f"low and high must be finite with low < high, got {low}, {high}")
        warn_large_epsilon(self._epsilon, repr(self))

    @property
    def epsilon(self) -> float:
        """Exact epsilon of one report, in nats."""
        return self._epsilon

    @property
    def params(self) -> dict[str, Any]:
        """Constructor parameters (JSON-ready)."""
        return {"epsilon": self._epsilon, "low": self.low, "high": self.high}

    @property
    def spec(self) -> str:
        """``"name:param=value,..."``, accepted by ``mechanism_from_spec``."""
        return spec_string(self.spec_name, self.params)

    def to_dict(self) -> dict[str, Any]:
        """``{"mechanism": name, "params": {...}, "epsilon": ...}``."""
        return {"mechanism": self.spec_name, "params": self.params, "epsilon": self.epsilon}

    #: The reports' binary form: ``float`` reports, or ``int`` for one bit per value.
    _report_kind: Literal["int", "float"] = "float"

    @property
    def channel(self) -> MeanChannel:
        """Debiased reports are unbiased for each value in ``[low, high]``."""
        return MeanChannel(self.low, self.high)

    def tally(self, reports: ArrayLike) -> MeanTally:
        """Count, sum and sum of squares of the debiased reports (validated).

        Raises
        ------
        ReportValidationError
            For malformed reports.
        """
        return MeanTally.from_values(self.debias(reports))

    def check_reports(self, reports: ArrayLike) -> NDArray[Any]:
        """Validate reports (bits, or floats inside the reports' range); return them.

        Raises
        ------
        ReportValidationError
            For malformed reports.
        """
        self.debias(reports)
        if self._report_kind == "int":
            return np.asarray(reports).astype(np.uint8)
        return np.asarray(reports, dtype=np.float64)

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """``report``: a bit (int) or a float per value."""
        return (ReportField("report", self._report_kind),)

    def report_columns(self, reports: ArrayLike) -> dict[str, Any]:
        """``{"report": reports}``, validated."""
        return {"report": self.check_reports(reports)}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> NDArray[Any]:
        """Reports from a ``report`` column, validated (inverse of ``report_columns``)."""
        kind = np.int64 if self._report_kind == "int" else np.float64
        try:
            values = np.asarray(column(columns, "report"), dtype=kind)
        except (TypeError, ValueError):
            raise ReportValidationError(f"column 'report' must hold {self._report_kind}s") from None
        return self.check_reports(values)

    def report_arrays(self, reports: ArrayLike) -> dict[str, NDArray[Any]]:
        """``{"report": reports}`` (uint8 bits or float64), validated."""
        return {"report": self.check_reports(reports)}

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> NDArray[Any]:
        """Reports from a binary ``report`` column, validated."""
        if self._report_kind == "int":
            return self.check_reports(integer_array(arrays, "report"))
        return self.check_reports(np.asarray(column(arrays, "report")))

    @property
    def _half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def _scaled(self, values: ArrayLike) -> NDArray[np.float64]:
        """Values mapped to ``[-1, 1]``, validated (finite, inside ``[low, high]``)."""
        v = np.asarray(values)
        if v.ndim != 1:
            raise ValueError(f"values must be 1-D, shape (n,), got shape {v.shape}")
        if v.size > MAX_VALUES:
            raise ValueError(f"values: at most {MAX_VALUES} per call, got {v.size}")
        if v.dtype.kind not in "iuf" or not np.all(np.isfinite(v)):
            raise ValueError("values must be finite real numbers")
        x = (v.astype(np.float64) - self.low) / self._half_width - 1.0
        if x.size and (x.min() < -1 - 1e-12 or x.max() > 1 + 1e-12):
            raise ValueError(f"values must lie in [low, high] = [{self.low}, {self.high}]")
        return np.clip(x, -1.0, 1.0)

    def _unscale(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.low + (y + 1.0) * self._half_width

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.float64] | NDArray[np.uint8]:  # pragma: no cover - abstract
        """Reports for ``values`` (float, shape (n,), inside ``[low, high]``): real
        numbers (float64) or, for the one-bit mechanisms, bits (uint8)."""
        raise NotImplementedError

    def debias(self, reports: ArrayLike) -> NDArray[np.float64]:  # pragma: no cover
        """Each report's unbiased value in the units of ``v``, shape (n,), float64."""
        raise NotImplementedError

    def report_variance(self, values: ArrayLike) -> NDArray[np.float64]:  # pragma: no cover
        """Exact ``Var[debias(report) | v]`` per value, shape (n,), float64."""
        raise NotImplementedError

    @property
    def report_bounds(self) -> tuple[float, float]:  # pragma: no cover - abstract
        """Smallest and largest debiased report (units of ``v``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self._epsilon!r}, low={self.low}, high={self.high})"


def _bits(reports: ArrayLike, field: str = "reports") -> NDArray[np.uint8]:
    r = np.asarray(reports)
    if r.ndim != 1 or r.dtype.kind not in "biu":
        raise ReportValidationError(f"{field} must be a 1-D array of bits 0/1, shape (n,)")
    if r.size and (r.min() < 0 or r.max() > 1):
        raise ReportValidationError(f"{field} must hold only 0 and 1")
    return r.astype(np.uint8, copy=False)


class DuchiMean(NumericMechanism):
    """Duchi, Jordan & Wainwright's (2018) one-dimensional mechanism: a one-bit report.

    With ``x`` in ``[-1, 1]`` and ``C = (e^eps + 1) / (e^eps - 1)``, the report is ``1``
    (meaning ``+C``) with probability ``1/2 + x (e^eps - 1) / (2 (e^eps + 1))`` and
    ``0`` (meaning ``-C``) otherwise; ``E[+-C | x] = x`` and
    ``Var = C^2 - x^2`` (times ``((high - low) / 2)^2`` in the units of ``v``). The
    ratio of report probabilities is at most ``e^eps``, attained at ``x = +-1``.

    Reports: uint8 bits, shape (n,).

    Examples
    --------
    >>> m = DuchiMean(1.0, low=0, high=10)
    >>> r = m.randomize(np.full(100_000, 7.0), np.random.default_rng(1))
    >>> round(float(m.debias(r).mean()), 1)
    7.0
    """

    spec_name = "duchi"
    _report_kind = "int"

    @property
    def c(self) -> float:
        """``C = (e^eps + 1) / (e^eps - 1)``, the magnitude of a report in ``[-1, 1]`` units."""
        return (math.exp(self.epsilon) + 1) / math.expm1(self.epsilon)

    def prob_one(self, values: ArrayLike) -> NDArray[np.float64]:
        """``Pr(report = 1 | v)`` per value, shape (n,)."""
        return 0.5 + self._scaled(values) / (2.0 * self.c)

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.uint8]:
        """One bit per value, shape (n,), uint8 (secure randomness unless ``rng`` is seeded)."""
        p = self.prob_one(values)
        return (uniforms(rng, p.size) < p).view(np.uint8)

    def debias(self, reports: ArrayLike) -> NDArray[np.float64]:
        """``+-C`` per bit, in the units of ``v``, shape (n,)."""
        b = _bits(reports)
        return self._unscale(np.where(b == 1, self.c, -self.c))

    def report_variance(self, values: ArrayLike) -> NDArray[np.float64]:
        """``(C^2 - x^2) ((high - low) / 2)^2`` per value."""
        x = self._scaled(values)
        return (self.c**2 - x**2) * self._half_width**2

    @property
    def report_bounds(self) -> tuple[float, float]:
        """``low + (1 -+ C) (high - low) / 2``."""
        return float(self._unscale(np.array(-self.c))), float(self._unscale(np.array(self.c)))


class Piecewise(NumericMechanism):
    """The piecewise mechanism of Wang, Xiao, Yang, Zhao, Hu & Lin (2019).

    With ``t = e^(eps/2)``, ``C = (t + 1) / (t - 1)``,
    ``l(x) = (C + 1) x / 2 - (C - 1) / 2`` and ``r(x) = l(x) + C - 1``: the report is
    uniform on ``[l(x), r(x)]`` with probability ``t / (t + 1)`` and uniform on
    ``[-C, l(x)) U (r(x), C]`` otherwise. Its density is ``e^eps`` times higher on the
    centre piece than outside it, for every ``x`` (exact epsilon). ``E[y | x] = x`` and
    ``Var[y | x] = x^2 / (t - 1) + (t + 3) / (3 (t - 1)^2)`` (Wang et al. 2019, Lemma 1).

    Reports: float64 in ``[-C, C]``, shape (n,) (``[-1, 1]`` units; ``debias`` maps
    them to the units of ``v``).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Piecewise
    >>> reports = Piecewise(1.0).randomize(np.full(20_000, 0.3), np.random.default_rng(0))
    >>> round(float(reports.mean()), 1)
    0.3
    """

    spec_name = "piecewise"

    @property
    def c(self) -> float:
        """``C = (e^(eps/2) + 1) / (e^(eps/2) - 1)``."""
        t = math.exp(self.epsilon / 2)
        return (t + 1) / (t - 1)

    def pdf(self, y: ArrayLike, x: float) -> NDArray[np.float64]:
        """Density of report ``y`` given ``x`` in ``[-1, 1]`` (scaled units), shape of ``y``."""
        t, c = math.exp(self.epsilon / 2), self.c
        left = (c + 1) / 2 * x - (c - 1) / 2
        high = t / (t + 1) / (c - 1)
        y = np.asarray(y, dtype=np.float64)
        inside = (y >= left) & (y <= left + c - 1)
        out = np.where(inside, high, high / math.exp(self.epsilon))
        return np.where(np.abs(y) <= c, out, 0.0)

    @property
    def p_centre(self) -> float:
        """Probability of the centre piece, ``e^(eps/2) / (e^(eps/2) + 1)``."""
        t = math.exp(self.epsilon / 2)
        return t / (t + 1)

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.float64]:
        """One report in ``[-C, C]`` per value, shape (n,), float64 (one uniform each)."""
        from ._kernels import piecewise_draw

        x = self._scaled(values)
        return piecewise_draw(x, uniforms(rng, x.size), self.c, self.p_centre)

    def debias(self, reports: ArrayLike) -> NDArray[np.float64]:
        """Reports mapped to the units of ``v`` (they are already unbiased)."""
        y = np.asarray(reports, dtype=np.float64)
        c = self.c
        if y.ndim != 1 or not np.all(np.isfinite(y)) or (y.size and np.abs(y).max() > c):
            raise ReportValidationError(f"reports must be 1-D floats in [-{c:.6g}, {c:.6g}]")
        return self._unscale(y)

    def report_variance(self, values: ArrayLike) -> NDArray[np.float64]:
        """``(x^2 / (t - 1) + (t + 3) / (3 (t - 1)^2)) ((high - low) / 2)^2``."""
        x = self._scaled(values)
        t = math.exp(self.epsilon / 2)
        return (x**2 / (t - 1) + (t + 3) / (3 * (t - 1) ** 2)) * self._half_width**2

    @property
    def report_bounds(self) -> tuple[float, float]:
        """``low + (1 -+ C) (high - low) / 2``."""
        return float(self._unscale(np.array(-self.c))), float(self._unscale(np.array(self.c)))


class HybridMean(NumericMechanism):
    """The hybrid mechanism (Wang et al. 2019): piecewise with probability ``a``
    (:attr:`piecewise_probability`, the paper's ``alpha``).

    ``a = 1 - e^(-eps/2)`` for ``eps > 0.61`` and 0 below (Duchi's mechanism is then
    better everywhere), which minimises the worst-case variance (Wang et al. 2019,
    Lemma 4). Both parts are unbiased with epsilon ``eps``, so the mixture is too; its
    variance is ``a Var_PM + (1 - a) Var_Duchi``. A report is a float: ``+-C``
    of Duchi's mechanism or a piecewise report (the two never coincide with
    probability > 0).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import estimate
    >>> from deniable.mechanisms import HybridMean
    >>> hybrid = HybridMean(1.0)
    >>> result = estimate(hybrid, hybrid.randomize(np.full(20_000, 0.3), np.random.default_rng(0)))
    >>> bool(abs(result.estimate - 0.3) < 4 * result.std_error)
    True
    """

    spec_name = "hybrid"

    def __init__(self, epsilon: float, low: float = -1.0, high: float = 1.0) -> None:
        super().__init__(epsilon, low, high)
        self._pm = Piecewise(epsilon, low, high)
        self._duchi = DuchiMean(epsilon, low, high)

    @property
    def piecewise_probability(self) -> float:
        """Probability of the piecewise branch, in [0, 1)."""
        return 1 - math.exp(-self.epsilon / 2) if self.epsilon > 0.61 else 0.0

    @property
    def alpha(self) -> float:
        """Deprecated name of :attr:`piecewise_probability` (removed in 0.3)."""
        warnings.warn(
            "HybridMean.alpha is deprecated; use .piecewise_probability (removed in 0.3)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.piecewise_probability

    def randomize(
        self, values: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.float64]:
        """One float report per value, shape (n,), in ``[-1, 1]`` units (one uniform each)."""
        from ._kernels import piecewise_draw

        x = self._scaled(values)
        pm = self._pm
        return piecewise_draw(
            x, uniforms(rng, x.size), pm.c, pm.p_centre, self.piecewise_probability, self._duchi.c
        )

    def debias(self, reports: ArrayLike) -> NDArray[np.float64]:
        """Reports mapped to the units of ``v`` (already unbiased)."""
        return self._pm.debias(reports)

    def report_variance(self, values: ArrayLike) -> NDArray[np.float64]:
        """``a Var_PM(v) + (1 - a) Var_Duchi(v)``, ``a`` the piecewise probability."""
        a = self.piecewise_probability
        return a * self._pm.report_variance(values) + (1 - a) * self._duchi.report_variance(values)

    @property
    def report_bounds(self) -> tuple[float, float]:
        """The piecewise bounds (they contain Duchi's ``+-C``)."""
        return self._pm.report_bounds


@dataclass(frozen=True)
class OneBitMemo:
    """A client's permanent state for repeated 1BitMean collection (Ding et al. 2017).

    Attributes
    ----------
    offset : ndarray, shape (n,), float64 in [0, 1)
        Each client's rounding offset (the paper's ``alpha``), drawn once.
    bits : ndarray, shape (n, grid + 1), uint8
        Each client's memoized report for each grid point, drawn once.
    """

    offset: NDArray[np.float64]
    bits: NDArray[np.uint8]

    @property
    def alpha(self) -> NDArray[np.float64]:
        """Deprecated name of :attr:`offset` (removed in 0.3)."""
        warnings.warn(
            "OneBitMemo.alpha is deprecated; use .offset (removed in 0.3)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.offset


class OneBitMean(NumericMechanism):
    """Microsoft's 1BitMean (Ding, Kulkarni & Yekhanin 2017): one bit per report.

    With ``z = (v - low) / (high - low)`` in ``[0, 1]``, the report is 1 with probability
    ``1 / (e^eps + 1) + z (e^eps - 1) / (e^eps + 1)``; ``(b (e^eps + 1) - 1) / (e^eps - 1)``
    is unbiased for ``z``. Exact epsilon ``eps`` (attained at ``z = 0`` against 1).

    Repeated collection (Ding et al. 2017, section 3): :meth:`memoize` draws once per
    client an offset ``alpha`` and one report bit for each of ``grid + 1`` equally spaced
    points; ``randomize(values, memo=...)`` rounds ``v`` to the grid point above it when
    ``alpha`` is below ``v``'s fractional position (alpha-point rounding, unbiased over
    ``alpha``) and sends that point's memoized bit. A client whose value stays on one
    side of a grid point sends the same bit every time, so any number of reports reveal
    no more than one report: ``eps`` in all. A value that moves across grid points
    reveals which of the memoized bits it used (at most ``(grid + 1) eps`` over a
    lifetime).

    Parameters
    ----------
    epsilon, low, high
        As for :class:`NumericMechanism`.
    grid : int, default 1
        Number of rounding intervals for memoization (``grid + 1`` points, >= 1, <= 64).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import OneBitMean
    >>> one_bit = OneBitMean(1.0, low=0.0, high=10.0)
    >>> one_bit.randomize(np.array([1.0, 9.0]), np.random.default_rng(0))
    array([0, 1], dtype=uint8)
    """

    spec_name = "1bitmean"
    _report_kind = "int"

    def __init__(self, epsilon: float, low: float = 0.0, high: float = 1.0, grid: int = 1) -> None:
        self.grid = check_integer("grid", grid, minimum=1)
        if self.grid > 64:
            raise ValueError(f"grid must be in 1..64, got {grid}")
        super().__init__(epsilon, low, high)

    @property
    def params(self) -> dict[str, Any]:
        """Constructor parameters (JSON-ready)."""
        return {**super().params, "grid": self.grid}

    def _z(self, values: ArrayLike) -> NDArray[np.float64]:
        return (self._scaled(values) + 1.0) / 2.0

    def _p(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        e = math.exp(self.epsilon)
        return (1.0 + z * (e - 1.0)) / (e + 1.0)

    def prob_one(self, values: ArrayLike) -> NDArray[np.float64]:
        """``Pr(report = 1 | v)`` per value, shape (n,)."""
        return self._p(self._z(values))

    def memoize(self, n: int, rng: RandomSource | np.random.Generator | None = None) -> OneBitMemo:
        """Draw ``n`` clients' permanent states (secure randomness by default)."""
        n = check_integer("n", n, minimum=0)
        if n > MAX_VALUES // (self.grid + 2):
            raise ValueError(f"n: at most {MAX_VALUES // (self.grid + 2)} clients per call")
        u = uniforms(rng, n * (self.grid + 2)).reshape(n, self.grid + 2)
        points = np.linspace(0.0, 1.0, self.grid + 1)
        return OneBitMemo(offset=u[:, 0].copy(), bits=(u[:, 1:] < self._p(points)).view(np.uint8))

    def randomize(
        self,
        values: ArrayLike,
        rng: RandomSource | np.random.Generator | None = None,
        memo: OneBitMemo | None = None,
    ) -> NDArray[np.uint8]:
        """One bit per value, shape (n,), uint8; from ``memo`` (one row per value) if given."""
        z = self._z(values)
        if memo is None:
            return (uniforms(rng, z.size) < self._p(z)).view(np.uint8)
        if memo.bits.shape != (z.size, self.grid + 1) or memo.offset.shape != (z.size,):
            raise ValueError(
                f"memo must hold one client per value: bits shape ({z.size}, {self.grid + 1})"
            )
        position = z * self.grid
        below = np.minimum(np.floor(position), self.grid - 1)
        point = (below + (memo.offset < position - below)).astype(np.int64)
        return memo.bits[np.arange(z.size), point]

    def debias(self, reports: ArrayLike) -> NDArray[np.float64]:
        """``low + (high - low) (b (e^eps + 1) - 1) / (e^eps - 1)`` per bit."""
        b = _bits(reports)
        e = math.exp(self.epsilon)
        unbiased = (b.astype(np.float64) * (e + 1.0) - 1.0) / (e - 1.0)
        return np.asarray(self.low + (self.high - self.low) * unbiased, dtype=np.float64)

    def report_variance(self, values: ArrayLike) -> NDArray[np.float64]:
        """``(high - low)^2 (e^eps + 1)^2 p (1 - p) / (e^eps - 1)^2``."""
        p = self.prob_one(values)
        e = math.exp(self.epsilon)
        return (self.high - self.low) ** 2 * (e + 1) ** 2 / (e - 1) ** 2 * p * (1 - p)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, grid={self.grid})"

    @property
    def report_bounds(self) -> tuple[float, float]:
        """Debiased values of the bits 0 and 1."""
        lo, hi = self.debias(np.array([0, 1], dtype=np.uint8))
        return float(lo), float(hi)

"""Finite randomized-response designs: a known channel from truths to reports.

Every design is a column-stochastic misclassification (transition) matrix ``P`` of
shape ``(m, k)``, ``P[r, t] = Pr(report r | truth t)`` (Chaudhuri & Mukerjee 1988;
van den Hout & van der Heijden 2002). For binary designs code 0 = no, 1 = yes, for
truths and reports alike (crosswise: report 1 = "same", triangular: report 1 =
"triangle").

Privacy
-------
Neighbouring inputs are two possible true answers of one respondent. A design is
epsilon-locally differentially private when for every report ``r`` and truths ``t, t'``
``P[r, t] <= e^epsilon P[r, t']``, so::

    epsilon = max_r ln( max_t P[r, t] / min_t P[r, t] )      (in nats)

(Warner 1965; Kairouz, Oh & Viswanath 2016). :attr:`Design.epsilon` evaluates it
conservatively: the randomizer compares a uniform on the ``2^-53`` grid with the matrix
entries, so each realised probability may differ from ``P[r, t]`` by ``2^-53``; the
bound widens every entry by that much and rounds the logarithm upward, so epsilon is
never under-reported. Not covered: timing (the randomizers draw one uniform per
respondent whatever the truth, and do the same work), and answering the same
question twice (each report spends epsilon again; surveys memoize reports).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import as_codes, check_integer, check_probability, check_real
from ..errors import ReportValidationError
from ..tallies import Tally
from ._columns import column, integer_array
from ._protocol import (
    MatrixChannel,
    ReportField,
    spec_string,
    warn_large_epsilon,
)
from ._randomness import RandomSource, uniforms

if TYPE_CHECKING:
    from ._panel import TwoLayerDesign

__all__ = [
    "Design",
    "MatrixDesign",
    "ReportCodes",
    "binary_matrix",
    "is_design",
    "ldp_epsilon",
    "protected_epsilon",
]

#: A design's reports: codes ``0..m-1``, uint8 when ``m <= 256``, else int64.
ReportCodes = NDArray[np.uint8] | NDArray[np.int64]
#: Grid of the uniforms every source draws (53 random bits).
_GRID = 2.0**-53


def ldp_epsilon(matrix: NDArray[np.float64]) -> float:
    """Local-DP epsilon of a column-stochastic matrix, in nats, rounded upward.

    Parameters
    ----------
    matrix : ndarray, shape (m, k), float64
        ``Pr(report | truth)``.

    Returns
    -------
    float
        ``max_r ln((max_t P[r,t] + 2^-53) / (min_t P[r,t] - 2^-53))`` rounded up; ``inf``
        when a report has probability 0 under one truth and not under another. Reports
        impossible under every truth are ignored.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import ldp_epsilon
    >>> round(ldp_epsilon(np.array([[0.75, 0.25], [0.25, 0.75]])), 4)
    1.0986
    """
    hi = matrix.max(axis=1)
    lo = matrix.min(axis=1)
    used = hi > 0
    if np.any(lo[used] <= _GRID):
        return math.inf
    if not np.any(used):
        return 0.0
    ratio = (hi[used] + _GRID) / (lo[used] - _GRID)
    ratio = np.nextafter(ratio, np.inf)
    return float(np.nextafter(np.log(ratio), np.inf).max())


def protected_epsilon(matrix: NDArray[np.float64], sensitive: Sequence[int]) -> float:
    """Largest log likelihood ratio by which a report raises the odds of a *sensitive*
    true answer against any other answer, in nats, rounded upward.

    ``max over reports r, sensitive s, truths t != s of ln(P[r,s] / P[r,t])``. It equals
    :func:`ldp_epsilon` when every answer is sensitive; it is finite for one-sided
    designs such as the triangular model (Yu, Tian & Tang 2008), whose reports can prove
    only the non-sensitive answer, and infinite when some report can occur under a
    sensitive answer but not under another answer (that report proves it).

    Parameters
    ----------
    matrix : ndarray, shape (m, k), float64
        ``Pr(report | truth)``.
    sensitive : sequence of int
        Indices (0..k-1) of the sensitive true answers.

    Raises
    ------
    ValueError
        If ``sensitive`` is empty or holds an index outside ``0..k-1``.
    """
    k = matrix.shape[1]
    idx = sorted(set(int(s) for s in sensitive))
    if not idx or idx[0] < 0 or idx[-1] >= k:
        raise ValueError(f"sensitive must name 1..{k} true answers in 0..{k - 1}, got {idx}")
    worst = 0.0
    for s in idx:
        top = matrix[:, s]
        others = np.delete(matrix, s, axis=1)
        used = top > _GRID
        if not np.any(used):
            continue
        low = others[used].min(axis=1)
        if np.any(low <= _GRID):
            return math.inf
        ratio = np.nextafter((top[used] + _GRID) / (low - _GRID), np.inf)
        worst = max(worst, float(np.nextafter(np.log(ratio), np.inf).max()))
    return worst


class Design:
    """Base class of finite designs. Use a named subclass or :class:`MatrixDesign`.

    Attributes
    ----------
    matrix : ndarray, shape (m, k), float64, read-only
        Misclassification matrix, ``matrix[r, t] = Pr(report r | truth t)``; every column
        sums to 1 and the columns are linearly independent (the truths are identifiable).
    truth_labels, report_labels : tuple of str
        Names of the ``k`` truth categories and ``m`` report symbols.

    Examples
    --------
    >>> from deniable import Design, Warner
    >>> design = Warner(p=0.7)
    >>> isinstance(design, Design), design.n_truths, design.n_reports
    (True, 2, 2)
    """

    #: Registry name used by :func:`design_from_spec` and the command line.
    spec_name: ClassVar[str] = "matrix"
    #: Whether :attr:`epsilon` is stated between answers that differ by one (a count:
    #: :class:`~deniable.mechanisms.GeometricCount`), not between any two; the privacy
    #: auditor picks its neighbouring answers by it.
    adjacent_neighbours: ClassVar[bool] = False
    truth_labels: tuple[str, ...]
    report_labels: tuple[str, ...]

    def __init__(
        self,
        matrix: NDArray[np.float64],
        *,
        truth_labels: tuple[str, ...] | None = None,
        report_labels: tuple[str, ...] | None = None,
    ) -> None:
        m, k = matrix.shape
        self._matrix = matrix
        self._matrix.setflags(write=False)
        binary = (m, k) == (2, 2)
        self.truth_labels = truth_labels or (("no", "yes") if k == 2 else _numbered(k))
        self.report_labels = report_labels or (("no", "yes") if binary else _numbered(m))
        if len(self.truth_labels) != k or len(self.report_labels) != m:
            raise ValueError(
                f"truth_labels needs {k} names and report_labels {m} names, got "
                f"{len(self.truth_labels)} and {len(self.report_labels)}"
            )
        self._inverse: NDArray[np.float64] | None = None
        warn_large_epsilon(self.epsilon, repr(self))

    # -- the channel -------------------------------------------------------------
    @property
    def channel(self) -> MatrixChannel:
        """The misclassification matrix as a channel, with its arithmetic (and this
        design's left inverse)."""
        channel = MatrixChannel(self._matrix)
        channel.__dict__["inverse"] = self.inverse  # the design's cached P^+
        return channel

    def tally(self, reports: ArrayLike) -> Tally:
        """Count each report symbol: a :class:`~deniable.tallies.Tally` of shape (m,).

        Raises
        ------
        ReportValidationError
            For report codes outside ``0..m-1`` or a non-integer array.
        """
        return Tally.from_reports(reports, self.n_reports)

    def report_columns(self, reports: ArrayLike) -> dict[str, Any]:
        """The reports as table columns: ``{"report": codes}``, validated.

        Raises
        ------
        ReportValidationError
            For codes outside ``0..m-1`` or a non-integer array.
        """
        return {"report": self._report_codes(reports)}

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]]) -> NDArray[np.integer]:
        """Report codes from a ``report`` column, validated (inverse of ``report_columns``).

        Raises
        ------
        ReportValidationError
            For a missing column or codes outside ``0..m-1``.
        """
        return self._report_codes(np.asarray(column(columns, "report")))

    #: One binary column: ``report``, the report codes.
    report_fields = (ReportField("report", "int"),)

    def report_arrays(self, reports: ArrayLike) -> dict[str, NDArray[Any]]:
        """``{"report": int32 codes}``, validated (the binary column form)."""
        return {"report": self._report_codes(reports).astype(np.int32)}

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> NDArray[np.integer]:
        """Report codes from a binary ``report`` column, validated.

        Raises
        ------
        ReportValidationError
            For a missing column or codes outside ``0..m-1``.
        """
        return self._report_codes(integer_array(arrays, "report"))

    def _report_codes(self, reports: ArrayLike) -> NDArray[np.integer]:
        return as_codes("report", reports, self.n_reports, error=ReportValidationError)

    @property
    def yes_line(self) -> tuple[float, float]:
        """``(c, d)`` with ``Pr(report yes) = c + d pi`` for a binary design (``pi`` = yes).

        ``c = P[1, 0]`` and ``d = P[1, 1] - P[1, 0]`` (Warner 1965): the affine map that
        every binary estimator, test and power calculation inverts.

        Raises
        ------
        ValueError
            For a design that is not binary (two truths, two reports).
        """
        if not self.is_binary:
            raise ValueError(
                f"{self!r} is not binary: Pr(report yes) = c + d pi needs two truths and "
                "two reports"
            )
        P = self._matrix
        return float(P[1, 0]), float(P[1, 1] - P[1, 0])

    @property
    def matrix(self) -> NDArray[np.float64]:
        """Misclassification matrix, shape ``(m, k)``, ``Pr(report r | truth t)``."""
        return self._matrix

    @property
    def n_truths(self) -> int:
        """Number ``k`` of truth categories."""
        return int(self._matrix.shape[1])

    @property
    def n_reports(self) -> int:
        """Number ``m`` of report symbols."""
        return int(self._matrix.shape[0])

    @property
    def is_binary(self) -> bool:
        """True for a yes/no question answered with a yes/no report (``m = k = 2``)."""
        return self._matrix.shape == (2, 2)

    @property
    def inverse(self) -> NDArray[np.float64]:
        """Left inverse ``P^+`` of the matrix, shape ``(k, m)`` (Moore-Penrose pseudo-inverse)."""
        if self._inverse is None:
            inv: NDArray[np.float64] = np.linalg.pinv(self._matrix).astype(np.float64)
            inv.setflags(write=False)
            self._inverse = inv
        return inv if self._inverse is None else self._inverse

    def report_probabilities(self, prevalence: ArrayLike) -> NDArray[np.float64]:
        """Expected report shares ``P @ prevalence``, shape ``(m,)``.

        ``prevalence`` is a distribution over the ``k`` truths, shape ``(k,)``; for a
        binary design a scalar in [0, 1] is read as the prevalence of "yes".
        """
        return self._matrix @ self.as_prevalence(prevalence)

    def as_prevalence(self, prevalence: ArrayLike) -> NDArray[np.float64]:
        """A prevalence vector of shape (k,): a number in [0, 1] means ``Pr(yes)``.

        Raises
        ------
        ValueError
            For a vector of the wrong length, negative entries or a sum other than 1.
        """
        pi = np.asarray(prevalence, dtype=np.float64)
        if pi.ndim == 0 and self.n_truths == 2:
            p1 = check_probability("prevalence", float(pi))
            pi = np.array([1.0 - p1, p1])
        if pi.shape != (self.n_truths,):
            raise ValueError(f"prevalence must have shape ({self.n_truths},), got shape {pi.shape}")
        if np.any(pi < 0) or not math.isclose(float(pi.sum()), 1.0, abs_tol=1e-9):
            raise ValueError(f"prevalence must be a distribution (>= 0, sum 1), got {pi}")
        return pi

    # -- privacy -----------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """Local-DP epsilon in nats, derived from the matrix and rounded upward.

        ``inf`` for one-sided designs (:class:`Mangat`, :class:`Triangular`).
        """
        return ldp_epsilon(self._matrix)

    def is_epsilon_ldp(self, epsilon: float) -> bool:
        """True when every report's likelihood ratio is at most ``e^epsilon`` exactly.

        This checks the definition on the matrix entries (no rounding allowance), so
        ``ForcedResponse(p_yes=0.25, p_no=0.25).is_epsilon_ldp(log(3))`` holds and
        ``is_epsilon_ldp(log(2.999))`` does not.
        """
        eps = check_real("epsilon", epsilon) if math.isfinite(epsilon) else epsilon
        if eps == math.inf:
            return True
        hi = self._matrix.max(axis=1)
        lo = self._matrix.min(axis=1)
        return bool(np.all(hi <= math.exp(eps) * lo))

    @property
    def requires_opt_in(self) -> bool:
        """True when epsilon is infinite: a survey must opt in to use this design."""
        return math.isinf(self.epsilon)

    def likelihood_ratio_bound(self, truth: int) -> float:
        """Largest factor by which any report multiplies the odds of ``truth``.

        ``max_r P[r, truth] / min_{t != truth} P[r, t]`` over reports possible under
        ``truth``. For a one-sided design this is finite for the protected answer and
        infinite for the other.
        """
        t = check_integer("truth", truth, minimum=0)
        if t >= self.n_truths:
            raise ValueError(f"truth must be in 0..{self.n_truths - 1}, got {t}")
        own = self._matrix[:, t]
        others = np.delete(self._matrix, t, axis=1).min(axis=1)
        possible = own > 0
        with np.errstate(divide="ignore"):
            ratios = np.where(others[possible] > 0, own[possible] / others[possible], np.inf)
        return float(ratios.max())

    @property
    def two_layer(self) -> TwoLayerDesign | None:
        """The design itself if it is a panel's two layers
        (:class:`~deniable.mechanisms.TwoLayerDesign`), else ``None``."""
        return None

    # -- randomizer --------------------------------------------------------------
    def randomize(
        self,
        truths: ArrayLike,
        rng: RandomSource | np.random.Generator | None = None,
    ) -> ReportCodes:
        """Randomize true answers into reports, vectorised.

        Exactly one uniform is drawn per respondent, whatever the truth, and the same
        arithmetic is done for every respondent.

        Parameters
        ----------
        truths : array_like of int or bool, shape (n,)
            True answers, codes ``0..k-1`` (for binary designs False/0 = no, True/1 = yes).
        rng : numpy.random.Generator or RandomSource, optional
            Source of uniforms. The default (None) is
            :class:`~deniable.mechanisms.SecureRandom`
            (an AES-CTR keystream keyed from ``os.urandom``); pass a seeded Generator
            only to simulate.

        Returns
        -------
        ndarray, shape (n,), dtype uint8 (``m <= 256``) or int64
            Report codes ``0..m-1``.

        Raises
        ------
        TypeError
            If ``truths`` is not an integer or bool array.
        ValueError
            If ``truths`` is not 1-D or holds a code outside ``0..k-1``.
        """
        codes = as_codes("truths", truths, self.n_truths)
        u = uniforms(rng, codes.size)
        drawn = self._draw(codes, u)
        wide = self.n_reports > 256
        return np.asarray(drawn, np.int64) if wide else np.asarray(drawn, np.uint8)

    def _draw(self, truths: NDArray[np.integer], u: NDArray[np.float64]) -> NDArray[np.integer]:
        if self.n_reports == 2:  # one fused pass: report = u < Pr(report 1 | truth)
            from ._kernels import binary_draw  # numba loads on first use

            return binary_draw(truths, u, np.ascontiguousarray(self._matrix[1]))
        # Inverse-CDF with one searchsorted over all columns: column t's CDF is shifted
        # by t so that t + u falls inside column t's block.
        cdf = np.cumsum(self._matrix, axis=0)
        cdf[-1] = 1.0
        m = self.n_reports
        shifted = (cdf + np.arange(self.n_truths)).T.ravel()
        t = truths.astype(np.int64)
        idx = np.searchsorted(shifted, t + u, side="right") - t * m
        out: NDArray[np.integer] = np.minimum(idx, m - 1)
        return out.astype(np.uint8) if m <= 256 else out

    # -- description -------------------------------------------------------------
    @property
    def params(self) -> dict[str, Any]:
        """The published parameters the design was built from."""
        return {"matrix": self._matrix.tolist()}

    @property
    def spec(self) -> str:
        """``"name:param=value,..."`` (see :mod:`deniable.mechanisms`)."""
        return spec_string(self.spec_name, self.params)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: ``{"mechanism": name, "params": ..., "epsilon": ...}``."""
        eps = self.epsilon
        return {
            "mechanism": self.spec_name,
            "params": self.params,
            "epsilon": eps if math.isfinite(eps) else "inf",
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Design):
            return NotImplemented
        return self._matrix.shape == other._matrix.shape and bool(
            np.array_equal(self._matrix, other._matrix)
        )

    def __hash__(self) -> int:
        return hash((self._matrix.shape, self._matrix.tobytes()))


def _numbered(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(n))


def binary_matrix(p_yes_given_no: float, p_yes_given_yes: float) -> NDArray[np.float64]:
    """Matrix ``[[Pr(no|no), Pr(no|yes)], [Pr(yes|no), Pr(yes|yes)]]``."""
    return np.array(
        [[1.0 - p_yes_given_no, 1.0 - p_yes_given_yes], [p_yes_given_no, p_yes_given_yes]]
    )


def is_design(obj: object) -> TypeGuard[Design]:
    """True for a finite design (a misclassification matrix with its randomizer): the
    one check of a design's class, for callers that take a design or a mapping of them."""
    return isinstance(obj, Design)


class MatrixDesign(Design):
    """Any finite design given by its misclassification matrix.

    Parameters
    ----------
    matrix : array_like, shape (m, k), m >= k >= 2
        ``Pr(report r | truth t)``: non-negative, every column sums to 1 (within 1e-9),
        full column rank so that the truths are identifiable.
    truth_labels, report_labels : sequence of str, optional
        Names of the truths and reports.

    Raises
    ------
    ValueError
        If the matrix is not 2-D with ``m >= k >= 2``, has a negative or non-finite
        entry, a column not summing to 1, or is rank deficient.

    Examples
    --------
    >>> MatrixDesign([[0.75, 0.25], [0.25, 0.75]]).epsilon  # doctest: +ELLIPSIS
    1.09861228866811...
    """

    def __init__(
        self,
        matrix: ArrayLike,
        *,
        truth_labels: tuple[str, ...] | None = None,
        report_labels: tuple[str, ...] | None = None,
    ) -> None:
        P = np.array(matrix, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] < 2 or P.shape[0] < P.shape[1]:
            raise ValueError(
                f"matrix must have shape (m, k) with m >= k >= 2 (reports x truths), got {P.shape}"
            )
        if not np.all(np.isfinite(P)) or np.any(P < 0):
            raise ValueError("matrix entries must be finite probabilities in [0, 1]")
        sums = P.sum(axis=0)
        if not np.allclose(sums, 1.0, rtol=0, atol=1e-9):
            raise ValueError(f"matrix columns must each sum to 1 (column-stochastic), got {sums}")
        if np.linalg.matrix_rank(P) < P.shape[1]:
            raise ValueError("matrix must have full column rank: its truths are not identifiable")
        super().__init__(
            P / sums,
            truth_labels=tuple(truth_labels) if truth_labels else None,
            report_labels=tuple(report_labels) if report_labels else None,
        )

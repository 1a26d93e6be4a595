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
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ._validation import as_codes, check_integer, check_probability, check_real
from .errors import PrivacyWarning
from .randomness import RandomSource, uniforms

__all__ = [
    "Crosswise",
    "Design",
    "ForcedResponse",
    "KaryRR",
    "Kuk",
    "Mangat",
    "MatrixDesign",
    "Triangular",
    "UnrelatedQuestion",
    "Warner",
    "design_from_spec",
]

#: Grid of the uniforms every source draws (53 random bits).
_GRID = 2.0**-53
#: Epsilon (nats) above which a design warns that it protects respondents poorly.
LARGE_EPSILON = 5.0


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


class Design:
    """Base class of finite designs. Use a named subclass or :class:`MatrixDesign`.

    Attributes
    ----------
    matrix : ndarray, shape (m, k), float64, read-only
        Misclassification matrix, ``matrix[r, t] = Pr(report r | truth t)``; every column
        sums to 1 and the columns are linearly independent (the truths are identifiable).
    truth_labels, report_labels : tuple of str
        Names of the ``k`` truth categories and ``m`` report symbols.
    """

    #: Registry name used by :func:`design_from_spec` and the command line.
    spec_name: ClassVar[str] = "matrix"
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
        eps = self.epsilon
        if math.isfinite(eps) and eps > LARGE_EPSILON:
            warnings.warn(
                f"{self!r} has epsilon = {eps:.3g} nats: a report reveals its truth with "
                f"odds up to {math.exp(eps):.3g}:1",
                PrivacyWarning,
                stacklevel=3,
            )

    # -- the channel -------------------------------------------------------------
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
        return self._matrix @ self._as_prevalence(prevalence)

    def _as_prevalence(self, prevalence: ArrayLike) -> NDArray[np.float64]:
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

    # -- randomizer --------------------------------------------------------------
    def randomize(
        self,
        truths: ArrayLike,
        rng: RandomSource | np.random.Generator | None = None,
    ) -> NDArray[np.integer]:
        """Randomize true answers into reports, vectorised.

        Exactly one uniform is drawn per respondent, whatever the truth, and the same
        arithmetic is done for every respondent.

        Parameters
        ----------
        truths : array_like of int or bool, shape (n,)
            True answers, codes ``0..k-1`` (for binary designs False/0 = no, True/1 = yes).
        rng : numpy.random.Generator or RandomSource, optional
            Source of uniforms. The default (None) is :class:`~deniable.randomness.SecureRandom`
            (``os.urandom``); pass a seeded Generator only to simulate.

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
        return self._draw(codes, u)

    def _draw(self, truths: NDArray[np.integer], u: NDArray[np.float64]) -> NDArray[np.integer]:
        if self.n_reports == 2:
            threshold = self._matrix[1]
            binary: NDArray[np.integer] = (u < threshold[truths]).view(np.uint8)
            return binary
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: name, parameters and epsilon."""
        eps = self.epsilon
        return {
            "design": self.spec_name,
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


def _binary(p_yes_given_no: float, p_yes_given_yes: float) -> NDArray[np.float64]:
    """Matrix ``[[Pr(no|no), Pr(no|yes)], [Pr(yes|no), Pr(yes|yes)]]``."""
    return np.array(
        [[1.0 - p_yes_given_no, 1.0 - p_yes_given_yes], [p_yes_given_no, p_yes_given_yes]]
    )


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


class ForcedResponse(Design):
    """Forced response (Boruch 1971): answer truthfully unless the device forces an answer.

    With probability ``p_yes`` the respondent must say yes, with ``p_no`` no, otherwise
    the truth. ``Pr(yes | yes) = 1 - p_no``, ``Pr(yes | no) = p_yes``. The seeds'
    two-coin device is ``ForcedResponse(p_yes=0.25, p_no=0.25)``; the Nigerian survey of
    Blair, Imai & Zhou (2015) is ``ForcedResponse(p_yes=1/6, p_no=1/6)``.

    Parameters
    ----------
    p_yes, p_no : float in [0, 1]
        Probabilities of a forced yes and a forced no, with ``p_yes + p_no < 1``.

    Privacy
    -------
    ``epsilon = ln(max((1 - p_no) / p_yes, (1 - p_yes) / p_no))``; ``ln 3`` for the
    two-coin device.

    Examples
    --------
    >>> ForcedResponse(p_yes=0.25, p_no=0.25).matrix.tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """

    spec_name = "forced-response"

    def __init__(self, *, p_yes: float, p_no: float) -> None:
        self.p_yes = check_probability("p_yes", p_yes)
        self.p_no = check_probability("p_no", p_no)
        if self.p_yes + self.p_no >= 1.0:
            raise ValueError(
                f"p_yes + p_no must be < 1 (some answers must be truthful), got "
                f"{self.p_yes} + {self.p_no}"
            )
        super().__init__(_binary(self.p_yes, 1.0 - self.p_no))

    @property
    def params(self) -> dict[str, Any]:
        return {"p_yes": self.p_yes, "p_no": self.p_no}


class Warner(Design):
    """Warner's design (Warner 1965): the device shows "I am in A" with probability ``p``.

    Otherwise it shows "I am not in A"; the respondent says whether the statement is
    true. ``Pr(yes | yes) = p``, ``Pr(yes | no) = 1 - p``.

    Parameters
    ----------
    p : float in [0, 1], p != 0.5
        Probability that the device shows the sensitive statement.

    Privacy
    -------
    ``epsilon = |ln(p / (1 - p))|``.
    """

    spec_name = "warner"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, not_equal=0.5)
        super().__init__(_binary(1.0 - self.p, self.p))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}


class UnrelatedQuestion(Design):
    """Unrelated-question design (Greenberg et al. 1969; Horvitz, Shah & Simmons 1967).

    With probability ``p`` the respondent answers the sensitive question, otherwise an
    innocuous one whose prevalence ``innocuous_prevalence`` is known:
    ``Pr(yes | yes) = p + (1 - p) pi_u``, ``Pr(yes | no) = (1 - p) pi_u``.

    Parameters
    ----------
    p : float in (0, 1]
        Probability of being asked the sensitive question.
    innocuous_prevalence : float in [0, 1]
        Known prevalence ``pi_u`` of "yes" to the innocuous question.

    Privacy
    -------
    ``epsilon = max(ln(Pr(yes|yes)/Pr(yes|no)), ln(Pr(no|no)/Pr(no|yes)))``; infinite when
    ``pi_u`` is 0 or 1 (one answer then reveals the truth).
    """

    spec_name = "unrelated-question"

    def __init__(self, *, p: float, innocuous_prevalence: float) -> None:
        self.p = check_probability("p", p, low_open=True)
        self.innocuous_prevalence = check_probability("innocuous_prevalence", innocuous_prevalence)
        base = (1.0 - self.p) * self.innocuous_prevalence
        super().__init__(_binary(base, self.p + base))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p, "innocuous_prevalence": self.innocuous_prevalence}


class Crosswise(Design):
    """Crosswise model (Yu, Tian & Tang 2008).

    The respondent says whether the answers to the sensitive question and to an
    innocuous one with known prevalence ``p`` are the same (report 1) or different
    (report 0): ``Pr(same | yes) = p``, ``Pr(same | no) = 1 - p``.

    Parameters
    ----------
    p : float in [0, 1], p != 0.5
        Known prevalence of "yes" to the innocuous question.
    """

    spec_name = "crosswise"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, not_equal=0.5)
        super().__init__(_binary(1.0 - self.p, self.p), report_labels=("different", "same"))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}


class Kuk(Design):
    """Kuk's card design (Kuk 1990).

    Carriers draw ``draws`` cards with replacement from a deck with red share
    ``p_carrier``, non-carriers from one with red share ``p_noncarrier``; the report is
    the number of red cards, ``0..draws``, so ``P[:, t]`` is a binomial pmf.

    Parameters
    ----------
    p_carrier, p_noncarrier : float in [0, 1], different
        Red-card shares of the two decks.
    draws : int >= 1, default 1
        Cards drawn.
    """

    spec_name = "kuk"

    def __init__(self, *, p_carrier: float, p_noncarrier: float, draws: int = 1) -> None:
        self.p_carrier = check_probability("p_carrier", p_carrier)
        self.p_noncarrier = check_probability("p_noncarrier", p_noncarrier)
        if self.p_carrier == self.p_noncarrier:
            raise ValueError("p_carrier and p_noncarrier must differ (else nothing is learnt)")
        self.draws = check_integer("draws", draws, minimum=1)
        reds = np.arange(self.draws + 1)
        P = np.column_stack(
            [
                stats.binom.pmf(reds, self.draws, self.p_noncarrier),
                stats.binom.pmf(reds, self.draws, self.p_carrier),
            ]
        )
        super().__init__(P / P.sum(axis=0), report_labels=tuple(f"{r} red" for r in reds))

    @property
    def params(self) -> dict[str, Any]:
        return {"p_carrier": self.p_carrier, "p_noncarrier": self.p_noncarrier, "draws": self.draws}

    @property
    def inverse(self) -> NDArray[np.float64]:
        """Kuk's (1990) left inverse: ``pi_yes = (mean red share - p_noncarrier) / (p_c - p_n)``.

        Shape (2, draws + 1). It is a left inverse of the matrix, so the moment
        estimator stays unbiased, and it equals the pseudo-inverse when ``draws = 1``.
        """
        share = np.arange(self.draws + 1) / self.draws
        yes = (share - self.p_noncarrier) / (self.p_carrier - self.p_noncarrier)
        return np.vstack([1.0 - yes, yes])


class _OneSided(Design):
    """A design protecting only the sensitive answer ("yes", truth code 1)."""

    #: Truth code whose disclosure the design limits.
    protected_truth: ClassVar[int] = 1

    @property
    def protected_likelihood_ratio(self) -> float:
        """Largest factor by which a report multiplies the odds of the protected answer."""
        return self.likelihood_ratio_bound(self.protected_truth)


class Mangat(_OneSided):
    """Mangat's one-sided design (Mangat 1994).

    Carriers always say yes; non-carriers use Warner's device showing "I am in A" with
    probability ``p``: ``Pr(yes | yes) = 1``, ``Pr(yes | no) = 1 - p``.

    Parameters
    ----------
    p : float in (0, 1)
        Warner-device probability for non-carriers.

    Privacy
    -------
    One-sided: a "no" report reveals a "no" truth, so ``epsilon = inf`` and a survey must
    opt in. A "yes" report multiplies the odds of "yes" by at most ``1 / (1 - p)``
    (:attr:`protected_likelihood_ratio`).
    """

    spec_name = "mangat"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, low_open=True, high_open=True)
        super().__init__(_binary(1.0 - self.p, 1.0))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}


class Triangular(_OneSided):
    """Triangular model (Yu, Tian & Tang 2008).

    A respondent ticks the circle (report 0) if the sensitive answer is "no" and the
    answer to an innocuous question with known prevalence ``p`` is "no", else the
    triangle (report 1): ``Pr(1 | yes) = 1``, ``Pr(1 | no) = p``.

    Parameters
    ----------
    p : float in (0, 1)
        Known prevalence of "yes" to the innocuous question.

    Privacy
    -------
    One-sided: a circle reveals a "no" truth, so ``epsilon = inf``. A triangle multiplies
    the odds of "yes" by at most ``1 / p``.
    """

    spec_name = "triangular"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, low_open=True, high_open=True)
        super().__init__(_binary(self.p, 1.0), report_labels=("circle", "triangle"))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}


class KaryRR(Design):
    """k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2016).

    Also called generalized randomized response or direct encoding: keep the true
    value with probability ``e^eps / (e^eps + k - 1)``, else report one of the other
    ``k - 1`` values uniformly at random.

    Parameters
    ----------
    k : int >= 2
        Number of categories (truths and reports).
    epsilon : float > 0
        Privacy parameter in nats.
    labels : tuple of str, optional
        Names of the k categories (default "0".."k-1").

    Use :meth:`from_keep_probability` to build it from the keep probability instead.

    Privacy
    -------
    ``epsilon`` exactly (the ratio of the diagonal to the off-diagonal entries).

    Examples
    --------
    >>> d = KaryRR(k=10, epsilon=math.log(3))
    >>> round(d.keep_probability, 6)
    0.25
    """

    spec_name = "kary-rr"

    def __init__(self, *, k: int, epsilon: float, labels: tuple[str, ...] | None = None) -> None:
        self.k = check_integer("k", k, minimum=2)
        eps = check_real("epsilon", epsilon)
        if eps <= 0:
            raise ValueError(f"epsilon must be > 0 nats, got {eps}")
        self._epsilon_param = eps
        e = math.exp(eps)
        self.keep_probability = e / (e + self.k - 1)
        self.other_probability = 1.0 / (e + self.k - 1)
        P = np.full((self.k, self.k), self.other_probability)
        np.fill_diagonal(P, self.keep_probability)
        names = tuple(labels) if labels is not None else None
        super().__init__(P, truth_labels=names, report_labels=names)

    @classmethod
    def from_keep_probability(cls, *, k: int, keep_probability: float) -> KaryRR:
        """Build from the probability of reporting the true value.

        ``keep_probability`` must lie in ``(1/k, 1)``; epsilon is
        ``ln(keep (k - 1) / (1 - keep))``.
        """
        k = check_integer("k", k, minimum=2)
        keep = check_probability("keep_probability", keep_probability, high_open=True)
        if keep <= 1.0 / k:
            raise ValueError(f"keep_probability must be in (1/k, 1) = ({1 / k:g}, 1), got {keep}")
        return cls(k=k, epsilon=math.log(keep * (k - 1) / (1.0 - keep)))

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "epsilon": self._epsilon_param}

    def _draw(self, truths: NDArray[np.integer], u: NDArray[np.float64]) -> NDArray[np.integer]:
        keep = self.keep_probability
        # u < keep: keep the truth; else (u - keep) / (1 - keep) is uniform on [0, 1)
        # and picks one of the k - 1 other values, shifted past the truth.
        j = np.floor((u - keep) / (1.0 - keep) * (self.k - 1)).astype(np.int64)
        np.clip(j, 0, self.k - 2, out=j)
        t = truths.astype(np.int64)
        other = j + (j >= t)
        out: NDArray[np.integer] = np.where(u < keep, t, other)
        return out.astype(np.uint8) if self.k <= 256 else out


#: Named designs for :func:`design_from_spec`, the command line and survey files.
DESIGNS: Mapping[str, Callable[..., Design]] = {
    cls.spec_name: cls
    for cls in (
        ForcedResponse,
        Warner,
        UnrelatedQuestion,
        Crosswise,
        Kuk,
        Mangat,
        Triangular,
        KaryRR,
    )
}


def design_from_spec(spec: str) -> Design:
    """Build a design from ``"name:param=value,param=value"``.

    Names: ``forced-response``, ``warner``, ``unrelated-question``, ``crosswise``, ``kuk``,
    ``mangat``, ``triangular``, ``kary-rr``. Values may be decimals or fractions
    (``p_yes=1/6``); parameter names use ``_`` or ``-``.

    Raises
    ------
    ValueError
        For an unknown design name, a malformed parameter, or an invalid value.

    Examples
    --------
    >>> design_from_spec("forced-response:p_yes=1/6,p_no=1/6")
    ForcedResponse(p_yes=0.16666666666666666, p_no=0.16666666666666666)
    """
    name, kwargs = parse_spec(spec)
    if name not in DESIGNS:
        raise ValueError(f"unknown design {name!r}; allowed: {', '.join(sorted(DESIGNS))}")
    try:
        return DESIGNS[name](**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad parameters for design {name!r}: {exc}") from None


def parse_spec(spec: str) -> tuple[str, dict[str, float | int]]:
    """Split ``"name:param=value,..."`` into the lower-case name and numeric parameters.

    Raises
    ------
    ValueError
        For a parameter that is not ``name=number``.
    """
    name, _, rest = spec.strip().partition(":")
    name = name.strip().lower().replace("_", "-")
    kwargs: dict[str, float | int] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"parameter {item!r} must look like name=value")
        kwargs[key.strip().replace("-", "_")] = _number(key.strip(), value.strip())
    return name, kwargs


def _number(key: str, text: str) -> float | int:
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            return float(num) / float(den)
        value = float(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"design parameter {key} must be a number, got {text!r}") from None
    return (
        int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
    )

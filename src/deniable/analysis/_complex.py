"""Randomized response under complex sampling: weights, strata, clusters.

Design-based estimation in two steps (Chaudhuri 2011, *Randomized Response and
Indirect Questioning Techniques in Surveys*; Arcos, Rueda & Singh 2015; the approach of
R's ``RRTCS``, Cobo, Rueda & Arcos 2021):

1. each reply ``z_i`` becomes a *revised value* ``r_i`` with ``E_R[r_i] = y_i`` given the
   true value ``y_i`` (the randomization is undone person by person), together with an
   estimate ``v_i`` of ``Var_R(r_i)``;
2. the revised values enter the Horvitz-Thompson estimator of the total
   ``t = sum r_i / pi_i`` (mean: ``t / N``, or the Hajek ``t / sum(1 / pi_i)`` when ``N``
   is unknown), whose variance is the sampling variance plus the randomization part.

Revision models (:class:`Revision`)
-----------------------------------
Binary designs ``Pr(z = 1 | y) = c + d y`` (any two-truth :class:`~deniable.mechanisms.Design`,
or :func:`linear_binary` for other published devices): ``r = (z - c) / d`` and
``v = r (r - 1)`` (unbiased for ``Var_R(r)`` since ``y^2 = y``). Kuk (1990) with ``k``
draws: ``r = (z / k - p2) / (p1 - p2)``. Christofides (2003): ``r = (z - mu) / (m + 1 - 2 mu)``.

Quantitative scrambling (the unified model of RRTCS): with probability ``p1`` the true
``y``, with ``p2`` the value ``y S1 + S2``, with ``p3`` a draw of ``S3``; ``S_j`` with
means ``mu_j`` and standard deviations ``sigma_j``. Then ``E[z | y] = a y + b`` with
``a = p1 + p2 mu1``, ``b = p2 mu2 + p3 mu3``, ``r = (z - b) / a`` and
``Var(z | y) = A y^2 + B y + C`` (``A, B, C`` in :func:`quantitative`), estimated by
plugging ``r`` in for ``y``: Eriksson (1973), Bar-Lev, Bobovich & Boukai (2004),
Eichhorn & Hayre (1983), Chaudhuri & Christofides (2013). Saha (2007) and Diana & Perri
(2010) are multiplicative-additive models used with simple random samples; their
variance is the textbook ``s_r^2 / n`` (``variance="srswr"`` / ``"srswor"``).

Variance estimators
-------------------
``deville``
    Deville's (1999) approximation for high-entropy unequal-probability designs
    (``sampling::varest`` in R, RRTCS's default), applied to ``r``, plus
    ``sum v_i / pi_i`` for the randomization.
``pij``
    The Horvitz-Thompson variance estimator with second-order inclusion probabilities
    (Taylor-linearised for the Hajek mean), plus the randomization part.
``ultimate_cluster``
    With-replacement variance of the stratum-wise cluster totals (Hansen, Hurwitz &
    Madow 1953; Wolter 2007, Section 1.4): ``sum_h n_h / (n_h - 1) sum_j (t_hj - mean_h)^2``;
    it already contains the randomization variance.
``jackknife``
    Delete-one-cluster jackknife within strata (JKn; Wolter 2007, Chapter 4).
``srswr`` / ``srswor``
    ``N^2 (1 - f) s_r^2 / n`` with ``f = 0`` / ``f = n / N`` (simple random samples).

Where RRTCS differs (read from its source): with second-order probabilities and no
``N`` it multiplies ``sampling::vartaylor_ratio``'s variance of the Hajek mean (already
a variance of a mean) by ``1 / N^2`` a second time, so its variance is far too small;
we do not repeat that, and our ``pij`` variance is the plain Taylor variance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._fitting import WaldResult
from .._validation import JSON, check_probability
from ..mechanisms import Design, is_design
from ._complex_variance import _point, _Sample, _variance

__all__ = [
    "VARIANCE_METHODS",
    "Revision",
    "SurveyEstimate",
    "bar_lev",
    "binary_revision",
    "chaudhuri_christofides",
    "christofides",
    "diana_perri_1",
    "diana_perri_2",
    "eichhorn_hayre",
    "eriksson",
    "kuk_revision",
    "linear_binary",
    "quantitative",
    "saha",
    "survey_estimate",
]

_Array = NDArray[np.float64]
VARIANCE_METHODS = (
    "deville",
    "pij",
    "ultimate_cluster",
    "jackknife",
    "escobar_berger",
    "campbell_berger_skinner",
    "srswr",
    "srswor",
)


@dataclass(frozen=True)
class Revision:
    """A revision model: replies ``z`` -> revised values ``r`` and their variances ``v``.

    Attributes
    ----------
    name : str
        The design's name (with its source).
    revise : callable
        ``z`` (ndarray (n,)) -> ``(r, v)``; ``v`` is None when the model has no
        per-person variance (use ``variance="srswr"`` or ``"srswor"``).
    params : dict

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.analysis._complex import linear_binary
    >>> revision = linear_binary(0.25, 0.5)
    >>> revision.revise(np.array([0.0, 1.0]))[0].tolist()
    [-0.5, 1.5]
    """

    name: str
    revise: Callable[[_Array], tuple[_Array, _Array | None]] = field(repr=False)
    params: dict[str, Any] = field(default_factory=dict)


def linear_binary(c: float, d: float, name: str = "binary") -> Revision:
    """Binary reply with ``Pr(z = 1 | y) = c + d y``: ``r = (z - c) / d``, ``v = r (r - 1)``.

    Raises
    ------
    ValueError
        If ``d == 0`` (the reply carries no information).
    """
    if d == 0:
        raise ValueError("d must be nonzero: Pr(z = 1) must depend on y")

    def revise(z: _Array) -> tuple[_Array, _Array | None]:
        if np.any((z != 0) & (z != 1)):
            raise ValueError(f"{name} replies z must be 0 or 1")
        r = (z - c) / d
        return r, r * (r - 1)

    return Revision(name, revise, {"c": c, "d": d})


def binary_revision(design: Design) -> Revision:
    """Revision for any two-truth, two-report :class:`~deniable.mechanisms.Design`."""
    if not design.is_binary:
        raise ValueError("binary_revision needs a design with two truths and two reports")
    return linear_binary(*design.yes_line, repr(design))


def kuk_revision(p_carrier: float, p_noncarrier: float, draws: int) -> Revision:
    """Kuk (1990): ``z`` red cards in ``k = draws`` draws.

    The deck of carriers has red share ``p1 = p_carrier``, that of non-carriers
    ``p2 = p_noncarrier`` (the names of :class:`~deniable.mechanisms.Kuk`):
    ``r = (z / k - p2) / (p1 - p2)``; ``v = b r + c`` with ``b = (1 - p1 - p2) / (k (p1 - p2))``,
    ``c = p2 (1 - p2) / (k (p1 - p2)^2)`` (unbiased for a binary ``y``).

    Raises
    ------
    ValueError
        For probabilities outside [0, 1], equal red shares or fewer than 1 draw.
    """
    p1 = check_probability("p_carrier", p_carrier)
    p2 = check_probability("p_noncarrier", p_noncarrier)
    k = draws
    if p1 == p2 or k < 1:
        raise ValueError("Kuk needs p_carrier != p_noncarrier and draws >= 1")
    b = (1 - p1 - p2) / (k * (p1 - p2))
    c = p2 * (1 - p2) / (k * (p1 - p2) ** 2)

    def revise(z: _Array) -> tuple[_Array, _Array | None]:
        if np.any((z < 0) | (z > k)):
            raise ValueError(f"Kuk replies must count red cards in 0..{k}")
        r = (z / k - p2) / (p1 - p2)
        return r, b * r + c

    return Revision("Kuk (1990)", revise, {"p_carrier": p1, "p_noncarrier": p2, "draws": k})


def christofides(cards: ArrayLike, probabilities: ArrayLike) -> Revision:
    """Christofides (2003): non-carriers report the card ``j``, carriers ``m + 1 - j``.

    ``r = (z - mu) / (m + 1 - 2 mu)``, ``v = sigma^2 / (m + 1 - 2 mu)^2`` with the card
    distribution's mean ``mu`` and variance ``sigma^2``.
    """
    mm = np.asarray(cards, dtype=np.float64)
    pm = np.asarray(probabilities, dtype=np.float64)
    if mm.shape != pm.shape or mm.size < 3 or not math.isclose(pm.sum(), 1.0):
        raise ValueError("cards and probabilities: same length >= 3, probabilities sum to 1")
    m = mm.size
    mu = float(mm @ pm)
    var = float(mm**2 @ pm - mu**2)
    den = m + 1 - 2 * mu

    def revise(z: _Array) -> tuple[_Array, _Array | None]:
        if np.any((z < 1) | (z > m)):
            raise ValueError(f"Christofides replies must be card numbers 1..{m}")
        return (z - mu) / den, np.full(z.shape, var / den**2)

    return Revision("Christofides (2003)", revise, {"cards": mm.tolist(), "p": pm.tolist()})


def quantitative(
    p1: float,
    p2: float,
    p3: float,
    mu: ArrayLike,
    sigma: ArrayLike,
    name: str = "quantitative",
    *,
    unbiased: bool = True,
) -> Revision:
    """Unified quantitative scrambling: ``y`` (``p1``), ``y S1 + S2`` (``p2``), ``S3`` (``p3``).

    Parameters
    ----------
    p1, p2, p3 : float in [0, 1], summing to 1
    mu, sigma : array_like, shape (3,)
        Means and standard deviations of ``S1, S2, S3``.
    name : str, default "quantitative"
        The revision's name in results.
    unbiased : bool, default True
        Which variance estimate to use (below).

    Notes
    -----
    The revision is ``r = (z - b) / a`` with ``a = p1 + p2 mu1`` and
    ``b = p2 mu2 + p3 mu3``; with
    ``A = p1(1 - p1) + p2 sigma1^2 + p2 mu1^2 (1 - p2) - 2 p1 p2 mu1``,
    ``B = 2 p2 mu1 mu2 (1 - p2) - 2 p1 p2 mu2 - 2 p1 p3 mu3 - 2 p2 p3 mu1 mu3``,
    ``C = p2 (sigma2^2 + mu2^2) + p3 (sigma3^2 + mu3^2) - (p2 mu2 + p3 mu3)^2``,
    ``unbiased=True`` (default): ``v = (A r^2 + B r + C) / (a^2 + A)``, unbiased for
    ``Var(r | y) = (A y^2 + B y + C) / a^2`` because ``E[r^2] = y^2 + Var(r | y)``.
    ``unbiased=False``: RRTCS's plug-in ``v = (A r^2 + B r + C) / a^2``, which overstates
    the randomization variance by ``A Var(r | y) / a^2`` on average (conservative).
    """
    ps = [check_probability(n, v) for n, v in (("p1", p1), ("p2", p2), ("p3", p3))]
    if not math.isclose(sum(ps), 1.0, abs_tol=1e-12):
        raise ValueError(f"p1 + p2 + p3 must be 1, got {sum(ps)}")
    m = np.asarray(mu, dtype=np.float64)
    s = np.asarray(sigma, dtype=np.float64)
    if m.shape != (3,) or s.shape != (3,) or np.any(s < 0):
        raise ValueError("mu and sigma must hold 3 values each (sigma >= 0)")
    q1, q2, q3 = ps
    a = q1 + q2 * m[0]
    if a == 0:
        raise ValueError("p1 + p2 mu1 must be nonzero")
    b = q2 * m[1] + q3 * m[2]
    A = q1 * (1 - q1) + s[0] ** 2 * q2 + m[0] ** 2 * q2 * (1 - q2) - 2 * q1 * q2 * m[0]
    B = (
        2 * q2 * m[0] * m[1] * (1 - q2)
        - 2 * q1 * q2 * m[1]
        - 2 * m[2] * q1 * q3
        - 2 * m[0] * m[2] * q2 * q3
    )
    C = (s[1] ** 2 + m[1] ** 2) * q2 + (s[2] ** 2 + m[2] ** 2) * q3 - b**2

    den = a**2 + A if unbiased else a**2

    def revise(z: _Array) -> tuple[_Array, _Array | None]:
        r = (z - b) / a
        return r, (A * r**2 + B * r + C) / den

    params = {"p": ps, "mu": m.tolist(), "sigma": s.tolist(), "unbiased": unbiased}
    return Revision(name, revise, params)


def eriksson(p: float, mu: float, sigma: float) -> Revision:
    """Eriksson (1973): the true value with probability ``p``, else a draw of ``S``."""
    return quantitative(p, 0.0, 1 - p, [0, 0, mu], [0, 0, sigma], "Eriksson (1973)")


def bar_lev(p: float, mu: float, sigma: float) -> Revision:
    """Bar-Lev, Bobovich & Boukai (2004): ``y`` with probability ``p``, else ``y S``."""
    return quantitative(p, 1 - p, 0.0, [mu, 0, 0], [sigma, 0, 0], "Bar-Lev et al. (2004)")


def eichhorn_hayre(mu: float, sigma: float) -> Revision:
    """Eichhorn & Hayre (1983): ``z = y S``."""
    return quantitative(0.0, 1.0, 0.0, [mu, 0, 0], [sigma, 0, 0], "Eichhorn & Hayre (1983)")


def chaudhuri_christofides(mu: ArrayLike, sigma: ArrayLike) -> Revision:
    """Chaudhuri & Christofides (2013): ``z = y S1 + S2``."""
    m, s = np.asarray(mu, float), np.asarray(sigma, float)
    if m.shape != (2,) or s.shape != (2,):
        raise ValueError("mu and sigma must hold 2 values (S1, S2)")
    return quantitative(
        0.0, 1.0, 0.0, [m[0], m[1], 0], [s[0], s[1], 0], "Chaudhuri & Christofides (2013)"
    )


def _affine_only(name: str, a: float, b: float, params: dict[str, Any]) -> Revision:
    def revise(z: _Array) -> tuple[_Array, _Array | None]:
        return (z - b) / a, None

    return Revision(name, revise, params)


def saha(mu: ArrayLike) -> Revision:
    """Saha (2007): ``z = W (y + U)``, ``mu = (E W, E U)``; use ``variance="srswr"``."""
    m = np.asarray(mu, float)
    return _affine_only("Saha (2007)", m[0], m[0] * m[1], {"mu": m.tolist()})


def diana_perri_1(p: float, mu: ArrayLike) -> Revision:
    """Diana & Perri (2010) model 1: ``y`` with probability ``p``, else ``W (y + U)``."""
    p = check_probability("p", p)
    m = np.asarray(mu, float)
    return _affine_only(
        "Diana & Perri (2010), model 1",
        p + (1 - p) * m[0],
        (1 - p) * m[0] * m[1],
        {"p": p, "mu": m.tolist()},
    )


def diana_perri_2(mu: ArrayLike, beta: float) -> Revision:
    """Diana & Perri (2010) model 2: ``z = W (beta U + (1 - beta) y)``."""
    beta = check_probability("beta", beta, high_open=True)
    m = np.asarray(mu, float)
    return _affine_only(
        "Diana & Perri (2010), model 2",
        (1 - beta) * m[0],
        beta * m[0] * m[1],
        {"mu": m.tolist(), "beta": beta},
    )


@dataclass(frozen=True)
class SurveyEstimate(WaldResult):
    """A design-based estimate of a total or mean from randomized replies.

    Attributes
    ----------
    estimate : float
    variance : float
    kind : {"total", "mean"}
    method : str
        The variance estimator used.
    n : int
    revised : ndarray, shape (n,)
        The revised values ``r``.
    revised_variance : ndarray, shape (n,), or None

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner
    >>> from deniable.analysis import survey_estimate
    >>> result = survey_estimate(Warner(p=0.8), np.array([1] * 70 + [0] * 30), pi=np.full(100, 0.1))
    >>> round(result.estimate, 3), result.method
    (0.833, 'deville')
    """

    estimate: float
    variance: float
    kind: str
    method: str
    n: int
    revised: _Array = field(repr=False)
    revised_variance: _Array | None = field(repr=False)

    @property
    def std_error(self) -> float:
        """Square root of the variance (0 if the estimate is negative)."""
        return math.sqrt(max(self.variance, 0.0))

    @property
    def labels(self) -> list[str]:
        """One label: ``self.kind``."""
        return [self.kind]

    def _wald(self, z: float) -> tuple[float, float]:
        """Not clipped: a proportion's interval may leave [0, 1]."""
        return self.estimate - z * self.std_error, self.estimate + z * self.std_error

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape (:meth:`~deniable.estimation.EstimateResult.to_dict`), plus
        ``kind`` (total or mean) and ``variance`` (the variance estimator)."""
        return super().to_dict(confidence_level, method) | {
            "kind": self.kind,
            "variance": self.method,
        }


def survey_estimate(
    revision: Revision | Design,
    z: ArrayLike,
    *,
    pi: ArrayLike | None = None,
    kind: str = "mean",
    N: float | None = None,
    strata: ArrayLike | None = None,
    clusters: ArrayLike | None = None,
    pij: ArrayLike | None = None,
    variance: str | None = None,
    fpc: bool = False,
) -> SurveyEstimate:
    """Horvitz-Thompson estimate of a total or mean from randomized replies.

    Parameters
    ----------
    revision : Revision or Design
        How replies are revised (a two-truth Design is revised by :func:`binary_revision`).
    z : array_like, shape (n,)
        The replies.
    pi : array_like, shape (n,), optional
        First-order inclusion probabilities in (0, 1] (default: ``n / N``, simple
        random sampling; then ``N`` is required).
    kind : {"mean", "total"}
    N : float, optional
        Population size; without it the mean is the Hajek ratio ``t / sum(1/pi)``.
    strata, clusters : array_like, shape (n,), optional
        Stratum and cluster (primary sampling unit) of each reply.
    pij : array_like, shape (n, n), optional
        Second-order inclusion probabilities (diagonal = ``pi``).
    variance : str, optional
        ``deville``, ``pij``, ``ultimate_cluster``, ``jackknife``, ``escobar_berger``,
        ``campbell_berger_skinner`` (RRTCS's ``ResamplingVariance`` options 2 and 3,
        of the revised replies, with ``pij``: :mod:`deniable.analysis`),
        ``srswr``, ``srswor``.
        Default: ``pij`` if given, else ``ultimate_cluster`` with clusters, else
        ``deville`` (``srswr`` for a revision without per-person variances).
    fpc : bool, default False
        With ``variance="jackknife"``: multiply each stratum's part by its
        finite-population correction ``1 - mean(pi_h)`` (the whole sample's without
        strata), as RRTCS's ``ResamplingVariance`` does.

    Returns
    -------
    SurveyEstimate
        The estimate of the total or mean, its variance by the method used, and each
        person's revised value.

    Raises
    ------
    ValueError
        For inclusion probabilities outside (0, 1], shapes that differ, an unknown
        ``kind`` or ``variance``, or a method that lacks what it needs.

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.data import load_rr_survey
    >>> w = load_rr_survey("RRTCS/WarnerData")
    >>> est = survey_estimate(Warner(p=0.7), w.z, pi=w.Pi, N=802)
    >>> round(est.estimate, 4), round(est.std_error, 4)
    (0.45, 0.1107)
    """
    rev = binary_revision(revision) if is_design(revision) else revision
    if not isinstance(rev, Revision):
        raise TypeError("revision must be a Revision or a binary Design")
    zz = np.asarray(z, dtype=np.float64)
    if zz.ndim != 1 or zz.size < 2 or np.any(~np.isfinite(zz)):
        raise ValueError("z must be a 1-D array of at least 2 finite replies")
    n = zz.size
    if kind not in ("mean", "total"):
        raise ValueError(f"kind must be 'mean' or 'total', got {kind!r}")
    if N is not None and (not math.isfinite(N) or n > N):
        raise ValueError(f"N must be a population size >= n = {n}, got {N}")
    if pi is None:
        if N is None:
            raise ValueError("give pi (inclusion probabilities) or N (simple random sampling)")
        p = np.full(n, n / N)
    else:
        p = np.asarray(pi, dtype=np.float64)
        if p.shape != (n,) or np.any(~(p > 0)) or np.any(p > 1):
            raise ValueError(f"pi must hold {n} inclusion probabilities in (0, 1]")
    if fpc and variance != "jackknife":
        raise ValueError("fpc applies to variance='jackknife' only")
    r, v = rev.revise(zz)
    P = None
    if pij is not None:
        P = np.asarray(pij, dtype=np.float64)
        if P.shape != (n, n) or np.any(~(P > 0)) or np.any(P > 1):
            raise ValueError(f"pij must be an ({n}, {n}) matrix of probabilities in (0, 1]")
    variance = _variance_method(variance, P is not None, clusters is not None, v is not None)
    w = 1 / p
    est, scale, centre = _point(r, w, kind, N)
    design = _Sample(r, v, p, w, P, strata, clusters, kind, N, fpc)
    var = _variance(design, variance, scale, centre, rev.name)
    return SurveyEstimate(est, var, kind, variance, n, r, v)


def _variance_method(variance: str | None, pij: bool, clusters: bool, per_person: bool) -> str:
    """The variance asked for (checked), or the default: with joint inclusion
    probabilities ``pij``, with clusters ``ultimate_cluster``, else Deville's where the
    device gives a per-person variance and ``srswr`` where it does not."""
    if variance is None:
        if pij:
            return "pij"
        if clusters:
            return "ultimate_cluster"
        return "deville" if per_person else "srswr"
    if variance not in VARIANCE_METHODS:
        raise ValueError(f"variance must be one of {', '.join(VARIANCE_METHODS)}, got {variance!r}")
    return variance

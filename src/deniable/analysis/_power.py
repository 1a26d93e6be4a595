"""Power for a difference between groups and for a regression coefficient.

Difference between two groups (binary design ``Pr(yes) = c + d pi``): the moment
estimates are independent with ``Var = lam (1 - lam) / (n d^2)``, ``lam = c + d pi``,
so the two-sided Wald test at level ``alpha = 1 - confidence_level`` has power
``Phi(|Delta| / s - z) + Phi(-|Delta| / s - z)``, ``s^2 = V_a + V_b``,
``z = Phi^-1(1 - alpha / 2)`` (Lakshmi & Raghavarao 1992; Ulrich et al. 2012 give the
same normal approximation for randomized-response designs).

Regression coefficient: ``formula`` power from the expected Fisher information of
the randomized-response logistic model per respondent,
``I = E[x x^T (d s')^2 / (lam (1 - lam))]`` averaged over the covariate rows given,
so ``Var(beta_j) = [I^-1]_jj / n``; ``simulation`` power by refitting simulated
surveys (covariates resampled from the rows given; Blair, Imai & Zhou 2015 recommend
simulation for the regression case).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats
from scipy.special import expit

from .._fitting import WaldResult, model_frame
from .._validation import check_confidence_level, check_integer, check_probability
from ..estimation import z_quantile
from ..mechanisms import Design
from ._group_channels import KnownChannel
from ._regression import fit_result

__all__ = [
    "PowerResult",
    "power_coefficient",
    "power_difference",
    "sample_size_coefficient",
    "sample_size_difference",
]


@dataclass(frozen=True)
class PowerResult(WaldResult):
    """Power of a test, with its Monte Carlo standard error when simulated, on the common
    base (:class:`~deniable.estimation.EstimateResult`: ``estimate`` is the power,
    ``confidence_interval()`` Wald's on the Monte Carlo SE clipped to [0, 1], a single
    point for a formula).

    Attributes
    ----------
    power : float in [0, 1]
    method : {"formula", "simulation"}
    std_error : float >= 0
        The Monte Carlo standard error ``sqrt(p (1 - p) / reps)``; 0 for a formula.

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.analysis import power_difference
    >>> round(power_difference(Warner(p=0.8), 1000, 1000, 0.1, 0.2).power, 3)
    0.842
    """

    power: float
    method: str
    std_error: float = 0.0

    @property
    def estimate(self) -> float:
        """The power (= :attr:`power`)."""
        return self.power

    @property
    def labels(self) -> list[str]:
        """One label: ``"power"``."""
        return ["power"]

    def _wald(self, z: float) -> tuple[float, float]:
        half = z * self.std_error
        return max(0.0, self.power - half), min(1.0, self.power + half)


def _affine(design: Design) -> tuple[float, float]:
    if not design.is_binary:
        raise ValueError("power_difference needs a binary design (Pr(yes) = c + d pi)")
    return design.yes_line


def power_difference(
    design: Design,
    n_a: int,
    n_b: int,
    prevalence_a: float,
    prevalence_b: float,
    *,
    confidence_level: float = 0.95,
) -> PowerResult:
    """Power of the two-sided Wald test of equal prevalence in two groups.

    Parameters
    ----------
    design : Design
        A binary design used by both groups.
    n_a, n_b : int >= 1
        Group sizes.
    prevalence_a, prevalence_b : float in [0, 1]
        The prevalences under the alternative.
    confidence_level : float in (0, 1)
        ``1 - alpha`` of the test.

    Returns
    -------
    PowerResult
        The power, how it was found (``formula``) and its standard error (0).

    Raises
    ------
    ValueError
        For a non-binary design or parameters out of range.

    Examples
    --------
    >>> from deniable import ForcedResponse
    >>> coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    >>> round(power_difference(coins, 2000, 2000, 0.10, 0.18).power, 3)
    0.775
    """
    level = check_confidence_level(confidence_level)
    na = check_integer("n_a", n_a, minimum=1)
    nb = check_integer("n_b", n_b, minimum=1)
    pa = check_probability("prevalence_a", prevalence_a)
    pb = check_probability("prevalence_b", prevalence_b)
    c, d = _affine(design)
    la, lb = c + d * pa, c + d * pb
    s = math.sqrt(la * (1 - la) / (na * d * d) + lb * (1 - lb) / (nb * d * d))
    z = z_quantile(level)
    delta = abs(pa - pb)
    if s == 0:
        return PowerResult(1.0 if delta > 0 else 1 - level, "formula")
    power = float(stats.norm.cdf(delta / s - z) + stats.norm.cdf(-delta / s - z))
    return PowerResult(power, "formula")


def sample_size_difference(
    design: Design,
    prevalence_a: float,
    prevalence_b: float,
    *,
    power: float = 0.8,
    confidence_level: float = 0.95,
) -> int:
    """Smallest equal group size giving at least ``power`` (see :func:`power_difference`).

    Parameters
    ----------
    design : Design
        The yes/no design both groups answer through.
    prevalence_a, prevalence_b : float in [0, 1], different
        The prevalences the study expects in the two groups.
    power : float in (0, 1), default 0.8
    confidence_level : float in (0, 1), default 0.95
        Of the two-sided test of equal prevalence.

    Returns
    -------
    int
        Respondents in each group.

    Raises
    ------
    ValueError
        If the prevalences are equal (no size has power above the level).

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.analysis import sample_size_difference
    >>> sample_size_difference(Warner(p=0.8), 0.1, 0.2)
    894
    """
    target = check_probability("power", power, low_open=True, high_open=True)
    if prevalence_a == prevalence_b:
        raise ValueError("prevalence_a and prevalence_b must differ")

    def gap(n: float) -> float:
        return (
            power_difference(
                design,
                max(1, int(n)),
                max(1, int(n)),
                prevalence_a,
                prevalence_b,
                confidence_level=confidence_level,
            ).power
            - target
        )

    hi = 2
    while gap(hi) < 0:
        hi *= 2
    n = int(optimize.brentq(gap, 1, hi)) if hi > 2 else 1
    while gap(n) < 0:
        n += 1
    while n > 1 and gap(n - 1) >= 0:
        n -= 1
    return n


def _unit_standard_error(
    X: NDArray[np.float64], beta: NDArray[np.float64], design: Design, j: int
) -> float:
    """Standard error of coefficient ``j`` for one respondent drawn from the rows of
    ``X``: the square root of the ``j``-th diagonal entry of the inverse expected
    information per respondent (divide by sqrt(n) for n respondents)."""
    P = design.matrix
    s = expit(X @ beta)
    ds = s * (1 - s)
    info = np.zeros((X.shape[1], X.shape[1]))
    for r in range(design.n_reports):
        lam = P[r, 0] + (P[r, 1] - P[r, 0]) * s
        w = np.where(lam > 0, ((P[r, 1] - P[r, 0]) * ds) ** 2 / np.where(lam > 0, lam, 1), 0)
        info += (X * w[:, None]).T @ X
    info /= X.shape[0]
    return math.sqrt(np.linalg.inv(info)[j, j])


def sample_size_coefficient(
    formula: str,
    data: pd.DataFrame,
    design: Design,
    coefficients: ArrayLike,
    term: str,
    power: float = 0.8,
    *,
    confidence_level: float = 0.95,
) -> int:
    """Smallest survey size at which :func:`power_coefficient` (``method="formula"``)
    reaches ``power`` for the Wald test that ``term``'s coefficient is zero.

    The standard error falls as ``se_1 / sqrt(n)`` (expected information per
    respondent over the covariate rows of ``data``), so power is increasing in n and the
    answer is found exactly by search from the one-tailed closed form
    ``((z_{1 - alpha/2} + z_power) se_1 / |beta|)^2``.

    Parameters
    ----------
    formula, data, design, coefficients, term, confidence_level
        As for :func:`power_coefficient`.
    power : float in (0, 1), default 0.8

    Returns
    -------
    int
        Respondents needed for ``power`` at the confidence level.

    Raises
    ------
    ValueError
        For a power outside (0, 1), a zero coefficient (no n has power), or the errors
        of :func:`power_coefficient`.

    Examples
    --------
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> x = example.data["x"]
    >>> from deniable.analysis import sample_size_coefficient
    >>> sample_size_coefficient("r ~ x", data, design, [-1.0, 1.0], "x") < 500
    True
    """
    target = check_probability("power", power)
    if not 0 < target < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    beta = np.asarray(coefficients, dtype=np.float64)
    rhs = formula.split("~", 1)[1] if "~" in formula else formula
    frame = model_frame(f"__y ~ {rhs}", data.assign(__y=0.0))
    if term not in frame.terms:
        raise ValueError(f"term {term!r} is not in the model; terms: {frame.terms}")
    if beta.shape != (len(frame.terms),):
        raise ValueError(f"coefficients must hold {len(frame.terms)} values for {frame.terms}")
    j = frame.terms.index(term)
    if beta[j] == 0:
        raise ValueError(f"the coefficient of {term!r} is 0: no survey size gives power")
    se1 = _unit_standard_error(frame.X, beta, design, j)
    z = z_quantile(check_confidence_level(confidence_level))

    def reached(n: int) -> bool:
        shift = abs(beta[j]) * math.sqrt(n) / se1
        return bool(stats.norm.cdf(shift - z) + stats.norm.cdf(-shift - z) >= target)

    n = max(2, math.ceil(((z + stats.norm.ppf(target)) * se1 / abs(beta[j])) ** 2))
    while not reached(n):
        n += 1
    while n > 2 and reached(n - 1):
        n -= 1
    return int(n)


def power_coefficient(
    formula: str,
    data: pd.DataFrame,
    design: Design,
    coefficients: ArrayLike,
    term: str,
    n: int,
    *,
    confidence_level: float = 0.95,
    method: str = "formula",
    reps: int = 500,
    rng: np.random.Generator | None = None,
    progress: Callable[[int], None] | None = None,
) -> PowerResult:
    """Power of the Wald test that one coefficient of :func:`rr_logit` is zero.

    Parameters
    ----------
    formula : str
        ``"~ x1 + x2"`` or ``"y ~ x1 + x2"`` (a left-hand side is ignored).
    data : pandas.DataFrame
        Covariate rows representative of the population (resampled).
    design : Design
        Binary-truth design of the randomized outcome.
    coefficients : array_like, shape (p,)
        True coefficients, in the order of the model matrix (intercept first).
    term : str
        The tested coefficient's name.
    n : int
        Survey size.
    method : {"formula", "simulation"}
        Expected-information normal approximation, or refits of ``reps`` simulated
        surveys (``rng`` default seeded with 0).
    progress : callable, optional
        With ``simulation``: called as ``progress(1)`` after each simulated survey's
        refit (``reps`` calls): a bar's advance, or a callback.

    Returns
    -------
    PowerResult
        The power, how it was found (``formula`` or ``simulation``) and the simulation's
        standard error (0 for the formula).

    Raises
    ------
    ValueError
        For an unknown term or method, or coefficients of the wrong length.

    Examples
    --------
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> x = example.data["x"]
    >>> from deniable.analysis import power_coefficient
    >>> result = power_coefficient("r ~ x", data, design, [-1.0, 1.0], "x", n=500)
    >>> bool(result.power > 0.9), result.method
    (True, 'formula')
    """
    level = check_confidence_level(confidence_level)
    size = check_integer("n", n, minimum=2)
    if method not in ("formula", "simulation"):
        raise ValueError(f"method must be 'formula' or 'simulation', got {method!r}")
    rhs = formula.split("~", 1)[1] if "~" in formula else formula
    frame = model_frame(f"__y ~ {rhs}", data.assign(__y=0.0))
    if term not in frame.terms:
        raise ValueError(f"term {term!r} is not in the model; terms: {frame.terms}")
    beta = np.asarray(coefficients, dtype=np.float64)
    if beta.shape != (len(frame.terms),):
        raise ValueError(f"coefficients must hold {len(frame.terms)} values for {frame.terms}")
    j = frame.terms.index(term)
    X = frame.X
    z = z_quantile(level)
    channel = KnownChannel(design)
    if method == "formula":
        shift = abs(beta[j]) / (_unit_standard_error(X, beta, design, j) / math.sqrt(size))
        power = float(stats.norm.cdf(shift - z) + stats.norm.cdf(-shift - z))
        return PowerResult(power, "formula")
    rng = np.random.default_rng(0) if rng is None else rng
    hits = 0
    for _ in range(check_integer("reps", reps, minimum=1)):
        Xs = X[rng.integers(0, X.shape[0], size)]
        truth = rng.random(size) < expit(Xs @ beta)
        reports = design.randomize(truth, rng).astype(np.intp)
        groups = np.zeros(size, dtype=np.intp)
        res = fit_result(
            Xs, frame.terms, groups, reports, channel, None, formula=formula, model_spec=None
        )
        se = float(res.bse.iloc[j])
        hits += bool(se > 0 and abs(res.params.iloc[j]) / se > z)
        if progress is not None:
            progress(1)
    p = hits / reps
    return PowerResult(p, "simulation", math.sqrt(p * (1 - p) / reps))

"""The zero-prevalence anchor correction of the crosswise model (Atsusaka & Stevenson
2023, "A bias-corrected estimator for the crosswise model with inattentive
respondents", Political Analysis 31(1), 134-148).

Inattentive respondents pick "same" or "different" at random, which pulls the
crosswise estimate towards 1/2. An *anchor* crosswise question whose sensitive
statement nobody can carry (prevalence 0) measures the attentive share ``gamma``:
``P(A = 1) = gamma (1 - p') + (1 - gamma) / 2``. The main question then gives
``P(Y = 1) = gamma ((2p - 1) pi + 1 - p) + (1 - gamma) / 2``, so

    gamma = (lambda' - 1/2) / (1/2 - p'),    pi = 1/2 + (lambda - 1/2) / (gamma (2p - 1)).

Reports use :class:`~deniable.Crosswise`'s coding: 1 = "same" (both or neither true).

Agreement with R's ``cWise`` (GitHub, commit a27f64f; its ``bc.est`` and ``cmreg``) on
its own data is tested in ``tests/test_anchor_correction.py``; what cWise gets wrong is
in docs/analysis.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ..._fitting import (
    LikelihoodFit,
    WaldResult,
    maximise_score,
    model_frame,
    normal_only,
    score_hessian,
)
from ..._validation import JSON, check_integer, check_probability, renamed_keywords
from ...estimation import ConfidenceInterval, Summary

__all__ = ["AnchorCorrection", "AnchorRegressionResult", "anchor_correction", "anchor_regression"]


def _binary(name: str, values: ArrayLike) -> NDArray[np.float64]:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or not np.isin(x, (0.0, 1.0)).all():
        raise ValueError(f"{name} must be a 1-D array of 0 ('different') and 1 ('same') reports")
    return x


def _design(p: object, p_anchor: object) -> tuple[float, float]:
    return check_probability("p", p, not_equal=0.5), check_probability(
        "p_anchor", p_anchor, not_equal=0.5
    )


@dataclass(frozen=True)
class AnchorCorrection(WaldResult):
    """The crosswise prevalence corrected for inattention by a zero-prevalence anchor,
    on the common base (:class:`~deniable.estimation.EstimateResult`:
    ``confidence_interval()``, ``summary()``, ``to_frame()``, ``to_dict()``).

    Attributes
    ----------
    estimate : float
        The bias-corrected prevalence ``pi`` (not clipped; see :meth:`clipped`).
    std_error : float
        Its delta-method standard error from the joint covariance of the two reports
        (each respondent answers both, and inattention makes them dependent).
    std_error_independent : float
        The standard error were the two reports independent: the observed-information
        standard error of cWise's likelihood (``cmreg`` with an intercept only).
    naive, naive_std_error : float
        The crosswise estimate without correction (``Crosswise``'s moment estimate)
        and its standard error (cWise's formula, ``n - 1``).
    attentive, attentive_std_error : float
        The attentive share ``gamma`` and its standard error.
    n : int
        Respondents (the sum of the weights when weights are given is not used).
    bootstrap : tuple of (std_error, low, high) or None
        Nonparametric bootstrap of the clipped estimate: standard deviation and the
        95% percentile interval (as cWise's ``bc.est``), when asked.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> n, p, pa, gamma, pi = 4000, 0.15, 0.15, 0.8, 0.1
    >>> attentive = rng.random(n) < gamma
    >>> carrier = rng.random(n) < pi
    >>> same = np.where(attentive, (rng.random(n) < p) == carrier, rng.random(n) < 0.5)
    >>> anchor = np.where(attentive, rng.random(n) >= pa, rng.random(n) < 0.5)
    >>> res = anchor_correction(same, anchor, p=p, p_anchor=pa)
    >>> round(res.naive, 3), round(res.estimate, 3), round(res.attentive, 3)
    (0.177, 0.105, 0.817)
    """

    estimate: float
    std_error: float
    std_error_independent: float
    naive: float
    naive_std_error: float
    attentive: float
    attentive_std_error: float
    n: int
    bootstrap: tuple[float, float, float] | None

    def clipped(self) -> float:
        """The estimate clipped to [0, 1]."""
        return min(1.0, max(0.0, self.estimate))

    @property
    def labels(self) -> list[str]:
        """One label: ``"prevalence"``."""
        return ["prevalence"]

    def _wald(self, z: float) -> tuple[float, float]:
        """Wald's interval on the delta-method standard error, clipped to [0, 1]."""
        low, high = self.estimate - z * self.std_error, self.estimate + z * self.std_error
        return max(0.0, low), min(1.0, high)

    @renamed_keywords(level="confidence_level")
    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[float]:
        """Wald interval on the delta-method standard error, clipped to [0, 1].

        Raises
        ------
        ValueError
            For a level outside (0, 1) or a method other than ``normal``.
        """
        return super().confidence_interval(confidence_level, method)

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape of every estimate, with the other fields (the naive and
        attentive estimates, the independent SE and the bootstrap)."""
        out = super().to_dict(confidence_level, method)
        fields = ("std_error_independent", "naive", "naive_std_error", "attentive",
                  "attentive_std_error", "bootstrap")  # fmt: skip
        return out | {name: getattr(self, name) for name in fields}


def _corrected(
    lam: NDArray[np.float64], lam_a: NDArray[np.float64], p: float, pa: float
) -> NDArray[np.float64]:
    gamma = (lam_a - 0.5) / (0.5 - pa)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(0.5 + (lam - 0.5) / (gamma * (2 * p - 1)), dtype=np.float64)


def anchor_correction(
    reports: ArrayLike,
    anchor: ArrayLike,
    *,
    p: float,
    p_anchor: float,
    weights: ArrayLike | None = None,
    bootstrap: int = 0,
    rng: np.random.Generator | int | None = None,
) -> AnchorCorrection:
    """Correct a crosswise prevalence for inattentive respondents (Atsusaka & Stevenson
    2023, eq. 6).

    Parameters
    ----------
    reports, anchor : array_like, shape (n,), 0/1
        Each respondent's crosswise report to the sensitive question and to the anchor
        question (1 = "same").
    p, p_anchor : float in [0, 1], not 0.5
        The innocuous statements' known prevalences in the two questions.
    weights : array_like, shape (n,), optional
        Sampling weights (> 0): the shares become weighted means and the standard
        errors use the weighted influence functions.
    bootstrap : int, default 0
        Bootstrap resamples (0: none; at most 100,000).
    rng : numpy Generator or seed, optional
        For the bootstrap (simulation only: it draws no respondent's randomness).

    Returns
    -------
    AnchorCorrection

    Raises
    ------
    ValueError
        If a report is not 0/1, the arrays differ in length, a probability is outside
        [0, 1] or 0.5, a weight is not positive, or the anchor shows no attentive
        respondent (``lambda' <= 1/2`` when ``p' < 1/2``: the correction is undefined).

    Examples
    --------
    See :class:`AnchorCorrection`.
    """
    p, pa = _design(p, p_anchor)
    y, a = _binary("reports", reports), _binary("anchor", anchor)
    if y.shape != a.shape or len(y) < 2:
        raise ValueError("reports and anchor must have one length, at least 2")
    n = len(y)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != y.shape or not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("weights must be positive, one per respondent")
    boots = check_integer("bootstrap", bootstrap, minimum=0)
    if boots > 100_000:
        raise ValueError(f"bootstrap must be at most 100000, got {boots}")
    share = w / w.sum()
    lam, lam_a = float(share @ y), float(share @ a)
    gamma = (lam_a - 0.5) / (0.5 - pa)
    if gamma <= 0:
        raise ValueError(
            f"the anchor's share of 'same' ({lam_a:.4f}) shows no attentive respondent "
            f"(attentive share {gamma:.4f} <= 0): the correction is undefined"
        )
    est = float(_corrected(np.array(lam), np.array(lam_a), p, pa))
    # influence functions of the two weighted means, and the delta method
    infl = np.column_stack([share * (y - lam), share * (a - lam_a)])
    cov = infl.T @ infl * n / (n - 1)
    grad = np.array([1 / (gamma * (2 * p - 1)), -(est - 0.5) / (lam_a - 0.5)])
    var_indep = grad**2 @ np.array([lam * (1 - lam), lam_a * (1 - lam_a)]) / n
    naive = 0.5 + (lam - 0.5) / (2 * p - 1)
    naive_c = min(1.0, max(0.0, naive))
    naive_var = naive_c * (1 - naive_c) / (n - 1) + p * (1 - p) / ((n - 1) * (2 * p - 1) ** 2)
    boot = None
    if boots:
        gen = np.random.default_rng(rng)
        idx = gen.integers(0, n, size=(boots, n))
        ws = w[idx]
        draws = np.clip(
            _corrected((ws * y[idx]).sum(1) / ws.sum(1), (ws * a[idx]).sum(1) / ws.sum(1), p, pa),
            0,
            1,
        )
        draws = draws[np.isfinite(draws)]
        boot = (
            float(np.std(draws, ddof=1)),
            float(np.quantile(draws, 0.025)),
            float(np.quantile(draws, 0.975)),
        )
    return AnchorCorrection(
        estimate=est,
        std_error=math.sqrt(float(grad @ cov @ grad)),
        std_error_independent=math.sqrt(float(var_indep)),
        naive=naive,
        naive_std_error=math.sqrt(naive_var),
        attentive=gamma,
        attentive_std_error=math.sqrt(float(cov[1, 1])) / abs(0.5 - pa),
        n=n,
        bootstrap=boot,
    )


# --- regression (cWise's cmreg) ------------------------------------------------------


class _AnchorLikelihood:
    """cWise's log-likelihood: the two reports' Bernoulli laws given covariates,
    multiplied as if independent (a composite likelihood under the model)."""

    def __init__(
        self,
        y: NDArray[np.float64],
        a: NDArray[np.float64],
        x: NDArray[np.float64],
        p: float,
        pa: float,
    ):
        self.y, self.a, self.x, self.p, self.pa = y, a, x, p, pa
        self.k = x.shape[1]

    def rows(self, theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-row log-likelihood and score, shapes (n,) and (n, 2k)."""
        k, x, p, pa = self.k, self.x, self.p, self.pa
        pi = special.expit(x @ theta[:k])
        gamma = special.expit(x @ theta[k:])
        c = (2 * p - 1) * pi + 0.5 - p
        qy = gamma * c + 0.5
        qa = (0.5 - pa) * gamma + 0.5
        ll = self.y * np.log(qy) + (1 - self.y) * np.log1p(-qy)
        ll += self.a * np.log(qa) + (1 - self.a) * np.log1p(-qa)
        ry = (self.y - qy) / (qy * (1 - qy))
        ra = (self.a - qa) / (qa * (1 - qa))
        d_beta = ry * gamma * (2 * p - 1) * pi * (1 - pi)
        d_theta = (ry * c + ra * (0.5 - pa)) * gamma * (1 - gamma)
        return ll, np.column_stack([x * d_beta[:, None], x * d_theta[:, None]])

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        ll, sc = self.rows(theta)
        return float(ll.sum()), sc.sum(0)


@dataclass(frozen=True)
class AnchorRegressionResult(LikelihoodFit):
    """A crosswise regression with inattention modelled by the anchor (cWise's
    ``cmreg``), a :class:`LikelihoodFit` on the common base (``params``, ``bse``,
    ``conf_int()``, ``summary()``, ``to_frame()``, ``to_dict()``).

    Attributes
    ----------
    params : pandas.Series
        ``prevalence.<term>`` (logit of carrying the item) then ``attentive.<term>``
        (logit of being attentive).
    covariance : numpy.ndarray of float64, shape (k, k)
        The inverse observed information (``bse``: cWise's standard errors).
    llf : float
    nobs : int
        Respondents (also :attr:`n`).
    converged : bool
    formula : str
    covariance_robust : numpy.ndarray of float64, shape (k, k)
        The sandwich covariance (:attr:`bse_robust`), valid although the two reports
        of one respondent are dependent (the likelihood multiplies them as if they
        were not).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> n = 3000
    >>> female = rng.integers(0, 2, n)
    >>> attentive = rng.random(n) < 0.8
    >>> carrier = rng.random(n) < 1 / (1 + np.exp(1.5 - 0.6 * female))
    >>> y = np.where(attentive, (rng.random(n) < 0.1) == carrier, rng.random(n) < 0.5)
    >>> a = np.where(attentive, rng.random(n) >= 0.15, rng.random(n) < 0.5)
    >>> data = pd.DataFrame({"Y": y.astype(int), "A": a.astype(int), "female": female})
    >>> fit = anchor_regression("Y ~ female", data, anchor="A", p=0.1, p_anchor=0.15)
    >>> fit.params.round(2).tolist()
    [-1.62, 0.62, 1.47, -0.27]
    """

    covariance_robust: NDArray[np.float64]

    @property
    def bse_robust(self) -> pd.Series[float]:
        """Sandwich standard errors by term."""
        se = np.sqrt(np.maximum(np.diag(self.covariance_robust), 0.0))
        return pd.Series(se, index=self.params.index)

    @property
    def n(self) -> int:
        """Respondents (:attr:`nobs`)."""
        return self.nobs

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """The fit and its coefficient table (observed-information standard errors;
        ``method`` is ``normal`` or None).

        Raises
        ------
        ValueError
            For a level outside (0, 1) or another method.
        """
        normal_only(method)
        return Summary(
            self._summary(
                "Crosswise regression with an anchor (Atsusaka & Stevenson 2023)", confidence_level
            )
        )


def anchor_regression(
    formula: str, data: pd.DataFrame, *, anchor: str, p: float, p_anchor: float
) -> AnchorRegressionResult:
    """Logistic regression of the latent sensitive trait on covariates with the
    attentive share modelled on the same covariates (Atsusaka & Stevenson 2023,
    Section 4; R ``cWise::cmreg``).

    Parameters
    ----------
    formula : str
        ``"Y ~ covariates"``: the crosswise report (1 = "same") on the covariates
        (factors welcome: ``C(group)``).
    data : pandas.DataFrame
    anchor : str
        Column of the anchor question's report.
    p, p_anchor : float in [0, 1], not 0.5

    Returns
    -------
    AnchorRegressionResult

    Raises
    ------
    ValueError
        On a malformed formula, a missing column, or reports other than 0/1.

    Examples
    --------
    See :class:`AnchorRegressionResult`.
    """
    p, pa = _design(p, p_anchor)
    if anchor not in data.columns:
        raise ValueError(
            f"anchor must name a column of data; columns: {', '.join(map(str, data.columns))}"
        )
    frame = model_frame(formula, data)
    y = _binary("reports", frame.y)
    a = _binary("anchor", data.loc[frame.rows, anchor].to_numpy(dtype=np.float64))
    lik = _AnchorLikelihood(y, a, frame.X, p, pa)

    theta = maximise_score(lik.value_and_score, np.full(2 * lik.k, 0.01))
    ll, score = lik.value_and_score(theta)
    bread = np.linalg.inv(-score_hessian(lik.value_and_score, theta))
    scores = lik.rows(theta)[1]
    robust = bread @ (scores.T @ scores) @ bread
    names = [f"prevalence.{t}" for t in frame.terms] + [f"attentive.{t}" for t in frame.terms]
    return AnchorRegressionResult(
        params=pd.Series(theta, index=names),
        covariance=np.asarray(bread, dtype=np.float64),
        llf=ll,
        nobs=len(y),
        converged=bool(np.abs(score).max() < 1e-6),
        formula=formula,
        covariance_robust=np.asarray(robust, dtype=np.float64),
    )

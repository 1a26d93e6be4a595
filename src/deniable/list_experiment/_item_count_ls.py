"""Least-squares regression for the list experiment (Imai 2011, sections 2.2-2.3).

*Linear* (``method="lm"``): ``Y = x'psi + T x'delta + e`` by ordinary least squares,
``x'delta`` the probability of the sensitive answer and ``x'psi`` the expected control
count; standard errors from MacKinnon & White's (1985) HC3 sandwich (R's
``list::ictreg(method = "lm")``, through ``sandwich::vcovHC``).

*Two-step nonlinear least squares* (``method="nls"``): first the control rows,
``Y / J = g(x'psi) + e`` (``g`` the logistic function); then the treated rows with the
control count removed, ``Y - J g(x'psi_hat) = g(x'delta) + e``. The standard errors are
the two-step M-estimator's sandwich, which carries the first step's error into the
second (Imai 2011, appendix; R's ``vcov.twostep.std``): with ``n`` all rows,
``m_1 = (Y - J h - g) g (1 - g) x`` on the treated and ``m_0 = (Y - J h) J h (1 - h) x``
on the control rows (``h = g(x'psi)``, ``g = g(x'delta)``), ``F = diag(M_1' M_1,
M_0' M_0) / n``, ``G_1 = -X_1' diag(g^2 (1 - g)^2) X_1 / n``, ``G_2 = -X_1' diag(J g (1 -
g) h (1 - h)) X_1 / n``, ``G_3 = -X_0' diag(J^2 h^2 (1 - h)^2) X_0 / n`` and ``G^-1 =
[[G_1^-1, -G_1^-1 G_2 G_3^-1], [0, G_3^-1]]``: ``cov = G^-1 F G^-T / n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize, special, stats

from ._item_count import hc3_covariance, refuse_channel
from ._item_count_ml import ListRegressionResult, list_frame

__all__ = ["ListHausmanTest", "list_hausman_test", "list_least_squares"]


def _logistic_ls(
    x: NDArray[np.float64], target: NDArray[np.float64], scale: float, start: NDArray[np.float64]
) -> tuple[NDArray[np.float64], bool]:
    """Minimise ``sum (target - scale g(x'b))^2`` (trust region, analytic Jacobian)."""

    def residual(b: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(target - scale * special.expit(x @ b), dtype=np.float64)

    def jacobian(b: NDArray[np.float64]) -> NDArray[np.float64]:
        p = special.expit(x @ b)
        return np.asarray(-(scale * p * (1 - p))[:, None] * x, dtype=np.float64)

    fit = optimize.least_squares(
        residual, start, jac=jacobian, method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15
    )
    return np.asarray(fit.x, dtype=np.float64), bool(fit.success)


def _two_step_cov(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    j: int,
    delta: NDArray[np.float64],
    psi: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The two-step sandwich of the module text, ``(delta, psi)`` order, (2p, 2p)."""
    n, p = x.shape
    x1, x0, y1, y0 = x[t], x[~t], y[t], y[~t]
    g1, h1, h0 = special.expit(x1 @ delta), special.expit(x1 @ psi), special.expit(x0 @ psi)
    m1 = ((y1 - j * h1 - g1) * g1 * (1 - g1))[:, None] * x1
    m0 = ((y0 - j * h0) * j * h0 * (1 - h0))[:, None] * x0
    f = np.zeros((2 * p, 2 * p))
    f[:p, :p], f[p:, p:] = m1.T @ m1 / n, m0.T @ m0 / n
    g_1 = -(x1.T @ (((g1 * (1 - g1)) ** 2)[:, None] * x1)) / n
    g_2 = -(x1.T @ ((j * g1 * (1 - g1) * h1 * (1 - h1))[:, None] * x1)) / n
    g_3 = -(x0.T @ (((j * h0 * (1 - h0)) ** 2)[:, None] * x0)) / n
    inv1, inv3 = np.linalg.inv(g_1), np.linalg.inv(g_3)
    inv = np.zeros((2 * p, 2 * p))
    inv[:p, :p], inv[:p, p:], inv[p:, p:] = inv1, -inv1 @ g_2 @ inv3, inv3
    return np.asarray(inv @ f @ inv.T / n, dtype=np.float64)


def list_least_squares(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    method: Literal["lm", "nls"] = "lm",
    channel: Any = None,
) -> ListRegressionResult:
    """Least-squares regression of a list experiment (Imai 2011): linear with HC3
    standard errors, or two-step nonlinear least squares (module text).

    Parameters
    ----------
    formula : str
        ``"count ~ covariates"`` (Wilkinson formula; the response is the reported count);
        the same covariates enter the sensitive and the control model.
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    treat : str
        Column: 1 where the list held the sensitive item, 0 otherwise.
    items : int in 1..50
        ``J``, the number of control items.
    method : {"lm", "nls"}, default "lm"
        R's ``ictreg(method = "lm")`` or ``ictreg(method = "nls")``.
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    ListRegressionResult
        ``params`` labelled ``sensitive.<term>`` (``delta``) and ``control.<term>``
        (``psi``); ``llf`` is NaN (no likelihood); ``prevalence`` the mean over the rows of
        ``x'delta`` (``"lm"``) or ``g(x'delta)`` (``"nls"``), with its delta-method SE;
        ``converged`` the optimiser's word (always True for ``"lm"``).

    Raises
    ------
    ValueError
        On a malformed formula, column, method or report (see :func:`check_list_counts`).

    Examples
    --------
    >>> from deniable.data import list_example
    >>> data = list_example(4000).data  # y (a count of 0..4), x, treat
    >>> fit = list_least_squares("y ~ x", data, treat="treat", items=3, method="nls")
    >>> fit.params.round(2).tolist()
    [-0.63, 0.95, -0.07, 0.01]
    >>> round(fit.prevalence, 3), round(fit.prevalence_se, 3)
    (0.37, 0.028)
    """
    refuse_channel("list_least_squares", channel)
    if method not in ("lm", "nls"):
        raise ValueError(f"method must be 'lm' or 'nls', got {method!r}")
    frame, y, t, j = list_frame(formula, data, treat, items)
    x, p = frame.X, frame.X.shape[1]
    converged = True
    if method == "lm":
        design = np.hstack([t[:, None] * x, x])  # (delta, psi)
        theta = np.linalg.lstsq(design, y, rcond=None)[0]
        cov = hc3_covariance(design, y - design @ theta)
        grad = x.mean(axis=0)
    else:
        yc = y[~t]
        share = np.clip(yc.mean() / j, 1e-3, 1 - 1e-3)
        start = np.zeros(p)
        start[0] = special.logit(share)
        psi, ok0 = _logistic_ls(x[~t], yc / j, 1.0, start)
        left = y[t] - j * special.expit(x[t] @ psi)
        start = np.zeros(p)
        start[0] = special.logit(float(np.clip(left.mean(), 1e-3, 1 - 1e-3)))
        delta, ok1 = _logistic_ls(x[t], left, 1.0, start)
        theta, converged = np.concatenate([delta, psi]), ok0 and ok1
        cov = _two_step_cov(x, y, t, j, delta, psi)
        g = special.expit(x @ delta)
        grad = (g * (1 - g)) @ x / len(g)
    names = [f"{part}.{s}" for part in ("sensitive", "control") for s in frame.terms]
    fitted = x @ theta[:p] if method == "lm" else special.expit(x @ theta[:p])
    return ListRegressionResult(
        params=pd.Series(np.asarray(theta, dtype=np.float64), index=names),
        covariance=np.asarray(cov, dtype=np.float64),
        llf=math.nan,
        prevalence=float(fitted.mean()),
        prevalence_se=math.sqrt(float(grad @ cov[:p, :p] @ grad)),
        n=len(y),
        items=j,
        constrained=True,
        converged=converged,
        spec=frame.spec,
        linear=method == "lm",
        fitted=x,
    )


@dataclass(frozen=True)
class ListHausmanTest:
    """The Hausman test of a list experiment's model (Blair, Imai & Chou 2018).

    Attributes
    ----------
    statistic : float
        ``d' (V_nls - V_ml)^+ d``, ``d`` the difference of the coefficients and ``^+``
        the Moore-Penrose inverse (R's ``MASS::ginv``).
    df : int
        The number of coefficients.
    pvalue : float
        ``Pr(chi^2_df >= |statistic|)``.
    positive_semidefinite : bool
        Whether ``V_nls - V_ml`` is: under the model the efficient ML's variance is the
        smaller, so a difference that is not suggests misspecification too.

    Examples
    --------
    See :func:`list_hausman_test`.
    """

    statistic: float
    df: int
    pvalue: float
    positive_semidefinite: bool


def list_hausman_test(
    ml: ListRegressionResult, nls: ListRegressionResult, *, absolute: bool = False
) -> ListHausmanTest:
    """Hausman's specification test comparing the ML and the two-step NLS fits of one
    list experiment (Hausman 1978; Blair, Imai & Chou 2018; R's ``ict.hausman.test``):
    both are consistent under the model, ML is efficient, so a large difference
    suggests the model is wrong.

    Parameters
    ----------
    ml : ListRegressionResult
        From :func:`~deniable.analysis.list_regression` (constrained, no liars or error).
    nls : ListRegressionResult
        From :func:`list_least_squares` with ``method="nls"``, same formula and data.
    absolute : bool, default False
        Test ``|statistic|`` when the statistic is negative (R's ``abs = TRUE``).

    Returns
    -------
    ListHausmanTest

    Raises
    ------
    ValueError
        If the two fits' coefficients differ in name, or the statistic is negative
        (a sign of misspecification) and ``absolute`` is False.

    Examples
    --------
    >>> from deniable.analysis import list_regression
    >>> from deniable.data import list_example
    >>> data = list_example(4000, seed=3).data  # y (a count of 0..4), x, treat
    >>> ml = list_regression("y ~ x", data, treat="treat", items=3)
    >>> nls = list_least_squares("y ~ x", data, treat="treat", items=3, method="nls")
    >>> test = list_hausman_test(ml, nls, absolute=True)
    >>> test.df, round(test.pvalue, 3)
    (4, 0.798)
    """
    if list(ml.params.index) != list(nls.params.index):
        raise ValueError(
            "ml and nls must be fits of the same formula: coefficients "
            f"{list(ml.params.index)} and {list(nls.params.index)}"
        )
    d = ml.params.to_numpy() - nls.params.to_numpy()
    gap = nls.covariance - ml.covariance
    statistic = float(d @ np.linalg.pinv(gap, rcond=math.sqrt(np.finfo(float).eps)) @ d)
    if statistic < 0 and not absolute:
        raise ValueError(
            f"the Hausman statistic is negative ({statistic:.4g}), a sign of misspecification; "
            "absolute=True tests its absolute value"
        )
    return ListHausmanTest(
        statistic=statistic,
        df=d.size,
        pvalue=float(stats.chi2.sf(abs(statistic), d.size)),
        positive_semidefinite=bool(np.linalg.eigvalsh((gap + gap.T) / 2).min() >= 0),
    )

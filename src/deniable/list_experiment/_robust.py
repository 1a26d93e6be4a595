"""Robust list-experiment regression: the model's estimating equations held to the
difference in means (Blair, Chou & Imai 2019, section 4; R's ``list::ictreg(robust =
TRUE)``).

The constrained model's moments (the per-row ML score, ``method="ml"``, or the two
nonlinear least-squares steps' normal equations, ``"nls"``: :mod:`._item_count_ml`,
:mod:`._item_count_ls`), ``2p`` of them for the ``2p`` coefficients, are joined by one
more: ``mean(Y | T = 1) - mean(Y | T = 0) - mean_i g(x_i'delta) = 0``, the estimated
prevalence equal to the difference in means, which holds whatever the covariates'
model. The ``2p + 1`` moments are combined by the generalized method of moments
(Hansen 1982): ``theta`` minimises ``m(theta)' W m(theta)``, ``m`` the moments' mean.
Where the model fits, the estimate is close to ML or NLS; where it does not, the
prevalence stays at the difference in means. Hansen's J statistic ``n m' W m`` tests the
over-identifying restriction, chi-squared with 1 degree of freedom.

The weight ``W`` is the inverse of the moments' second moment with the
difference-in-means column ``dim - g(x_i'delta)`` (R's): it leaves out the sampling
error of the difference in means, so that moment weighs far more than its variance
would give it and holds the prevalence close to the difference in means, the design's
purpose. Any ``W`` gives a consistent estimate; the sandwich ``cov = (G'WG)^-1 G'W F W G
(G'WG)^-1 / n`` carries the right ``F``, ``G`` the moments' Jacobian.

``procedure="iterated"`` (the default) starts from the two-step NLS fit and re-weights
until the coefficients stop moving (a fixed point, whatever the start), with ``G`` by
central differences of the analytic moments and ``F`` their covariance about their mean,
each row's difference-in-means moment its influence ``(n / n_1) T (Y - Ybar_1) - (n /
n_0) (1 - T) (Y - Ybar_0) - (g_i - mean g)``. ``"list_package"`` reproduces R: three
weighting steps from R's start (for ``"ml"`` its default ``fit.start = "lm"``: linear
fits of the counts, the treated count less ``J g(x'psi)``; for ``"nls"`` the NLS fit),
``F`` uncentered with ``(n / n_1) T Y - (n / n_0) (1 - T) Y - g_i``, and for ``"nls"`` the
Gauss-Newton ``G`` (the residual's curvature left out) in the sandwich. Each step is the
exact minimum of its objective; R's BFGS stops short (docs/analysis.md).

R's ``J.stat`` (``n m' W m`` against chi-squared with ``2p`` degrees of freedom) is not
offered: the moments over-identify one restriction, not ``2p``, and ``W`` is not the
efficient weight that would make ``n m' W m`` chi-squared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize, special

from .._fitting import inverse_information, singular
from ._item_count import refuse_channel
from ._item_count_ls import list_least_squares
from ._item_count_ml import list_frame
from ._list_fit import ListFit

__all__ = ["RobustListResult", "list_robust"]

Procedure = Literal["iterated", "list_package"]


@dataclass(frozen=True)
class _Data:
    x: NDArray[np.float64]
    y: NDArray[np.float64]
    t: NDArray[np.bool_]
    j: int
    method: str

    @property
    def dim(self) -> float:
        return float(self.y[self.t].mean() - self.y[~self.t].mean())


def _rows(theta: NDArray[np.float64], d: _Data) -> NDArray[np.float64]:
    """The model's per-row moments, shape (n, 2p): ``(delta, psi)`` order."""
    p = d.x.shape[1]
    e_d, e_p = d.x @ theta[:p], d.x @ theta[p:]
    g, h = special.expit(e_d), special.expit(e_p)
    y, t, j = d.y, d.t, d.j
    if d.method == "nls":
        m1 = np.where(t, (y - j * h - g) * g * (1 - g), 0.0)
        m0 = np.where(t, 0.0, (y - j * h) * j * h * (1 - h))
        return np.hstack([m1[:, None] * d.x, m0[:, None] * d.x])
    # the constrained ML score: P(Z = 1 | report) = w on the treated rows
    a = np.clip(y - 1, 0, j)
    la = special.gammaln(j + 1) - special.gammaln(a + 1) - special.gammaln(j - a + 1) + e_d
    lb = special.gammaln(j + 1) - special.gammaln(y + 1) - special.gammaln(j - y + 1) + e_p
    top, bottom = y >= j + 1, y <= 0
    w = np.where(top, 1.0, np.where(bottom, 0.0, special.expit(la - np.where(top, 0, lb))))
    s_delta = np.where(t, w - g, 0.0)
    s_psi = np.where(t, (y - w) - j * h, y - j * h)
    return np.hstack([s_delta[:, None] * d.x, s_psi[:, None] * d.x])


def _mean(theta: NDArray[np.float64], d: _Data) -> NDArray[np.float64]:
    """All ``2p + 1`` moments' mean."""
    p = d.x.shape[1]
    g = special.expit(d.x @ theta[:p])
    return np.append(_rows(theta, d).mean(axis=0), d.dim - g.mean())


def _jacobian(theta: NDArray[np.float64], d: _Data) -> NDArray[np.float64]:
    """``d mean / d theta`` by central differences, shape (2p + 1, 2p)."""
    out = np.empty((theta.size + 1, theta.size))
    for i in range(theta.size):
        step = 1e-6 * max(1.0, abs(theta[i]))
        up, down = theta.copy(), theta.copy()
        up[i] += step
        down[i] -= step
        out[:, i] = (_mean(up, d) - _mean(down, d)) / (2 * step)
    return out


def _gauss_newton(theta: NDArray[np.float64], d: _Data) -> NDArray[np.float64]:
    """R's Jacobian of the NLS moments (``Gmat``): the residuals' curvature left out,
    shape (2p + 1, 2p)."""
    x, t, j = d.x, d.t, d.j
    n, p = x.shape
    g, h = special.expit(x @ theta[:p]), special.expit(x @ theta[p:])
    x1, x0, g1, h1, h0 = x[t], x[~t], g[t], h[t], h[~t]
    out = np.zeros((2 * p + 1, 2 * p))
    out[:p, :p] = -(x1.T @ (((g1 * (1 - g1)) ** 2)[:, None] * x1)) / n
    out[:p, p:] = -(x1.T @ ((j * g1 * (1 - g1) * h1 * (1 - h1))[:, None] * x1)) / n
    out[p : 2 * p, p:] = -(x0.T @ (((j * h0 * (1 - h0)) ** 2)[:, None] * x0)) / n
    out[2 * p, :p] = -((g * (1 - g)) @ x) / n
    return out


def _covariance(theta: NDArray[np.float64], d: _Data, form: str) -> NDArray[np.float64]:
    """The moments' second moment (module text), (2p + 1, 2p + 1): ``"weight"`` with
    ``dim - g_i``; ``"influence"`` centered with the difference in means' influence;
    ``"list_package"`` R's uncentered variance form."""
    p, n = d.x.shape[1], d.y.size
    g = special.expit(d.x @ theta[:p])
    rows = _rows(theta, d)
    n1, n0 = int(d.t.sum()), int((~d.t).sum())
    if form == "weight":
        extra = d.dim - g
    elif form == "list_package":
        extra = n / n1 * d.t * d.y - n / n0 * (~d.t) * d.y - g
    else:
        y1, y0 = d.y[d.t].mean(), d.y[~d.t].mean()
        extra = n / n1 * d.t * (d.y - y1) - n / n0 * (~d.t) * (d.y - y0) - (g - g.mean())
        rows = rows - rows.mean(axis=0)
    full = np.hstack([rows, extra[:, None]])
    return np.asarray(full.T @ full / n, dtype=np.float64)


def _minimise(
    theta: NDArray[np.float64], d: _Data, weight: NDArray[np.float64]
) -> tuple[NDArray[np.float64], bool]:
    """``argmin m' W m`` from ``theta``: least squares on ``L' m`` with ``W = L L'``."""
    try:
        root = np.linalg.cholesky((weight + weight.T) / 2)
    except np.linalg.LinAlgError:
        raise singular("the moments' covariance") from None

    def residual(th: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(root.T @ _mean(th, d), dtype=np.float64)

    def jacobian(th: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(root.T @ _jacobian(th, d), dtype=np.float64)

    fit = optimize.least_squares(
        residual,
        theta,
        jac=jacobian,
        method="lm",
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
    )
    return np.asarray(fit.x, dtype=np.float64), bool(fit.success)


def _r_start(d: _Data) -> NDArray[np.float64]:
    """R's ``fit.start = "lm"``: the control counts' linear fit ``c``, then the treated
    counts less ``J g(x'c)`` fitted linearly; ``(delta, psi)`` order."""
    x, y, t = d.x, d.y, d.t
    c = np.linalg.lstsq(x[~t], y[~t], rcond=None)[0]
    left = y[t] - d.j * special.expit(x[t] @ c)
    b = np.linalg.lstsq(x[t], left, rcond=None)[0]
    return np.asarray(np.concatenate([b, c]), dtype=np.float64)


@dataclass(frozen=True)
class RobustListResult(ListFit):
    """A robust list-experiment regression (Blair, Chou & Imai 2019), on the common base
    (:class:`ListFit`).

    Attributes
    ----------
    params : pandas.Series
        ``sensitive.<term>`` (``delta``) then ``control.<term>`` (``psi``).
    covariance : numpy.ndarray of float64, shape (k, k)
        The GMM sandwich covariance.
    prevalence : float
        Mean over the rows of ``g(x'delta)``: close to the difference in means.
    prevalence_se : float
        Its delta-method standard error.
    difference_in_means : float
    n : int
    items : int
    converged : bool
        Every minimisation ended on its tolerance and (``"iterated"``) the weighting
        reached its fixed point.
    method : str
    procedure : str

    Examples
    --------
    >>> from deniable.data import list_example
    >>> data = list_example(3000).data  # y (a count of 0..4), x, treat
    >>> fit = list_robust("y ~ x", data, treat="treat", items=3)
    >>> round(fit.prevalence, 3), round(fit.difference_in_means, 3)
    (0.223, 0.222)
    """

    prevalence: float
    prevalence_se: float
    difference_in_means: float
    method: str
    procedure: str

    TITLE = "Robust list-experiment regression (Blair, Chou & Imai 2019)"

    def _summary_lines(self) -> list[str]:
        return [
            f"Method: {self.method}   procedure: {self.procedure}",
            f"Prevalence: {self.prevalence:.4f} (SE {self.prevalence_se:.4f})   "
            f"difference in means: {self.difference_in_means:.4f}",
        ]

    def _dict_fields(self) -> dict[str, Any]:
        return {
            "prevalence": self.prevalence,
            "prevalence_se": self.prevalence_se,
            "difference_in_means": self.difference_in_means,
            "method": self.method,
            "procedure": self.procedure,
        }


def _iterate(
    theta: NDArray[np.float64], d: _Data, procedure: str, max_steps: int
) -> tuple[NDArray[np.float64], bool]:
    """Iterated GMM from ``theta``: reweight and minimise until the estimate moves by
    less than 1e-9 (``"iterated"``, at most ``max_steps``), or three steps as R's list
    package (``"list_package"``); the estimate and whether it converged."""
    converged = procedure == "list_package"
    for _ in range(3 if procedure == "list_package" else max_steps):
        weight = inverse_information(_covariance(theta, d, "weight"), "the moments' covariance")
        new, ok = _minimise(theta, d, weight)
        moved = float(np.abs(new - theta).max())
        theta = new
        if procedure == "list_package":
            converged &= ok
        elif ok and moved < 1e-9:
            converged = True
            break
    return theta, converged


def list_robust(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    method: Literal["ml", "nls"] = "ml",
    procedure: Procedure = "iterated",
    max_steps: int = 50,
    channel: Any = None,
) -> RobustListResult:
    """Robust regression of a list experiment: the ML or NLS model's moments and the
    difference in means, combined by GMM (Blair, Chou & Imai 2019; module text).

    Parameters
    ----------
    formula : str
        ``"count ~ covariates"`` (Wilkinson formula); the same covariates enter the
        sensitive and the control model.
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    treat : str
        Column: 1 where the list held the sensitive item, 0 otherwise.
    items : int in 1..50
        ``J``, the number of control items.
    method : {"ml", "nls"}, default "ml"
        Whose moments: the constrained ML score or the two-step NLS normal equations.
    procedure : {"iterated", "list_package"}, default "iterated"
        Weighting to a fixed point with the moments' centered covariance in the
        sandwich, or R's three steps and forms (module text).
    max_steps : int, default 50
        Weighting steps at most for ``"iterated"``.
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    RobustListResult

    Raises
    ------
    ValueError
        On a malformed formula, column or report (see :func:`check_list_counts`), or an
        unknown ``method`` or ``procedure``, or data that identify no model (the
        moments' covariance singular, named).

    Examples
    --------
    See :class:`RobustListResult`. On R's ``affirm`` data, ``"y ~ age + college + male +
    south"`` with ``procedure="list_package"`` reproduces ``ictreg(method = "ml", robust
    = TRUE)``.
    """
    refuse_channel("list_robust", channel)
    if method not in ("ml", "nls"):
        raise ValueError(f"method must be 'ml' or 'nls', got {method!r}")
    if procedure not in ("iterated", "list_package"):
        raise ValueError(f"procedure must be 'iterated' or 'list_package', got {procedure!r}")
    frame, y, t, j = list_frame(formula, data, treat, items)
    d = _Data(frame.X, y, t, j, method)
    if procedure == "list_package" and method == "ml":
        theta = _r_start(d)
    else:
        nls = list_least_squares(formula, data, treat=treat, items=items, method="nls")
        theta = np.asarray(nls.params, dtype=np.float64)
    theta, converged = _iterate(theta, d, procedure, max_steps)
    weight = inverse_information(_covariance(theta, d, "weight"), "the moments' covariance")
    if procedure == "list_package":
        f = _covariance(theta, d, "list_package")
        jac = _gauss_newton(theta, d) if method == "nls" else _jacobian(theta, d)
    else:
        f, jac = _covariance(theta, d, "influence"), _jacobian(theta, d)
    n, p = y.size, frame.X.shape[1]
    bread = inverse_information(jac.T @ weight @ jac, "the moments' information")
    cov = bread @ jac.T @ weight @ f @ weight @ jac @ bread / n
    g = special.expit(frame.X @ theta[:p])
    grad = (g * (1 - g)) @ frame.X / n
    names = [f"{part}.{s}" for part in ("sensitive", "control") for s in frame.terms]
    return RobustListResult(
        params=pd.Series(theta, index=names),
        covariance=np.asarray(cov, dtype=np.float64),
        prevalence=float(g.mean()),
        prevalence_se=math.sqrt(float(grad @ cov[:p, :p] @ grad)),
        difference_in_means=d.dim,
        n=n,
        items=j,
        method=method,
        procedure=procedure,
        converged=converged,
    )

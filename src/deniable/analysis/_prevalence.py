"""Prevalence and unknown design parameters estimated jointly, from several groups.

For a :class:`~deniable.analysis.GroupModel` the counts ``c[g, r]`` of report
``r`` in group ``g`` are multinomial with probabilities ``A[g](theta) + B[g](theta) pi``.
:func:`estimate_channel` maximises that likelihood over ``pi`` in [0, 1] and ``theta``
within its bounds (L-BFGS-B), with standard errors from the observed information
(as ``RRreg::RRuni`` does for the cheating-detection model, Clark & Desharnais 1998,
and the stochastic lie detector, Moshagen, Musch & Erdfelder 2012). With two groups
and two reports the model is saturated and the maximum lies where the observed shares
are matched exactly; :func:`closed_form` gives that solution.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats

from .._fitting import (
    CoefficientsMixin,
    TestResult,
    coefficient_table,
    normal_only,
    observed_covariance,
)
from .._validation import as_codes
from ..estimation import Summary
from ..mechanisms import Design
from ._group_channels import GroupModel, as_channel

__all__ = ["ChannelEstimate", "closed_form", "estimate_channel"]

_Array = NDArray[np.float64]


@dataclass(frozen=True)
class ChannelEstimate(CoefficientsMixin):
    """Joint maximum-likelihood estimate of ``pi`` and the channel's unknown parameters.

    Attributes
    ----------
    params : pandas.Series
        ``pi`` then the channel's parameters (``t``, ``gamma`` or ``alpha``).
    covariance : ndarray, shape (1 + q, 1 + q)
        Inverse observed information.
    llf : float
        Maximised log-likelihood.
    counts : pandas.DataFrame
        Report counts, one row per group, one column per report symbol.
    channel : GroupModel
    start_llf : ndarray of float64
        Log-likelihood reached from each start (the default, then a 3-point grid over
        ``pi`` and each channel parameter); :attr:`llf` is their maximum.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.analysis import CheatingDetection, estimate_channel
    >>> rng = np.random.default_rng(0)
    >>> channel = CheatingDetection([0.3, 0.7])
    >>> groups = np.arange(4000) % 2 + 1
    >>> truth = rng.random(4000) < 0.2
    >>> reports = np.where(rng.random(4000) < np.where(groups == 1, 0.3, 0.7), 1, truth).astype(int)
    >>> fit = estimate_channel(channel, reports, groups)
    >>> list(fit.params.index)
    ['pi', 'gamma']
    """

    params: pd.Series[float]
    covariance: _Array
    llf: float
    counts: pd.DataFrame
    channel: GroupModel
    start_llf: _Array = field(default_factory=lambda: np.empty(0), repr=False)

    @property
    def starts_disagree(self) -> bool:
        """Whether fits from different starts ended more than 1e-6 apart in
        log-likelihood (the best is reported)."""
        finite = self.start_llf[np.isfinite(self.start_llf)]
        return bool(finite.size > 1 and finite.max() - finite.min() > 1e-6)

    @property
    def nobs(self) -> int:
        """Number of reports."""
        return int(self.counts.to_numpy().sum())

    def goodness_of_fit(self) -> TestResult:
        """Likelihood-ratio test against the saturated model (df = G (m - 1) - 1 - q).

        Raises
        ------
        ValueError
            If the model is saturated (df = 0: nothing to test).
        """
        c = self.counts.to_numpy(dtype=np.float64)
        df = c.shape[0] * (c.shape[1] - 1) - len(self.params)
        if df <= 0:
            raise ValueError("the model is saturated (df = 0): its fit cannot be tested")
        shares = c / c.sum(axis=1, keepdims=True)
        saturated = float(np.sum(np.where(c > 0, c * np.log(np.where(c > 0, shares, 1)), 0)))
        stat = max(0.0, 2 * (saturated - self.llf))
        return TestResult(stat, df, float(stats.chi2.sf(stat, df)), name="G2")

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Text summary with the coefficient table (``method``: normal or None)."""
        normal_only(method)
        head = (
            f"{type(self.channel).__name__}: joint maximum likelihood\n"
            f"No. observations: {self.nobs}   Log-likelihood: {self.llf:.4f}\n\n"
        )
        return Summary(head + coefficient_table(self, confidence_level))


def _counts(channel: GroupModel, reports: ArrayLike, groups: ArrayLike | None) -> _Array:
    r = as_codes("reports", reports, channel.n_reports).astype(np.intp)
    g = channel.group_codes(groups, r.size)
    flat = np.bincount(g * channel.n_reports + r, minlength=channel.n_groups * channel.n_reports)
    return flat.reshape(channel.n_groups, channel.n_reports).astype(np.float64)


def _objective(x: _Array, channel: GroupModel, c: _Array) -> tuple[float, _Array]:
    pi, theta = x[0], x[1:]
    A, B, dA, dB = channel.coefficients(theta)
    # a floor keeps the objective finite where a cell's probability reaches 0 (the
    # line search then backs off instead of failing on an infinite value)
    safe = np.where(c > 0, np.maximum(A + B * pi, 1e-300), 1.0)
    ll = float(np.sum(c * np.log(safe)))
    ratio = np.where(c > 0, c / safe, 0.0)
    grad = np.empty_like(x)
    grad[0] = float(np.sum(ratio * B))
    grad[1:] = np.einsum("jgr,gr->j", dA + dB * pi, ratio) if theta.size else []
    return -ll, -grad


def _hessian(x: _Array, channel: GroupModel, c: _Array) -> _Array:
    """Exact Hessian of the log-likelihood (A, B affine in theta, L bilinear)."""
    pi, theta = x[0], x[1:]
    A, B, dA, dB = channel.coefficients(theta)
    L = np.where(c > 0, A + B * pi, 1.0)
    w = np.where(c > 0, c / L**2, 0.0)
    # first derivatives of L: d/dpi = B, d/dtheta_j = dA_j + dB_j pi
    D = np.concatenate([B[None], dA + dB * pi], axis=0)  # (1 + q, G, m)
    H = -np.einsum("agr,bgr,gr->ab", D, D, w)
    # second derivative of L: d2/dpi dtheta_j = dB_j
    ratio = np.where(c > 0, c / L, 0.0)
    for j in range(theta.size):
        cross = float(np.sum(ratio * dB[j]))
        H[0, 1 + j] += cross
        H[1 + j, 0] += cross
    return np.asarray(H)


def _maximise(channel: GroupModel, c: _Array, x0: _Array) -> Any:
    """One maximisation of the likelihood of report counts ``c`` (shape (G, m)) over
    ``(pi, theta)`` from ``x0``, within the bounds (and ``pi + theta <= 1`` where the
    two are shares of one population); SciPy's ``OptimizeResult``."""
    constrained = channel.shares_sum_at_most_one
    return optimize.minimize(
        _objective,
        np.minimum(x0, [0.5, 0.4]) if constrained else x0,
        args=(channel, c),
        jac=True,
        method="SLSQP" if constrained else "L-BFGS-B",
        bounds=[(0.0, 1.0), *channel.bounds],
        constraints=(
            optimize.LinearConstraint(np.array([[1.0, 1.0]]), -np.inf, 1.0) if constrained else ()
        ),
        options={"ftol": 1e-14, "maxiter": 1000}
        if constrained
        else {"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000},
    )


def estimate_channel(
    channel: GroupModel | Design | Mapping[Hashable, Design],
    reports: ArrayLike,
    groups: ArrayLike | None = None,
) -> ChannelEstimate:
    """Estimate the prevalence ``pi`` and the channel's unknown parameters jointly.

    Parameters
    ----------
    channel : GroupModel, Design or mapping of group value to Design
        E.g. ``StochasticLieDetector([2/12, 10/12], group_labels=[1, 2])``.
    reports : array_like of int, shape (n,)
        Report codes (1 = "yes").
    groups : array_like, shape (n,), optional
        Each report's randomization group (values of ``channel.group_labels``).

    Returns
    -------
    ChannelEstimate
        ``params["pi"]`` in [0, 1] and the channel parameters within their bounds.

    Raises
    ------
    TypeError
        For reports that are not integer (or bool) codes.
    ValueError
        For codes outside the channel's report set, or unknown group values.

    Examples
    --------
    >>> from deniable.analysis import StochasticLieDetector
    >>> from deniable.data import load_rr_survey
    >>> m = load_rr_survey("RRreg/minarets")
    >>> rr = m[m.condition > 0]
    >>> sld = StochasticLieDetector([2/12, 10/12], group_labels=[1, 2])
    >>> est = estimate_channel(sld, rr.rrt.to_numpy(), rr.condition.to_numpy())
    >>> est.params.round(3).to_dict()
    {'pi': 0.871, 't': 0.636}
    """
    channel = as_channel(channel)
    c = _counts(channel, reports, groups)
    # a grid over pi and every channel parameter: the likelihood can be multimodal
    lo = np.array([b[0] for b in channel.bounds])
    hi = np.array([b[1] for b in channel.bounds])
    grid = np.meshgrid(*[np.array([0.1, 0.5, 0.9])] * (1 + lo.size), indexing="ij")
    fractions = np.stack([g.ravel() for g in grid], axis=1)
    starts = [np.concatenate([[f[0]], lo + f[1:] * (hi - lo)]) for f in fractions]
    starts.insert(0, np.concatenate([[0.5], channel.start()]))
    best = None
    start_llf = []
    for x0 in starts:
        res = _maximise(channel, c, x0)
        start_llf.append(-float(res.fun))
        if np.isfinite(res.fun) and (best is None or res.fun < best.fun):
            best = res
    if best is None:
        raise ValueError("no parameter value makes these reports possible under this channel")
    x = np.asarray(best.x, dtype=np.float64)
    names = ["pi", *channel.param_names]
    counts = pd.DataFrame(
        c.astype(np.int64),
        index=pd.Index(channel.group_labels, name="group"),
        columns=[f"report {r}" for r in range(channel.n_reports)],
    )
    return ChannelEstimate(
        params=pd.Series(x, index=names),
        covariance=observed_covariance(_hessian(x, channel, c)),
        llf=-float(best.fun),
        counts=counts,
        channel=channel,
        start_llf=np.asarray(start_llf),
    )


def closed_form(channel: GroupModel, shares: ArrayLike) -> _Array:
    """Exact solution ``(pi, theta)`` of ``Pr(yes | g) = shares[g]`` for two groups.

    For the saturated models (two groups, yes/no reports, one unknown parameter) the
    maximum-likelihood estimate inside the parameter space equals this solution.

    Parameters
    ----------
    channel : GroupModel
        Two groups, yes/no reports, one unknown parameter.
    shares : array_like, shape (2,)
        Each group's share of "yes" reports, in [0, 1].

    Returns
    -------
    ndarray, shape (2,), float64
        ``(pi, theta)``: the prevalence and the channel's parameter.

    Raises
    ------
    ValueError
        If the channel does not have two groups, two reports and one parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.analysis import CheatingDetection, estimate_channel
    >>> rng = np.random.default_rng(0)
    >>> channel = CheatingDetection([0.3, 0.7])
    >>> groups = np.arange(4000) % 2 + 1
    >>> truth = rng.random(4000) < 0.2
    >>> reports = np.where(rng.random(4000) < np.where(groups == 1, 0.3, 0.7), 1, truth).astype(int)
    >>> from deniable.analysis import closed_form
    >>> shares = [reports[groups == g].mean() for g in (1, 2)]
    >>> closed_form(channel, shares).round(1).tolist()
    [0.2, 0.0]
    """
    lam = np.asarray(shares, dtype=np.float64)
    if channel.n_groups != 2 or channel.n_reports != 2 or len(channel.param_names) != 1:
        raise ValueError("closed_form needs two groups, yes/no reports and one parameter")

    def equations(x: _Array) -> _Array:
        A, B, _, _ = channel.coefficients(x[1:])
        return np.asarray(A[:, 1] + B[:, 1] * x[0] - lam)

    sol = optimize.root(equations, np.array([0.5, *channel.start()]), tol=1e-14)
    return np.asarray(sol.x, dtype=np.float64)

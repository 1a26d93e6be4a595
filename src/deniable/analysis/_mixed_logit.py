"""Mixed-effects logistic regression of a randomized answer (as GLMMRR's ``RRglmer``).

Row ``i`` of cluster ``g`` reports "yes" with chance ``c_i + d_i sigmoid(x_i beta + u_g)``,
``(c_i, d_i)`` its design's line (:class:`~deniable.mechanisms.Design`, one per design
group), ``u_g ~ N(0, tau^2)`` a random intercept (Fox, Klotzke & Veen 2018). The marginal
likelihood of a cluster, ``int prod_i L_i(u) phi(u; 0, tau) du``, is computed by adaptive
Gauss-Hermite quadrature (Pinheiro & Bates 1995): centred at each cluster's mode of the
integrand (Newton steps vectorised over clusters), scaled by its curvature, with
``quadrature`` nodes (1 is the Laplace approximation; 7 by default). ``(beta, log
tau)`` maximise it (L-BFGS), and the standard errors come from the observed information
(central differences of the marginal log-likelihood). ``tau`` also has a
profile-likelihood interval and a likelihood-ratio test of ``tau = 0`` against the
50:50 mixture of chi-square(0) and chi-square(1) (Self & Liang 1987).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize, stats
from scipy.special import expit

from .._fitting import (
    LikelihoodFit,
    Profile,
    TestResult,
    hessian_from_values,
    model_frame,
    normal_only,
    observed_covariance,
)
from .._validation import check_integer
from ..estimation import Summary
from ..mechanisms import Design
from ._group_channels import as_channel
from ._regression import report_codes, rr_logit

__all__ = ["DEFAULT_QUADRATURE", "RRMixedLogitResult", "rr_mixed_logit"]

_Array = NDArray[np.float64]
_RANDOM = re.compile(r"\+\s*\(\s*1\s*\|\s*([A-Za-z_.][A-Za-z0-9_.]*)\s*\)")
_NEWTON_STEPS = 30
#: Gauss-Hermite nodes by default (see :func:`rr_mixed_logit`).
DEFAULT_QUADRATURE = 7
#: The smallest ``log tau`` profiled: below it the random intercept is 0 to any use.
_LOG_TAU_MIN = math.log(1e-8)


@dataclass(frozen=True)
class RRMixedLogitResult(LikelihoodFit):
    """A fitted random-intercept logistic regression of a randomized answer.

    Attributes
    ----------
    params : pandas.Series
        Fixed effects by term, then ``tau`` (standard deviation of the random intercept).
    covariance : ndarray
        Inverse observed information (delta method for ``tau``).
    random_effects : pandas.Series
        Each cluster's conditional mode of ``u_g``.
    quadrature : int
        Gauss-Hermite nodes per cluster (1 = Laplace).
    llf_without_random : float
        The maximised log-likelihood with tau = 0 (:func:`rr_logit` on the fixed part).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> x = example.data["x"]
    >>> from deniable.analysis import rr_mixed_logit
    >>> data["school"] = np.arange(2000) % 20
    >>> fit = rr_mixed_logit("r ~ x + (1 | school)", data, design)
    >>> list(fit.params.index)
    ['Intercept', 'x', 'tau']
    """

    random_effects: pd.Series = field(repr=False, default_factory=pd.Series)
    quadrature: int = 1
    llf_without_random: float = math.nan
    profile: Profile | None = field(default=None, repr=False, compare=False)
    x_covariance: _Array | None = field(default=None, repr=False, compare=False)

    def _profile_spec(self) -> tuple[Profile, dict[str, tuple[int, Callable[[float], float]]]]:
        """Fixed effects on their coordinates; ``tau`` through ``exp`` of ``log tau``
        (its lower end 0 where the profile never falls far enough towards 0)."""
        if self.profile is None:
            return super()._profile_spec()
        labels = [str(t) for t in self.params.index]
        terms: dict[str, tuple[int, Callable[[float], float]]] = {
            t: (i, float) for i, t in enumerate(labels[:-1])
        }
        terms["tau"] = (len(labels) - 1, _exp)
        return self.profile, terms

    def _x_covariance(self, profile: Profile) -> _Array:
        assert self.x_covariance is not None
        return self.x_covariance

    def tau_test(self) -> TestResult:
        """The likelihood-ratio test of ``tau = 0`` (no random intercept): ``2 (llf -
        llf_without_random)`` against the 50:50 mixture of chi-square(0) and
        chi-square(1), the null distribution on the boundary of the parameter space
        (Self & Liang 1987): p-value ``0.5 Pr(chi2_1 > statistic)``."""
        statistic = max(0.0, 2.0 * (self.llf - self.llf_without_random))
        pvalue = 0.5 * float(stats.chi2.sf(statistic, 1)) if statistic > 0 else 1.0
        return TestResult(statistic, 1, pvalue, name="tau = 0 (50:50 chi2(0), chi2(1))")

    def tau_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """The profile-likelihood interval of ``tau``: ``{tau: 2 (llf - l_p(tau)) <=
        chi2_1(level)}`` on ``log tau``, its lower end 0 where the profile at ``tau ->
        0`` stays within the critical value (then :meth:`tau_test` at level ``1 -
        confidence_level`` does not reject either: its critical value, the mixture's,
        is ``chi2_1(2 level - 1)``, smaller).

        Raises
        ------
        ValueError
            For a level outside (0, 1).
        """
        low, high = self.profile_interval("tau", confidence_level)
        return (0.0 if low <= 1.0001e-8 else low), high

    def profile_note(self, confidence_level: float = 0.95) -> str | None:
        """None: the summary prints tau's profile interval and test instead."""
        return None

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Model, fit statistics and the coefficient table (Wald intervals), then tau's
        profile interval and the test of tau = 0."""
        normal_only(method)
        text = self._summary(
            "Mixed-effects logistic regression of a randomized answer "
            f"(adaptive Gauss-Hermite, {self.quadrature} node(s))",
            confidence_level,
            f"Clusters: {self.random_effects.size}",
        )
        if self.profile is None:
            return Summary(text)
        low, high = self.tau_interval(confidence_level)
        test = self.tau_test()
        return Summary(
            f"{text}\ntau: {confidence_level:.0%} profile-likelihood interval [{low:.4g}, "
            f"{high:.4g}]; test of tau = 0: LR {test.statistic:.3f}, p = {test.pvalue:.3g} "
            "(50:50 chi2(0), chi2(1); Self & Liang 1987)"
        )


def _exp(x: float) -> float:
    return math.exp(x) if -700 < x < 700 else (0.0 if x < 0 else math.inf)


class _Model:
    """The data of a fit and its marginal log-likelihood."""

    def __init__(
        self,
        X: _Array,
        a: _Array,
        b: _Array,
        cluster: NDArray[np.intp],
        q: int,
        curvature: str = "observed",
    ) -> None:
        self.X, self.a, self.b = X, a, b
        self.expected = curvature == "expected"
        self.cluster = cluster
        self.G = int(cluster.max()) + 1
        nodes, weights = np.polynomial.hermite.hermgauss(q)
        self.nodes, self.log_weights = nodes, np.log(weights)
        self.mode = np.zeros(self.G)

    def _terms(self, eta: _Array, u: _Array) -> tuple[_Array, _Array, _Array]:
        """Per row: log L, d log L / du, d2 log L / du2 at random intercepts ``u``."""
        s = expit(eta + u[self.cluster])
        ds = s * (1 - s)
        # Pr(report) = a + b s for the observed report (yes: c + d s; no: 1 - c - d s)
        L = self.a + self.b * s
        dL = self.b * ds
        d2L = self.b * ds * (1 - 2 * s)
        return np.log(L), dL / L, d2L / L - (dL / L) ** 2

    def loglik(self, beta: _Array, tau: float) -> float:
        eta = self.X @ beta
        u = self.mode.copy()
        for _ in range(_NEWTON_STEPS):  # each cluster's mode of h(u)
            _, g, h = self._terms(eta, u)
            grad = np.bincount(self.cluster, g, self.G) - u / tau**2
            curv = np.bincount(self.cluster, h, self.G) - 1 / tau**2
            step = grad / curv
            u = u - np.clip(step, -2.0, 2.0)
            if np.max(np.abs(step)) < 1e-10:
                break
        self.mode = u
        if self.expected:  # lme4's PIRLS weights (d mu / d eta)^2 / (mu (1 - mu))
            s = expit(eta + u[self.cluster])
            L = self.a + self.b * s
            h = -((self.b * s * (1 - s)) ** 2) / (L * (1 - L))
        else:
            _, _, h = self._terms(eta, u)
        spread = -(np.bincount(self.cluster, h, self.G) - 1 / tau**2)
        if not np.all(spread > 0):  # the integrand is not log-concave at its mode here
            return -math.inf
        scale = 1 / np.sqrt(spread)
        parts = []
        for x, lw in zip(self.nodes, self.log_weights, strict=True):
            at = u + math.sqrt(2) * scale * x
            logL, _, _ = self._terms(eta, at)
            hq = np.bincount(self.cluster, logL, self.G) - 0.5 * (at / tau) ** 2
            parts.append(lw + x**2 + hq)
        stacked = np.stack(parts)
        top = stacked.max(axis=0)
        total = top + np.log(np.exp(stacked - top).sum(axis=0))
        # int exp(h) du ~ sqrt(2) scale sum_q w_q exp(x_q^2 + h(u + sqrt(2) scale x_q)),
        # with the normal density's constant -log(tau sqrt(2 pi))
        per = total + np.log(math.sqrt(2) * scale) - math.log(tau * math.sqrt(2 * math.pi))
        return float(per.sum())


def _report_terms(
    channel: Any, frame: Any, data: pd.DataFrame, group: str | None
) -> tuple[_Array, _Array]:
    """Each row's ``Pr(report | yes) = a + b Pr(yes)`` terms, by its group's design."""
    y = report_codes(frame.y, 2, frame.response)
    keys = data.loc[frame.rows, group].to_numpy() if group is not None else None
    groups = channel.group_codes(keys, len(frame.rows))
    A, B, _, _ = channel.coefficients(np.empty(0))
    return A[groups, y], B[groups, y]


def _random_intercept(formula: str, data: pd.DataFrame) -> tuple[str, str]:
    """The formula's fixed part and its one random intercept's cluster column.

    Raises
    ------
    ValueError
        Unless the formula holds exactly one ``+ (1 | column)`` of a column of ``data``.
    """
    found = _RANDOM.findall(formula)
    if len(found) != 1:
        raise ValueError("formula must hold exactly one random intercept '+ (1 | column)'")
    if found[0] not in data.columns:
        raise ValueError(f"cluster column {found[0]!r} is not in data")
    return _RANDOM.sub("", formula).strip(), found[0]


def rr_mixed_logit(
    formula: str,
    data: pd.DataFrame,
    design: Design | Mapping[Hashable, Design],
    *,
    group: str | None = None,
    quadrature: int = DEFAULT_QUADRATURE,
    curvature: str = "observed",
) -> RRMixedLogitResult:
    """Random-intercept logistic regression of a randomized yes/no answer.

    Parameters
    ----------
    formula : str
        ``"y ~ x1 + x2 + (1 | cluster)"``: the response holds report codes 0/1; exactly
        one random-intercept term ``(1 | column)``.
    data : pandas.DataFrame
        Rows with a missing value in a used column are dropped.
    design : Design or mapping of group value to Design
        Yes/no designs; with several, ``group`` names the column choosing each row's.
    group : str, optional
        Column of design keys (designs varying by respondent: :func:`designs_by_row`).
    quadrature : int in [1, 50], default 7
        Adaptive Gauss-Hermite nodes per cluster (1 = Laplace, GLMMRR's). The default
        is 7 nodes because the random-intercept SD is where the approximation shows:
        25 clusters of 20, tau = 0.5, forced response (0.2, 0.2), 300 surveys
        (``bench/analysis_coverage.py``): tau's mean 0.385 (bias -0.115) with Laplace,
        0.447 (-0.053) with 7 nodes, at about twice the cost; 20% of fits end at tau =
        0 either way (maximum likelihood's downward bias with few clusters), which is
        what :meth:`RRMixedLogitResult.tau_interval` (profile likelihood, covering 0.963
        there against Wald's 0.920) and :meth:`~RRMixedLogitResult.tau_test` are for.
    curvature : {"observed", "expected"}, default "observed"
        What scales the quadrature around each cluster's mode: the exact second
        derivative of the cluster's log-integrand, or lme4's (and so GLMMRR's) penalised
        iteratively reweighted least squares weights ``(d mu / d eta)^2 / (mu (1 -
        mu))``, which for the randomized-response link (not canonical) differ from it.
        The two Laplace approximations differ; as ``quadrature`` grows both tend to the
        same marginal likelihood.

    Returns
    -------
    RRMixedLogitResult

    Raises
    ------
    ValueError
        For a formula without exactly one ``(1 | column)`` term, unknown columns,
        responses other than 0/1, or designs that are not yes/no.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import Warner
    >>> rng = np.random.default_rng(0)
    >>> x, school = rng.normal(size=1000), rng.integers(0, 20, 1000)
    >>> truth = rng.random(1000) < 1 / (1 + np.exp(1 - x - rng.normal(0, 0.5, 20)[school]))
    >>> design = Warner(p=0.85)
    >>> y = design.randomize(truth.astype(int), rng)
    >>> df = pd.DataFrame({"y": y, "x": x, "school": school})
    >>> fit = rr_mixed_logit("y ~ x + (1 | school)", df, design)
    >>> fit.params.round(1).to_dict()
    {'Intercept': -0.9, 'x': 0.9, 'tau': 0.4}
    """
    q = _check_options(quadrature, curvature)
    fixed, cluster_col = _random_intercept(formula, data)
    data = data[data[cluster_col].notna()]  # a row without its cluster is not used
    channel = as_channel(design)
    if channel.n_reports != 2:
        raise ValueError("rr_mixed_logit needs yes/no designs")
    frame = model_frame(fixed, data)
    rows = frame.rows
    a, b = _report_terms(channel, frame, data, group)
    labels, cluster = np.unique(data.loc[rows, cluster_col].to_numpy(), return_inverse=True)
    X = np.asarray(frame.X, dtype=np.float64)
    model = _Model(X, a, b, cluster.astype(np.intp), q, curvature)
    p = X.shape[1]

    def negll(theta: _Array) -> float:
        value = model.loglik(theta[:p], math.exp(theta[p]))
        return -value if math.isfinite(value) else 1e300

    start_fit = rr_logit(fixed, data.loc[rows], design, group=group)
    x0 = np.concatenate([start_fit.params.to_numpy()[:p], [math.log(0.5)]])
    converged, x, f0, cov_x, covariance = _optimum(negll, x0, p)
    tau = math.exp(x[p])
    model.loglik(x[:p], tau)  # the modes at the optimum
    return RRMixedLogitResult(
        params=pd.Series(np.concatenate([x[:p], [tau]]), index=[*frame.terms, "tau"]),
        covariance=covariance,
        llf=-f0,
        nobs=len(rows),
        converged=converged,
        formula=formula,
        random_effects=pd.Series(model.mode, index=pd.Index(labels, name=cluster_col)),
        quadrature=q,
        llf_without_random=start_fit.llf,
        profile=Profile(negll, x, f0, [(None, None)] * p + [(_LOG_TAU_MIN, 10.0)], gradient=False),
        x_covariance=cov_x,
    )


def _optimum(
    negll: Callable[[_Array], float], x0: _Array, p: int
) -> tuple[bool, _Array, float, _Array, _Array]:
    """``(converged, x, negll(x), covariance of x, covariance with tau for log tau)``:
    L-BFGS-B, then the observed information by finite differences and the delta method
    for ``tau = exp(x[p])``."""
    res = optimize.minimize(
        negll, x0, method="L-BFGS-B", options={"maxiter": 500, "ftol": 1e-14, "gtol": 1e-7}
    )
    x = np.asarray(res.x, dtype=np.float64)
    f0 = negll(x)
    cov_x = observed_covariance(-hessian_from_values(negll, x, f0))
    J = np.eye(x.size)
    J[p, p] = math.exp(x[p])
    return bool(res.success), x, f0, cov_x, J @ cov_x @ J.T


def _check_options(quadrature: int, curvature: str) -> int:
    """The quadrature's nodes (1..50), and a known curvature."""
    q = check_integer("quadrature", quadrature, minimum=1)
    if q > 50:
        raise ValueError(f"quadrature must be in 1..50, got {q}")
    if curvature not in ("observed", "expected"):
        raise ValueError(f"curvature must be 'observed' or 'expected', got {curvature!r}")
    return q

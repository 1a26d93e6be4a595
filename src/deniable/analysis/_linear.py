"""Linear regression with randomized binary predictors (as RRreg's ``RRlin``).

The outcome ``y`` is observed directly; predictors ``X_1..X_m`` (yes/no) are known only
through their randomized reports ``R_j``, each with its own design. The model (van den
Hout & Kooiman 2006; Heck & Moshagen 2018, Sec. 3.3, a finite mixture over the
unobserved cell ``c = (x_1, .., x_m)`` of the randomized predictors)::

    y = b0 + sum_j b_j x_j + z' g + e,   e ~ N(0, sigma^2),   Pr(c) = pi_c,
    Pr(R_j = r | X_j = x) = P_j[r, x]  (each design, randomized independently),

so each row's likelihood is ``sum_c pi_c prod_j P_j[r_j, c_j] phi(y; b0 + b'c + z'g,
sigma)``. The joint prevalence ``pi`` over the ``2^m`` cells is free (RRlin's), and
common to all rows. It is maximised over ``(b, log sigma, softmax logits of pi)`` by
L-BFGS with the exact gradient (the complete-data score weighted by each row's
posterior over the cells), started from ordinary least squares on the reports; standard
errors come from the observed information (the Jacobian of the exact gradient by
central differences) and the delta method. ``confidence_interval(method="profile")``
gives profile-likelihood intervals (:mod:`deniable.analysis`), which keep their
coverage where a weak design makes the Wald interval's normal approximation fail, and
``method="rstar"`` those of the modified signed root (Skovgaard 1996, Severini 1999),
which corrects the profile's own small-sample error.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize

from .._fitting import LikelihoodFit, Profile, model_frame, normal_only
from ..estimation import Summary
from ..mechanisms import Design, is_design
from ._group_channels import GroupModel, KnownChannel
from ._linear_model import (
    _cells,
    _covariance_within_bounds,
    _exp,
    _label,
    _logistic,
    _Model,
    _objective,
    _Predictor,
    _prevalence,
    _projected_gradient,
    _row_terms,
    _undefined_at_bound,
)
from ._prevalence import estimate_channel

__all__ = ["MAX_RR_PREDICTORS", "RRLinearResult", "rr_linear"]

_Array = NDArray[np.float64]
_LOG_2PI = math.log(2 * math.pi)
#: Randomized predictors in one fit at most (their joint prevalence has 2^m cells).
MAX_RR_PREDICTORS = 6


@dataclass(frozen=True)
class RRLinearResult(LikelihoodFit):
    """A fitted linear regression with a randomized binary predictor.

    Attributes
    ----------
    params : pandas.Series
        Coefficients by term (a randomized predictor's term is the effect of a true
        "yes"), then ``sigma`` (residual standard deviation) and ``pi`` (prevalence of
        the randomized predictor), or with several randomized predictors one
        ``pi[c]`` per cell of their joint prevalence (``2^m`` of them, summing to 1).
    covariance : ndarray, shape (k, k)
        Inverse observed information (delta method for ``sigma`` and ``pi``).
    llf : float
    nobs : int
    converged : bool
    formula : str
    design : Design, GroupModel or dict of them
    channel_parameters : pandas.Series
        With ``channel_fit="plug_in"``, the group models' parameters estimated first
        and held fixed (empty otherwise).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from deniable import ForcedResponse
    >>> from deniable.analysis import rr_linear
    >>> rng = np.random.default_rng(0)
    >>> design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    >>> truth = rng.random(2000) < 0.3
    >>> data = pd.DataFrame({"y": 1.0 + 2.0 * truth + rng.normal(size=2000),
    ...                      "r": design.randomize(truth, rng)})
    >>> fit = rr_linear("y ~ r", data, design, "r")
    >>> fit.params[["Intercept", "r"]].round(0).tolist()
    [1.0, 2.0]
    """

    design: Design | GroupModel | dict[str, Design | GroupModel] = field(repr=False)
    profile: Profile | None = field(default=None, repr=False, compare=False)
    x_covariance: _Array | None = field(default=None, repr=False, compare=False)
    channel_parameters: pd.Series = field(
        default_factory=lambda: pd.Series(dtype=np.float64), repr=False, compare=False
    )

    def _profile_spec(self) -> tuple[Profile, dict[str, tuple[int, Callable[[float], float]]]]:
        """Coefficients and free channel parameters on their own coordinate, ``sigma``
        through ``exp`` of ``log sigma``, one predictor's ``pi`` through the logistic of
        its logit; the cells of several predictors' joint prevalence have no coordinate
        of their own (Wald)."""
        if self.profile is None:
            return super()._profile_spec()
        labels = [str(t) for t in self.params.index]
        p = labels.index("sigma")
        terms: dict[str, tuple[int, Callable[[float], float]]] = {
            t: (i, float) for i, t in enumerate(labels[:p])
        }
        terms["sigma"] = (p, _exp)
        n_pi = sum(t.startswith("pi") for t in labels[p + 1 :])
        if n_pi == 1:
            terms["pi"] = (p + 1, _logistic)
        K = 2 if n_pi == 1 else n_pi
        # free channel parameters: their own coordinates, after the prevalence logits
        for i, t in enumerate(labels[p + 1 + n_pi :]):
            terms[t] = (p + K + i, float)
        return self.profile, terms

    def _x_covariance(self, profile: Profile) -> _Array:
        assert self.x_covariance is not None
        return self.x_covariance

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Model, fit statistics and the coefficient table (Wald intervals), and a note
        naming the terms whose profile-likelihood interval disagrees with Wald's."""
        normal_only(method)
        note = self.profile_note(confidence_level)
        return Summary(
            self._summary(
                "Linear regression with randomized predictors (finite-mixture maximum likelihood)",
                confidence_level,
                f"Design: {self.design!r}",
            )
            + (f"\nNote: {note}" if note else "")
        )


def rr_linear(
    formula: str,
    data: pd.DataFrame,
    design: Design | GroupModel | Mapping[str, Design | GroupModel],
    rr_predictor: str | None = None,
    *,
    group: str | None = None,
    channel_fit: str = "joint",
    max_iter: int = 1000,
) -> RRLinearResult:
    """Linear regression of a clear outcome on randomized yes/no predictors and clear
    covariates (RRreg's ``RRlin``).

    Parameters
    ----------
    formula : str
        ``"y ~ r + z1 + z2"``: outcome on the left; each randomized predictor must
        appear as a plain term on the right (no transformation or interaction of it).
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    design : Design, GroupModel, or mapping of column name to either
        The yes/no design (2 truths, 2 reports) of ``rr_predictor``, or a yes/no
        :class:`~deniable.analysis.GroupModel` over randomization groups, possibly
        with unknown parameters (the stochastic lie detector in two groups); or, for
        one or several randomized predictors, each predictor's column and design (at
        most ``MAX_RR_PREDICTORS``).
    rr_predictor : str, optional
        Column holding the report codes 0/1 of the randomized predictor, with a single
        ``design``; omitted with a mapping.
    group : str, optional
        Column holding each row's randomization group (values of the group models'
        ``group_labels``); required when a design is a GroupModel of several groups.
    channel_fit : {"joint", "plug_in"}, default "joint"
        How a group model's unknown parameters (e.g. the SLD's honesty ``t``) are
        estimated. ``"joint"``: by maximum likelihood together with the regression
        (they appear in ``params`` with standard errors that carry their
        uncertainty). ``"plug_in"``: first from the reports alone
        (:func:`~deniable.analysis.estimate_channel`), then held fixed, as RRreg's
        ``RRlin`` does (Heck & Moshagen 2018); the standard errors then ignore that
        step, and the parameters are in ``channel_parameters``.
    max_iter : int, default 1000
        Optimiser iterations at most.

    Returns
    -------
    RRLinearResult
        With one randomized predictor ``params`` ends with ``sigma`` and ``pi`` (its
        prevalence); with several, with ``sigma`` and one ``pi[c]`` per cell ``c`` of
        their joint prevalence, labelled ``"0:1"`` and so on in the order of the mapping
        (the first predictor's answer first); then, with ``channel_fit="joint"``, each
        free channel parameter (``"t"``, or ``"t[r]"`` with several predictors).

    Raises
    ------
    ValueError
        For a design that is not yes/no, a predictor missing from the formula or the
        data, reports other than 0/1, a missing or superfluous ``rr_predictor``, more
        than ``MAX_RR_PREDICTORS`` randomized predictors, a missing ``group`` column
        or a group value that is no randomization group, an unknown ``channel_fit``,
        or fewer rows than parameters.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import Warner
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.random(2000) < 0.3
    >>> design = Warner(p=0.8)
    >>> y = 1.0 + 2.0 * truth + rng.normal(0, 1, 2000)
    >>> df = pd.DataFrame({"r": design.randomize(truth.astype(int), rng), "y": y})
    >>> rr_linear("y ~ r", df, design, "r").params.round(1).to_dict()
    {'Intercept': 1.0, 'r': 2.0, 'sigma': 1.0, 'pi': 0.3}
    """
    designs = _named_designs(design, rr_predictor, channel_fit)
    if group is not None and group not in data.columns:
        raise ValueError(f"group {group!r} is not in data")
    channels = _yes_no_channels(designs, data)
    rows = data if group is None else data[data[group].notna()]
    frame = model_frame(formula, rows)
    names = list(designs)
    X, y, cols, reports = _matrices(frame, names)
    group_values = None if group is None else rows.loc[frame.rows, group].to_numpy()
    cells = _cells(len(names))
    n, p = X.shape
    predictors, free_names, shares, slopes, k = _predictors(
        names, channels, reports, group_values, channel_fit, offset=p + cells.shape[0]
    )
    if n <= k:
        raise ValueError(f"need more than {k} complete rows, got {n}")
    x0, bounds = _start(X, y, cols, cells, predictors, shares, slopes)
    model = _Model(X, cols, cells, y, predictors)
    fitted = _Fitted(
        _minimize(model, x0, bounds, max_iter), model, bounds, names, free_names, predictors
    )
    kept = design if is_design(design) or isinstance(design, GroupModel) else designs
    return _linear_result(fitted, frame.terms, formula, kept)


class _Fitted(NamedTuple):
    """What the optimiser returned, with what reading it needs."""

    res: Any
    model: _Model
    bounds: list[tuple[float | None, float | None]]
    names: list[str]
    free_names: list[str]
    predictors: list[_Predictor]


def _minimize(model: _Model, x0: NDArray[np.float64], bounds: Any, max_iter: int) -> Any:
    """L-BFGS-B on the negative log-likelihood and its gradient, tight tolerances."""
    return optimize.minimize(
        _objective,
        x0,
        args=(model,),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-9},
    )


def _linear_result(fitted: _Fitted, terms: list[str], formula: str, design: Any) -> RRLinearResult:
    """The result of a fit: the reported terms and their covariance, the likelihood, the
    convergence (the projected gradient where L-BFGS stops short), the profile."""
    res, model, bounds, names, free_names, predictors = fitted
    n = model.X.shape[0]
    reported = _in_reported_terms(res, model, bounds, terms, names, free_names)
    params, covariance, cov_x = reported
    fixed = {
        _label(t, name, len(names)): float(v)
        for name, pred in zip(names, predictors, strict=True)
        if pred.free is None
        for t, v in zip(pred.channel.param_names, pred.theta, strict=True)
    }
    x = np.asarray(res.x, dtype=np.float64)
    return RRLinearResult(
        params=params,
        covariance=covariance,
        llf=-float(res.fun),
        nobs=n,
        # L-BFGS can stop on a line search that no longer gains in double precision:
        # what matters is that the gradient vanishes at the optimum (or points out of
        # the box at a bound)
        converged=bool(res.success or _projected_gradient(res.jac, x, bounds) <= 1e-6 * n),
        formula=formula,
        design=design,
        profile=Profile(
            functools.partial(_objective, model=model),
            x,
            float(res.fun),
            bounds,
            rows=functools.partial(_row_terms, model=model),
        ),
        x_covariance=cov_x,
        channel_parameters=pd.Series(fixed, dtype=np.float64),
    )


def _matrices(frame: Any, names: list[str]) -> tuple[_Array, _Array, list[int], _Array]:
    """The model matrix, the outcome, the randomized predictors' columns and their
    reports (each a term of the formula, holding codes 0 and 1)."""
    for name in names:
        if name not in frame.terms:
            raise ValueError(
                f"rr_predictor {name!r} must be a term of the formula; terms: {frame.terms}"
            )
    cols = [frame.terms.index(name) for name in names]
    X = np.asarray(frame.X, dtype=np.float64)
    y = np.asarray(frame.y, dtype=np.float64)
    reports = X[:, cols]
    for j, name in enumerate(names):
        if not np.isin(reports[:, j], (0.0, 1.0)).all():
            raise ValueError(f"column {name!r} must hold report codes 0 and 1")
    return X, y, cols, reports


def _named_designs(
    design: Design | GroupModel | Mapping[str, Design | GroupModel],
    rr_predictor: str | None,
    channel_fit: str,
) -> dict[str, Design | GroupModel]:
    """Each randomized predictor's design, by its column (checked)."""
    if isinstance(design, Mapping):
        if rr_predictor is not None:
            raise ValueError("rr_predictor is given by the keys of design when it is a mapping")
        designs: dict[str, Design | GroupModel] = dict(design)
    else:
        if rr_predictor is None:
            raise ValueError("rr_predictor must name the randomized column for a single design")
        designs = {rr_predictor: design}
    if not 1 <= len(designs) <= MAX_RR_PREDICTORS:
        raise ValueError(
            f"design must name 1..{MAX_RR_PREDICTORS} randomized predictors, got {len(designs)}"
        )
    if channel_fit not in ("joint", "plug_in"):
        raise ValueError(f"channel_fit must be 'joint' or 'plug_in', got {channel_fit!r}")
    return designs


def _yes_no_channels(
    designs: dict[str, Design | GroupModel], data: pd.DataFrame
) -> dict[str, GroupModel]:
    """Each predictor's channel: its group model, or its known yes/no design's."""
    channels: dict[str, GroupModel] = {}
    for name, d in designs.items():
        if isinstance(d, GroupModel):
            if d.n_reports != 2:
                raise ValueError(f"design of {name!r} must be a yes/no group model (2 reports)")
            channels[name] = d
        elif not is_design(d) or d.n_truths != 2 or d.n_reports != 2:
            raise ValueError(f"design of {name!r} must be a yes/no design (2 truths, 2 reports)")
        else:
            channels[name] = KnownChannel(d)
        if name not in data.columns:
            raise ValueError(f"rr_predictor {name!r} is not in data")
    return channels


def _predictors(
    names: list[str],
    channels: dict[str, GroupModel],
    reports: _Array,
    group_values: Any,
    channel_fit: str,
    offset: int,
) -> tuple[list[_Predictor], list[str], _Array, _Array, int]:
    """Each randomized predictor with its channel parameters (a first fit by group where
    they are unknown; free at ``x[free]`` in a joint fit), the names of the free ones,
    each predictor's first prevalence and mean slope, and the number of parameters."""
    m = len(names)
    n = reports.shape[0]
    predictors: list[_Predictor] = []
    free_names: list[str] = []
    shares = np.empty(m)
    slopes = np.empty(m)
    for j, name in enumerate(names):
        channel = channels[name]
        by_group = group_values if channel.n_groups > 1 else None
        codes = channel.group_codes(by_group, n)
        r = reports[:, j].astype(np.intp)
        if channel.param_names:
            first = estimate_channel(channel, r, by_group)
            theta = np.asarray(first.params.iloc[1:], dtype=np.float64)
            shares[j] = float(first.params["pi"])
        else:
            theta = np.zeros(0)
            shares[j] = float("nan")
        free = None
        if channel.param_names and channel_fit == "joint":
            free = slice(offset, offset + theta.size)
            offset += theta.size
            free_names += [_label(t, name, m) for t in channel.param_names]
        predictors.append(_Predictor(channel, codes, r, theta, free))
        A, B, _, _ = channel.coefficients(theta)
        slopes[j] = float(np.mean(B[codes, 1]))
        if not channel.param_names:
            shares[j] = (r.mean() - float(np.mean(A[codes, 1]))) / slopes[j]
    return predictors, free_names, shares, slopes, offset


def _start(
    X: _Array,
    y: _Array,
    cols: list[int],
    cells: _Array,
    predictors: list[_Predictor],
    shares: _Array,
    slopes: _Array,
) -> tuple[_Array, list[tuple[float | None, float | None]]]:
    """The starting point and the box: least squares on the reports, each report
    share de-biased for its predictor's prevalence, the cells independent."""
    p, K = X.shape[1], cells.shape[0]
    b0, *_ = np.linalg.lstsq(X, y, rcond=None)
    for j in range(len(cols)):
        if abs(slopes[j]) > 1e-9:
            b0[cols[j]] /= slopes[j]
    shares = np.clip(shares, 0.05, 0.95)
    pi0 = np.prod(np.where(cells == 1, shares, 1 - shares), axis=1)
    sigma0 = float(np.std(y - X @ b0)) or 1.0
    logits0 = np.log(pi0[1:] / pi0[0])
    thetas = [pred.theta for pred in predictors if pred.free is not None]
    x0 = np.concatenate([b0, [math.log(sigma0)], logits0, *thetas])
    bounds: list[tuple[float | None, float | None]] = [(None, None)] * (p + K)
    for pred in predictors:
        if pred.free is not None:
            bounds += list(pred.channel.bounds)
    return x0, bounds


def _in_reported_terms(
    res: Any,
    model: _Model,
    bounds: list[tuple[float | None, float | None]],
    terms: list[str],
    names: list[str],
    free_names: list[str],
) -> tuple[pd.Series, _Array, _Array]:
    """The fit in the terms reported: coefficients, sigma, the cells' prevalences (of
    "yes" alone with one predictor) and the free channel parameters, with their
    covariance by the delta method (undefined at a bound), and the optimiser's."""
    x = np.asarray(res.x, dtype=np.float64)
    p, K, m = model.X.shape[1], model.cells.shape[0], len(names)
    k = x.size
    cov_x, at_bound = _covariance_within_bounds(x, model, bounds)
    b, sigma = x[:p], math.exp(x[p])
    pi = _prevalence(x[p + 1 : p + K])
    # delta method to (b, sigma, pi): d pi_c / d theta_d = pi_c (1[c = d] - pi_d)
    dpi = (np.diag(pi) - np.outer(pi, pi))[:, 1:]
    if m == 1:  # report the prevalence of "yes" only
        dpi, values, labels = dpi[1:], pi[1:], ["pi"]
    else:
        values = pi
        labels = ["pi[" + ":".join(str(int(v)) for v in cell) + "]" for cell in model.cells]
    q = k - (p + K)
    J = np.zeros((p + 1 + len(values) + q, k))
    J[:p, :p] = np.eye(p)
    J[p, p] = sigma
    J[p + 1 : p + 1 + len(values), p + 1 : p + K] = dpi
    J[p + 1 + len(values) :, p + K :] = np.eye(q)
    params = pd.Series(
        np.concatenate([b, [sigma], values, x[p + K :]]),
        index=[*terms, "sigma", *labels, *free_names],
    )
    covariance = _undefined_at_bound(J @ cov_x @ J.T, at_bound - (p + K) + (p + 1 + len(values)))
    return params, covariance, cov_x

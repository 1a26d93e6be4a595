"""Maximum likelihood regression of the list experiment with several sensitive items
(Blair & Imai 2012, section 3.3; R's ``list::ictreg`` with ``treat`` taking values
``0..T``).

Each respondent is randomised to the control list (``treat = 0``) or to one of ``T``
treated lists, list ``m`` holding the control items and sensitive item ``m``. The
model: the control count ``Y(0) ~ Binomial(J, g(x'psi))``, the same for every list,
and the answer to sensitive item ``m``, ``Z_m | Y(0) = y0 ~ Bernoulli(g(x'delta_m +
a_m(y0)))``, with ``g`` the logistic function. ``a_m`` is how the sensitive answer may
depend on the control count (``condition``): ``"none"``, ``a_m = 0`` (each item is the
constrained model of Imai 2011); ``"level"``, ``a_m(y0) = alpha_m y0``; ``"indicators"``,
one ``alpha_{m,v}`` for each ``v`` in ``0..J-1`` and ``a_m(J) = 0``. A report of list
``m`` is ``Y(0) + Z_m``, so its likelihood mixes ``Z_m = 1, Y(0) = y - 1`` and ``Z_m =
0, Y(0) = y``:

``P(y) = g_m(y - 1) Bin(y - 1; J, h) + (1 - g_m(y)) Bin(y; J, h)``.

The observed-data log-likelihood is maximised directly with its analytic score (R runs
EM); standard errors come from the observed information, as R's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize, special

from .._fitting import inverse_information, maximise_score, model_frame, score_hessian
from ._item_count import check_list_counts, refuse_channel
from ._liars import log_binomial
from ._list_fit import ListFit

__all__ = ["MultiItemListResult", "list_regression_multi"]

Condition = Literal["none", "level", "indicators"]
#: Treated lists at most (each a sensitive item).
MAX_LISTS = 50


class _MultiLikelihood:
    """Observed-data log-likelihood and score of the multiple-item design."""

    def __init__(
        self,
        y: NDArray[np.float64],
        arm: NDArray[np.int64],
        x: NDArray[np.float64],
        j: int,
        lists: int,
        condition: Condition,
    ):
        self.y, self.arm, self.x, self.j, self.lists = y, arm, x, j, lists
        self.condition = condition
        self.k = x.shape[1]
        self.extra = {"none": 0, "level": 1, "indicators": j}[condition]
        self.rows = [np.flatnonzero(arm == m) for m in range(1, lists + 1)]

    @property
    def size(self) -> int:
        return int(self.k + self.lists * (self.k + self.extra))

    def _shift(self, alpha: NDArray[np.float64], y0: NDArray[np.float64]) -> NDArray[np.float64]:
        """``a_m(y0)`` at each control count of ``y0``."""
        if self.condition == "none":
            return np.zeros_like(y0)
        if self.condition == "level":
            return np.asarray(alpha[0] * y0, dtype=np.float64)
        full = np.append(alpha, 0.0)
        return np.asarray(full[np.clip(y0, 0, self.j).astype(np.int64)], dtype=np.float64)

    def _alpha_design(self, y0: NDArray[np.float64]) -> NDArray[np.float64]:
        """The derivative of ``a_m(y0)`` in each ``alpha``: shape (len(y0), extra)."""
        if self.condition == "level":
            return np.asarray(y0[:, None], dtype=np.float64)
        if self.condition == "indicators":
            return np.asarray(y0[:, None] == np.arange(self.j)[None, :], dtype=np.float64)
        return np.zeros((y0.size, 0))

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        k, j, x, y = self.k, self.j, self.x, self.y
        psi = theta[:k]
        eta = x @ psi
        h = special.expit(eta)
        score = np.zeros_like(theta)
        control = self.arm == 0
        ll = float(log_binomial(y[control], j, eta[control]).sum())
        score[:k] = x[control].T @ (y[control] - j * h[control])
        width = k + self.extra
        for m, rows in enumerate(self.rows):
            par = theta[k + m * width : k + (m + 1) * width]
            delta, alpha = par[:k], par[k:]
            xm, ym, em, hm = x[rows], y[rows], eta[rows], h[rows]
            a = ym - 1  # Y(0) under Z = 1
            ea = xm @ delta + self._shift(alpha, a)
            eb = xm @ delta + self._shift(alpha, ym)
            la = np.where(a >= 0, -np.logaddexp(0, -ea) + log_binomial(a, j, em), -np.inf)
            lb = np.where(ym <= j, -np.logaddexp(0, eb) + log_binomial(ym, j, em), -np.inf)
            lm = np.logaddexp(la, lb)
            ll += float(lm.sum())
            w = np.exp(la - lm)  # P(Z = 1 | report)
            score[:k] += xm.T @ (w * (a - j * hm) + (1 - w) * (ym - j * hm))
            sa = w * (1 - special.expit(ea))  # d/d(linear predictor) of the Z = 1 term
            sb = (1 - w) * special.expit(eb)  # of the Z = 0 term, with a minus
            base = k + m * width
            score[base : base + k] = xm.T @ (sa - sb)
            if self.extra:
                da, db = self._alpha_design(np.maximum(a, 0)), self._alpha_design(ym)
                score[base + k : base + width] = da.T @ sa - db.T @ sb
        return ll, score


def _start(lik: _MultiLikelihood) -> NDArray[np.float64]:
    """Logistic-binomial fit of the control counts for psi; each item's intercept from
    its difference in means, everything else 0."""
    x, y, j, control = lik.x, lik.y, lik.j, lik.arm == 0

    def nll(psi: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        eta = x[control] @ psi
        yc = y[control]
        score = x[control].T @ (yc - j * special.expit(eta))
        return -float(log_binomial(yc, j, eta).sum()), -score

    psi = optimize.minimize(nll, np.zeros(lik.k), jac=True, method="BFGS").x
    parts = [psi]
    for rows in lik.rows:
        delta = np.zeros(lik.k + lik.extra)
        diff = float(np.clip(y[rows].mean() - y[control].mean(), 0.02, 0.98))
        delta[0] = special.logit(diff)
        parts.append(delta)
    return np.concatenate(parts)


@dataclass(frozen=True)
class MultiItemListResult(ListFit):
    """A fitted list-experiment regression with several sensitive items, on the common
    base (:class:`ListFit`).

    Attributes
    ----------
    params : pandas.Series
        ``control.<term>`` (psi), then for each treated list ``v`` (its ``treat``
        value) ``sensitive.<v>.<term>`` (delta_v) and, by ``condition``,
        ``sensitive.<v>.y0`` (level) or ``sensitive.<v>.y0=<c>`` for ``c`` in
        ``0..J-1`` (indicators).
    covariance : numpy.ndarray of float64, shape (k, k)
        The inverse observed information.
    llf : float
        The log-likelihood at the maximum.
    prevalence : pandas.Series
        Per sensitive item (indexed by ``treat`` value): mean over all rows of
        ``P(Z_v = 1 | x)``, the control count integrated out.
    prevalence_se : pandas.Series
        Their delta-method standard errors (covariates held at the sample).
    n : int
    items : int
    converged : bool
        The score's largest entry is below 1e-6 at the estimate.
    condition : str

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(2)
    >>> n = 3000
    >>> arm = rng.integers(0, 3, n)
    >>> x = rng.normal(size=n)
    >>> z = np.where(arm == 1, rng.random(n) < 0.3, rng.random(n) < 0.6) & (arm > 0)
    >>> data = pd.DataFrame({"y": rng.binomial(3, 0.4, n) + z, "x": x, "treat": arm})
    >>> fit = list_regression_multi("y ~ x", data, treat="treat", items=3)
    >>> fit.prevalence.round(2).tolist()
    [0.28, 0.55]
    """

    llf: float
    prevalence: pd.Series
    prevalence_se: pd.Series
    condition: str

    TITLE = "List-experiment regression, several sensitive items (Blair & Imai 2012)"

    def _summary_lines(self) -> list[str]:
        items = ", ".join(
            f"{label}: {self.prevalence[label]:.4f} (SE {self.prevalence_se[label]:.4f})"
            for label in self.prevalence.index
        )
        return [f"Condition: {self.condition}   Log-likelihood: {self.llf:.4f}",
                f"Prevalence: {items}"]  # fmt: skip

    def _dict_fields(self) -> dict[str, Any]:
        return {
            "llf": self.llf,
            "condition": self.condition,
            "prevalence": {str(k): float(v) for k, v in self.prevalence.items()},
            "prevalence_se": {str(k): float(v) for k, v in self.prevalence_se.items()},
        }


def _arms(values: NDArray[np.generic], column: str) -> tuple[NDArray[np.int64], list[int | str]]:
    """Arm 0 for the control list, 1..T for the treated lists in sorted order of their
    labels. Numbers: 0 is the control list, positive integers the treated ones. Text
    (R's factor): ``"control"`` (any case) is the control list, the other labels
    (lower-cased, as R does) the treated ones. Raises naming ``column`` otherwise."""
    series = pd.Series(values)
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raw = series.to_numpy(dtype=np.float64)
        bad = ~np.isfinite(raw) | (raw != np.round(raw)) | (raw < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{column} must hold 0 (control list) or a positive integer naming the "
                f"treated list; row {i} holds {raw[i]:g}"
            )
        control = raw == 0
        keys: NDArray[np.generic] = raw
    else:
        keys = series.astype(str).str.lower().to_numpy()
        control = keys == "control"
        if not control.any():
            shown = ", ".join(sorted(set(map(str, keys)))[:10])
            raise ValueError(
                f"{column} must hold 'control' for the control list beside the treated "
                f"lists' labels; got {shown}"
            )
    labels = np.unique(keys[~control])
    if not 1 <= labels.size <= MAX_LISTS:
        raise ValueError(
            f"{column} must name 1..{MAX_LISTS} treated lists beside the control, got {labels.size}"
        )
    arm = np.where(control, 0, np.searchsorted(labels, keys) + 1)
    shown_labels = [int(v) if isinstance(v, float) else str(v) for v in labels.tolist()]
    return arm.astype(np.int64), shown_labels


def multi_frame(
    formula: str, data: pd.DataFrame, treat: str, items: int
) -> tuple[Any, NDArray[np.float64], NDArray[np.int64], list[int | str], int]:
    """The model frame of a several-item list experiment with its counts, each row's
    list (0 the control list, 1..T the treated ones), the lists' labels and ``J``, all
    checked (:func:`check_list_counts`, :func:`_arms`, at least 2 reports a list).

    Raises
    ------
    ValueError
        Naming the column, value or list at fault.
    """
    if treat not in data.columns:
        raise ValueError(
            f"treat must name a column of data; columns: {', '.join(map(str, data.columns))}"
        )
    frame = model_frame(formula, data)
    arm, labels = _arms(data.loc[frame.rows, treat].to_numpy(), "treat")
    y, _, j = check_list_counts(frame.y, (arm > 0).astype(np.int64), items)
    sizes = np.bincount(arm, minlength=len(labels) + 1)
    if sizes.min() < 2:
        small = int(np.argmin(sizes))
        raise ValueError(
            f"each list needs at least 2 reports; treat = {(['control', *labels])[small]} has "
            f"{int(sizes[small])}"
        )
    return frame, y, arm, labels, j


def list_regression_multi(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    condition: Condition = "none",
    max_iter: int = 50,
    channel: Any = None,
) -> MultiItemListResult:
    """Maximum likelihood regression of a list experiment with several sensitive items,
    each on its own treated list (Blair & Imai 2012; module text).

    Parameters
    ----------
    formula : str
        ``"count ~ covariates"`` (Wilkinson formula): the covariates of the control
        model and of every sensitive item's model.
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    treat : str
        Column naming each respondent's list: 0 or ``"control"`` for the control list,
        a positive integer or another label for the treated list that held that
        sensitive item (R's ``treat``; 1..50 treated lists).
    items : int in 1..50
        ``J``, the number of control items (every list holds them).
    condition : {"none", "level", "indicators"}, default "none"
        How a sensitive answer may depend on the control count (R's
        ``multi.condition``).
    max_iter : int, default 50
        Newton steps at most after BFGS.
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    MultiItemListResult
        Coefficients, observed-information standard errors, log-likelihood and each
        item's estimated prevalence.

    Raises
    ------
    ValueError
        On a malformed formula or column, a numeric ``treat`` value that is not 0 or a
        positive integer, a text ``treat`` without ``"control"``, a count outside
        ``0..J`` (control) or ``0..J+1`` (treated), a list with fewer than 2 reports,
        an unknown ``condition``, or data that identify no model (its information
        singular, named).

    Examples
    --------
    See :class:`MultiItemListResult`. On R's ``multi`` data, ``"y ~ male + college +
    age + south + south:age"`` with ``items=3`` and ``condition="level"`` reproduces
    Blair & Imai (2012, Table 3).
    """
    refuse_channel("list_regression_multi", channel)
    if condition not in ("none", "level", "indicators"):
        raise ValueError(f"condition must be 'none', 'level' or 'indicators', got {condition!r}")
    frame, y, arm, labels, j = multi_frame(formula, data, treat, items)
    lik = _MultiLikelihood(y, arm, frame.X, j, len(labels), condition)
    theta = maximise_score(lik.value_and_score, _start(lik), max_iter)
    ll, score = lik.value_and_score(theta)
    cov = inverse_information(
        -score_hessian(lik.value_and_score, theta), "the observed information"
    )
    extra = {"none": [], "level": ["y0"], "indicators": [f"y0={v}" for v in range(j)]}
    names = [f"control.{s}" for s in frame.terms]
    for v in labels:
        names += [f"sensitive.{v}.{s}" for s in [*frame.terms, *extra[condition]]]
    prevalence, prevalence_se = _prevalences(lik, theta, np.asarray(cov, dtype=np.float64))
    return MultiItemListResult(
        params=pd.Series(theta, index=names),
        covariance=np.asarray(cov, dtype=np.float64),
        llf=ll,
        prevalence=pd.Series(prevalence, index=labels),
        prevalence_se=pd.Series(prevalence_se, index=labels),
        n=len(y),
        items=j,
        condition=condition,
        converged=bool(np.abs(score).max() < 1e-6),
    )


def _prevalences(
    lik: _MultiLikelihood, theta: NDArray[np.float64], cov: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each item's mean ``P(Z = 1 | x) = sum_y0 Bin(y0; J, h) g(x'delta + a(y0))`` over
    the rows, and its delta-method SE (gradient by central differences of the mean)."""
    k, j, width = lik.k, lik.j, lik.k + lik.extra
    y0 = np.arange(j + 1, dtype=np.float64)

    def mean(th: NDArray[np.float64], m: int) -> float:
        eta = lik.x @ th[:k]
        par = th[k + m * width : k + (m + 1) * width]
        weights = np.exp(log_binomial(y0[None, :], j, eta[:, None]))
        shift = lik._shift(par[k:], y0)
        g = special.expit((lik.x @ par[:k])[:, None] + shift[None, :])
        return float((weights * g).sum(axis=1).mean())

    values, ses = [], []
    for m in range(lik.lists):
        values.append(mean(theta, m))
        grad = np.zeros_like(theta)
        for i in [*range(k), *range(k + m * width, k + (m + 1) * width)]:
            step = 1e-6 * max(1.0, abs(theta[i]))
            up, down = theta.copy(), theta.copy()
            up[i] += step
            down[i] -= step
            grad[i] = (mean(up, m) - mean(down, m)) / (2 * step)
        ses.append(math.sqrt(max(float(grad @ cov @ grad), 0.0)))
    return np.array(values), np.array(ses)

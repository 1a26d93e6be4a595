"""The revealed social desirability bias (Blair & Imai 2012; R's ``predict.ictreg(direct.glm
= ...)``): the list experiment's predicted prevalence minus the prevalence a logistic
regression of a direct question predicts, each averaged over its own rows.

A positive bias says the direct question is under-reported. The two fits must come from
different respondents (the list experiment's and the direct question's samples, as in
R's ``mis`` example): their estimates are then independent and the difference's
variance is the sum of the two. Where the same people answered both, the two are
correlated and this variance is wrong; we cannot check that from the fits.

The direct fit is :func:`~deniable.analysis.rr_logit` with the
:class:`~deniable.mechanisms.Direct` design (plain logistic regression), or with a randomized
design: then the gap is between two indirect techniques.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._validation import check_confidence_level, renamed_keywords
from ..list_experiment import (
    ListRegressionResult,
    average_prediction,
    check_simulation,
    prediction_rows,
    simulated_averages,
    summarise_draws,
    wald_row,
)
from ._regression import RRLogitResult

__all__ = ["social_desirability_bias"]


def _check_fits(list_fit: object, direct_fit: object) -> None:
    if not isinstance(list_fit, ListRegressionResult):
        raise ValueError(
            "list_fit must be a list_regression or list_least_squares result, got "
            f"{type(list_fit).__name__}"
        )
    if not isinstance(direct_fit, RRLogitResult):
        raise ValueError(f"direct_fit must be an rr_logit result, got {type(direct_fit).__name__}")


_Model = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], bool]


def _floats(a: object) -> NDArray[np.float64]:
    return np.asarray(a, dtype=np.float64)


def _models(
    list_fit: ListRegressionResult,
    direct_fit: RRLogitResult,
    data: pd.DataFrame | None,
    direct_data: pd.DataFrame | None,
) -> tuple[_Model, _Model]:
    """Each fit's ``(rows, coefficients, covariance, linear)`` for its prediction."""
    width = sum(1 for name in list_fit.params.index if name.startswith("sensitive."))
    p = direct_fit.n_coefficients
    x_list = list_fit.fitted if data is None else prediction_rows(list_fit.spec, data)
    if x_list is None:
        raise ValueError("this list fit kept no rows: give data to predict on")
    cov = list_fit.covariance[:width, :width]
    return (
        (_floats(x_list), _floats(list_fit.params.to_numpy()[:width]), _floats(cov),
         list_fit.linear),
        (_floats(direct_fit.design_matrix(direct_data)),
         _floats(direct_fit.params.to_numpy()[:p]), _floats(direct_fit.covariance[:p, :p]),
         False),
    )  # fmt: skip


@renamed_keywords(level="confidence_level", seed="rng")
def social_desirability_bias(
    list_fit: ListRegressionResult,
    direct_fit: RRLogitResult,
    *,
    data: pd.DataFrame | None = None,
    direct_data: pd.DataFrame | None = None,
    confidence_level: float = 0.95,
    method: Literal["delta", "simulation"] = "delta",
    draws: int = 10_000,
    rng: np.random.Generator | int | None = None,
) -> pd.DataFrame:
    """The list experiment's average prediction minus a direct question's (module text).

    Parameters
    ----------
    list_fit : ListRegressionResult
        :func:`list_regression` or :func:`list_least_squares` on the list sample.
    direct_fit : RRLogitResult
        ``rr_logit("answer ~ <the same covariates>", direct_sample, Direct())``.
    data, direct_data : pandas.DataFrame, optional
        The rows to average each prediction over (default: each fit's own rows).
    confidence_level : float in (0, 1), default 0.95
    method : {"delta", "simulation"}, default "delta"
        The delta method, or R's simulation from each estimate's normal law (King, Tomz
        & Wittenberg 2000), the two fits drawn independently (:mod:`._prediction`).
    draws : int in 2..10,000,000, default 10,000
    rng : numpy.random.Generator or int, optional
        The simulation's generator or seed.

    Returns
    -------
    pandas.DataFrame
        Rows ``"list"``, ``"direct"`` and ``"difference"`` (list minus direct); columns
        ``estimate``, ``std_error``, ``lower``, ``upper``: prevalences in [0, 1] with
        Wald intervals on the logit scale (plain for a linear list fit and for the
        difference), or, simulated, the draws' mean, SD and quantiles.

    Raises
    ------
    ValueError
        On fits of the wrong kind, a ``confidence_level`` outside (0, 1), an unknown ``method``,
        ``draws`` out of range, or rows lacking a covariate.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable.mechanisms import Direct
    >>> from deniable.analysis import list_regression, rr_logit
    >>> rng = np.random.default_rng(3)
    >>> n = 3000
    >>> x, t = rng.normal(size=n), rng.integers(0, 2, n)
    >>> z = rng.random(n) < 1 / (1 + np.exp(1 - 0.5 * x))
    >>> lists = pd.DataFrame({"y": rng.binomial(3, 0.5, n) + t * z, "x": x, "treat": t})
    >>> x2 = rng.normal(size=n)
    >>> said = rng.random(n) < 0.5 / (1 + np.exp(1 - 0.5 * x2))  # half the yeses hide
    >>> direct = pd.DataFrame({"said": said.astype(int), "x": x2})
    >>> bias = social_desirability_bias(
    ...     list_regression("y ~ x", lists, treat="treat", items=3),
    ...     rr_logit("said ~ x", direct, Direct()))
    >>> bias.round(2).loc["difference", ["estimate", "std_error"]].tolist()
    [0.15, 0.03]
    """
    _check_fits(list_fit, direct_fit)
    check_simulation(method, draws)
    level = check_confidence_level(confidence_level)
    models = _models(list_fit, direct_fit, data, direct_data)
    if method == "simulation":
        generator = np.random.default_rng(rng)
        sims = [simulated_averages([x], b, v, lin, draws, generator)[0] for x, b, v, lin in models]
        table = [summarise_draws(s, level) for s in (*sims, sims[0] - sims[1])]
    else:
        parts = []
        for x, b, v, lin in models:
            mean, grad = average_prediction(x, b, lin)
            parts.append((mean, math.sqrt(max(float(grad @ v @ grad), 0.0))))
        (m_l, s_l), (m_d, s_d) = parts
        table = [
            wald_row(m_l, s_l, level, probability=not list_fit.linear),
            wald_row(m_d, s_d, level, probability=True),
            wald_row(m_l - m_d, math.hypot(s_l, s_d), level, probability=False),
        ]
    return pd.DataFrame(
        table,
        index=["list", "direct", "difference"],
        columns=["estimate", "std_error", "lower", "upper"],
    )

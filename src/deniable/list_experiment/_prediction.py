"""Predictions averaged over rows from a fitted list-experiment model: the sensitive
item's prevalence (Imai 2011, Figure 1) and, for the joint model, the outcome with the
sensitive answer set to 0 and to 1 (Imai, Park & Greene 2015, Figure 2).

An average prediction ``m(theta) = mean_i h(x_i' theta)`` (``h`` the logistic function,
or the identity for a linear model) is estimated two ways:

* ``"delta"``: ``m`` at the estimate, its standard error ``sqrt(grad' V grad)`` with
  ``grad = mean_i h'(x_i' theta) x_i`` and ``V`` the estimate's covariance (the delta
  method);
* ``"simulation"``: R's ``predict.ictreg.joint`` (King, Tomz & Wittenberg 2000):
  ``theta^(d) ~ Normal(theta, V)`` for ``d = 1..D``, the estimate is the mean of
  ``m(theta^(d))``, the standard error their standard deviation and the interval their
  2.5% and 97.5% quantiles. Both values of the sensitive answer share the draws, so the
  difference's draws are ``m_1(theta^(d)) - m_0(theta^(d))``. R draws afresh for each
  value, which makes the difference's standard error ``sqrt(se_0^2 + se_1^2)``, as if
  the two averages were independent; on its documented examples they are negatively
  correlated and R's is too small (docs/analysis.md).

For a linear ``h`` the two agree in the limit of many draws; for the logistic ``h`` they
differ by the curvature, ``O(V)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special, stats

from .._fitting import PredictedPrevalence

__all__ = [
    "GroupLayout",
    "answer_table",
    "average_prediction",
    "check_simulation",
    "delta_prevalence",
    "prediction_rows",
    "simulated_averages",
    "summarise_draws",
    "wald_row",
]

#: Draws of the coefficients at most in one block of :func:`simulated_averages`
#: (a block holds ``rows x block`` predictions).
BLOCK = 2_000
#: Most draws a simulation takes.
MAX_DRAWS = 10_000_000


def prediction_rows(spec: Any, data: pd.DataFrame) -> NDArray[np.float64]:
    """The covariate rows of ``data`` under a fit's formula, shape (rows, terms).

    Raises
    ------
    ValueError
        If the fit kept no formula, ``data`` lacks a covariate, or no row is complete.
    """
    if spec is None:
        raise ValueError("this fit kept no formula: predict on its own rows")
    try:
        x = np.asarray(spec.get_model_matrix(data), dtype=np.float64)
    except Exception as exc:  # formulaic's errors name the missing column
        raise ValueError(f"data must hold the formula's covariates: {exc}") from None
    if x.shape[0] == 0:
        raise ValueError("data has no complete row to predict on")
    return x


def average_prediction(
    x: NDArray[np.float64], coef: NDArray[np.float64], linear: bool
) -> tuple[float, NDArray[np.float64]]:
    """``mean_i h(x_i' coef)`` and its gradient in ``coef``, shape (terms,)."""
    eta = x @ coef
    if linear:
        return float(eta.mean()), x.mean(axis=0)
    g = special.expit(eta)
    return float(g.mean()), (g * (1 - g)) @ x / len(g)


def delta_prevalence(
    rows: tuple[NDArray[np.float64], NDArray[np.float64] | None],
    coef: NDArray[np.float64],
    cov: NDArray[np.float64],
    linear: bool,
) -> PredictedPrevalence:
    """The average over ``rows[0]`` (minus that over ``rows[1]`` where given) with its
    delta-method standard error."""
    mean, grad = average_prediction(rows[0], coef, linear)
    if rows[1] is not None:
        other, other_grad = average_prediction(rows[1], coef, linear)
        mean, grad = mean - other, grad - other_grad
    se = math.sqrt(max(float(grad @ cov @ grad), 0.0))
    return PredictedPrevalence(mean, se, difference=rows[1] is not None)


def check_simulation(method: object, draws: object) -> None:
    """``method`` is ``"delta"`` or ``"simulation"``, ``draws`` an int in 2..MAX_DRAWS.

    Raises
    ------
    ValueError
        Naming the field and the values allowed.
    """
    if method not in ("delta", "simulation"):
        raise ValueError(f"method must be 'delta' or 'simulation', got {method!r}")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)):
        raise ValueError(f"draws must be an int in 2..{MAX_DRAWS:,}, got {draws!r}")
    if not 2 <= draws <= MAX_DRAWS:
        raise ValueError(f"draws must be in 2..{MAX_DRAWS:,}, got {draws}")


def simulated_averages(
    xs: list[NDArray[np.float64]],
    coef: NDArray[np.float64],
    cov: NDArray[np.float64],
    linear: bool,
    draws: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """``m_k(theta^(d)) = mean_i h(x_{k,i}' theta^(d))`` for each design ``x_k`` of ``xs``
    and each draw ``theta^(d) ~ Normal(coef, cov)``, the same draws for every ``k``:
    shape (len(xs), draws). Drawn in blocks of :data:`BLOCK`, so memory is
    ``rows x BLOCK`` whatever ``draws``."""
    # R's MASS::mvrnorm draws through the covariance's eigen decomposition; so do we
    # (a covariance only positive semi-definite is accepted, its negative roundoff cut).
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    out = np.empty((len(xs), draws))
    for start in range(0, draws, BLOCK):
        size = min(BLOCK, draws - start)
        theta = coef + rng.standard_normal((size, coef.size)) @ root.T
        for k, x in enumerate(xs):
            eta = x @ theta.T
            out[k, start : start + size] = (eta if linear else special.expit(eta)).mean(axis=0)
    return out


def summarise_draws(values: NDArray[np.float64], level: float) -> tuple[float, float, float, float]:
    """Mean, standard deviation (``ddof = 1``) and the central ``level`` quantiles (R's
    type 7, numpy's default) of one row of draws."""
    tail = (1 - level) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(values.mean()), float(values.std(ddof=1)), float(low), float(high)


def wald_row(
    estimate: float, se: float, level: float, probability: bool
) -> tuple[float, float, float, float]:
    """``(estimate, se, low, high)``: a Wald interval, on the logit scale for a
    probability (inside (0, 1), as :class:`PredictedPrevalence`), plain otherwise."""
    z = float(stats.norm.ppf(0.5 + level / 2))
    if not probability:
        return estimate, se, estimate - z * se, estimate + z * se
    interval = PredictedPrevalence(estimate, se).confidence_interval(level)
    return estimate, se, interval.low, interval.high


def answer_table(
    designs: list[NDArray[np.float64]],
    model: tuple[NDArray[np.float64], NDArray[np.float64], bool],
    level: float,
    method: str,
    simulation: tuple[int, int | np.random.Generator | None],
) -> pd.DataFrame:
    """The averages over the two ``designs`` (the answer set to 0, and to 1) of a model
    ``(coefficients, covariance, linear)`` and their difference, by ``method`` with
    ``simulation = (draws, seed)``: rows ``"sensitive = 0"``, ``"sensitive = 1"``,
    ``"difference"``; columns ``estimate``, ``std_error``, ``lower``, ``upper``."""
    coef, cov, linear = model
    if method == "simulation":
        draws, seed = simulation
        sims = simulated_averages(designs, coef, cov, linear, draws, np.random.default_rng(seed))
        table = [summarise_draws(v, level) for v in (*sims, sims[1] - sims[0])]
    else:
        (m0, g0), (m1, g1) = (average_prediction(d, coef, linear) for d in designs)
        rows = ((m0, g0, not linear), (m1, g1, not linear), (m1 - m0, g1 - g0, False))
        table = [
            wald_row(m, math.sqrt(max(float(g @ cov @ g), 0.0)), level, probability)
            for m, g, probability in rows
        ]
    return pd.DataFrame(
        table,
        index=["sensitive = 0", "sensitive = 1", "difference"],
        columns=["estimate", "std_error", "lower", "upper"],
    )


@dataclass(frozen=True)
class GroupLayout:
    """What a multilevel fit's prediction needs (``ListHierarchicalResult``): the
    formula's spec and the slopes' positions in it, the group levels
    (:class:`~deniable.list_experiment._levels.Level`, the first naming each row's group
    column and holding the groups' covariates), the items' labels, the draws' columns
    and the fitted rows' slopes' covariates (n, p) and group codes (n,)."""

    spec: Any
    keep: list[int]
    levels: list[Any]
    labels: list[Any]
    columns: list[str]
    fitted: tuple[NDArray[np.float64], NDArray[np.int64]]

    def rows(
        self, data: pd.DataFrame, groups: list[Any]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """``data``'s slopes' covariates (n, p) and group codes (n,)."""
        group = self.levels[0].column
        if group not in data.columns:
            raise ValueError(f"data must hold the group column {group!r}")
        x = prediction_rows(self.spec, data)
        index = self.spec.get_model_matrix(data).index
        values = data.loc[index, group]
        codes = pd.Index(groups).get_indexer(values)
        if (codes < 0).any():
            unseen = sorted({str(v) for v in values[codes < 0]})
            raise ValueError(f"groups the fit did not see: {', '.join(unseen[:10])}")
        return x[:, self.keep], codes.astype(np.int64)

    def prevalence(
        self,
        draws: pd.DataFrame,
        rows: tuple[NDArray[np.float64], NDArray[np.int64]],
        intercepts: str,
    ) -> NDArray[np.float64]:
        """Each draw's prevalence per item over ``rows``, shape (draws, items); in blocks
        that bound the draws x rows matrix to about 10^7 entries."""
        x, codes = rows
        out = np.empty((len(draws), len(self.labels)))
        step = max(1, 10_000_000 // max(1, len(codes)))
        for i, label in enumerate(self.labels):
            m = f"sensitive.{label}"
            beta = draws[self._named(m, "")].to_numpy()
            a = (
                draws[self._named(m, "intercept[")].to_numpy()
                if intercepts == "group"
                else self._expected_intercepts(draws, m)
            )
            for start in range(0, len(draws), step):  # blocks of draws
                stop = start + step
                eta = beta[start:stop] @ x.T + a[start:stop][:, codes]
                out[start:stop, i] = special.expit(eta).mean(axis=1)
        return out

    def _expected_intercepts(self, draws: pd.DataFrame, model: str) -> NDArray[np.float64]:
        """Each draw's expected group intercepts given the level above, (draws, G):
        ``v_g' gamma`` plus, with three or four levels, the intercept of the group's
        unit above."""
        level = self.levels[0]
        a = draws[self._named(model, "group.")].to_numpy() @ level.v.T
        if level.parent is not None:
            a = a + draws[self._named(model, "level3.intercept[")].to_numpy()[:, level.parent]
        return np.asarray(a, dtype=np.float64)

    def _named(self, model: str, kind: str) -> list[str]:
        """The draws' columns of one kind of one model, in order: the slopes
        ``<model>.<term>`` (``kind=""``), ``<model>.group.<term>`` or
        ``<model>.intercept[<group>]``."""
        prefix = f"{model}.{kind}"
        names = [c for c in self.columns if c.startswith(prefix)]
        if kind:
            return names
        other = (f"{model}.group.", f"{model}.intercept[", f"{model}.sigma2",
                 f"{model}.level3.", f"{model}.level4.")  # fmt: skip
        return [c for c in names if not c.startswith(other)]

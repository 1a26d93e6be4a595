"""Multilevel Bayesian list-experiment regression: one or several sensitive items, each
model with a random intercept per group (state, village) that group-level covariates
explain (Blair, Imai & Lyall 2014; R's ``list::ictregBayesHier``, with two, three or
four levels).

For the control model (``m = 0``) and each sensitive item's model (``m = 1..K``),

``eta_mi = x_i' beta_m + a_{m, g(i)}``, ``a_{m,g} ~ Normal(v_g' gamma_m, sigma_m^2)``,

with ``x`` the covariates without an intercept (the group intercepts take its place),
``v_g`` the group-level covariates (the mean over the group's rows, as R), the control
count ``Y(0) ~ Binomial(J, g(eta_0i))`` and the sensitive answer ``Z_ki ~
Bernoulli(g(eta_ki))`` on the list that held item ``k``. Priors (R's defaults):
``beta_m ~ N(0, I)``, ``gamma_m ~ N(0, I)`` and ``sigma_m^2 ~ Scaled-Inv-chi^2(5, 1)``
(``5 * 1 / chi^2_5``). With three or four levels the groups' intercepts have, in place of
``gamma_m``'s constant, the intercept of the unit above (a district, a province), which
has a model of the same form (:mod:`~deniable.list_experiment._levels`).

The sampler augments each treated row with its answer and control count (R does the
same), then updates ``beta_m`` by block random-walk Metropolis, every group's
intercept at once by independent random-walk Metropolis steps (the groups are
independent given the rest), and ``gamma_m`` and ``sigma_m^2`` from their conjugate
normal and scaled inverse chi-squared conditionals (and the upper levels' intercepts
from theirs). The proposals adapt during burn-in
only: the block's covariance is the inverse curvature of its conditional log posterior
(refitted every 500 sweeps), scaled towards an acceptance of 0.25; each intercept's step
towards 0.44. The kept chain is a Markov chain with a fixed kernel.

R's sampler is not this posterior's: it sets the intercepts' prior precision once, from
the starting variance (1 by default), and never updates it, so the intercepts are drawn
as if ``sigma_m^2 = 1`` while ``sigma_m^2`` is drawn from them (docs/analysis.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special

from .._fitting import PosteriorMixin, hessian_from_values
from .._validation import JSON, renamed_keywords
from ..estimation import ConfidenceInterval, Summary
from ._draws import (
    batch_se,
    check_prediction,
    deprecated_credible_interval,
    draws_summary,
    posterior_table,
)
from ._item_count import refuse_channel
from ._levels import Level, LevelState, build_levels, level_columns
from ._multi_item import multi_frame
from ._prediction import GroupLayout

__all__ = ["ListHierarchicalResult", "list_bayes_hierarchical"]

#: Kept draws times parameters at most (bounds the memory of ``draws``).
MAX_CELLS = 50_000_000


@dataclass(frozen=True)
class ListHierarchicalResult(PosteriorMixin):
    """Posterior draws of a multilevel list-experiment regression, on the common base
    (:class:`~deniable.estimation.EstimateResult`: ``params``/``estimate`` the posterior
    means of every column of ``draws``, ``bse``/``std_error`` their SDs, ``conf_int()``
    and ``confidence_interval()`` the equal-tailed credible intervals, ``summary()``,
    ``to_frame()``, ``to_dict()``).

    Attributes
    ----------
    draws : pandas.DataFrame
        One row per kept draw. Columns: ``<model>.<term>`` (``beta``), ``<model>.group.
        <term>`` (``gamma``), ``<model>.sigma2`` and ``<model>.intercept[<group>]``, with
        ``<model>`` ``control`` or ``sensitive.<label>``; with three or four levels,
        the same three kinds for level ``l`` under ``<model>.level<l>.``
        (``control.level3.intercept[<district>]``); then ``prevalence.<label>``, each
        item's prevalence averaged over the rows.
    mc_se : pandas.Series
        Monte Carlo standard errors of the means (batch means, 50 batches).
    acceptance : pandas.Series
        Share of proposals accepted after burn-in: ``slopes`` (every model's slopes
        and level in one block) and, per model, over its groups' intercepts
        (``<model>.intercepts``).
    groups : list
        The groups in the order of the intercepts.
    layout : GroupLayout
        What :meth:`predicted_prevalence` needs to build new rows.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(2)
    >>> n, groups = 2000, 10
    >>> g = rng.integers(0, groups, n)
    >>> u = rng.normal(0, 0.5, groups)
    >>> t = rng.integers(0, 2, n)
    >>> x = rng.normal(size=n)
    >>> z = rng.random(n) < 1 / (1 + np.exp(-(-1 + 0.8 * x + u[g])))
    >>> data = pd.DataFrame({"y": rng.binomial(3, 0.4, n) + t * z, "x": x, "treat": t,
    ...                      "g": g})
    >>> fit = list_bayes_hierarchical("y ~ x", data, treat="treat", items=3, group="g",
    ...                               draws=200, burn_in=300, rng=1)
    >>> round(float(fit.params["sensitive.1.x"]), 1), round(float(fit.bse["sensitive.1.x"]), 1)
    (0.8, 0.1)
    """

    draws: pd.DataFrame
    mc_se: pd.Series
    acceptance: pd.Series
    groups: list[Any]
    layout: GroupLayout | None = field(default=None, repr=False, compare=False)

    def _draws_frame(self) -> pd.DataFrame:
        return self.draws

    def credible_interval(self, level: float = 0.95) -> ConfidenceInterval[pd.Series]:
        """The old name of :meth:`confidence_interval` (``method="bayes"``), kept one
        release with a ``DeprecationWarning``."""
        return deprecated_credible_interval(self, level)

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Posterior mean, SD, Monte Carlo SE and equal-tailed interval of every column.

        Raises
        ------
        ValueError
            For a level outside (0, 1) or a method other than ``bayes``.
        """
        table = posterior_table(self, self.mc_se, confidence_level, method)
        rates = ", ".join(f"{k} {v:.2f}" for k, v in self.acceptance.items())
        return Summary(
            f"Multilevel Bayesian list-experiment regression (Blair, Imai & Lyall 2014); "
            f"{len(self.draws):,} draws, {len(self.groups)} groups\nAcceptance: {rates}\n{table}"
        )

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape, with ``mc_se``, ``acceptance``, ``groups`` and the number
        of ``draws``."""
        return super().to_dict(confidence_level, method) | {
            "mc_se": self.mc_se.tolist(),
            "acceptance": {str(k): float(v) for k, v in self.acceptance.items()},
            "groups": [str(g) for g in self.groups],
            "draws": len(self.draws),
        }

    @renamed_keywords(level="confidence_level")
    def predicted_prevalence(
        self,
        data: pd.DataFrame | None = None,
        *,
        versus: pd.DataFrame | None = None,
        confidence_level: float = 0.95,
        intercepts: Literal["group", "level"] = "group",
    ) -> pd.DataFrame:
        """The posterior of each sensitive item's prevalence averaged over the rows of
        ``data`` (default: the fitted rows, as the ``prevalence.<label>`` draws), or of
        the difference of that average over ``data`` and over ``versus``.

        ``intercepts="group"`` gives each row its group's intercept ``a_{m,g}`` (the
        prevalence among these people, in their groups); ``"level"`` gives it the
        groups' level ``v_g' gamma_m`` instead (R's ``predict.ictregBayesHier``: a
        group's effect set to its expected value, not averaged over the intercepts'
        spread). Every row's group must be one the fit saw.

        Returns
        -------
        pandas.DataFrame
            One row per sensitive item (its label), columns ``mean``, ``sd``, ``low``,
            ``high`` (posterior mean, SD and equal-tailed credible interval at
            ``confidence_level``).

        Raises
        ------
        ValueError
            If ``data`` lacks a covariate or the group column, has no complete row or a
            group the fit did not see; ``versus`` without ``data``; ``confidence_level`` outside
            (0, 1); an unknown ``intercepts``.

        Examples
        --------
        See :class:`ListHierarchicalResult`; then
        ``fit.predicted_prevalence(data.assign(x=1), versus=data.assign(x=0))``.
        """
        level = check_prediction(data, versus, confidence_level)
        if intercepts not in ("group", "level"):
            raise ValueError(f"intercepts must be 'group' or 'level', got {intercepts!r}")
        assert self.layout is not None
        layout = self.layout
        rows = layout.fitted if data is None else layout.rows(data, self.groups)
        prevalence = layout.prevalence(self.draws, rows, intercepts)
        if versus is not None:
            prevalence -= layout.prevalence(
                self.draws, layout.rows(versus, self.groups), intercepts
            )
        return draws_summary(pd.DataFrame(prevalence, columns=layout.labels), level)


def _log_choose(j: int, k: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log C(j, k)``, ``-inf`` outside 0..j."""
    kk = np.clip(k, 0, j)
    out = special.gammaln(j + 1) - special.gammaln(kk + 1) - special.gammaln(j - kk + 1)
    return np.asarray(np.where((k >= 0) & (k <= j), out, -np.inf), dtype=np.float64)


@dataclass
class _Data:
    """The rows of each model: covariates, group codes and the binomial size."""

    x: NDArray[np.float64]  # (n, p) without the intercept
    levels: list[Level]  # the group levels from 2 up
    group: NDArray[np.int64]  # (n,) in 0..G-1
    y: NDArray[np.float64]  # (n,) reported counts
    arm: NDArray[np.int64]  # (n,) 0 control, 1..K
    j: int
    items: int

    def rows(self, m: int) -> NDArray[np.int64]:
        """The rows model ``m`` is fitted on: every row for the control model."""
        return np.arange(len(self.y)) if m == 0 else np.flatnonzero(self.arm == m)


class _Chain:
    """The sampler's state and its updates (module text)."""

    def __init__(self, d: _Data, start: NDArray[np.float64], priors: tuple[float, ...]) -> None:
        """``start``: each model's intercept, shape (items + 1,); slopes start at 0."""
        self.d = d
        models, p, groups = d.items + 1, d.x.shape[1], len(d.levels[0].units)
        self.beta = np.zeros((models, p))
        self.a = np.repeat(start[:, None], groups, axis=1)
        self.beta_prec = priors[0]
        self.up = LevelState(d.levels, start, (priors[1], priors[2], priors[3]))
        self.index = [d.rows(m) for m in range(models)]
        self.treated = d.arm > 0
        # the binomial coefficients of Y(0) = y (control, or Z = 0) and y - 1 (Z = 1)
        with np.errstate(invalid="ignore"):
            self.c0 = _log_choose(d.j, d.y)
            self.c1 = _log_choose(d.j, d.y - 1)
        blocks = []
        for m in range(models):  # the proposal from the curvature at the start
            x = np.column_stack([d.x[self.index[m]], np.ones(len(self.index[m]))])
            h = special.expit(start[m])
            size = d.j if m == 0 else 1
            info = size * h * (1 - h) * x.T @ x + self.beta_prec * np.eye(p + 1)
            blocks.append(np.linalg.inv(info))
        width = models * (p + 1)
        cov = np.zeros((width, width))
        for m, block in enumerate(blocks):
            cov[m * (p + 1) : (m + 1) * (p + 1), m * (p + 1) : (m + 1) * (p + 1)] = block
        self.root = np.linalg.cholesky(cov) * (2.38 / math.sqrt(width))
        self.scale = 1.0
        self.a_step = np.full((models, groups), 0.5)
        self.eta = np.asarray(self.beta @ d.x.T + self.a[:, d.group], dtype=np.float64)
        every = np.arange(len(d.y))
        # each row's log-likelihood at the current state, kept up to date by every step
        self.ll = self.row_loglik(every, self.eta[0], self.eta[d.arm, every])

    def row_loglik(self, rows: NDArray[np.int64], e0: NDArray[np.float64],
                   ez: NDArray[np.float64]) -> NDArray[np.float64]:  # fmt: skip
        """Each row's log-likelihood with its answer summed out: ``sum_z P(z) Bin(y - z;
        J, g(e0))`` on a treated row, ``Bin(y; J, g(e0))`` on a control row."""
        y, j = self.d.y[rows], self.d.j
        log_h, log_1h = -np.logaddexp(0.0, -e0), -np.logaddexp(0.0, e0)
        b0 = self.c0[rows] + y * log_h + (j - y) * log_1h
        b1 = self.c1[rows] + (y - 1) * log_h + (j - y + 1) * log_1h
        mixed = np.logaddexp(b1 - np.logaddexp(0.0, -ez), b0 - np.logaddexp(0.0, ez))
        return np.asarray(np.where(self.treated[rows], mixed, b0), dtype=np.float64)

    def _loglik(
        self, m: int, rows: NDArray[np.int64], eta_m: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Rows' log-likelihood with model ``m``'s linear predictor set to ``eta_m``."""
        arm = self.d.arm[rows]
        if m == 0:
            return self.row_loglik(rows, eta_m, self.eta[arm, rows])
        return self.row_loglik(rows, self.eta[0, rows], eta_m)

    def sweep(self, rng: np.random.Generator) -> tuple[bool, NDArray[np.float64]]:
        """One iteration; returns the slopes' acceptance and the intercepts'
        acceptances (models, groups)."""
        slopes_ok = self._slopes_step(rng)
        d = self.d
        models, groups = self.a.shape
        a_ok = np.zeros((models, groups))
        for m in range(models):
            rows = self.index[m]
            x, g = d.x[rows], d.group[rows]
            a_ok[m] = self._intercept_step(m, (rows, x @ self.beta[m], g), rng)
            self.eta[m] = d.x @ self.beta[m] + self.a[m, d.group]
            self.up.update(m, self.a[m], rng)
        return slopes_ok, a_ok

    def _block_change(
        self, step: NDArray[np.float64]
    ) -> tuple[float, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """For ``step`` (models, p + 1), slopes and shift: the change of the log
        posterior, the new slopes, the new linear predictors and the rows' new
        log-likelihoods."""
        d = self.d
        p = self.beta.shape[1]
        new, shift = self.beta + step[:, :p], step[:, p]
        eta = self.eta + step[:, :p] @ d.x.T + shift[:, None]
        rows = np.arange(len(d.y))
        ll = self.row_loglik(rows, eta[0], eta[d.arm, rows])
        diff = float((ll - self.ll).sum())
        diff -= 0.5 * self.beta_prec * float((new**2).sum() - (self.beta**2).sum())
        level = self.up.top_constant
        diff -= 0.5 * self.up.gamma_prec * float(((level + shift) ** 2 - level**2).sum())
        return diff, new, eta, ll

    def _slopes_step(self, rng: np.random.Generator) -> bool:
        """Every model's slopes with a shift of its intercepts and of gamma's intercept
        (the intercepts' prior is unchanged by it), in one block: the control and the
        sensitive models share the treated rows, so their coefficients move together."""
        models, p = self.beta.shape
        z = rng.standard_normal(self.root.shape[0])
        step = (self.scale * (self.root @ z)).reshape(models, p + 1)
        diff, new, eta, ll = self._block_change(step)
        if math.log(rng.random()) >= diff:
            return False
        self.beta, self.eta, self.ll = new, eta, ll
        self.a += step[:, p][:, None]
        self.up.shift(step[:, p])
        return True

    def fit_proposal(self) -> None:
        """Burn-in only: the block's proposal ``N(0, (2.38^2 / d) H^-1)`` with ``H`` the
        negative Hessian of the block's conditional log posterior here (central
        differences); kept as it was where ``H`` is not positive definite."""
        shape = (self.beta.shape[0], self.beta.shape[1] + 1)
        width = shape[0] * shape[1]
        hessian = hessian_from_values(
            lambda s: self._block_change(s.reshape(shape))[0], np.zeros(width), 0.0
        )
        try:
            root = np.linalg.cholesky(np.linalg.inv(-(hessian + hessian.T) / 2))
        except np.linalg.LinAlgError:
            return
        self.root = np.asarray(root * (2.38 / math.sqrt(width)), dtype=np.float64)

    def _intercept_step(
        self,
        m: int,
        where: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]],
        rng: np.random.Generator,
    ) -> NDArray[np.float64]:
        """Every group's intercept at once: the groups' log-likelihoods are separate."""
        rows, xb, g = where
        groups = self.a.shape[1]
        old = self.a[m]
        new = old + self.a_step[m] * rng.standard_normal(groups)
        current = self.ll[rows]
        proposed = self._loglik(m, rows, xb + new[g])
        change = proposed - current
        diff = np.bincount(g, weights=change, minlength=groups)
        mean = self.up.mean(m)
        diff -= ((new - mean) ** 2 - (old - mean) ** 2) / (2 * self.up.s2[0][m])
        ok = np.log(rng.random(groups)) < diff
        self.a[m] = np.where(ok, new, old)
        self.ll[rows] = np.where(ok[g], proposed, current)
        return np.asarray(ok, dtype=np.float64)

    def adapt(self, rates: tuple[float, NDArray[np.float64]]) -> None:
        """Burn-in only: the block's scale towards an acceptance of 0.25, and each
        intercept's step towards 0.44."""
        slopes_rate, a_rate = rates
        self.scale *= math.exp(float(np.clip(slopes_rate - 0.25, -0.3, 0.3)) * 2)
        self.a_step = np.asarray(
            self.a_step * np.exp(np.clip(a_rate - 0.44, -0.3, 0.3) * 2), dtype=np.float64
        )


def _check_counts(draws: object, burn_in: object, thin: object) -> None:
    for name, value, low in (("draws", draws, 100), ("burn_in", burn_in, 0), ("thin", thin, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _priors(
    coef_precision: float, group_coef_precision: float, variance_prior: Any
) -> tuple[float, ...]:
    try:
        nu0, s0 = (float(v) for v in variance_prior)
    except (TypeError, ValueError):
        raise ValueError(
            f"variance_prior must be (degrees of freedom, scale), got {variance_prior!r}"
        ) from None
    for name, value in (("coef_precision", coef_precision),
                        ("group_coef_precision", group_coef_precision),
                        ("variance_prior's degrees of freedom", nu0),
                        ("variance_prior's scale", s0)):  # fmt: skip
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(coef_precision), float(group_coef_precision), nu0, s0


def _columns(
    labels: list[Any], terms: list[str], levels: list[Level]
) -> tuple[list[str], list[str]]:
    """The draws' columns and the models' names."""
    models = ["control", *(f"sensitive.{v}" for v in labels)]
    cols = [f"{m}.{t}" for m in models for t in terms] + level_columns(models, levels)
    return [*cols, *(f"prevalence.{v}" for v in labels)], models


def _run(
    chain: _Chain, lengths: tuple[int, int, int], rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Burn in (adapting every 100 sweeps), then keep every ``thin``-th of ``draws``
    sweeps: the kept rows, shape (draws, columns), and the acceptance rates (beta block
    and intercepts, per model) after burn-in."""
    burn_in, draws, thin = lengths
    d = chain.d
    models = d.items + 1
    a_rate = np.zeros_like(chain.a)
    slopes_rate = 0.0
    accepted = np.zeros(models + 1)
    out = []
    for sweep in range(burn_in + draws * thin):  # a Markov chain: each sweep needs the last
        slopes_ok, a_ok = chain.sweep(rng)
        if sweep < burn_in:
            a_rate += a_ok
            slopes_rate += slopes_ok
            if (sweep + 1) % 100 == 0:
                if (sweep + 1) % 500 == 0 or sweep + 1 == burn_in - burn_in % 100:
                    chain.fit_proposal()
                chain.adapt((slopes_rate / 100, a_rate / 100))
                a_rate[:], slopes_rate = 0, 0.0
            continue
        accepted[0] += slopes_ok
        accepted[1:] += a_ok.mean(axis=1)
        if (sweep - burn_in + 1) % thin == 0:
            prevalence = special.expit(chain.eta[1:]).mean(axis=1)
            out.append(np.concatenate([chain.beta.ravel(), chain.up.row(chain.a), prevalence]))
    return np.asarray(out), accepted / (draws * thin)


def _starts(y: Any, arm: Any, j: int, sensitive: int) -> NDArray[np.float64]:
    """The chain's start: the logit of the control items' share, and of each sensitive
    item's difference in means (each clipped to [0.02, 0.98])."""
    share0 = float(np.clip(y[arm == 0].mean() / j, 0.02, 0.98))
    starts = [special.logit(share0)]
    for k in range(1, sensitive + 1):
        gap = float(np.clip(y[arm == k].mean() - y[arm == 0].mean(), 0.02, 0.98))
        starts.append(special.logit(gap))
    return np.asarray(starts, dtype=np.float64)


@renamed_keywords(seed="rng")
def list_bayes_hierarchical(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    group: str | Sequence[str],
    group_formula: str | Sequence[str] = "~ 1",
    draws: int = 2_000,
    burn_in: int = 2_000,
    thin: int = 1,
    rng: np.random.Generator | int | None = None,
    coef_precision: float = 1.0,
    group_coef_precision: float = 1.0,
    variance_prior: tuple[float, float] = (5.0, 1.0),
    channel: Any = None,
) -> ListHierarchicalResult:
    """Sample the posterior of a multilevel list-experiment regression, with two, three
    or four levels (module text; :mod:`~deniable.list_experiment._levels`).

    Parameters
    ----------
    formula : str
        ``"count ~ covariates"``; an intercept is dropped (the groups' intercepts take
        its place).
    data : pandas.DataFrame
        One row per respondent; rows missing a used column are dropped.
    treat : str
        Column: 0 or ``"control"`` for the control list, another value per sensitive
        item's list (:func:`list_regression_multi`); one item or several.
    items : int in 1..50
        ``J``, the number of control items.
    group : str or sequence of 1..3 str
        Column naming each row's group (2..10,000 groups); several, lowest level first
        (``["village", "district"]``: three levels), each level nested in the next.
    group_formula : str or sequence of str, default "~ 1"
        Each level's covariates (``"~ age"``: each unit's mean age), with an intercept
        (dropped below the top level, where the unit above takes its place); one
        formula for every level, or one per group column.
    draws : int >= 100, default 2,000
        Draws kept.
    burn_in : int >= 0, default 2,000
        Sweeps discarded first, during which the proposals adapt.
    thin : int >= 1, default 1
        Keep every ``thin``-th sweep.
    rng : numpy.random.Generator or int, optional
        The chain's generator or its seed (analysis: nothing a respondent sends).
    coef_precision, group_coef_precision : float > 0, default 1
        Precision of the normal priors (mean 0) on ``beta_m`` and ``gamma_m`` (R's
        defaults).
    variance_prior : (float, float), default (5, 1)
        Degrees of freedom ``nu0`` and scale ``s0`` of ``sigma_m^2 ~ nu0 s0 /
        chi^2_nu0`` (R's defaults).
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    ListHierarchicalResult

    Raises
    ------
    ValueError
        On a malformed formula, column, count or list (:func:`list_regression_multi`),
        a ``group`` that is no column, is missing on a used row, has fewer than 2
        groups or is not nested in the next, a malformed ``group_formula`` or one whose
        count does not match ``group``, a non-positive prior, or draws, burn-in
        or thin out of range or too many cells to keep.

    Examples
    --------
    See :class:`ListHierarchicalResult`.
    """
    refuse_channel("list_bayes_hierarchical", channel)
    _check_counts(draws, burn_in, thin)
    priors = _priors(coef_precision, group_coef_precision, variance_prior)
    frame, y, arm, labels, j = multi_frame(formula, data, treat, items)
    keep = [i for i, t in enumerate(frame.terms) if t != "Intercept"]
    codes, levels = build_levels(data, frame.rows, group, group_formula)
    d = _Data(frame.X[:, keep], levels, codes, y, arm, j, len(labels))
    columns, models = _columns(labels, [frame.terms[i] for i in keep], levels)
    if draws * len(columns) > MAX_CELLS:
        raise ValueError(f"draws x parameters must be at most {MAX_CELLS:,}, got "
                         f"{draws:,} x {len(columns):,}")  # fmt: skip
    chain = _Chain(d, _starts(y, arm, j, len(labels)), priors)
    kept, rates = _run(chain, (burn_in, draws, thin), np.random.default_rng(rng))
    frame_draws = pd.DataFrame(kept, columns=columns)
    acceptance = pd.Series(rates, index=["slopes", *(f"{m}.intercepts" for m in models)])
    return ListHierarchicalResult(
        draws=frame_draws,
        mc_se=pd.Series(batch_se(kept), index=columns),
        acceptance=acceptance,
        groups=levels[0].units,
        layout=GroupLayout(frame.spec, keep, levels, labels, columns, (d.x, codes)),
    )

"""Bayesian list-experiment regression (Blair & Imai 2012, section 3.4; R's
``list::ictregBayes``: one sensitive item with ``constrained.single`` ``"full"``,
``"intercept"`` or ``"none"``, or several with ``constrained.multi``).

The constrained model of :mod:`._item_count_ml` (the sensitive answer ``Z ~
Bernoulli(g(x'delta))``, the control count ``Y(0) ~ Binomial(J, g(x'psi))``, ``g`` the
logistic function) with independent normal priors, ``delta ~ N(mu_delta, A_delta^-1)``
and ``psi ~ N(mu_psi, A_psi^-1)`` (R's defaults: means 0, precisions ``0.01 I``).

The posterior is sampled by random-walk Metropolis on all coefficients at once, the
proposal ``N(0, (2.38^2 / d) S)`` with ``S`` the inverse of the log posterior's negative
Hessian at its mode (Roberts, Gelman & Gilks 1997's scale for a near-normal target of
``d`` dimensions); R updates ``delta`` and ``psi`` in two blocks with proposals the user
tunes. The chain starts at the mode. The unconstrained model (``control="none"``) is far
from normal, so its proposal is learned from the burn-in instead (adaptive Metropolis,
:func:`_adaptive_metropolis`). Monte Carlo standard errors of the posterior means
are batch means over 50 batches. Draws come from a seeded generator: this is analysis,
nothing a respondent sends.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._fitting import PosteriorMixin, inverse_information, maximise_score, score_hessian
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
from ._item_count_ml import _Likelihood, _start, list_frame
from ._multi_item import _MultiLikelihood, multi_frame
from ._multi_item import _start as multi_start
from ._prediction import prediction_rows

__all__ = ["ListBayesResult", "list_bayes"]

#: Draws kept at most (bounds the memory of ``draws``: 10^7 x d float64).
MAX_DRAWS = 10_000_000
#: Burn-in at least for ``control="none"``, whose proposal is learned from it.
MIN_ADAPTIVE_BURN_IN = 10_000


#: Each draw's prevalence per item averaged over rows ``x``: ``(draws (b, d), x (n, k))
#: -> (b, items)``.
Prevalence = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True)
class ListBayesResult(PosteriorMixin):
    """Posterior draws of a Bayesian list-experiment regression, on the common base
    (:class:`~deniable.estimation.EstimateResult`: ``params``/``estimate`` the posterior
    means, ``bse``/``std_error`` the posterior SDs, ``conf_int()`` and
    ``confidence_interval()`` the equal-tailed credible intervals, ``summary()``,
    ``to_frame()``, ``to_dict()``).

    Attributes
    ----------
    draws : pandas.DataFrame
        One row per kept draw, one column per coefficient (``sensitive.<term>``,
        ``control.<term>``).
    mc_se : pandas.Series
        Monte Carlo standard errors of the posterior means (batch means, 50 batches).
    prevalence : pandas.Series
        Per sensitive item (indexed by its ``treat`` value), the posterior mean of its
        prevalence over the rows, ``mean_i P(Z = 1 | x_i)``.
    prevalence_sd : pandas.Series
        Their posterior standard deviations.
    acceptance : float
        Share of proposals accepted, in [0, 1].
    spec : formulaic.ModelSpec
        The formula's model spec, which builds rows of new data.
    fitted : numpy.ndarray of float64, shape (rows, terms)
        The fitted rows' covariates.
    prevalence_model : callable
        ``(draws (b, coefficients), rows (n, terms)) -> (b, items)``: each draw's
        prevalence per item averaged over the rows (:meth:`predicted_prevalence`).

    Examples
    --------
    >>> from deniable.data import list_example
    >>> data = list_example().data  # y (a count of 0..4), x, treat
    >>> fit = list_bayes("y ~ x", data, treat="treat", items=3, draws=1000, burn_in=500,
    ...                  rng=5)
    >>> round(float(fit.prevalence[1]), 2), round(fit.acceptance, 2)
    (0.35, 0.28)
    """

    draws: pd.DataFrame
    mc_se: pd.Series
    prevalence: pd.Series
    prevalence_sd: pd.Series
    acceptance: float
    spec: Any = field(default=None, repr=False, compare=False)
    fitted: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)
    prevalence_model: Prevalence | None = field(default=None, repr=False, compare=False)

    def _draws_frame(self) -> pd.DataFrame:
        return self.draws

    def credible_interval(self, level: float = 0.95) -> ConfidenceInterval[pd.Series]:
        """The old name of :meth:`confidence_interval` (``method="bayes"``), kept one
        release with a ``DeprecationWarning``."""
        return deprecated_credible_interval(self, level)

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Posterior mean, SD, Monte Carlo SE and equal-tailed interval by coefficient,
        then each item's prevalence.

        Raises
        ------
        ValueError
            For a level outside (0, 1) or a method other than ``bayes``.
        """
        table = posterior_table(self, self.mc_se, confidence_level, method)
        sds = self.prevalence_sd.tolist()
        items = ", ".join(
            f"{k}: {v:.4f} (SD {sd:.4f})"
            for (k, v), sd in zip(self.prevalence.items(), sds, strict=True)
        )
        return Summary(
            f"Bayesian list-experiment regression (Blair & Imai 2012); {len(self.draws):,} "
            f"draws, acceptance {self.acceptance:.2f}\nPrevalence: {items}\n{table}"
        )

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape, with ``mc_se``, ``prevalence``, ``prevalence_sd``,
        ``acceptance`` and the number of ``draws``."""
        return super().to_dict(confidence_level, method) | {
            "mc_se": self.mc_se.tolist(),
            "prevalence": {str(k): float(v) for k, v in self.prevalence.items()},
            "prevalence_sd": {str(k): float(v) for k, v in self.prevalence_sd.items()},
            "acceptance": self.acceptance,
            "draws": len(self.draws),
        }

    @renamed_keywords(level="confidence_level")
    def predicted_prevalence(
        self,
        data: pd.DataFrame | None = None,
        *,
        versus: pd.DataFrame | None = None,
        confidence_level: float = 0.95,
    ) -> pd.DataFrame:
        """The posterior of each sensitive item's prevalence averaged over the rows of
        ``data`` (default: the fitted rows, as :attr:`prevalence`), ``mean_i P(Z = 1 |
        x_i)`` at every draw; with ``versus``, of the difference of that average over
        ``data`` and over ``versus`` (the same people with a covariate set to two
        values). R's ``predict.ictregBayes(newdata =, newdata.diff =)``, whose
        difference is 0 whatever the data (it averages ``newdata``'s predictions
        twice; docs/analysis.md), and whose interval is ``mean +- t sd``.

        Returns
        -------
        pandas.DataFrame
            One row per sensitive item (indexed as :attr:`prevalence`), columns
            ``mean``, ``sd`` (posterior mean and SD) and ``low``, ``high`` (the
            equal-tailed credible interval at ``confidence_level``).

        Raises
        ------
        ValueError
            If ``data`` lacks a covariate or has no complete row, ``versus`` is given
            without ``data``, or ``confidence_level`` is outside (0, 1).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(2)
        >>> n = 2000
        >>> t, south = rng.integers(0, 2, n), rng.integers(0, 2, n)
        >>> z = rng.random(n) < np.where(south == 1, 0.4, 0.1)
        >>> data = pd.DataFrame({"y": rng.binomial(3, 0.5, n) + t * z, "south": south,
        ...                      "treat": t})
        >>> fit = list_bayes("y ~ south", data, treat="treat", items=3, draws=500,
        ...                  burn_in=500, rng=1)
        >>> gap = fit.predicted_prevalence(data.assign(south=1),
        ...                                versus=data.assign(south=0))
        >>> round(float(gap["mean"].iloc[0]), 1)
        0.3
        """
        level = check_prediction(data, versus, confidence_level)
        assert self.prevalence_model is not None and self.fitted is not None
        chain = self.draws.to_numpy()
        x = self.fitted if data is None else prediction_rows(self.spec, data)
        draws = _prevalence_draws(self.prevalence_model, chain, x)
        if versus is not None:
            draws = draws - _prevalence_draws(
                self.prevalence_model, chain, prediction_rows(self.spec, versus)
            )
        return draws_summary(pd.DataFrame(draws, columns=self.prevalence.index), level)


def _prevalence_draws(
    prevalence: Prevalence, chain: NDArray[np.float64], x: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``prevalence`` over ``chain``'s draws, in blocks that bound the draws x rows
    matrix to about 10^7 entries, shape (draws, items)."""
    per_block = max(1, 10_000_000 // max(1, x.shape[0]))
    blocks = np.array_split(chain, max(1, -(-chain.shape[0] // per_block)))
    return np.concatenate([prevalence(block, x) for block in blocks])


def _prior(value: ArrayLike | float, k: int, name: str) -> NDArray[np.float64]:
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (k,)).copy()
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    return arr


@dataclass(frozen=True)
class _Model:
    """A log-likelihood with its score, a start, the coefficients' names, the sensitive
    items' labels, each draw's prevalence per item averaged over rows ``x`` (shape
    (draws, items)), the formula and the fitted rows."""

    value_and_score: Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]]
    start: NDArray[np.float64]
    names: list[str]
    labels: list[int | str]
    prevalence: Prevalence
    spec: Any
    x: NDArray[np.float64]


def _model(
    formula: str,
    data: pd.DataFrame,
    design: tuple[str, int],
    control: str,
    multi_condition: str | None,
) -> _Model:
    """The likelihood of the design asked (:func:`list_bayes`)."""
    treat, items = design
    if multi_condition is not None:
        return _multi_model(formula, data, design, multi_condition)
    frame, y, t, j = list_frame(formula, data, treat, items)
    x, k = frame.X, frame.X.shape[1]
    lik = _Likelihood(y, t, x, j, constrained=control == "full")
    if control == "none":
        lik = _Likelihood(y, t, x, j, constrained=False)
    start = _start(lik)
    value_and_score = lik.value_and_score
    names = [f"sensitive.{s}" for s in frame.terms]
    if control == "full":
        names += [f"control.{s}" for s in frame.terms]
    elif control == "none":  # list_regression(constrained=False)'s parameters
        names += [f"control.psi{z}.{s}" for z in (0, 1) for s in frame.terms]
    else:  # psi_1 = psi_0 + shift on the intercept: the chain rule of the free model
        names += [f"control.{s}" for s in frame.terms] + ["control.z"]
        start = np.append(start[: 2 * k], 0.0)

        def value_and_score(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            psi1 = theta[k : 2 * k].copy()
            psi1[0] += theta[-1]
            value, score = lik.value_and_score(np.concatenate([theta[: 2 * k], psi1]))
            s0, s1 = score[k : 2 * k], score[2 * k :]
            return value, np.concatenate([score[:k], s0 + s1, [s1[0]]])

    def prevalence(block: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(special.expit(block[:, :k] @ x.T).mean(axis=1)[:, None])

    return _Model(value_and_score, start, names, [1], prevalence, frame.spec, x)


def _multi_model(
    formula: str, data: pd.DataFrame, design: tuple[str, int], condition: str
) -> _Model:
    """Several sensitive items (:mod:`._multi_item`)."""
    frame, y, arm, labels, j = multi_frame(formula, data, *design)
    x, k = frame.X, frame.X.shape[1]
    lik = _MultiLikelihood(y, arm, x, j, len(labels), condition)  # type: ignore[arg-type]
    extra = ["y0"] if condition == "level" else []
    names = [f"control.{s}" for s in frame.terms]
    for v in labels:
        names += [f"sensitive.{v}.{s}" for s in [*frame.terms, *extra]]
    width = k + len(extra)
    y0 = np.arange(j + 1, dtype=np.float64)

    def prevalence(block: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
        h = special.expit(block[:, :k] @ x.T)  # (b, n)
        out = np.empty((block.shape[0], len(labels)))
        for m in range(len(labels)):
            par = block[:, k + m * width : k + (m + 1) * width]
            eta = par[:, :k] @ x.T
            if not extra:
                out[:, m] = special.expit(eta).mean(axis=1)
                continue
            total = np.zeros_like(eta)
            for c in y0:  # the control count integrated out
                weight = special.comb(j, c) * h**c * (1 - h) ** (j - c)
                total += weight * special.expit(eta + par[:, k : k + 1] * c)
            out[:, m] = total.mean(axis=1)
        return out

    return _Model(lik.value_and_score, multi_start(lik), names, labels, prevalence, frame.spec, x)


def _check_arguments(draws: object, burn_in: object, control: object, multi: object) -> None:
    """Raise ``ValueError`` naming the first argument of :func:`list_bayes` out of range."""
    if isinstance(draws, bool) or not isinstance(draws, int) or not 100 <= draws <= MAX_DRAWS:
        raise ValueError(f"draws must be an integer in 100..{MAX_DRAWS:,}, got {draws!r}")
    if isinstance(burn_in, bool) or not isinstance(burn_in, int) or not 0 <= burn_in <= MAX_DRAWS:
        raise ValueError(f"burn_in must be an integer in 0..{MAX_DRAWS:,}, got {burn_in!r}")
    if control not in ("full", "intercept", "none"):
        raise ValueError(f"control must be 'full', 'intercept' or 'none', got {control!r}")
    if multi not in (None, "none", "level"):
        raise ValueError(f"multi_condition must be None, 'none' or 'level', got {multi!r}")
    if control == "none" and multi is None and burn_in < MIN_ADAPTIVE_BURN_IN:
        raise ValueError(
            f"control='none' needs burn_in >= {MIN_ADAPTIVE_BURN_IN:,} (its proposal is "
            f"learned from the burn-in), got {burn_in:,}"
        )


def _metropolis(
    log_post: Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]],
    mode: NDArray[np.float64],
    cov: NDArray[np.float64],
    lengths: tuple[int, int],
    seed: np.random.Generator | int | None,
) -> tuple[NDArray[np.float64], float]:
    """Random-walk Metropolis from ``mode`` with proposals ``N(0, (2.38^2 / d) cov)``:
    the kept draws, shape (draws, d), and the share of their proposals accepted."""
    burn_in, draws = lengths
    d = mode.size
    root = np.linalg.cholesky((cov + cov.T) / 2) * (2.38 / math.sqrt(d))
    rng = np.random.default_rng(seed)
    total = burn_in + draws
    steps = rng.standard_normal((total, d)) @ root.T
    uniforms = np.log(rng.random(total))
    chain = np.empty((draws, d))
    current, current_lp = mode, log_post(mode)[0]
    accepted = 0
    for i in range(total):  # a Markov chain: each draw needs the one before
        proposal = current + steps[i]
        lp = log_post(proposal)[0]
        if uniforms[i] < lp - current_lp:
            current, current_lp = proposal, lp
            accepted += i >= burn_in
        if i >= burn_in:
            chain[i - burn_in] = current
    return chain, accepted / draws


def _adaptive_metropolis(
    log_post: Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]],
    mode: NDArray[np.float64],
    cov: NDArray[np.float64],
    lengths: tuple[int, int],
    seed: np.random.Generator | int | None,
) -> tuple[NDArray[np.float64], float]:
    """Random-walk Metropolis whose proposal is learned during the burn-in (Haario,
    Saksman & Tamminen 2001; Roberts & Rosenthal 2009): it starts as
    :func:`_metropolis`'s; every 1,000 burn-in draws its scale moves towards an
    acceptance of 0.234, and from 5,000 on its covariance is that of the second half of
    the burn-in so far. The kept draws use the last proposal, fixed: a Markov chain
    with the posterior as its stationary law. Returns the kept draws, shape (draws, d),
    and the share of their proposals accepted."""
    burn_in, draws = lengths
    d = mode.size
    rng = np.random.default_rng(seed)
    shape = (cov + cov.T) / 2
    root = np.linalg.cholesky(shape) * (2.38 / math.sqrt(d))
    scale, window = 1.0, 0
    history = np.empty((burn_in, d))
    chain = np.empty((draws, d))
    current, current_lp = mode, log_post(mode)[0]
    accepted = 0
    for i in range(burn_in + draws):  # a Markov chain: each draw needs the one before
        proposal = current + scale * (root @ rng.standard_normal(d))
        lp = log_post(proposal)[0]
        if math.log(rng.random()) < lp - current_lp:
            current, current_lp = proposal, lp
            window += i < burn_in
            accepted += i >= burn_in
        if i >= burn_in:
            chain[i - burn_in] = current
            continue
        history[i] = current
        if (i + 1) % 1000 == 0:
            scale *= math.exp(window / 1000 - 0.234)
            window = 0
            if i + 1 >= 5000:
                spread = np.cov(history[(i + 1) // 2 : i + 1].T) + 1e-10 * np.eye(d)
                root = np.linalg.cholesky(spread) * (2.38 / math.sqrt(d))
    return chain, accepted / draws


def _log_posterior(
    model: Any, prior_mean: Any, prior_precision: Any
) -> Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]]:
    """The model's log posterior under independent normal priors on its coefficients,
    and its gradient.

    Raises
    ------
    ValueError
        For a prior of another length than the coefficients, or a precision <= 0.
    """
    d = len(model.names)
    mean = _prior(prior_mean, d, "prior_mean")
    precision = _prior(prior_precision, d, "prior_precision")
    if (precision <= 0).any():
        raise ValueError("prior_precision must be > 0")

    def log_post(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        value, score = model.value_and_score(theta)
        gap = theta - mean
        return value - 0.5 * float(gap @ (precision * gap)), score - precision * gap

    return log_post


@renamed_keywords(seed="rng")
def list_bayes(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    draws: int = 20_000,
    burn_in: int = 2_000,
    prior_mean: ArrayLike | float = 0.0,
    prior_precision: ArrayLike | float = 0.01,
    rng: np.random.Generator | int | None = None,
    control: Literal["full", "intercept", "none"] = "full",
    multi_condition: Literal["none", "level"] | None = None,
    channel: Any = None,
) -> ListBayesResult:
    """Sample the posterior of a list-experiment model (module text).

    Parameters
    ----------
    formula : str
        ``"count ~ covariates"`` (Wilkinson formula); the same covariates enter both
        models.
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    treat : str
        Column: 1 where the list held the sensitive item, 0 otherwise.
    items : int in 1..50
        ``J``, the number of control items.
    draws : int in 100..10^7, default 20,000
        Draws kept after the burn-in.
    burn_in : int >= 0, default 2,000
        Draws discarded first.
    prior_mean, prior_precision : float or array_like, default 0 and 0.01
        The normal prior's means and (diagonal) precisions, one value for all or one per
        coefficient in ``params`` order; precisions > 0.
    rng : numpy.random.Generator or int, optional
        The sampler's generator or its seed (analysis: nothing a respondent sends).
    control : {"full", "intercept", "none"}, default "full"
        One sensitive item: the control items' model the same whatever the sensitive
        answer (``"full"``, Imai 2011's constrained model), differing in the intercept
        only (``"intercept"``: ``control.z``), or free to differ (``"none"``:
        ``control.psi0.*`` and ``control.psi1.*``, as ``list_regression(constrained=
        False)``); R's ``constrained.single``. The ``"none"`` posterior is far from
        normal (on the race data ``control.psi1``'s is nearly the prior's), so its
        proposal is learned from the burn-in (adaptive Metropolis), which must be at
        least 10,000 draws.
    multi_condition : {"none", "level"}, optional
        Several sensitive items, each on its own treated list (``treat`` 0 or
        ``"control"``, then a value per item; :func:`list_regression_multi`): their
        answers independent of the control count (``"none"``, R's ``constrained.multi
        = TRUE``) or depending on it (``"level"``, ``FALSE``). ``control`` is then not
        used.
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    ListBayesResult

    Raises
    ------
    ValueError
        On a malformed formula, column or report (see :func:`check_list_counts`), draws
        or burn-in out of range (a burn-in under 10,000 with ``control="none"``), a
        prior that is not finite or not positive, or an unknown ``control`` or
        ``multi_condition``.

    Examples
    --------
    See :class:`ListBayesResult`; on R's ``race`` data, ``ictregBayes``'s examples.
    """
    refuse_channel("list_bayes", channel)
    _check_arguments(draws, burn_in, control, multi_condition)
    model = _model(formula, data, (treat, items), control, multi_condition)
    log_post = _log_posterior(model, prior_mean, prior_precision)
    mode = maximise_score(log_post, model.start)
    cov = inverse_information(-score_hessian(log_post, mode), "the posterior's curvature")
    sampler = _adaptive_metropolis if control == "none" and multi_condition is None else _metropolis
    chain, acceptance = sampler(log_post, mode, cov, (burn_in, draws), rng)
    names = model.names
    prevalence = pd.DataFrame(_prevalence_draws(model.prevalence, chain, model.x),
                              columns=model.labels)  # fmt: skip
    return ListBayesResult(
        draws=pd.DataFrame(chain, columns=names),
        mc_se=pd.Series(batch_se(chain), index=names),
        prevalence=prevalence.mean(),
        prevalence_sd=prevalence.std(ddof=1),
        acceptance=acceptance,
        spec=model.spec,
        fitted=model.x,
        prevalence_model=model.prevalence,
    )

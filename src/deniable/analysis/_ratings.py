"""Private ratings and Bayesian ranking.

Items are rated on a ``k``-point scale; each rating may pass through k-ary randomized
response (:class:`~deniable.mechanisms.KaryRR`, Kairouz, Oh & Viswanath 2016) before it
leaves the rater's device. Per item, the share ``theta`` of each rating has a Dirichlet
prior of pseudocounts ``a`` ("ghost ratings"); the posterior given the reports is
sampled by data augmentation (the true ratings are the missing data; Tanner & Wong
1987, :mod:`deniable.estimation`), vectorised over all items at once. The score of an item
is the expected utility ``E[sum_i theta_i u_i]`` under the posterior, for a utility
``u_i`` per rating level, with an equal-tailed credible interval; items are ranked by
score (or by the lower credible bound, the cautious choice for few ratings).

With no randomization the posterior is exactly ``Dirichlet(n + a)`` and the score is
the plain formula ``sum_i (n_i + a_i) u_i / sum_i (n_i + a_i)`` (the "Bayesian
average"; e.g. Miller 2012, "Bayesian average ratings"); its variance is
``(E[U^2] - E[U]^2) / (N + 1)`` with ``N = sum_i (n_i + a_i)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .._validation import as_codes, check_confidence_level
from ..estimation import ConfidenceInterval, EstimateResult, posterior_draws
from ..mechanisms import Design

__all__ = [
    "RankingResult",
    "plain_score",
    "rank_items",
]

_Array = NDArray[np.float64]


@dataclass(frozen=True)
class RankingResult(EstimateResult):
    """Scores, credible intervals and the ranking of the rated items (an estimate-like
    result: ``estimate`` is the score of each item, best first).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per item, best first: ``n`` (reports), ``score`` (posterior expected
        utility), ``low``, ``high`` (credible interval at the level asked for),
        ``prob_best`` (posterior probability that the item has the highest expected
        utility; NaN when computed in closed form) and ``rank`` (1 = best).
    utility_draws : ndarray of float64, shape (items, draws)
        Posterior draws of each item's expected utility, rows in the order of ``table``;
        :meth:`confidence_interval` takes its equal-tailed quantiles at any level.
    posterior : ndarray, shape (items, draws, k), or None
        Posterior draws of the rating shares (None for the closed form).

    Examples
    --------
    >>> from deniable.analysis import rank_items
    >>> result = rank_items(["a", "a", "b"], [4, 3, 0], k=5)
    >>> list(result.table.index)
    ['a', 'b']
    """

    table: pd.DataFrame
    utility_draws: _Array = field(repr=False)
    posterior: _Array | None = field(default=None, repr=False)

    @property
    def estimate(self) -> _Array:
        """Score (posterior expected utility) of each item, best first, shape (items,)."""
        return self.table["score"].to_numpy(dtype=np.float64)

    @property
    def std_error(self) -> _Array:
        """Posterior standard deviation of each item's expected utility, shape (items,)."""
        if self.utility_draws.shape[1] < 2:
            return np.full(self.utility_draws.shape[0], np.nan)
        return np.asarray(self.utility_draws.std(axis=1, ddof=1), dtype=np.float64)

    @property
    def labels(self) -> list[str]:
        """The items, best first."""
        return [str(item) for item in self.table.index]

    @property
    def default_interval_method(self) -> str:
        """``"credible"``: equal-tailed quantiles of the posterior draws."""
        return "credible"

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[_Array]:
        """Equal-tailed credible interval of each item's expected utility, best first.

        Raises
        ------
        ValueError
            For a level outside (0, 1) or a method other than ``"credible"``.
        """
        level = check_confidence_level(confidence_level)
        if method not in (None, "credible"):
            raise ValueError(f"method must be 'credible' for a ranking, got {method!r}")
        low, high = np.quantile(self.utility_draws, [(1 - level) / 2, (1 + level) / 2], axis=1)
        return ConfidenceInterval(np.asarray(low), np.asarray(high))


def rank_items(
    items: ArrayLike,
    reports: ArrayLike,
    design: Design | None = None,
    *,
    k: int | None = None,
    utility: ArrayLike | None = None,
    prior: ArrayLike | None = None,
    confidence_level: float = 0.95,
    rank_by: str = "score",
    draws: int = 4000,
    rng: np.random.Generator | int = 0,
) -> RankingResult:
    """Score and rank items from (randomized) ratings.

    Parameters
    ----------
    items : array_like, shape (n,)
        The item each rating is about (any hashable values).
    reports : array_like of int, shape (n,)
        Rating codes ``0..k-1`` (level ``i`` = the ``i``-th point of the scale), or
        their randomized reports when ``design`` is given.
    design : Design, optional
        The design the ratings went through (e.g. ``KaryRR(k=5, epsilon=2)``); None
        for ratings collected in the clear.
    k : int, optional
        Scale size when ``design`` is None (default: largest code + 1).
    utility : array_like, shape (k,), optional
        Utility of each rating level (default ``1..k``, the star value).
    prior : array_like, shape (k,), optional
        Dirichlet pseudocounts (ghost ratings), all > 0; default one per level.
    confidence_level : float in (0, 1)
        Of the equal-tailed credible intervals.
    rank_by : {"score", "lower"}
        Rank by posterior expected utility, or by the interval's lower bound.
    draws : int
        Posterior draws (randomized ratings; the closed form needs none).
    rng : numpy.random.Generator or int, default 0
        Sampler randomness (a generator, or the seed of one; default 0: reproducible).

    Returns
    -------
    RankingResult
        The items ranked (``table``: ``n``, ``score``, ``low``, ``high``, ``prob_best``,
        ``rank``), with the utility draws.

    Raises
    ------
    ValueError
        For codes outside the scale, a prior or utility of the wrong shape, non-positive
        pseudocounts, or an unknown ``rank_by``.

    Examples
    --------
    >>> res = rank_items(["a", "a", "b"], [4, 3, 0], k=5, prior=[1, 1, 1, 1, 1])
    >>> res.table["score"].round(4).to_dict()
    {'a': 3.4286, 'b': 2.6667}
    """
    level = check_confidence_level(confidence_level)
    if rank_by not in ("score", "lower"):
        raise ValueError(f"rank_by must be 'score' or 'lower', got {rank_by!r}")
    labels = np.asarray(items)
    raw = np.asarray(reports)
    if labels.shape != raw.shape or raw.ndim != 1:
        raise ValueError(
            f"items and reports must be 1-D of one shape, got {labels.shape}, {raw.shape}"
        )
    codes, size, m, u, a = _ratings_input(raw, design, k, utility, prior)
    values, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse * m + codes, minlength=values.size * m).reshape(values.size, m)
    util, score, low, high, prob_best, posterior = _utilities(
        counts, a, u, size, design, level, draws, rng
    )
    columns = {"n": counts.sum(axis=1), "score": score, "low": low, "high": high}
    table = pd.DataFrame(
        columns | {"prob_best": prob_best},
        index=pd.Index([v.item() if hasattr(v, "item") else v for v in values], name="item"),
    )
    key = "score" if rank_by == "score" else "low"
    order = np.argsort(-table[key].to_numpy(), kind="stable")
    table = table.iloc[order]
    table["rank"] = np.arange(1, len(table) + 1)
    return RankingResult(
        table,
        np.asarray(util[order], dtype=np.float64),
        None if posterior is None else posterior[order],
    )


def _utilities(
    counts: NDArray[np.int64],
    a: NDArray[np.float64],
    u: NDArray[np.float64],
    size: int,
    design: Design | None,
    level: float,
    draws: int,
    rng: np.random.Generator | int,
) -> tuple[
    NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
    NDArray[np.float64], NDArray[np.float64] | None,
]:  # fmt: skip
    """Each item's posterior utility draws (items, draws), score, credible bounds, the
    chance of being the best (NaN in the clear) and the prevalence draws (None in the
    clear: the exact Dirichlet posterior)."""
    if design is None:  # the exact Dirichlet posterior's draws
        rng_ = np.random.default_rng(rng)
        alpha = counts + a
        sample = rng_.standard_gamma(alpha[:, None, :], size=(counts.shape[0], draws, size))
        posterior, util = None, (sample / sample.sum(axis=2, keepdims=True)) @ u
        score = alpha @ u / alpha.sum(axis=1)
    else:
        posterior = posterior_draws(design, counts, a, draws=draws, rng=rng)
        util = posterior @ u  # (items, draws)
        score = util.mean(axis=1)
    low, high = np.quantile(util, [(1 - level) / 2, (1 + level) / 2], axis=1)
    # the chance of being the best item: only where the draws are of the prevalences
    best = np.argmax(util, axis=0)
    prob_best = (
        np.full(counts.shape[0], np.nan)
        if design is None
        else np.bincount(best, minlength=counts.shape[0]) / util.shape[1]
    )
    return util, score, low, high, prob_best, posterior


def _ratings_input(
    raw: Any, design: Any, k: int | None, utility: Any, prior: Any
) -> tuple[NDArray[np.int64], int, int, NDArray[np.float64], NDArray[np.float64]]:
    """The report codes, the rating levels and report symbols, the utility of each
    level (default 1..size) and the prior pseudocounts (default all ones), checked."""
    if design is not None:
        size, m = design.n_truths, design.n_reports
    else:
        size = k if k is not None else (int(raw.max()) + 1 if raw.size else 2)
        m = size
    codes = as_codes("reports", raw, m).astype(np.int64)
    u = np.arange(1, size + 1, dtype=np.float64) if utility is None else np.asarray(utility, float)
    a = np.ones(size) if prior is None else np.asarray(prior, dtype=np.float64)
    if u.shape != (size,):
        raise ValueError(f"utility must hold {size} values (one per rating level), got {u.shape}")
    if a.shape != (size,) or np.any(~np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"prior must hold {size} pseudocounts > 0, got {a.tolist()}")
    return codes, size, m, u, a


def plain_score(counts: ArrayLike, prior: ArrayLike, utility: ArrayLike) -> float:
    """``sum_i (n_i + a_i) u_i / sum_i (n_i + a_i)`` (the no-randomization score)."""
    n = np.asarray(counts, dtype=np.float64) + np.asarray(prior, dtype=np.float64)
    return float(n @ np.asarray(utility, dtype=np.float64) / n.sum()) if n.sum() else math.nan

"""Comparing a list experiment with an endorsement experiment on the same respondents
(Blair, Lyall & Imai 2014; R's ``list::comp.listEndorse``).

Both experiments measure one latent attitude (in Blair, Lyall & Imai, support for the
Taliban in Afghanistan). Within the treated group the list count holds the sensitive
answer, so it correlates with the endorsement answers more than the control group's
count does: the test's statistic is ``d = cor_treated - cor_control``, the correlation
(Pearson's r or Kendall's tau-b) between each respondent's mean endorsement answer and
their list count within each group. Its null distribution is by the nonparametric
bootstrap: ``draws`` resamples of all respondents, with replacement (the groups' sizes
vary across resamples, as in R), each drawn as the rows' counts (a multinomial), so a
block of resamples' correlations is a few matrix products.

Three faults of R's 9.2.6 are not copied (docs/analysis.md):

* its interval's upper bound is the ``(1 - alpha) / 2`` quantile (0.475 at 95%) where
  the ``1 - alpha / 2`` quantile is meant, so the "interval" covers 45% of the draws;
* the mean over questions is taken with ``mean(x, na.omit = T)``, an argument ``mean``
  does not have: a respondent who skipped one question gets a missing mean and is
  dropped; here the mean is over the answered questions (``nanmean``);
* ``endorse.mean`` is read the wrong way round (``FALSE`` averages the matrix's rows);
  here a matrix is averaged and a vector is used as it is.

Its p-value, the share of bootstrap differences at or below 0, is the one-sided test
of the study's hypothesis (the treated correlate more); ``alternative="two-sided"``
doubles the smaller tail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._validation import check_confidence_level, renamed_keywords
from ..estimation import ConfidenceInterval
from ._item_count import refuse_channel

__all__ = ["EndorsementComparison", "list_endorsement_comparison"]

#: Most bootstrap draws taken.
MAX_DRAWS = 1_000_000
#: Draws resampled at once, at most (a block holds ``rows x block`` counts).
BLOCK = 500
#: Counts a block holds at most (``rows x block``: 80 MB of float64).
BLOCK_CELLS = 10_000_000
#: Largest group whose Kendall's tau is computed for a block of resamples at once
#: (its ``n x n`` matrix of pair signs: 72 MB); larger groups take one at a time.
KENDALL_ROWS = 3_000


@dataclass(frozen=True)
class EndorsementComparison:
    """The list and endorsement experiments' correlations compared.

    Attributes
    ----------
    correlation_treated, correlation_control : float
        The correlation, in [-1, 1], of the mean endorsement answer with the list
        count among the treated and among the controls.
    difference : float
        ``correlation_treated - correlation_control``.
    p_value : float
        The bootstrap p-value of ``alternative``, in [0, 1].
    interval : ConfidenceInterval[float]
        The percentile bootstrap interval of the difference at ``level``.
    alternative : str
        ``"greater"`` (the treated correlate more; R's) or ``"two-sided"``.
    draws : int
        Bootstrap draws taken (those with a group too small for a correlation are
        left out of the p-value and the interval).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(3)
    >>> t, attitude = rng.integers(0, 2, 600), rng.normal(size=600)
    >>> counts = rng.binomial(3, 0.4, 600) + t * (attitude > 0)
    >>> out = list_endorsement_comparison(attitude, counts, t, draws=1000, rng=1)
    >>> out.interval.low < out.difference < out.interval.high
    True
    """

    correlation_treated: float
    correlation_control: float
    difference: float
    p_value: float
    interval: ConfidenceInterval[float]
    alternative: str
    draws: int


def _inputs(
    endorsement: ArrayLike, counts: ArrayLike, treat: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """The complete rows' mean endorsement, count and treatment (module text)."""
    e = np.asarray(endorsement, dtype=np.float64)
    y = np.asarray(counts, dtype=np.float64)
    t = np.asarray(treat, dtype=np.float64)
    if e.ndim not in (1, 2) or y.ndim != 1 or t.ndim != 1:
        raise ValueError(
            "endorsement must be a vector or a (respondents, questions) matrix, counts "
            "and treat vectors"
        )
    if not e.shape[0] == y.size == t.size:
        raise ValueError(
            f"endorsement, counts and treat must have one row per respondent, got "
            f"{e.shape[0]}, {y.size} and {t.size}"
        )
    if e.ndim == 2:
        answered = ~np.isnan(e)
        total = np.where(answered, e, 0.0).sum(axis=1)
        e = np.divide(total, answered.sum(axis=1), out=np.full(y.size, np.nan),
                      where=answered.any(axis=1))  # fmt: skip
    if not np.isin(t[~np.isnan(t)], (0.0, 1.0)).all():
        raise ValueError("treat must be 0 (control list) or 1 (treated list)")
    keep = ~(np.isnan(e) | np.isnan(y) | np.isnan(t))
    if np.isinf(e[keep]).any() or np.isinf(y[keep]).any():
        raise ValueError("endorsement and counts must be finite")
    e, y, t = e[keep], y[keep], t[keep] == 1.0
    for name, group in (("treated", t), ("control", ~t)):
        if group.sum() < 3:
            raise ValueError(f"the {name} group needs at least 3 complete rows")
        for what, v in (("endorsement", e), ("counts", y)):
            if np.ptp(v[group]) == 0:
                raise ValueError(f"{what} is constant in the {name} group: it has no correlation")
    return e, y, t


def _correlation(x: NDArray[np.float64], y: NDArray[np.float64], method: str) -> float:
    if method == "pearson":
        return float(stats.pearsonr(x, y).statistic)
    return float(stats.kendalltau(x, y).statistic)  # tau-b, as R's cor


def _weighted_pearson(
    x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Pearson's r of each resample, given as its rows' counts ``w``, shape (draws, n)."""
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = (w @ x) / total, (w @ y) / total
        sxy = w @ (x * y) / total - mx * my
        sxx = w @ (x * x) / total - mx**2
        syy = w @ (y * y) / total - my**2
        r = sxy / np.sqrt(sxx * syy)
    return np.asarray(np.where((sxx > 0) & (syy > 0), r, np.nan), dtype=np.float64)


def _weighted_kendall(
    x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Kendall's tau-b of each resample, given as its rows' counts ``w``, shape
    (draws, n): the concordant less the discordant pairs are ``w' S w / 2`` with
    ``S_ij = sign(x_i - x_j) sign(y_i - y_j)`` (two copies of one row are tied in
    both), the tied pairs of a value are ``C(W_g, 2)`` for its total count ``W_g``."""
    s = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
    score = 0.5 * np.einsum("bi,bi->b", w @ s, w)
    total = w.sum(axis=1)
    pairs = total * (total - 1) / 2

    def tied(v: NDArray[np.float64]) -> NDArray[np.float64]:
        _, group = np.unique(v, return_inverse=True)
        counts = np.zeros((w.shape[0], int(group.max()) + 1))
        np.add.at(counts.T, group, w.T)
        return np.asarray((counts * (counts - 1) / 2).sum(axis=1), dtype=np.float64)

    with np.errstate(invalid="ignore", divide="ignore"):
        tau = score / np.sqrt((pairs - tied(x)) * (pairs - tied(y)))
    return np.asarray(np.where(np.isfinite(tau), tau, np.nan), dtype=np.float64)


def _bootstrap(
    e: NDArray[np.float64],
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    method: str,
    draws: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """The difference of correlations in each of ``draws`` resamples (NaN where a
    group's correlation is undefined), shape (draws,)."""
    n = y.size
    out = np.empty(draws)
    pairs = _weighted_pearson if method == "pearson" else _weighted_kendall
    if max(t.sum(), (~t).sum()) > KENDALL_ROWS:
        pairs = _weighted_pearson if method == "pearson" else _kendall_each
    block = max(1, min(BLOCK, BLOCK_CELLS // n))
    for start in range(0, draws, block):  # a loop over blocks of draws
        b = min(block, draws - start)
        w = rng.multinomial(n, np.full(n, 1.0 / n), size=b).astype(np.float64)
        out[start : start + b] = pairs(e[t], y[t], w[:, t]) - pairs(e[~t], y[~t], w[:, ~t])
    return out


def _kendall_each(
    x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64]
) -> NDArray[np.float64]:
    """As :func:`_weighted_kendall`, a resample at a time (for groups too large for its
    ``n x n`` matrix): O(n log n) each."""
    out = np.full(w.shape[0], np.nan)
    for d, counts in enumerate(w.astype(np.int64)):  # a loop over draws
        i = np.repeat(np.arange(x.size), counts)
        if i.size >= 2:
            out[d] = stats.kendalltau(x[i], y[i]).statistic
    return out


@renamed_keywords(level="confidence_level", seed="rng")
def list_endorsement_comparison(
    endorsement: ArrayLike,
    counts: ArrayLike,
    treat: ArrayLike,
    *,
    method: Literal["pearson", "kendall"] = "pearson",
    alternative: Literal["greater", "two-sided"] = "greater",
    draws: int = 10_000,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
    channel: Any = None,
) -> EndorsementComparison:
    """Compare the list and endorsement experiments' correlations (module text;
    Blair, Lyall & Imai 2014).

    Parameters
    ----------
    endorsement : array_like of float, shape (n,) or (n, questions)
        Each respondent's endorsement answers (a matrix: averaged over the answered
        questions, NaN for unanswered), or their mean.
    counts : array_like of float, shape (n,)
        The list experiment's item counts.
    treat : array_like of {0, 1}, shape (n,)
        1 where the list (and the endorsement) held the sensitive item; the same
        assignment in both experiments.
    method : {"pearson", "kendall"}, default "pearson"
        Pearson's r or Kendall's tau-b.
    alternative : {"greater", "two-sided"}, default "greater"
        The treated correlate more (R's one-sided p-value), or differently.
    draws : int in 100..10^6, default 10,000
        Bootstrap resamples.
    confidence_level : float in (0, 1), default 0.95
        The interval's level.
    rng : numpy.random.Generator or int, optional
        The resampling generator or its seed (analysis, not a respondent's randomness).
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    EndorsementComparison

    Raises
    ------
    ValueError
        On inputs of different lengths or dimensions, a treatment other than 0 or 1,
        fewer than 3 complete rows in a group, an input constant within a group, an
        unknown ``method`` or ``alternative``, ``draws`` or ``confidence_level`` out of range, or no
        resample with both correlations defined.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> n = 800
    >>> t, attitude = rng.integers(0, 2, n), rng.normal(size=n)
    >>> counts = rng.binomial(3, 0.4, n) + t * (attitude > 0.5)
    >>> endorsement = np.round(3 + attitude[:, None] + rng.normal(size=(n, 3)))
    >>> out = list_endorsement_comparison(endorsement, counts, t, rng=1)
    >>> round(out.correlation_treated, 2), round(out.correlation_control, 2)
    (0.23, -0.02)
    >>> out.p_value < 0.001
    True
    """
    refuse_channel("list_endorsement_comparison", channel)
    level = check_confidence_level(confidence_level)
    if method not in ("pearson", "kendall"):
        raise ValueError(f"method must be 'pearson' or 'kendall', got {method!r}")
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', got {alternative!r}")
    if isinstance(draws, bool) or not isinstance(draws, int) or not 100 <= draws <= MAX_DRAWS:
        raise ValueError(f"draws must be an integer in 100..{MAX_DRAWS:,}, got {draws!r}")
    e, y, t = _inputs(endorsement, counts, treat)
    treated = _correlation(e[t], y[t], method)
    control = _correlation(e[~t], y[~t], method)
    boot = _bootstrap(e, y, t, method, draws, np.random.default_rng(rng))
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        raise ValueError("no resample had both correlations defined (constant answers?)")
    below = float(np.mean(boot <= 0))
    p = below if alternative == "greater" else min(1.0, 2 * min(below, float(np.mean(boot >= 0))))
    alpha = 1 - level
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return EndorsementComparison(
        correlation_treated=treated,
        correlation_control=control,
        difference=treated - control,
        p_value=p,
        interval=ConfidenceInterval(float(low), float(high)),
        alternative=alternative,
        draws=int(boot.size),
    )

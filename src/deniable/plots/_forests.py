"""Results drawn: estimates and arm differences, coefficients, waves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..estimation import EstimateResult
from ._figure import axes_of, finite_vector, plot_intervals

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_coefficients", "plot_estimates", "plot_waves"]

#: The intercept's name in formulaic's and R's model matrices.
_INTERCEPT = {"Intercept", "(Intercept)"}


def _named(
    results: EstimateResult | Sequence[EstimateResult] | Mapping[str, EstimateResult],
) -> list[tuple[str | None, EstimateResult]]:
    """``(name, result)`` pairs: a mapping's keys, else no names."""
    if isinstance(results, EstimateResult):
        return [(None, results)]
    if isinstance(results, Mapping):
        pairs: list[tuple[str | None, EstimateResult]] = [(str(k), v) for k, v in results.items()]
    else:
        pairs = [(None, r) for r in results]
    for name, r in pairs:
        if not isinstance(r, EstimateResult):
            raise TypeError(
                f"results must be estimates (deniable.estimation.EstimateResult); "
                f"{name or 'an entry'} is {type(r).__name__}"
            )
    if not pairs:
        raise ValueError("results must hold at least one estimate")
    return pairs


def plot_estimates(
    results: EstimateResult | Sequence[EstimateResult] | Mapping[str, EstimateResult],
    *,
    confidence_level: float = 0.95,
    method: str | None = None,
    categories: Sequence[str] | None = None,
    truth: ArrayLike | None = None,
    reference: float | None = 0.0,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """A forest plot of one or more results: each entry's estimate and its interval.

    Any result of the common base (:class:`~deniable.estimation.EstimateResult`): a
    prevalence (:func:`~deniable.estimate`), the difference between arms
    (:class:`~deniable.analysis.ArmDifferences`), a group fit, a mean, a change between
    waves. Each result's intervals are its own ``confidence_interval(confidence_level,
    method)``, so a prevalence shows its default interval (Wilson on the affine scale,
    Feldman-Cousins, ...).

    Parameters
    ----------
    results : EstimateResult, sequence of them, or mapping of name to one
        A mapping's names prefix each row (``"men: yes"``), as do the positions of a
        sequence (``"1: yes"``).
    confidence_level : float in (0, 1), default 0.95
    method : str, optional
        The interval method (each result's default when ``None``).
    categories : sequence of str, optional
        Only these labels of each result (for example ``["yes"]`` for a binary
        question); default all.
    truth : array_like of float, optional
        The true values of the rows drawn (a simulation's), as crosses.
    reference : float or None, default 0.0
        A vertical reference line.
    title : str, optional
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
        A forest plot (:func:`plot_intervals`), one row per entry drawn.

    Raises
    ------
    TypeError
        For an entry that is not an estimate.
    ValueError
        For no results, a category no result has, or a level outside (0, 1).
    ModuleNotFoundError
        Without matplotlib (``pip install 'deniable[plot]'``).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.plots import plot_estimates
    >>> d, rng = Warner(p=0.8), np.random.default_rng(3)
    >>> arms = {arm: estimate(d, d.randomize(rng.random(500) < pi, rng))
    ...         for arm, pi in [("control", 0.2), ("treated", 0.3)]}
    >>> fig = plot_estimates(arms, categories=["yes"])
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['control: yes', 'treated: yes']
    """
    pairs = _named(results)
    several = len(pairs) > 1
    labels: list[str] = []
    columns: list[list[float]] = [[], [], []]
    for i, (name, result) in enumerate(pairs):
        ci = result.confidence_interval(confidence_level, method)
        values = [
            np.atleast_1d(np.asarray(v, dtype=np.float64))
            for v in (result.estimate, ci.low, ci.high)
        ]
        prefix = name if name is not None else (str(i + 1) if several else None)
        for j, label in enumerate(result.labels):
            if categories is not None and str(label) not in categories:
                continue
            labels.append(f"{prefix}: {label}" if prefix else str(label))
            for column, v in zip(columns, values, strict=True):
                column.append(float(v[j]))
    if not labels:
        raise ValueError(f"categories {list(categories or [])} match no label of the results")
    return plot_intervals(
        labels, *columns, reference=reference, truth=truth, title=title, ax=ax,
        xlabel=f"estimate with its {confidence_level:.0%} interval",
    )  # fmt: skip


def plot_coefficients(
    fit: Any,
    *,
    confidence_level: float = 0.95,
    intercept: bool = False,
    exponentiate: bool = False,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """A coefficient plot of a regression: each term's estimate and its interval.

    Parameters
    ----------
    fit : a regression result
        Anything with ``params`` (a pandas Series by term) and
        ``conf_int(confidence_level)`` (a DataFrame with ``low`` and ``high``):
        :func:`~deniable.analysis.rr_logit`, :func:`~deniable.analysis.rr_linear`,
        :func:`~deniable.analysis.rr_logit_bayes`, the list experiment's fits, ...
    confidence_level : float in (0, 1), default 0.95
    intercept : bool, default False
        Draw the intercept too (its scale usually dwarfs the others').
    exponentiate : bool, default False
        Draw ``exp`` of each (odds ratios of a logistic model) on a log axis, with the
        reference line at 1.
    title : str, optional
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    TypeError
        For a fit without ``params`` and ``conf_int``.
    ValueError
        When no term is left to draw.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import Warner
    >>> from deniable.analysis import rr_logit
    >>> from deniable.plots import plot_coefficients
    >>> rng = np.random.default_rng(4)
    >>> x = rng.normal(size=800)
    >>> truth = rng.random(800) < 1 / (1 + np.exp(1 - x))
    >>> data = pd.DataFrame({"x": x, "r": Warner(p=0.8).randomize(truth, rng)})
    >>> fig = plot_coefficients(rr_logit("r ~ x", data, Warner(p=0.8)), exponentiate=True)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()], fig.axes[0].get_xscale()
    (['x'], 'log')
    """
    if not (hasattr(fit, "params") and callable(getattr(fit, "conf_int", None))):
        raise TypeError(f"fit must have params and conf_int(); got {type(fit).__name__}")
    params = fit.params
    bounds = fit.conf_int(confidence_level)
    keep = [i for i, term in enumerate(params.index) if intercept or term not in _INTERCEPT]
    if not keep:
        raise ValueError("no term to draw: the fit has only an intercept (pass intercept=True)")
    terms = [str(params.index[i]) for i in keep]
    columns = [
        np.asarray(v, dtype=np.float64)[keep] for v in (params, bounds["low"], bounds["high"])
    ]
    if exponentiate:
        columns = [np.exp(c) for c in columns]
    what = "odds ratio" if exponentiate else "coefficient"
    fig = plot_intervals(
        terms, *columns, reference=1.0 if exponentiate else 0.0, title=title, ax=ax,
        xlabel=f"{what} with its {confidence_level:.0%} interval",
    )  # fmt: skip
    if exponentiate:
        from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter

        drawn = fig.axes[-1 if ax is None else fig.axes.index(ax)]
        drawn.set_xscale("log")
        drawn.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        drawn.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))  # 0.5, 1, 2: not 5e-1
        drawn.xaxis.set_minor_formatter(NullFormatter())
    return fig


def plot_waves(
    estimates: Sequence[EstimateResult] | Any,
    *,
    category: str | None = None,
    waves: Sequence[str] | None = None,
    confidence_level: float = 0.95,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """One answer's prevalence across waves, each with its interval, joined by a line.

    Parameters
    ----------
    estimates : sequence of EstimateResult, or a WaveChange
        One estimate per wave, in order (each with the answer ``category`` among its
        labels), or a :class:`~deniable.analysis.WaveChange` (its two waves' moment
        estimates and Wald intervals; the change's own interval is in the title).
    category : str, optional
        The answer drawn; default the last label (``"yes"`` of a binary question).
    waves : sequence of str, optional
        The waves' names (default ``"wave 1"``, ``"wave 2"``, ...).
    confidence_level : float in (0, 1), default 0.95
    title : str, optional
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
        Error bars at the waves (x ticks the waves' names), the estimates joined.

    Raises
    ------
    ValueError
        For fewer than two waves, names not one per wave, or an unknown category.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.plots import plot_waves
    >>> d, rng = Warner(p=0.8), np.random.default_rng(5)
    >>> each = [estimate(d, d.randomize(rng.random(800) < pi, rng)) for pi in (0.2, 0.25, 0.3)]
    >>> fig = plot_waves(each, waves=["2024", "2025", "2026"])
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['2024', '2025', '2026']
    """
    from ..estimation import z_quantile

    z = z_quantile(confidence_level)
    if hasattr(estimates, "first") and hasattr(estimates, "second"):  # a WaveChange
        change: Any = estimates
        labels = [str(label) for label in change.labels]
        if category is not None and category not in labels:
            raise ValueError(f"category must be one of {labels}, got {category!r}")
        j = labels.index(category) if category is not None else len(labels) - 1
        points = np.array([change.first[j], change.second[j]], dtype=np.float64)
        se = np.array([change.first_std_error[j], change.second_std_error[j]])
        low, high = points - z * se, points + z * se
        ci = change.confidence_interval(confidence_level)
        title = title or (
            f"change {change.difference[j]:+.3f} "
            f"[{float(ci.low[j]):+.3f}, {float(ci.high[j]):+.3f}]"
        )
    else:
        items = list(estimates)
        if len(items) < 2:
            raise ValueError(f"estimates must hold two or more waves, got {len(items)}")
        labels = [str(label) for label in items[0].labels]
        if category is not None and category not in labels:
            raise ValueError(f"category must be one of {labels}, got {category!r}")
        j = labels.index(category) if category is not None else len(labels) - 1
        intervals = [r.confidence_interval(confidence_level) for r in items]
        points = np.array([float(np.atleast_1d(r.estimate)[j]) for r in items])
        low = np.array([float(np.atleast_1d(ci.low)[j]) for ci in intervals])
        high = np.array([float(np.atleast_1d(ci.high)[j]) for ci in intervals])
    names = (
        [str(w) for w in waves]
        if waves is not None
        else [f"wave {i + 1}" for i in range(points.size)]
    )
    if len(names) != points.size:
        raise ValueError(f"waves must name {points.size} waves, got {len(names)}")
    finite_vector("estimates", points)
    fig, ax = axes_of(ax, 6.0, 3.6)
    x = np.arange(points.size)
    ax.plot(x, points, "-o", color="C0", zorder=3)
    ax.vlines(x, low, high, color="C0", lw=2)
    ax.set_xticks(x, names)
    ax.set_ylabel(f"{labels[j]}: estimate with its {confidence_level:.0%} interval")
    ax.grid(True, axis="y", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    return fig

"""Planning and checking drawn: the sample-size curve, coverage, heavy hitters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_confidence_level
from ..estimation import worst_case_variance, z_quantile
from ..mechanisms import Design
from ..planning import sample_size
from ._figure import axes_of, finite_vector

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_coverage", "plot_heavy_hitters", "plot_sample_size"]

#: The Monte Carlo band of :func:`plot_coverage`: nominal +- Z sigma.
BAND_Z = 4.0


def plot_sample_size(
    design: Design,
    *,
    margin: float | None = None,
    confidence_level: float = 0.95,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """The worst-case margin of error against the sample size, log-log, with the asked
    margin and the n it needs marked.

    Two curves: the normal-approximation margin ``z sqrt(V / n)`` and the
    distribution-free Chebyshev margin ``sqrt(V / ((1 - confidence_level) n))``, ``V`` the
    exact worst-case per-respondent variance of the moment estimator
    (:func:`~deniable.estimation.worst_case_variance`). With ``margin``, the n of
    :func:`~deniable.planning.sample_size` (normal) is marked where the curve crosses
    it, and named in the legend.

    Parameters
    ----------
    design : Design
    margin : float in (0, 1), optional
        The largest acceptable error on the prevalence scale.
    confidence_level : float in (0, 1), default 0.95
    title : str, optional
        Default: the design and its epsilon in nats.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
        Two curves (``normal approximation``, ``Chebyshev``), and with ``margin`` a
        marker at ``(n, margin)`` labelled ``"n = ..."``.

    Raises
    ------
    ValueError
        For a margin or level outside (0, 1).

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.plots import plot_sample_size
    >>> fig = plot_sample_size(Warner(p=0.75), margin=0.05)
    >>> fig.axes[0].get_legend_handles_labels()[1][-1]
    'n = 1,537 for ±0.05 at 95%'
    """
    level = check_confidence_level(confidence_level)
    variance = float(worst_case_variance(design).max())
    needed = None if margin is None else sample_size(design, margin, level)
    low, high = 1e2, 1e6
    if needed is not None:
        low, high = min(low, needed / 10), max(high, needed * 10)
    n = np.logspace(np.log10(low), np.log10(high), 200)
    fig, ax = axes_of(ax, 6.4, 4.2)
    ax.loglog(n, z_quantile(level) * np.sqrt(variance / n), label="normal approximation")
    ax.loglog(
        n, np.sqrt(variance / ((1.0 - level) * n)), "--", label="Chebyshev (distribution-free)"
    )
    if needed is not None and margin is not None:
        ax.axhline(margin, color="0.5", lw=0.8, ls=":")
        ax.axvline(needed, color="0.5", lw=0.8, ls=":")
        ax.plot(
            [needed],
            [margin],
            "o",
            color="C3",
            label=f"n = {needed:,} for ±{margin:g} at {level:.0%}",
        )
    ax.set_xlabel("respondents n")
    ax.set_ylabel(f"margin of error at {level:.0%} (worst-case prevalence)")
    ax.set_title(title or f"{design!r}\nepsilon = {design.epsilon:.3g} nats", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_coverage(
    x: ArrayLike,
    covered: ArrayLike | Mapping[str, ArrayLike],
    simulations: int,
    *,
    confidence_level: float = 0.95,
    xlabel: str = "true prevalence",
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """The coverage of an interval over simulated surveys, against its nominal level.

    The band is where a method whose coverage is exactly nominal lands: nominal
    ``+- 4 sqrt(c (1 - c) / S)`` over ``S`` simulations (normal approximation to the
    binomial count; a method outside it at a point is wrong there with near certainty,
    one inside is not shown right). Points below the band are drawn in red.

    Parameters
    ----------
    x : array_like of float, shape (m,)
        The setting of each point (the true prevalence, n, epsilon).
    covered : array_like of int, shape (m,), or mapping of name to one
        How many of the ``simulations`` intervals covered the truth at each point; a
        mapping draws one curve per method.
    simulations : int >= 1
        Simulated surveys at each point.
    confidence_level : float in (0, 1), default 0.95
        The intervals' nominal level.
    xlabel, title : str
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
        One line per method (marker ``o``), the nominal level as a dashed line and the
        band as a shaded region.

    Raises
    ------
    ValueError
        For counts outside 0..simulations, lengths that differ from ``x``, or a level
        outside (0, 1).

    Examples
    --------
    >>> from deniable.plots import plot_coverage
    >>> fig = plot_coverage([0.0, 0.5, 1.0], {"wilson": [960, 948, 955]}, 1000)
    >>> fig.axes[0].get_legend_handles_labels()[1][-1]
    'wilson'
    """
    level = check_confidence_level(confidence_level)
    if int(simulations) != simulations or simulations < 1:
        raise ValueError(f"simulations must be a whole number >= 1, got {simulations!r}")
    xs = finite_vector("x", x)
    curves = dict(covered) if isinstance(covered, Mapping) else {"coverage": covered}
    fig, ax = axes_of(ax, 6.4, 3.8)
    half = BAND_Z * np.sqrt(level * (1 - level) / simulations)
    ax.axhspan(
        level - half,
        min(1.0, level + half),
        color="0.85",
        label=f"±{BAND_Z:g} sigma of {simulations:,} simulations",
    )
    ax.axhline(level, color="0.4", ls="--", lw=1, label=f"nominal {level:.0%}")
    for i, (name, counts) in enumerate(curves.items()):
        c = finite_vector(f"covered[{name!r}]", counts, xs.size)
        if (c < 0).any() or (c > simulations).any():
            raise ValueError(f"covered[{name!r}] must be counts in 0..{simulations}")
        share = c / simulations
        ax.plot(xs, share, "-o", color=f"C{i}", ms=4, label=str(name))
        below = share < level - half
        if below.any():
            ax.plot(xs[below], share[below], "o", color="red", ms=7, mfc="none")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of intervals covering the truth")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def plot_heavy_hitters(
    found: Any,
    *,
    detection_limit: float | None = None,
    top: int = 30,
    confidence_level: float | None = None,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Heavy hitters' estimated frequencies, largest on top, with their intervals and the
    detection limit.

    Parameters
    ----------
    found : HeavyHitters or PrefixHeavyHitters
        From :func:`~deniable.heavy_hitters`, :func:`~deniable.estimation.
        find_heavy_hitters` or :func:`~deniable.tables.arrow.heavy_hitters_parquet`.
    detection_limit : float in (0, 1), optional
        The smallest frequency found with the planned recall
        (:func:`~deniable.estimation.detection_limit`), drawn as a red line. A prefix
        search's ``threshold`` is drawn dashed; for a candidate list, each value's own
        detection threshold ``threshold_z * std_error`` is marked on its bar.
    top : int >= 1, default 30
        Draw at most this many values.
    confidence_level : float in (0, 1), optional
        Of the intervals (each result's default when ``None``).
    title : str, optional
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
        One bar per value (its interval as an error bar), the threshold or the
        detection thresholds, and the detection limit when given.

    Raises
    ------
    ValueError
        For a result with no values, or ``top`` below 1.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import LocalHashing, estimate, heavy_hitters
    >>> from deniable.plots import plot_heavy_hitters
    >>> oracle, rng = LocalHashing(k=20, epsilon=2.0), np.random.default_rng(1)
    >>> values = np.where(np.arange(5000) % 2 == 0, 3, np.arange(5000) % 20)
    >>> fig = plot_heavy_hitters(heavy_hitters(estimate(oracle, oracle.randomize(values, rng))))
    >>> fig.axes[0].get_yticklabels()[0].get_text()
    '3'
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    if len(found.values) == 0:
        raise ValueError("no heavy hitter was found: nothing to draw")
    m = min(top, len(found.values))
    ci = (
        found.confidence_interval(confidence_level)
        if confidence_level
        else found.confidence_interval()
    )
    e = np.asarray(found.estimate, dtype=np.float64)[:m]
    low, high = np.asarray(ci.low)[:m], np.asarray(ci.high)[:m]
    fig, ax = axes_of(ax, 6.4, 0.3 * m + 1.4)
    y = np.arange(m)[::-1]
    bars = np.vstack([np.maximum(e - low, 0), np.maximum(high - e, 0)])
    ax.barh(y, e, color="C0", alpha=0.8, xerr=bars, error_kw={"lw": 1, "ecolor": "0.2"})
    ax.set_yticks(y, [str(v) for v in found.values[:m]], fontsize=8)
    asked = float(getattr(found, "threshold", np.nan))
    if np.isfinite(asked):
        ax.axvline(asked, color="0.4", lw=1, ls="--", label=f"threshold asked {asked:.3g}")
    elif hasattr(found, "threshold_z"):
        marks = found.threshold_z * np.asarray(found.std_error)[:m]
        z = found.threshold_z
        ax.plot(marks, y, "|", color="C3", ms=12, mew=2, label=f"detection threshold (z = {z:.2f})")
    if detection_limit is not None:
        ax.axvline(
            detection_limit, color="C3", lw=1.2, label=f"detection limit {detection_limit:.3g}"
        )
    ax.set_xlabel("estimated frequency with its interval")
    ax.grid(True, axis="x", alpha=0.3)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    return fig

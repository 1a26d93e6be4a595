"""A figure without a display, and the forest plot every interval plot is drawn with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._extras import require

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["axes_of", "finite_vector", "headless_figure", "plot_intervals"]


def headless_figure(**kwargs: Any) -> Figure:
    """A matplotlib ``Figure`` drawn without a display (no pyplot, no GUI backend).

    Parameters
    ----------
    **kwargs
        Passed to ``matplotlib.figure.Figure`` (``figsize`` in inches, ``dpi``, ...).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ModuleNotFoundError
        Without matplotlib (``pip install 'deniable[plot]'``).

    Examples
    --------
    >>> from deniable.plots import headless_figure
    >>> headless_figure(figsize=(4, 3)).get_size_inches().tolist()
    [4.0, 3.0]
    """
    figure = require("matplotlib.figure", "plot")
    fig: Figure = figure.Figure(**kwargs)
    return fig


def axes_of(ax: Axes | None, width: float, height: float) -> tuple[Figure, Axes]:
    """``ax`` and its figure, or a new headless figure of ``width`` x ``height`` inches
    with one axes."""
    if ax is not None:
        return cast("Figure", ax.figure), ax
    fig = headless_figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig, fig.subplots()


def finite_vector(name: str, values: ArrayLike, size: int | None = None) -> NDArray[np.float64]:
    """``values`` as a 1-d float64 array of finite numbers (of length ``size`` if given).

    Raises
    ------
    ValueError
        Naming ``name``, for another shape, a length other than ``size`` or a value that
        is NaN or infinite.
    """
    out = np.asarray(values, dtype=np.float64)
    if out.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {out.shape}")
    if size is not None and out.size != size:
        raise ValueError(f"{name} must have {size} entries (one per label), got {out.size}")
    if not np.isfinite(out).all():
        raise ValueError(
            f"{name} must be finite numbers; entry {int(np.argmin(np.isfinite(out)))} is not"
        )
    return out


def plot_intervals(
    labels: Sequence[str],
    estimate: ArrayLike,
    low: ArrayLike,
    high: ArrayLike,
    *,
    reference: float | None = 0.0,
    truth: ArrayLike | None = None,
    colors: Sequence[str] | None = None,
    xlabel: str = "estimate with its interval",
    title: str | None = None,
    xlim: tuple[float, float] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """A forest plot: one row per label, its interval as a line and its estimate as a
    dot, the first label on top.

    The estimate and its interval are drawn apart, so an unbiased estimate outside its
    clipped interval (a prevalence estimated below 0) shows where it is, with no
    negative error bar.

    Parameters
    ----------
    labels : sequence of str, length m >= 1
    estimate, low, high : array_like of float, shape (m,)
        Finite numbers, in the units of the x axis.
    reference : float or None, default 0.0
        A vertical line (0 for a difference or a coefficient, 1 for an odds ratio);
        ``None`` for none.
    truth : array_like of float, shape (m,), optional
        Known true values (a simulation's), drawn as crosses.
    colors : sequence of str, length m, optional
        A matplotlib colour per row (default all ``"C0"``).
    xlabel, title : str
    xlim : (float, float), optional
        The x axis's limits (default: the data's, with the reference line).
    ax : matplotlib.axes.Axes, optional
        Draw into it instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure
        With one axes (or ``ax``'s figure): a line collection of the m intervals, a
        scatter of the m estimates and the labels as y tick labels, first on top.

    Raises
    ------
    ValueError
        For no labels, or arrays that are not finite or not one per label.
    ModuleNotFoundError
        Without matplotlib (``pip install 'deniable[plot]'``).

    Examples
    --------
    >>> from deniable.plots import plot_intervals
    >>> fig = plot_intervals(["men", "women"], [0.21, 0.14], [0.15, 0.09], [0.27, 0.19])
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['men', 'women']
    """
    names = [str(label) for label in labels]
    if not names:
        raise ValueError("labels must name at least one estimate")
    m = len(names)
    e = finite_vector("estimate", estimate, m)
    lo, hi = finite_vector("low", low, m), finite_vector("high", high, m)
    shades = list(colors) if colors is not None else ["C0"] * m
    if len(shades) != m:
        raise ValueError(f"colors must have {m} entries (one per label), got {len(shades)}")
    fig, ax = axes_of(ax, 7.0, 0.32 * m + 1.3)
    y = np.arange(m)[::-1].astype(np.float64)
    ax.hlines(y, lo, hi, colors=shades, lw=2)
    ax.scatter(e, y, c=shades, s=22, zorder=3, marker="o", label="estimate")
    if truth is not None:
        ax.scatter(finite_vector("truth", truth, m), y, marker="x", c="k", s=30, zorder=4,
                   label="truth")  # fmt: skip
        ax.legend(loc="best", fontsize=8)
    if reference is not None:
        ax.axvline(reference, color="0.6", lw=0.8)
    ax.set_yticks(y, names, fontsize=8 if m > 12 else 9)
    ax.set_ylim(-0.7, m - 0.3)
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return fig

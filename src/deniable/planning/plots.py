"""Plots for planning and reporting (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._extras import require
from ..estimation import worst_case_variance, z_quantile
from ..mechanisms import Design

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["headless_figure", "plot_margin"]


def plot_margin(design: Design, confidence_level: float, path: Path) -> Path:
    """Save a log-log plot of the worst-case margin of error against the sample size.

    Two curves: the normal-approximation margin ``z sqrt(V / n)`` and the
    distribution-free Chebyshev margin ``sqrt(V / ((1 - confidence_level) n))``, with
    ``V`` the exact worst-case per-respondent variance of the moment estimator.

    Parameters
    ----------
    design : Design
    confidence_level : float in (0, 1)
    path : pathlib.Path
        The image file (PNG, SVG, PDF by its suffix).

    Returns
    -------
    pathlib.Path
        ``path``, written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.mechanisms import Warner
    >>> from deniable.planning.plots import plot_margin
    >>> out = plot_margin(Warner(p=0.75), 0.95, pathlib.Path(tempfile.mkdtemp()) / "m.png")
    >>> out.stat().st_size > 0
    True
    """
    matplotlib = require("matplotlib", "plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variance = float(worst_case_variance(design).max())
    n = np.logspace(2, 6, 200)
    z = z_quantile(confidence_level)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    ax.loglog(n, z * np.sqrt(variance / n), label="normal approximation")
    ax.loglog(
        n,
        np.sqrt(variance / ((1.0 - confidence_level) * n)),
        "--",
        label="Chebyshev (distribution-free)",
    )
    ax.set_xlabel("respondents n")
    ax.set_ylabel(f"margin of error at {confidence_level:.0%} (worst-case prevalence)")
    ax.set_title(f"{design!r}\nepsilon = {design.epsilon:.3g} nats", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def headless_figure(**kwargs: Any) -> Figure:
    """A matplotlib ``Figure`` drawn without a display (the Agg backend).

    Parameters
    ----------
    **kwargs
        Passed to ``matplotlib.figure.Figure`` (``figsize``, ``dpi``, ...).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ModuleNotFoundError
        Without matplotlib (``pip install 'deniable[plot]'``).

    Examples
    --------
    >>> from deniable.planning.plots import headless_figure
    >>> headless_figure(figsize=(4, 3)).get_size_inches().tolist()
    [4.0, 3.0]
    """
    figure = require("matplotlib.figure", "plot")
    fig: Figure = figure.Figure(**kwargs)
    return fig

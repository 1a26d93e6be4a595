"""Plots of estimates, arms, waves, regressions, coverage, heavy hitters and sample size.

The one place deniable draws (matplotlib, in the ``plot`` extra; the Agg backend, so no
display is needed). Every function returns a ``matplotlib.figure.Figure``, which a
notebook shows as it is and ``fig.savefig(path)`` writes (PNG, SVG or PDF by the
suffix); pass ``ax=`` to draw into an axes of your own figure instead. The dashboard of
:mod:`deniable.collection` draws with the same functions.

- :func:`plot_intervals`: a forest plot of labelled estimates and their intervals (the
  building block of the next three).
- :func:`plot_estimates`: one or more results (prevalences, arm differences, any
  estimate of the common base) as a forest plot.
- :func:`plot_coefficients`: a regression's coefficients (or odds ratios) with their
  intervals.
- :func:`plot_waves`: an answer's prevalence across waves, or a :class:`~deniable.
  analysis.WaveChange`'s two waves.
- :func:`plot_coverage`: the coverage of an interval over simulated surveys against its
  nominal level, with the Monte Carlo band a correct method stays in.
- :func:`plot_heavy_hitters`: heavy hitters' frequencies with their detection limit.
- :func:`plot_sample_size`: the margin of error against n, with the asked margin and its
  n marked.
"""

from ._figure import headless_figure, plot_intervals
from ._forests import plot_coefficients, plot_estimates, plot_waves
from ._planning import plot_coverage, plot_heavy_hitters, plot_sample_size

__all__ = [
    "headless_figure",
    "plot_coefficients",
    "plot_coverage",
    "plot_estimates",
    "plot_heavy_hitters",
    "plot_intervals",
    "plot_sample_size",
    "plot_waves",
]

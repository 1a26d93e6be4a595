"""The documentation's example data, built in one place.

The examples of the regression functions (:func:`deniable.analysis.rr_logit` and its
relatives) all start from the same simulated survey, and those of the list experiment's
regressions from the same simulated list experiment; they import them from here instead
of repeating their lines. Simulation only: a seeded generator, never a respondent's
randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..mechanisms import Design, ForcedResponse

__all__ = ["ListExample", "RegressionExample", "list_example", "regression_example"]


@dataclass(frozen=True)
class RegressionExample:
    """A simulated randomized-response survey with one covariate.

    Attributes
    ----------
    data : pandas.DataFrame
        ``n`` rows: ``r`` the randomized report (int64, 0 or 1) and ``x`` the
        covariate (float64, standard normal).
    design : Design
        The design that randomized ``r``.
    truth : numpy.ndarray of bool, shape (n,)
        The simulated true answers, ``Pr(truth | x) = 1 / (1 + exp(1 - x))``.
    rng : numpy.random.Generator
        The generator after the draws, for an example that draws more.

    Examples
    --------
    >>> example = regression_example()
    >>> example.truth.shape, example.data["r"].isin([0, 1]).all()
    ((2000,), np.True_)
    """

    data: pd.DataFrame
    design: Design
    truth: NDArray[np.bool_]
    rng: np.random.Generator


def regression_example(
    design: Design | None = None, n: int = 2000, seed: int = 0
) -> RegressionExample:
    """Simulate the examples' survey: ``x ~ N(0, 1)``, a true answer with log-odds
    ``x - 1``, reported through ``design`` (default forced response with
    ``p_yes = p_no = 1/6``, Boruch 1971).

    Parameters
    ----------
    design : Design, optional
        A yes/no design.
    n : int >= 1, default 2000
        Respondents.
    seed : int, default 0
        The simulation's seed.

    Returns
    -------
    RegressionExample

    Raises
    ------
    ValueError
        For a design that is not over two answers.

    Examples
    --------
    >>> example = regression_example()
    >>> list(example.data.columns), len(example.data), example.design
    (['r', 'x'], 2000, ForcedResponse(p_yes=0.16666666666666666, p_no=0.16666666666666666))
    """
    design = design or ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    if design.n_truths != 2:
        raise ValueError(f"design must be over two answers (yes/no), got {design!r}")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    truth = rng.random(n) < 1 / (1 + np.exp(1 - x))
    data = pd.DataFrame({"r": design.randomize(truth, rng), "x": x})
    return RegressionExample(data, design, truth, rng)


@dataclass(frozen=True)
class ListExample:
    """A simulated list experiment with one covariate.

    Attributes
    ----------
    data : pandas.DataFrame
        ``n`` rows: ``y`` the reported count (int64, 0..4), ``x`` the covariate
        (float64, standard normal) and ``treat`` (int64, 1 where the list held the
        sensitive item; three control items, each carried with probability 1/2).
    truth : numpy.ndarray of bool, shape (n,)
        The simulated sensitive answers, ``Pr(truth | x) = 1 / (1 + exp(1 - x))``.
    rng : numpy.random.Generator
        The generator after the draws.

    Examples
    --------
    >>> example = list_example(500)
    >>> len(example.data), sorted(example.data["treat"].unique().tolist())
    (500, [0, 1])
    """

    data: pd.DataFrame
    truth: NDArray[np.bool_]
    rng: np.random.Generator


def list_example(n: int = 2000, seed: int = 1) -> ListExample:
    """Simulate the examples' list experiment (Imai 2011's model): a random half treated,
    ``x ~ N(0, 1)``, the sensitive answer with log-odds ``x - 1``, three control items
    with probability 1/2 each.

    Parameters
    ----------
    n : int >= 1, default 2000
        Respondents.
    seed : int, default 1
        The simulation's seed.

    Returns
    -------
    ListExample

    Examples
    --------
    >>> example = list_example()
    >>> list(example.data.columns), int(example.data["y"].max()) <= 4
    (['y', 'x', 'treat'], True)
    """
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2, n)
    x = rng.normal(size=n)
    z = rng.random(n) < 1 / (1 + np.exp(1 - x))
    data = pd.DataFrame({"y": rng.binomial(3, 0.5, n) + t * z, "x": x, "treat": t})
    return ListExample(data, z, rng)

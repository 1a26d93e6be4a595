"""Simulated surveys, for planning, coverage studies and tests (seeded; never for respondents)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_integer
from ..mechanisms import Design

__all__ = ["simulate_tallies"]


def simulate_tallies(
    design: Design,
    prevalence: float | ArrayLike,
    n: int,
    size: int,
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """Report counts of ``size`` independent surveys of ``n`` respondents each.

    Each respondent's truth is drawn from ``prevalence`` and randomized through the
    design. The draw is made at the level of counts, which has exactly the same
    distribution as randomizing ``n`` answers one by one: the truth counts are
    ``Multinomial(n, prevalence)`` and the reports of the ``T_t`` respondents with truth
    ``t`` are ``Multinomial(T_t, P[:, t])``.

    Parameters
    ----------
    design : Design
    prevalence : float in [0, 1] (binary designs: of "yes") or array_like, shape (k,)
    n, size : int >= 1
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (size, m)
    """
    n = check_integer("n", n, minimum=1)
    size = check_integer("size", size, minimum=1)
    pi = design.as_prevalence(prevalence)
    truth_counts = rng.multinomial(n, pi, size=size)  # (size, k)
    counts = np.zeros((size, design.n_reports), dtype=np.int64)
    for t in range(design.n_truths):  # loop over truth categories, not respondents
        counts += rng.multinomial(truth_counts[:, t], design.matrix[:, t])
    return counts

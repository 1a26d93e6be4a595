"""Clopper-Pearson bounds on a probability, and the lower bound on epsilon they give.

An epsilon-LDP randomizer ``R`` satisfies ``Pr(R(x0) in E) <= e^eps Pr(R(x1) in E)`` for
every two inputs and every event ``E``. Given ``k0`` of ``n0`` draws from ``R(x0)`` and
``k1`` of ``n1`` from ``R(x1)`` in ``E``, a one-sided Clopper-Pearson (1934) lower bound
``p0_low`` on ``Pr(R(x0) in E)`` and upper bound ``p1_high`` on ``Pr(R(x1) in E)``, each at
level ``1 - alpha / 2``, give ``eps >= ln(p0_low / p1_high)`` with probability at least
``1 - alpha`` (a union bound): the method of Jagielski, Ullman & Oprea (2020, "Auditing
differentially private machine learning") and of LDP-Auditor (Arcolezi & Gambs 2023,
arXiv 2309.01597).
"""

from __future__ import annotations

import math

__all__ = ["clopper_pearson_high", "clopper_pearson_low", "epsilon_lower_bound"]


def _check(k: int, n: int, level: float) -> None:
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if not (isinstance(k, int) and 0 <= k <= n):
        raise ValueError(f"k must be an integer in 0..n = {n}, got {k!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def clopper_pearson_low(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson lower bound on a binomial probability.

    Parameters
    ----------
    k, n : int
        Successes and trials, ``0 <= k <= n``, ``n >= 1``.
    level : float in (0, 1)
        ``Pr(p >= bound) >= level`` whatever ``p`` is.

    Returns
    -------
    float in [0, 1]
        The ``1 - level`` quantile of Beta(k, n - k + 1); 0 when ``k = 0``.

    Raises
    ------
    ValueError
        Naming ``k``, ``n`` or ``level`` when out of range.

    Examples
    --------
    >>> round(clopper_pearson_low(50, 100, 0.975), 4)
    0.3983
    """
    from scipy.stats import beta

    _check(k, n, level)
    return 0.0 if k == 0 else float(beta.ppf(1.0 - level, k, n - k + 1))


def clopper_pearson_high(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson upper bound on a binomial probability.

    Parameters
    ----------
    k, n : int
        Successes and trials, ``0 <= k <= n``, ``n >= 1``.
    level : float in (0, 1)
        ``Pr(p <= bound) >= level`` whatever ``p`` is.

    Returns
    -------
    float in [0, 1]
        The ``level`` quantile of Beta(k + 1, n - k); 1 when ``k = n``.

    Raises
    ------
    ValueError
        Naming ``k``, ``n`` or ``level`` when out of range.

    Examples
    --------
    >>> round(clopper_pearson_high(0, 100, 0.99), 4)  # 1 - 0.01^(1/100)
    0.045
    """
    from scipy.stats import beta

    _check(k, n, level)
    return 1.0 if k == n else float(beta.ppf(level, k + 1, n - k))


def epsilon_lower_bound(k0: int, n0: int, k1: int, n1: int, confidence: float) -> float:
    """A lower bound on epsilon, in nats, from an event's counts under two inputs.

    Parameters
    ----------
    k0, n0 : int
        Draws of the randomizer on input ``x0`` that fell in the event, and all its draws.
    k1, n1 : int
        The same on input ``x1``.
    confidence : float in (0, 1)
        Probability that the bound is below the randomizer's true epsilon (each one-sided
        Clopper-Pearson bound at ``1 - (1 - confidence) / 2``; module docstring).

    Returns
    -------
    float, >= 0
        ``max(0, ln(p0_low / p1_high))``; 0 when the event never occurred under ``x0``.

    Raises
    ------
    ValueError
        Naming the count or the confidence out of range.

    Examples
    --------
    >>> # Warner p = 0.75 (epsilon ln 3 = 1.0986): 75,000 and 25,000 of 100,000 each
    >>> round(epsilon_lower_bound(75_000, 100_000, 25_000, 100_000, 0.99), 3)
    1.08
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    level = 1.0 - (1.0 - confidence) / 2.0
    low = clopper_pearson_low(k0, n0, level)
    high = clopper_pearson_high(k1, n1, level)
    if low <= 0.0:
        return 0.0
    return max(0.0, math.log(low / high))

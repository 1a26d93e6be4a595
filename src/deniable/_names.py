"""The names of the estimators and of the interval methods: one list each, that the
estimators check their arguments against and the command line's help lists, without
the command line loading NumPy or SciPy to print its help."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["ESTIMATION_METHODS", "INTERVAL_METHODS", "EstimationMethod", "IntervalMethod"]

#: The estimators of a finite design: moment (unbiased), maximum likelihood (on the
#: simplex), Bayes (posterior mean).
EstimationMethod = Literal["moment", "mle", "bayes"]
ESTIMATION_METHODS: tuple[str, ...] = get_args(EstimationMethod)

#: The interval methods of a prevalence (:mod:`deniable.estimation`'s intervals).
IntervalMethod = Literal[
    "feldman_cousins", "normal", "wilson", "agresti_coull", "beta", "jeffreys", "chebyshev", "bayes"
]
INTERVAL_METHODS: tuple[str, ...] = get_args(IntervalMethod)

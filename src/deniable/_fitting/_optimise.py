"""Maximising a log-likelihood given with its analytic score, and the error and the
inverse for a singular information (private; the fits of :mod:`deniable.analysis` and
:mod:`deniable.list_experiment` share them).

:func:`maximise_score` runs BFGS (scipy.optimize.minimize), then polishes with Newton
steps on the central-difference Hessian of the score (:func:`score_hessian`) until the
score's largest entry is below 1e-9.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["inverse_information", "maximise_score", "score_hessian", "singular"]


def inverse_information(matrix: NDArray[np.float64], name: str) -> NDArray[np.float64]:
    """``matrix``'s inverse, shape (m, m), float64.

    Raises
    ------
    ValueError
        Naming ``name`` (for example "the observed information") when it is singular:
        the data do not identify every coefficient.
    """
    try:
        return np.asarray(np.linalg.inv(matrix), dtype=np.float64)
    except np.linalg.LinAlgError:
        raise singular(name) from None


def singular(name: str) -> ValueError:
    """The error for a singular ``name``: the data do not identify every coefficient."""
    return ValueError(
        f"{name} is singular: the data do not identify every coefficient (for example "
        "every count is 0, or every count is the most its list allows, or a covariate "
        "is constant); drop terms or collect more varied data"
    )


def score_hessian(
    value_and_score: Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]],
    theta: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The Hessian as central differences of an analytic score (step 1e-5 relative to
    each coordinate, at least 1e-5), symmetrised: shape (m, m) for ``theta`` of (m,)."""
    m = len(theta)
    out = np.empty((m, m))
    for i in range(m):
        h = 1e-5 * max(1.0, abs(theta[i]))
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        out[:, i] = (value_and_score(up)[1] - value_and_score(down)[1]) / (2 * h)
    return (out + out.T) / 2


def maximise_score(
    value_and_score: Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]],
    start: NDArray[np.float64],
    max_iter: int = 50,
) -> NDArray[np.float64]:
    """Maximise a log-likelihood given with its analytic score: BFGS from ``start``,
    then Newton steps on :func:`score_hessian` until the score's largest entry is below
    1e-9 (a step that lowers the log-likelihood ends the polish)."""
    from scipy import optimize

    def negative(th: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        value, score = value_and_score(th)
        return -value, -score

    fit = optimize.minimize(
        negative, start, jac=True, method="BFGS", options={"gtol": 1e-9, "maxiter": 2000}
    )
    theta: NDArray[np.float64] = fit.x
    for _ in range(max_iter):
        ll, score = value_and_score(theta)
        if np.abs(score).max() < 1e-9:
            break
        step = np.linalg.solve(score_hessian(value_and_score, theta), score)
        if not value_and_score(theta - step)[0] >= ll - 1e-9:
            break
        theta = theta - step
    return theta

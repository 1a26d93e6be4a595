"""A list experiment's likelihood through a known channel: the counts were stored after
the server's post-randomization (``P[r, c] = Pr(stored r | count c)``, a design over
the counts ``0..J+1``), so each row's likelihood sums the model's likelihood of every
count the stored value may come from (Warner 1965's device, generalised by Chen 1979
to misclassified responses in a likelihood). Its score is the complete-data score of
each count weighted by the count's posterior given the stored value (Louis 1982).

Sources
-------
* Louis, T. A. (1982). Finding the observed information matrix when using the EM
  algorithm. JRSS B 44(2), 226-233.
* Chen, T. T. (1979). Log-linear models for categorical data with misclassification
  and double sampling. JASA 74(366), 481-488.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import special

__all__ = ["ChannelLikelihood"]

#: A model's rows at one hypothetical count: ``(theta, c) -> (log-likelihood of each
#: row had it counted c, shape (n,); its score, shape (n, parameters))``.
RowsAt = Callable[[NDArray[np.float64], int], tuple[NDArray[np.float64], NDArray[np.float64]]]


class ChannelLikelihood:
    """Log-likelihood (plus an optional log prior) of counts stored through a channel,
    and its analytic score.

    Parameters
    ----------
    rows_at : callable
        The model's rows at a hypothetical count (:data:`RowsAt`).
    stored : ndarray, shape (n,)
        The stored counts, in ``0..J+1``.
    matrix : ndarray, shape (J + 2, J + 2), float64
        The channel's misclassification matrix, ``matrix[r, c]`` the chance of storing
        ``r`` for a count ``c``.
    prior : callable, optional
        ``theta -> (log prior, its gradient)``, added once (not per row).
    weights : ndarray, shape (n,), float64, optional
        How many respondents each row stands for (rows collapsed to the distinct ones);
        one each by default.
    """

    def __init__(
        self,
        rows_at: RowsAt,
        stored: NDArray[np.float64],
        matrix: NDArray[np.float64],
        prior: Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]] | None = None,
        weights: NDArray[np.float64] | None = None,
    ):
        self.rows_at, self.prior, self.weights = rows_at, prior, weights
        with np.errstate(divide="ignore"):
            self.log_p = np.log(matrix)[stored.astype(np.int64)]  # (n, J + 2)

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        terms = [self.rows_at(theta, c) for c in range(self.log_p.shape[1])]
        joint = np.column_stack([self.log_p[:, c] + ll for c, (ll, _) in enumerate(terms)])
        total = special.logsumexp(joint, axis=1)
        w = np.exp(joint - total[:, None])  # (n, J + 2): Pr(count | stored value)
        score = np.asarray(sum(w[:, c : c + 1] * s for c, (_, s) in enumerate(terms)))
        if self.weights is None:
            value, grad = float(total.sum()), score.sum(axis=0)
        else:
            value, grad = float(self.weights @ total), self.weights @ score
        if self.prior is not None:
            extra, extra_grad = self.prior(theta)
            value, grad = value + extra, grad + extra_grad
        return value, grad

"""The range-restricted geometric channel on a count (Ghosh, Roughgarden & Sundararajan
2009).

A count ``t`` in ``0..k-1`` is reported as ``t + Z`` with ``Z`` two-sided geometric,
``Pr(Z = z) = (1 - a) / (1 + a) a^|z|``, ``a = e^-eps``, and the result clamped to
``0..k-1``: the mass beyond either end lands on that end. Clamping is post-processing
of the unbounded geometric mechanism, which is ``eps``-differentially private for counts
that differ by one (Ghosh et al. 2009, the discrete Laplace mechanism), so the channel
is too: with a list experiment's count, a respondent's sensitive item changes the count
by at most one, and the item is the privacy unit. Two counts ``d`` apart are only
``d eps`` apart (:func:`~deniable.mechanisms.ldp_epsilon` of the matrix).

The server uses it to post-randomize a list count before it is stored
(:mod:`deniable.collection.model`); the analysis undoes it through its
misclassification matrix like any design's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import check_integer
from ._designs import Design
from ._protocol import check_epsilon

__all__ = ["GeometricCount", "geometric_matrix"]


def geometric_matrix(k: int, epsilon: float) -> NDArray[np.float64]:
    """The ``(k, k)`` column-stochastic matrix ``Pr(report r | count t)`` of
    :class:`GeometricCount` (float64; every column sums to 1 exactly up to rounding).

    Parameters
    ----------
    k : int >= 2
        Counts ``0..k-1``.
    epsilon : float > 0
        Nats between counts that differ by one.
    """
    a = math.exp(-epsilon)
    r = np.arange(k)[:, None]
    t = np.arange(k)[None, :]
    P = (1.0 - a) / (1.0 + a) * a ** np.abs(r - t)
    P[0, :] = a ** t[0] / (1.0 + a)  # Pr(t + Z <= 0) = a^t / (1 + a)
    P[k - 1, :] = a ** (k - 1 - t[0]) / (1.0 + a)  # Pr(t + Z >= k - 1)
    return np.asarray(P, dtype=np.float64)


class GeometricCount(Design):
    """The range-restricted geometric channel on counts ``0..k-1`` (Ghosh, Roughgarden
    & Sundararajan 2009); see the module docstring.

    Parameters
    ----------
    k : int in [2, 256]
        Number of counts (a list of J control items and the sensitive item: J + 2).
    epsilon : float > 0
        Nats between two counts that differ by one (the sensitive item as the privacy
        unit). Its :attr:`epsilon` is this value; two counts ``d`` apart are ``d
        epsilon`` apart.
    labels : tuple of str, optional
        Names of the counts (default "0".."k-1").

    Raises
    ------
    ValueError
        For ``k`` outside [2, 256] or an epsilon that is not positive and finite.

    Examples
    --------
    >>> d = GeometricCount(k=4, epsilon=math.log(9))
    >>> d.matrix[:, 1].round(4).tolist()
    [0.1, 0.8, 0.0889, 0.0111]
    """

    spec_name = "geometric-count"
    adjacent_neighbours = True  # epsilon is between counts that differ by one

    def __init__(self, *, k: int, epsilon: float, labels: tuple[str, ...] | None = None) -> None:
        self.k = check_integer("k", k, minimum=2)
        if self.k > 256:
            raise ValueError(f"k must be in 2..256, got {self.k}")
        self._count_epsilon = check_epsilon(epsilon)
        names = tuple(labels) if labels is not None else None
        super().__init__(
            geometric_matrix(self.k, self._count_epsilon), truth_labels=names, report_labels=names
        )

    @property
    def epsilon(self) -> float:
        """Nats between two counts that differ by one (the sensitive item as the
        privacy unit, Ghosh et al. 2009)."""
        return self._count_epsilon

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "epsilon": self._count_epsilon}

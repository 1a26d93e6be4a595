"""k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2016): the design of
k answers that keeps the true one with probability ``e^eps / (e^eps + k - 1)``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import check_integer, check_probability
from ._designs import Design
from ._protocol import check_epsilon

__all__ = ["KaryRR"]


class KaryRR(Design):
    """k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2016).

    Also called generalized randomized response or direct encoding: keep the true
    value with probability ``e^eps / (e^eps + k - 1)``, else report one of the other
    ``k - 1`` values uniformly at random.

    Parameters
    ----------
    k : int in 2..4096
        Number of categories (truths and reports); the design holds its k x k matrix,
        so a larger domain takes a frequency oracle (``olh``, ``hadamard``).
    epsilon : float > 0
        Privacy parameter in nats.
    labels : tuple of str, optional
        Names of the k categories (default "0".."k-1").

    Raises
    ------
    ValueError
        For k outside 2..4096 (``MAX_K``) or an epsilon that is not positive.

    Notes
    -----
    Use :meth:`from_keep_probability` to build it from the keep probability instead.

    Privacy
    -------
    ``epsilon`` exactly (the ratio of the diagonal to the off-diagonal entries).

    Examples
    --------
    >>> d = KaryRR(k=10, epsilon=math.log(3))
    >>> round(d.keep_probability, 6)
    0.25
    """

    spec_name = "kary-rr"

    #: The largest k: the design holds its k x k misclassification matrix (128 MiB).
    MAX_K = 4096

    def __init__(self, *, k: int, epsilon: float, labels: tuple[str, ...] | None = None) -> None:
        self.k = check_integer(
            "k", k, minimum=2, maximum=self.MAX_K,
            why="k-ary RR holds a k x k matrix; for more values use a frequency oracle: "
            "olh, hadamard",
        )  # fmt: skip
        eps = check_epsilon(epsilon)
        self._epsilon_param = eps
        e = math.exp(eps)
        self.keep_probability = e / (e + self.k - 1)
        self.other_probability = 1.0 / (e + self.k - 1)
        P = np.full((self.k, self.k), self.other_probability)
        np.fill_diagonal(P, self.keep_probability)
        names = tuple(labels) if labels is not None else None
        super().__init__(P, truth_labels=names, report_labels=names)

    @classmethod
    def from_keep_probability(cls, *, k: int, keep_probability: float) -> KaryRR:
        """Build from the probability of reporting the true value.

        ``keep_probability`` must lie in ``(1/k, 1)``; epsilon is
        ``ln(keep (k - 1) / (1 - keep))``.
        """
        k = check_integer("k", k, minimum=2, maximum=cls.MAX_K, why="k-ary RR holds a k x k matrix")
        keep = check_probability("keep_probability", keep_probability, high_open=True)
        if keep <= 1.0 / k:
            raise ValueError(f"keep_probability must be in (1/k, 1) = ({1 / k:g}, 1), got {keep}")
        return cls(k=k, epsilon=math.log(keep * (k - 1) / (1.0 - keep)))

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "epsilon": self._epsilon_param}

    def _draw(self, truths: NDArray[np.integer], u: NDArray[np.float64]) -> NDArray[np.integer]:
        keep = self.keep_probability
        # u < keep: keep the truth; else (u - keep) / (1 - keep) is uniform on [0, 1)
        # and picks one of the k - 1 other values, shifted past the truth.
        j = np.floor((u - keep) / (1.0 - keep) * (self.k - 1)).astype(np.int64)
        np.clip(j, 0, self.k - 2, out=j)
        t = truths.astype(np.int64)
        other = j + (j >= t)
        out: NDArray[np.integer] = np.where(u < keep, t, other)
        return out.astype(np.uint8) if self.k <= 256 else out

"""Direct questioning: the answer is reported as given (no randomization).

The control arm of randomized-response validation studies (Lensvelt-Mulders, Hox, van
der Heijden & Maas 2005; Höglinger, Jann & Diekmann 2016) and the covariates every
study asks openly (age, gender, field of study). Its misclassification matrix is the
identity, so the unbiased estimator is the sample proportion and every report proves
its answer: epsilon is infinite, and a survey keeps direct questions outside its
privacy accounting (they protect nothing, and are listed apart).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import check_integer
from ._designs import Design

__all__ = ["Direct"]


class Direct(Design):
    """Direct questioning: ``Pr(report r | truth t) = 1`` if ``r == t``.

    Parameters
    ----------
    k : int >= 2
        Number of answers (truths and reports alike).
    labels : tuple of str, optional
        Names of the k answers (default "no", "yes" for k = 2, else "0".."k-1").

    Privacy
    -------
    None: epsilon is infinite and every report proves its answer. Not a randomizer;
    a survey lists a direct question apart from its budget.

    Examples
    --------
    >>> Direct(k=3).matrix.tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """

    spec_name = "direct"

    def __init__(self, *, k: int = 2, labels: tuple[str, ...] | None = None) -> None:
        self.k = check_integer("k", k, minimum=2)
        names = tuple(labels) if labels is not None else None
        super().__init__(np.eye(self.k), truth_labels=names, report_labels=names)

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def _draw(self, truths: NDArray[np.integer], u: NDArray[np.float64]) -> NDArray[np.integer]:
        t = truths.astype(np.int64)
        return t.astype(np.uint8) if self.k <= 256 else t

"""Detecting heavy hitters among a frequency oracle's candidates (Erlingsson et al. 2014).

A value is detected when ``estimate / SE > z_{1 - alpha / k}`` (one-sided, Bonferroni
over the ``k`` candidates), the rule of the RAPPOR analysis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._extras import require
from ._base import Summary
from ._estimates import ConfidenceInterval, EstimateResult, PrevalenceEstimate
from ._normal_theory import bonferroni_z, normal_only_interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HeavyHitters", "heavy_hitters"]


@dataclass(frozen=True)
class HeavyHitters(EstimateResult):
    """The detected values, largest estimate first.

    Attributes
    ----------
    values : list of str
        Labels of the detected values.
    indices : ndarray of int64, shape (h,)
        Their positions among the ``k`` candidates.
    estimate : ndarray of float64, shape (h,)
        Their estimated frequencies (unbiased, never clipped).
    std_error : ndarray of float64, shape (h,)
    z : ndarray of float64, shape (h,)
        ``estimate / std_error``.
    threshold_z : float
        ``z_{1 - alpha / k}``, the detection threshold.
    alpha : float in (0, 1)
        Family-wise significance level of the detection.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import LocalHashing, estimate, heavy_hitters
    >>> oracle = LocalHashing(k=20, epsilon=2.0)
    >>> values = np.where(np.arange(5000) % 2 == 0, 3, np.arange(5000) % 20)
    >>> found = heavy_hitters(estimate(oracle, oracle.randomize(values, np.random.default_rng(1))))
    >>> print(found.values[0])
    3
    """

    values: list[str]
    indices: NDArray[np.int64]
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    z: NDArray[np.float64]
    threshold_z: float
    alpha: float

    @property
    def labels(self) -> list[str]:
        """The detected values' labels."""
        return list(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def confidence_interval(
        self, confidence_level: float | None = None, method: str | None = None
    ) -> ConfidenceInterval[NDArray[np.float64]]:
        """Wald intervals of the detected frequencies, clipped to [0, 1].

        Parameters
        ----------
        confidence_level : float in (0, 1), optional
            Default ``1 - alpha``.
        method : {"normal"}, optional

        Raises
        ------
        ValueError
            For another method or a level outside (0, 1).
        """
        level = 1.0 - self.alpha if confidence_level is None else confidence_level
        return ConfidenceInterval(
            *normal_only_interval(self.estimate, self.std_error, level, method, True)
        )

    def summary(self, confidence_level: float | None = None, method: str | None = None) -> Summary:
        """Plain-text table of the detected values."""
        level = 1.0 - self.alpha if confidence_level is None else confidence_level
        return super().summary(level, method)

    def to_frame(
        self, confidence_level: float | None = None, method: str | None = None
    ) -> pd.DataFrame:
        """Indexed by label (each value's text, as every estimate's frame): columns
        ``value``, ``estimate``, ``std_error``, ``low``, ``high``, ``z``.

        Raises
        ------
        ModuleNotFoundError
            Without pandas (``pip install 'deniable[analysis]'``).
        """
        require("pandas", "analysis")
        import pandas as pd

        ci = self.confidence_interval(confidence_level, method)
        frame = pd.DataFrame(
            {
                "value": self.values,
                "estimate": self.estimate,
                "std_error": self.std_error,
                "low": ci.low,
                "high": ci.high,
                "z": self.z,
            },
            index=pd.Index(self.labels, name="category"),
        )
        frame.attrs["threshold_z"] = self.threshold_z
        return frame


def heavy_hitters(
    result: PrevalenceEstimate, alpha: float = 0.05, labels: Sequence[str] | None = None
) -> HeavyHitters:
    """Values whose estimated frequency passes the detection threshold.

    Parameters
    ----------
    result : PrevalenceEstimate
        From :func:`deniable.estimation` on an oracle (or a design), shape (k,).
    alpha : float in (0, 1), default 0.05
        Family-wise false-detection rate (significance level).
    labels : sequence of str, optional
        Names of the ``k`` values (default: the result's truth labels).

    Returns
    -------
    HeavyHitters
        One entry per detected value, largest estimate first.

    Raises
    ------
    ValueError
        For ``alpha`` outside (0, 1) or ``labels`` of the wrong length.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import LocalHashing, estimate, heavy_hitters
    >>> oracle = LocalHashing(k=20, epsilon=2.0)
    >>> values = np.where(np.arange(5000) % 2 == 0, 3, np.arange(5000) % 20)
    >>> reports = oracle.randomize(values, np.random.default_rng(1))
    >>> heavy_hitters(estimate(oracle, reports)).values[:1]
    ['3']
    """
    est = result.estimate
    se = result.std_error
    k = est.size
    threshold = bonferroni_z(alpha, k)
    names: list[Any] = list(labels) if labels is not None else result.labels
    if len(names) != k:
        raise ValueError(f"labels must name all {k} values, got {len(names)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, est / se, 0.0)
    keep = np.nonzero(z > threshold)[0]
    keep = keep[np.argsort(-est[keep], kind="stable")]
    return HeavyHitters(
        values=[str(names[i]) for i in keep],
        indices=keep.astype(np.int64),
        estimate=est[keep],
        std_error=se[keep],
        z=z[keep],
        threshold_z=threshold,
        alpha=float(alpha),
    )

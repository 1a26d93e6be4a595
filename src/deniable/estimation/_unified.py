"""Feldman & Cousins' (1998) unified interval for a binomial share with a bounded range
(private): numba's compiled construction when numba is installed, NumPy's otherwise.

The construction, the power constraint and their sources are described in
``_unified_numba``; ``_unified_numpy`` computes the same regions and ends.
"""

from __future__ import annotations

import importlib

import numpy as np
from numpy.typing import NDArray

from ..mechanisms import kernel_backend

__all__ = ["unified_share_interval"]


def unified_share_interval(
    y: NDArray[np.int64], n: NDArray[np.int64], a: float, b: float, confidence_level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Feldman-Cousins interval for binomial shares known to lie in ``[a, b]``.

    Parameters
    ----------
    y, n : ndarray of int, same shape
        Counts and trials (``0 <= y <= n``).
    a, b : float, ``0 <= a < b <= 1``
        The range of the share.
    confidence_level : float in (0, 1)

    Returns
    -------
    low, high : ndarray of float64, the shape of ``y``, inside ``[a, b]``
    """
    module = importlib.import_module(f"{__package__}._unified_{kernel_backend()}")
    low, high = module.unified_share_interval(y, n, a, b, confidence_level)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)

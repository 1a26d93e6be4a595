"""Deprecated path of :mod:`deniable.data` (moved in 0.2; this path goes in 0.3)."""

from __future__ import annotations

import warnings

from .data import *  # noqa: F403
from .data import __all__ as __all__

__moved_to__ = "deniable.data"

warnings.warn(
    "deniable.datasets moved to deniable.data (this path goes in 0.3)",
    DeprecationWarning,
    stacklevel=2,
)

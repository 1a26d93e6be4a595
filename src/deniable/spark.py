"""Deprecated path of :mod:`deniable.tables.spark` (moved in 0.2; this path goes in 0.3)."""

from __future__ import annotations

import warnings

from .tables.spark import *  # noqa: F403
from .tables.spark import __all__ as __all__

__moved_to__ = "deniable.tables.spark"

warnings.warn(
    "deniable.spark moved to deniable.tables.spark (this path goes in 0.3)",
    DeprecationWarning,
    stacklevel=2,
)

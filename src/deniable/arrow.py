"""Deprecated path of :mod:`deniable.tables.arrow` (moved in 0.2; this path goes in 0.3)."""

from __future__ import annotations

import warnings

from .tables.arrow import *  # noqa: F403
from .tables.arrow import __all__ as __all__

__moved_to__ = "deniable.tables.arrow"

warnings.warn(
    "deniable.arrow moved to deniable.tables.arrow (this path goes in 0.3)",
    DeprecationWarning,
    stacklevel=2,
)

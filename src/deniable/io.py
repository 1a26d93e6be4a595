"""Deprecated path of :mod:`deniable.tables.frames` (moved in 0.2; this path goes in 0.3)."""

from __future__ import annotations

import warnings

from .tables.frames import *  # noqa: F403
from .tables.frames import __all__ as __all__

__moved_to__ = "deniable.tables.frames"

warnings.warn(
    "deniable.io moved to deniable.tables.frames (this path goes in 0.3)",
    DeprecationWarning,
    stacklevel=2,
)

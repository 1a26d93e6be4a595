"""Deprecated path of :mod:`deniable.data.demo` (moved in 0.2; this path goes in 0.3)."""

from __future__ import annotations

import warnings

from .data.demo import *  # noqa: F403
from .data.demo import __all__ as __all__

__moved_to__ = "deniable.data.demo"

warnings.warn(
    "deniable.demo moved to deniable.data.demo (this path goes in 0.3)",
    DeprecationWarning,
    stacklevel=2,
)

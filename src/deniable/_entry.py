"""The ``deniable`` console script: the command, or one line naming the extra to install.

Importing :mod:`deniable.cli` needs the ``cli`` and ``analysis`` extras; without them
the command says which to install, in one line, instead of a traceback.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Run the ``deniable`` command (exit status 1, one line on stderr, without an extra
    it needs)."""
    try:
        from .cli import app
    except ModuleNotFoundError as exc:
        if "pip install 'deniable[" not in str(exc):
            raise
        print(f"deniable: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    app()

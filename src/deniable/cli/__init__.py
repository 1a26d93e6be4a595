"""The ``deniable`` command: simulate, analyze, plan, audit, demo, survey check, serve, respond.

A thin adapter over the library, one module per command group: every number it prints
comes from :mod:`deniable.estimation`, :mod:`deniable.planning`, :mod:`deniable.analysis`
or :mod:`deniable.data`. Needs the ``cli`` extra (typer, rich) and, for most commands,
``analysis`` (pandas): ``pip install 'deniable[all]'``.
"""

from __future__ import annotations

from .._extras import require

require("typer", "cli")
require("pandas", "analysis")

from . import (  # register the commands
    _analyze,
    _collect,
    _demo_command,
    _embed_command,
    _manage,
    _plan,
    _respond,
    _simulate,
)
from ._common import app

__all__ = ["app", "main"]
_COMMANDS = (_analyze, _collect, _demo_command, _embed_command, _manage, _plan, _respond, _simulate)


def main() -> None:  # pragma: no cover - console script entry
    """Run the ``deniable`` command."""
    app()

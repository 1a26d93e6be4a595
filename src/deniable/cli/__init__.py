"""The ``deniable`` command: simulate, analyze, plan, audit, demo, survey check, serve, respond.

A thin adapter over the library, one module per command group: every number it prints
comes from :mod:`deniable.estimation`, :mod:`deniable.planning`, :mod:`deniable.analysis`
or :mod:`deniable.data`. Needs the ``cli`` extra (typer, rich) and, for most commands,
``analysis`` (pandas): ``pip install 'deniable[all]'``.
"""

from __future__ import annotations

from .._extras import require_installed

require_installed("typer", "cli")
require_installed("pandas", "analysis")  # checked here, imported by the commands that run

from . import (  # register the commands
    _analyze,
    _analyze_commands,
    _audit_command,
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
_COMMANDS = (
    _analyze,
    _analyze_commands,
    _audit_command,
    _collect,
    _demo_command,
    _embed_command,
    _manage,
    _plan,
    _respond,
    _simulate,
)


def main() -> None:  # pragma: no cover - console script entry
    """Run the ``deniable`` command (the console script; ``app`` is its typer
    application, for tests and for embedding).

    Returns
    -------
    None
        It exits the process with the command's status.

    Examples
    --------
    >>> from typer.testing import CliRunner
    >>> from deniable.cli import app
    >>> CliRunner().invoke(app, ["--help"]).exit_code
    0
    """
    app()

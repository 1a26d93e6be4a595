"""Shared pieces of the ``deniable`` command: the app, consoles, options, file helpers."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..mechanisms import Design, Mechanism

import typer
from rich.console import Console

from ..errors import DeniableWarning

app = typer.Typer(
    help="Randomized response: simulate private surveys, analyze reports, plan sample sizes.",
    no_args_is_help=True,
    add_completion=False,
    # plain help, as click prints it: typer's rich help loads Markdown and Pygments
    # (0.3 s of CPU a --help; bench/cli_startup.py), and an error is one line anyway
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

__all__ = [
    "CHUNK",
    "SECURE_LABEL",
    "DesignOpt",
    "JsonOpt",
    "SeedOpt",
    "app",
    "console",
    "design_of",
    "emit_json",
    "err",
    "fail",
    "is_oracle",
    "labels_path",
    "needs_candidates",
    "parse_design",
    "parse_mechanism",
    "read_column",
    "read_table",
    "require_columns",
    "short_spec",
]
console = Console()
err = Console(stderr=True)

_python_showwarning = warnings.showwarning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """deniable's own warnings in the command's words: one line on stderr, without
    Python's source file and line; any other warning as Python shows it."""
    if issubclass(category, DeniableWarning):
        err.print(f"warning: {message}", style="yellow", markup=False, highlight=False)
        return
    _python_showwarning(message, category, filename, lineno, file, line)


warnings.showwarning = _show_warning

DesignOpt = Annotated[
    str,
    typer.Option(
        "--design",
        "-d",
        help='Design spec "name:param=value,...", e.g. "forced-response:p_yes=0.25,p_no=0.25", '
        '"warner:p=0.7", "kary-rr:k=5,epsilon=1"; or a frequency oracle: "oue:k=1000,epsilon=1", '
        '"sue:...", "olh:k=10000,epsilon=2", "hadamard:k=1000000,epsilon=1", '
        '"rappor:n_bloom_bits=128,h=2,n_cohorts=64,f=0.5,p=0.5,q=0.75".',
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")
]
SeedOpt = Annotated[
    int | None,
    typer.Option(help="Seed a simulation generator (reproducible; never for real respondents)."),
]
CHUNK = 1_000_000

SECURE_LABEL = "secure (AES-256-CTR DRBG keyed from os.urandom)"


def fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code=2)


def parse_design(spec: str) -> Design:
    """The finite design of ``--design`` (exit 2 naming what is wrong: a frequency
    oracle, a numeric or heavy-hitter mechanism, where a finite design is needed, is
    named as such, with the finite designs this command takes)."""
    from ..mechanisms import DESIGNS, MECHANISMS, design_from_spec

    try:
        return design_from_spec(spec)
    except ValueError as exc:
        name = spec.split(":", 1)[0].strip().lower()
        if name in MECHANISMS and name not in DESIGNS:
            raise fail(
                f"--design: {name!r} is a frequency oracle, numeric or heavy-hitter mechanism; "
                f"this command takes a finite design: {', '.join(sorted(DESIGNS))} "
                "(deniable analyze takes oracles; docs/oracles.md plans them)"
            ) from None
        raise fail(f"--design: {exc}") from None


def emit_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def read_table(path: Path, encoding: str | None = None) -> pd.DataFrame:
    """A shipped data set by name (``adult``, ``rr/nigeria``, ...), or the file at ``path``
    (:func:`deniable.tables.frames.read_table_file`: CSV in any common encoding, Excel,
    SPSS, Stata, Parquet); exit 2 naming what cannot be read, and a note on stderr when
    a CSV's encoding was guessed."""
    from ..data import RR_SURVEYS, load_adult, load_rr_survey
    from ..tables.frames import read_table_file

    if str(path) == "adult":
        return load_adult()
    if str(path) in RR_SURVEYS:  # a shipped survey by name, e.g. rr/nigeria
        return load_rr_survey(str(path))
    if not path.exists():
        raise fail(f"file not found: {path}")
    try:
        table = read_table_file(path, encoding=encoding)
    except (ValueError, OSError) as exc:  # pandas' parser errors are ValueErrors
        raise fail(f"cannot read {path.name}: {exc}") from None
    if table.guessed:
        err.print(f"note: {path.name} is not UTF-8; read as {table.encoding} (Windows "
                  "Western European); give --encoding if it is another")  # fmt: skip
    return table.frame


def parse_mechanism(spec: str) -> Mechanism[Any, Any]:
    """The mechanism named by ``--design`` (parsed once; exit 2 naming what is wrong)."""
    from ..mechanisms import mechanism_from_spec

    try:
        return mechanism_from_spec(spec)
    except ValueError as exc:
        raise fail(f"--design: {exc}") from None


def is_oracle(mechanism: Mechanism[Any, Any]) -> bool:
    """True for a frequency oracle or RAPPOR (a support or Bloom-filter channel)."""
    return mechanism.channel.frequency_oracle


def needs_candidates(mechanism: Mechanism[Any, Any]) -> bool:
    """True for RAPPOR, whose truths are strings decoded against candidate strings."""
    channel = mechanism.channel
    return channel.frequency_oracle and channel.string_truths


def design_of(mechanism: Mechanism[Any, Any]) -> Design:
    """The finite design behind ``--design`` (exit 2 for numeric mechanisms and PEM)."""
    from ..mechanisms import as_design

    try:
        return as_design(mechanism)
    except ValueError:
        raise fail(
            f"--design: {mechanism.spec_name!r} is a numeric or heavy-hitter mechanism; "
            "this command takes finite designs and frequency oracles"
        ) from None


def labels_path(reports: Path) -> Path:
    return reports.with_name(reports.name + ".labels.txt")


def require_columns(frame: pd.DataFrame, options: dict[str, str | None]) -> None:
    """Exit 2 naming the option whose column (None: not given) the file lacks."""
    for option, name in options.items():
        if name is not None and name not in frame.columns:
            names = ", ".join(map(str, frame.columns))
            raise fail(f"{option} {name!r} not in the file; columns: {names}")


def read_column(path: Path, column: str, encoding: str | None = None) -> pd.Series:
    frame = read_table(path, encoding)
    require_columns(frame, {"--column": column})
    return frame[column]


def short_spec(design: str) -> str:
    """Compact design text for tables: 0.16666666666666666 -> 0.1667."""
    import re

    return re.sub(r"(\d\.\d{4})\d+", r"\1", design)

"""The export formats, declared once.

Every list of formats (the server's ``?format=`` values and its 422 on others, the
dashboard's download buttons, ``deniable survey export --format``, the file names and
media types) comes from :data:`FORMATS`. A new format is one entry here and its writer
in :mod:`._export` (``tests/test_export_formats.py`` fails, naming what is missing,
when either lacks the other). Light: no pandas, so the CLI reads it at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

__all__ = [
    "CLI_FORMATS",
    "FORMATS",
    "SERVER_FORMATS",
    "ExportFormat",
    "FormatName",
    "export_format",
]


@dataclass(frozen=True)
class ExportFormat:
    """One export format.

    Attributes
    ----------
    name : str
        The ``?format=`` value and ``--format`` choice.
    suffix : str
        What the file's name ends with after the survey id (``.wide.csv``).
    media_type : str
        The HTTP response's media type ("" for one the server does not write).
    label : str
        The dashboard's download button.
    server : bool
        The server writes it (``/api/surveys/ID/export?format=NAME``).
    cli : bool
        ``deniable survey export --format NAME`` offers it (the survey file is written
        beside every export, so it is not a choice of its own).

    Examples
    --------
    >>> [f.name for f in FORMATS if not f.server]
    ['bundle']
    """

    name: str
    suffix: str
    media_type: str
    label: str
    server: bool = True
    cli: bool = True


#: Every export format, in the order the dashboard and the help list them.
FORMATS: tuple[ExportFormat, ...] = (
    ExportFormat("csv", ".csv", "text/csv", "CSV (one row per report)"),
    ExportFormat("wide", ".wide.csv", "text/csv", "CSV, wide (one row per response)"),
    ExportFormat("parquet", ".parquet", "application/vnd.apache.parquet", "Parquet"),
    ExportFormat("sav", ".sav", "application/x-spss-sav", "SPSS (.sav)"),
    ExportFormat("dta", ".dta", "application/x-stata-dta", "Stata (.dta)"),
    ExportFormat("survey", ".survey.json", "application/json", "Survey file (JSON)", cli=False),
    ExportFormat(
        "bundle", "-bundle", "", "R bundle (wide CSV, survey file and an R script)", server=False
    ),
)
#: The formats the server writes.
SERVER_FORMATS: tuple[str, ...] = tuple(f.name for f in FORMATS if f.server)
#: The formats ``deniable survey export`` offers.
CLI_FORMATS: tuple[str, ...] = tuple(f.name for f in FORMATS if f.cli)

if TYPE_CHECKING:
    FormatName = str
else:  # the route's query type: FastAPI's 422 lists the allowed values
    FormatName = Literal[SERVER_FORMATS]


def export_format(name: str) -> ExportFormat:
    """The format called ``name``.

    Parameters
    ----------
    name : str
        A format's name (``csv``, ``wide``, ...).

    Returns
    -------
    ExportFormat

    Raises
    ------
    ValueError
        Naming the allowed formats.

    Examples
    --------
    >>> export_format("wide").suffix
    '.wide.csv'
    """
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise ValueError(f"format must be one of {', '.join(f.name for f in FORMATS)}, got {name!r}")

"""The files people have, read as one table: CSV in any common encoding, Excel, SPSS,
Stata and Parquet, with blank cells as missing and the size bounded before reading."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._extras import require

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ENCODINGS_TRIED", "MAX_TABLE_BYTES", "TableFile", "read_table_file"]

#: The largest file read whole (CSV, Excel, SPSS, Stata): 2 GiB. Larger reports belong
#: in Parquet, which is read a bounded batch at a time.
MAX_TABLE_BYTES = 1 << 31

#: The encodings tried, in order, when none is given: UTF-8 (with or without a byte-order
#: mark), UTF-16 when its byte-order mark says so, then Windows-1252, what Excel writes
#: "CSV" in in Western Europe and the Americas (a superset of Latin-1's printable range).
ENCODINGS_TRIED = ("utf-8-sig", "cp1252")

_TEXT = (".csv", ".tsv", ".txt")
_EXCEL = (".xlsx", ".xlsm")


@dataclass(frozen=True)
class TableFile:
    """A table read from a file.

    Attributes
    ----------
    frame : pandas.DataFrame
        The rows; a blank cell (an empty field, or a line with nothing on it) is
        missing (NaN), wherever it is.
    encoding : str or None
        The text encoding used (``None`` for a binary format).
    guessed : bool
        True when the encoding was not UTF-8 and was not given: the caller should say
        which was used.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.tables.frames import read_table_file
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = path.write_text("report\\n1\\n\\n0\\n", encoding="utf-8")
    >>> table = read_table_file(path)
    >>> table.encoding, table.guessed, table.frame["report"].isna().tolist()
    ('utf-8-sig', False, [False, True, False])
    """

    frame: pd.DataFrame
    encoding: str | None = None
    guessed: bool = False


def read_table_file(path: Path, *, encoding: str | None = None, **csv: Any) -> TableFile:
    """Read ``path`` by its suffix: ``.parquet``/``.pq``, ``.xlsx``/``.xlsm`` (the first
    sheet; openpyxl), ``.sav`` (SPSS; pyreadstat), ``.dta`` (Stata), and anything else as
    CSV (``.tsv``: tab-separated).

    A CSV's encoding is ``encoding`` when given, else detected: a UTF-16 byte-order mark,
    else UTF-8 (a byte-order mark allowed), else Windows-1252 (:data:`ENCODINGS_TRIED`).
    Blank lines are kept as rows of missing cells (a one-column file's blank cells are
    its missing answers), except at the end of the file.

    Parameters
    ----------
    path : pathlib.Path
    encoding : str, optional
        A Python codec name (``"latin-1"``, ``"utf-16"``, ``"cp1250"``, ...).
    **csv
        Passed to ``pandas.read_csv`` (``sep``, ``dtype``, ...).

    Returns
    -------
    TableFile

    Raises
    ------
    ValueError
        For a file over :data:`MAX_TABLE_BYTES` (naming the limit and the size), an
        unknown encoding, or text that the given encoding cannot decode (naming the byte
        and its offset).
    FileNotFoundError
        For a missing file.
    ModuleNotFoundError
        Without pandas, openpyxl or pyreadstat (``pip install 'deniable[analysis]'``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.tables.frames import read_table_file
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "g.csv"
    >>> _ = path.write_bytes("sex,report\\nm\\xe4nnlich,1\\nweiblich,\\n".encode("cp1252"))
    >>> table = read_table_file(path)
    >>> table.encoding, table.guessed, table.frame["sex"].tolist()
    ('cp1252', True, ['männlich', 'weiblich'])
    >>> int(table.frame["report"].isna().sum())
    1
    """
    pd = require("pandas", "analysis")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq") or path.is_dir():
        return TableFile(pd.read_parquet(path))
    size = path.stat().st_size
    if size > MAX_TABLE_BYTES:
        raise ValueError(
            f"{path.name}: {size:,} bytes is over the {MAX_TABLE_BYTES:,} bytes (2 GiB) read "
            "whole at most; write the reports as Parquet, which is read a batch at a time"
        )
    if suffix in _EXCEL:
        require("openpyxl", "analysis")
        return TableFile(pd.read_excel(path, engine="openpyxl"))
    if suffix == ".sav":
        pyreadstat = require("pyreadstat", "analysis")
        frame, _ = pyreadstat.read_sav(str(path))
        return TableFile(frame)
    if suffix == ".dta":
        return TableFile(pd.read_stata(path))
    text, used, guessed = _decoded(path.read_bytes(), encoding, path.name)
    options: dict[str, Any] = {"sep": "\t"} if suffix == ".tsv" else {}
    options |= {"skip_blank_lines": False} | csv
    frame = pd.read_csv(io.StringIO(text), **options)
    del text
    filled = np.flatnonzero(frame.notna().any(axis=1).to_numpy())
    ends = int(filled[-1]) + 1 if filled.size else 0  # blank lines at the end are no rows
    return TableFile(frame.iloc[:ends] if ends < len(frame) else frame, used, guessed)


def _decoded(raw: bytes, encoding: str | None, name: str) -> tuple[str, str, bool]:
    """The text of ``raw``, the encoding used, and whether it was a guess past UTF-8."""
    import codecs

    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ValueError(f"--encoding: {encoding!r} is not an encoding Python knows "
                             "(utf-8, latin-1, cp1252, utf-16, ...)") from None  # fmt: skip
        try:
            return raw.decode(encoding), encoding, False
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{name} is not {encoding}: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
                "cannot be decoded; give the file's encoding with --encoding"
            ) from None
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16"), "utf-16", False
    for i, tried in enumerate(ENCODINGS_TRIED):
        try:
            return raw.decode(tried), tried, i > 0
        except UnicodeDecodeError:
            continue
    raise ValueError(
        f"{name} is neither UTF-8 nor Windows-1252 text; give its encoding with --encoding"
    )

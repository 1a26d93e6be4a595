"""Record batches sized in bytes (issue 44): the rows a streamed batch may hold follow
the stored bytes of a row, read from the Parquet footer, so memory follows the bytes
read whatever the row width (shared by :mod:`deniable.tables.arrow` and Spark's paths)."""

from __future__ import annotations

from typing import Any

from .._extras import require

__all__ = [
    "BATCH_SHARE",
    "MAX_BATCH_ROWS",
    "batch_rows",
    "check_batch",
    "parquet_rows",
    "report_width",
    "rows_within",
    "stored_bytes",
]

#: Largest record batch read at once (rows).
MAX_BATCH_ROWS = 1 << 24
#: A streamed batch holds at most ``memory_limit / BATCH_SHARE`` bytes of stored
#: (uncompressed) report data by default: 16 MiB at the default 2 GiB. The tally of a
#: batch may take several times its stored bytes (a unary report unpacks 8 bits a byte).
BATCH_SHARE = 128


def batch_rows(metadata: Any, columns: list[str], batch_bytes: int, row_width: int = 0) -> int:
    """Rows a record batch may hold so that its stored bytes stay within
    ``batch_bytes``, from a Parquet file's footer: the widest row group's uncompressed
    bytes per row over ``columns``, plus 8 bytes a value for offsets and validity.

    Parameters
    ----------
    metadata : pyarrow.parquet.FileMetaData
    columns : list of str
        The columns read.
    batch_bytes : int >= 1
    row_width : int, default 0
        Decoded bytes a row at least, when the caller knows them (a mechanism's report
        width): a dictionary-encoded column stores far fewer bytes than it decodes to.

    Returns
    -------
    int in 1..MAX_BATCH_ROWS

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np, pyarrow.parquet as pq
    >>> from deniable.mechanisms import UnaryEncoding
    >>> from deniable.tables.arrow import report_table
    >>> oue = UnaryEncoding(k=1000, epsilon=1.0)  # 125 bytes a report
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "oue.parquet"
    >>> bits = np.zeros((1000, 125), dtype=np.uint8)
    >>> pq.write_table(report_table(oue, bits), path, compression="none")
    >>> meta = pq.ParquetFile(path).metadata  # rows of zeros: dictionary-encoded, tiny
    >>> batch_rows(meta, ["report"], 16 * 2**20, row_width=125)  # 16 MiB of decoded rows
    126144
    """
    width = 0.0
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        if group.num_rows:
            width = max(width, stored_bytes(group, columns) / group.num_rows)
    return rows_within(max(width, row_width), len(columns), batch_bytes)


def rows_within(row_width: float, columns: int, batch_bytes: int) -> int:
    """Rows of ``row_width`` decoded bytes, plus 8 a value of ``columns`` for offsets
    and validity, that fit ``batch_bytes``: an int in 1..MAX_BATCH_ROWS."""
    return int(min(MAX_BATCH_ROWS, max(1, batch_bytes // (row_width + 8 * columns))))


def stored_bytes(group: Any, columns: list[str]) -> int:
    """Uncompressed bytes a Parquet row group (``RowGroupMetaData``) stores of ``columns``."""
    return int(
        sum(
            group.column(i).total_uncompressed_size
            for i in range(group.num_columns)
            if group.column(i).path_in_schema in columns
        )
    )


def report_width(mechanism: Any) -> int:
    """Decoded bytes of one report: a ``bytes`` field's width, 8 an int or float field."""
    return int(sum(f.width if f.kind == "bytes" else 8 for f in mechanism.report_fields))


def check_batch(batch_size: int | None, batch_bytes: int | None) -> int:
    """The bytes a batch may hold (default ``MEMORY_LIMIT / BATCH_SHARE``), after
    checking both bounds.

    Parameters
    ----------
    batch_size : int or None
        Rows a batch, when the caller fixes them (1..MAX_BATCH_ROWS).
    batch_bytes : int or None
        Stored bytes a batch (1..MEMORY_LIMIT); None for the default.

    Returns
    -------
    int
        The byte budget of a batch.

    Raises
    ------
    ValueError
        For ``batch_size`` outside 1..MAX_BATCH_ROWS, or ``batch_bytes`` below 1 or
        above ``MEMORY_LIMIT``.

    Examples
    --------
    >>> check_batch(None, None)  # 2 GiB / 128
    16777216
    """
    from .._validation import MEMORY_LIMIT

    if batch_size is not None and not 1 <= batch_size <= MAX_BATCH_ROWS:
        raise ValueError(f"batch_size must be in 1..{MAX_BATCH_ROWS} rows, got {batch_size}")
    size = MEMORY_LIMIT // BATCH_SHARE if batch_bytes is None else batch_bytes
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MEMORY_LIMIT:
        raise ValueError(f"batch_bytes must be an integer in 1..{MEMORY_LIMIT}, got {size!r}")
    return size


def parquet_rows(source: Any) -> int:
    """Number of rows in Parquet files (from their footers; nothing else is read).

    Parameters
    ----------
    source : path, list of paths or pyarrow.dataset.Dataset

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.array([0, 1, 1, 0, 1]), np.random.default_rng(0))
    >>> import tempfile, pathlib
    >>> import pyarrow.parquet as pq
    >>> from deniable.tables.arrow import report_table
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "reports.parquet"
    >>> pq.write_table(report_table(design, reports), path)
    >>> from deniable.tables.arrow import parquet_rows
    >>> parquet_rows(path)
    5
    """
    ds = require("pyarrow.dataset", "analysis")
    dataset = source if isinstance(source, ds.Dataset) else ds.dataset(source, format="parquet")
    return int(sum(f.metadata.num_rows for f in dataset.get_fragments()))

"""The row groups of a Parquet dataset, read one batch at a time on Spark's executors
(shared by :mod:`deniable.tables.spark`'s tallies and heavy-hitter searches)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._extras import require
from ..errors import ReportValidationError

__all__: list[str] = []


def _parquet_dataset(source: Any, columns: list[str]) -> Any:
    """``source`` as a pyarrow Dataset holding ``columns`` (ReportValidationError if not)."""
    ds = require("pyarrow.dataset", "analysis")
    dataset = source if isinstance(source, ds.Dataset) else ds.dataset(source, format="parquet")
    missing = [c for c in columns if c not in dataset.schema.names]
    if missing:
        raise ReportValidationError(f"columns {missing!r} are missing from the dataset")
    return dataset


def _row_groups(dataset: Any) -> tuple[list[tuple[str, int]], int]:
    """Every ``(file, row group)`` of the dataset (read from the footers) and the rows."""
    pq = require("pyarrow.parquet", "analysis")
    pieces: list[tuple[str, int]] = []
    rows = 0
    for path in dataset.files:
        with dataset.filesystem.open_input_file(path) as handle:
            meta = pq.ParquetFile(handle).metadata
        pieces += [(path, g) for g in range(meta.num_row_groups)]
        rows += meta.num_rows
    if not pieces:
        raise ReportValidationError("no reports: the dataset has no row groups")
    return pieces, rows


def _row_group_batches(filesystem: Any, path: str, group: int, columns: list[str]) -> Iterator[Any]:
    """One row group's record batches, read batch by batch through a buffer of
    :data:`~deniable.tables.arrow.READ_BUFFER_BYTES` (no pre-buffering): memory holds
    one batch, whatever the size of the row group."""
    import pyarrow.parquet as pq

    from .arrow import READ_BUFFER_BYTES

    with filesystem.open_input_file(path) as handle:
        reader = pq.ParquetFile(handle, pre_buffer=False, buffer_size=READ_BUFFER_BYTES)
        yield from reader.iter_batches(batch_size=1 << 20, row_groups=[group], columns=columns)

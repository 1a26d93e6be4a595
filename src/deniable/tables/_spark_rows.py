"""The row groups of a Parquet dataset, read one batch at a time on Spark's executors
(shared by :mod:`deniable.tables.spark`'s tallies and heavy-hitter searches)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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
    :data:`~deniable.tables.arrow.READ_BUFFER_BYTES` (no pre-buffering), each of the
    default stored bytes (:func:`~deniable.tables.arrow.batch_rows`): memory holds one
    batch, whatever the size of the row group and the width of a row."""
    import pyarrow.parquet as pq

    from ._batches import batch_rows, check_batch
    from .arrow import READ_BUFFER_BYTES

    with filesystem.open_input_file(path) as handle:
        reader = pq.ParquetFile(handle, pre_buffer=False, buffer_size=READ_BUFFER_BYTES)
        rows = batch_rows(reader.metadata, columns, check_batch(None, None))  # by bytes
        yield from reader.iter_batches(batch_size=rows, row_groups=[group], columns=columns)


#: A Parquet row group Spark's JVM reads for a DataFrame tally may hold at most this
#: many stored bytes of the report columns (the JVM decodes a row group's column chunks;
#: a 1 GB row group took its heap to 3.2 GB): 256 MiB, 16 default batches.
MAX_FRAME_ROW_GROUP_BYTES = 1 << 28


def refuse_large_row_groups(frame: Any, columns: list[str]) -> None:
    """Refuse a DataFrame tally over Parquet files whose row groups are too large for
    the JVM to read within bounded memory, naming the row-group path instead.

    Raises
    ------
    MemoryLimitError
        If a row group of the frame's Parquet input files holds more than
        :data:`MAX_FRAME_ROW_GROUP_BYTES` of ``columns`` (uncompressed), naming
        ``deniable.tables.spark.tally_parquet``, which reads it batch by batch.
    """
    from ..errors import MemoryLimitError
    from ._batches import stored_bytes

    pq = require("pyarrow.parquet", "analysis")
    fs = require("pyarrow.fs", "analysis")
    try:
        files = [f for f in frame.inputFiles() if f.endswith((".parquet", ".pq"))]
    except Exception:  # a frame without input files (created in memory, a join)
        return
    for uri in files:
        filesystem, path = fs.FileSystem.from_uri(uri)
        with filesystem.open_input_file(path) as handle:
            meta = pq.ParquetFile(handle).metadata
        for g in range(meta.num_row_groups):
            stored = stored_bytes(meta.row_group(g), columns)
            if stored > MAX_FRAME_ROW_GROUP_BYTES:
                raise MemoryLimitError(
                    f"row group {g} of {uri} holds {stored:,} bytes of reports, more than "
                    f"the {MAX_FRAME_ROW_GROUP_BYTES:,} Spark's JVM may read at once for a "
                    "DataFrame tally: tally the files with "
                    "deniable.tables.spark.tally_parquet(mechanism, spark, path), the "
                    "row-group path, which reads them batch by batch",
                    stored,
                    MAX_FRAME_ROW_GROUP_BYTES,
                )


@contextmanager
def arrow_batches_in_bytes(frame: Any, mechanism: Any) -> Iterator[None]:
    """Within the block, Spark hands ``mapInArrow`` batches of the default stored bytes
    (:func:`~deniable.tables.arrow.check_batch`), as in process: a report's width is the
    mechanism's (:func:`~deniable.tables._batches.report_width`). The session's
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` is restored after."""
    from ._batches import check_batch, report_width, rows_within

    fields = len(mechanism.report_fields)
    rows = rows_within(report_width(mechanism), fields, check_batch(None, None))
    conf, session = "spark.sql.execution.arrow.maxRecordsPerBatch", frame.sparkSession
    before = session.conf.get(conf, None)
    session.conf.set(conf, str(rows))
    try:
        yield
    finally:
        if before is None:
            session.conf.unset(conf)
        else:
            session.conf.set(conf, before)

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


#: Stored bytes of the report columns Spark's JVM may decode at once for a DataFrame
#: tally. Its tasks each read a Parquet row group's column chunks whole, up to
#: ``defaultParallelism`` of them at a time, at 3.2-4.5 times their stored bytes on the
#: heap (one row group of 1 GB took it to 3.2 GB; four of 246 MiB on two cores added
#: 2,194 MiB): 64 MiB in flight keeps a JVM under 300 MB, and a row group may hold
#: ``MAX_FRAME_BYTES_IN_FLIGHT / defaultParallelism`` (32 MiB on two cores).
MAX_FRAME_BYTES_IN_FLIGHT = 1 << 26


def frame_row_group_limit(frame: Any) -> tuple[int, int]:
    """``(bytes a row group may hold, tasks at once)`` for a DataFrame tally of ``frame``:
    :data:`MAX_FRAME_BYTES_IN_FLIGHT` over the session's ``defaultParallelism``."""
    try:
        tasks = max(1, int(frame.sparkSession.sparkContext.defaultParallelism))
    except Exception:  # a session without a context (Spark Connect): one task at a time
        tasks = 1
    return MAX_FRAME_BYTES_IN_FLIGHT // tasks, tasks


def refuse_large_row_groups(frame: Any, columns: list[str]) -> None:
    """Refuse a DataFrame tally over Parquet files whose row groups are too large for
    Spark's JVM to decode within bounded memory, naming the row-group path instead.

    Raises
    ------
    MemoryLimitError
        If a row group of the frame's Parquet input files holds more than
        :data:`MAX_FRAME_BYTES_IN_FLIGHT` / ``defaultParallelism`` bytes of ``columns``
        (uncompressed: the row groups the tasks decode at once would pass the bound),
        naming ``deniable.tables.spark.tally_parquet``, which reads them batch by batch.
    """
    from ..errors import MemoryLimitError
    from ._batches import stored_bytes

    pq = require("pyarrow.parquet", "analysis")
    fs = require("pyarrow.fs", "analysis")
    try:
        files = [f for f in frame.inputFiles() if f.endswith((".parquet", ".pq"))]
    except Exception:  # a frame without input files (created in memory, a join)
        return
    limit, tasks = frame_row_group_limit(frame)
    for uri in files:
        filesystem, path = fs.FileSystem.from_uri(uri)
        with filesystem.open_input_file(path) as handle:
            meta = pq.ParquetFile(handle).metadata
        for g in range(meta.num_row_groups):
            stored = stored_bytes(meta.row_group(g), columns)
            if stored > limit:
                raise MemoryLimitError(
                    f"row group {g} of {uri} holds {stored:,} bytes of reports, more than "
                    f"the {limit:,} a DataFrame tally allows a row group: Spark's JVM decodes "
                    f"row groups whole, {tasks} at once here, and at most "
                    f"{MAX_FRAME_BYTES_IN_FLIGHT:,} bytes may be in flight; tally the files "
                    "with deniable.tables.spark.tally_parquet(mechanism, spark, path), the "
                    "row-group path, which reads them batch by batch",
                    stored,
                    limit,
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

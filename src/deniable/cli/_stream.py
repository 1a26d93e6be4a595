"""Out-of-core reading for ``deniable analyze``: Parquet of any size, batch by batch.

A Parquet file or a directory of them is read one record batch at a time
(:func:`deniable.tables.arrow.scan_parquet`); each batch is tallied and merged, so memory stays
bounded by a row group and a batch, and a progress bar on stderr counts the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ..mechanisms import CategoricalMechanism, Design
    from ..tables.arrow import AnyTally
    from ..tallies import Tally

from rich.console import Console

from ..errors import ReportValidationError

__all__ = [
    "is_parquet",
    "progress_bar",
    "stream_design_tally",
    "stream_tally",
]


def is_parquet(path: Path) -> bool:
    """A Parquet file (``.parquet``, ``.pq``) or a directory (read as a Parquet dataset)."""
    return path.is_dir() or path.suffix.lower() in (".parquet", ".pq")


@contextmanager
def progress_bar(path: Path) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr over the rows of ``path``; yields ``advance(rows)``.
    Arrow reads through its jemalloc pool meanwhile (:func:`_fast_arrow_pool`)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from ..tables.arrow import parquet_rows

    total = parquet_rows(str(path))
    columns = (
        TextColumn("reading {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with (
        _fast_arrow_pool(),
        Progress(*columns, console=Console(stderr=True), transient=True) as progress,
    ):
        task = progress.add_task(path.name, total=total)
        yield lambda rows: progress.advance(task, rows)


@contextmanager
def _fast_arrow_pool() -> Iterator[None]:
    """Arrow's jemalloc pool while the command reads, unless ``ARROW_DEFAULT_MEMORY_POOL``
    says otherwise: reading 10^7 OUE reports took 0.77 s on its first pass here against
    2.6 s with mimalloc (bench/scale.py). Builds without jemalloc keep their default.
    The pool is process-wide: the one before is restored when the read ends, so a
    process that embeds the command (a notebook, a test) keeps its own."""
    import os
    from contextlib import suppress

    import pyarrow as pa

    before = pa.default_memory_pool()
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        with suppress(NotImplementedError):  # a pyarrow built without jemalloc
            pa.set_memory_pool(pa.jemalloc_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


def stream_tally(mechanism: CategoricalMechanism[Any, Any], path: Path) -> AnyTally:
    """The tally of every report in ``path`` (an oracle's or RAPPOR's columns)."""
    from ..tables.arrow import tally_parquet

    with progress_bar(path) as advance:
        # batches sized in bytes (tables.arrow.BATCH_SHARE of the memory limit)
        result = tally_parquet(mechanism, str(path), progress=advance)
    assert not isinstance(result, dict)
    return result


def _codes(values: Any, column: str, m: int) -> np.ndarray:
    import numpy as np

    arr = np.asarray(values.to_numpy(zero_copy_only=False))
    if arr.dtype.kind == "f":
        if not np.all(arr == np.round(arr)):
            raise ReportValidationError(f"column {column!r} must hold report codes 0..{m - 1}")
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iub" or (arr.size and (arr.min() < 0 or arr.max() >= m)):
        raise ReportValidationError(f"column {column!r} must hold report codes 0..{m - 1}")
    return arr.astype(np.int64)


def stream_design_tally(design: Design, path: Path, column: str) -> tuple[Tally, int]:
    """Tally of the codes in ``column`` of ``path``, and how many were missing (null)."""
    import numpy as np
    import pyarrow.compute as pc

    from ..tables.arrow import scan_parquet
    from ..tallies import Tally

    total = Tally(np.zeros(design.n_reports, dtype=np.int64))
    missing = 0
    with progress_bar(path) as advance:
        for batch in scan_parquet(str(path), [column]):
            values = batch.column(column)
            missing += values.null_count
            codes = _codes(pc.drop_null(values), column, design.n_reports)
            total = total + Tally.from_reports(codes, design.n_reports)
            advance(batch.num_rows)
    return total, missing

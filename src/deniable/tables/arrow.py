"""Reports as Apache Arrow columns, and tallies streamed from Parquet of any size.

The binary column form of every mechanism's reports (what ``deniable.tables.spark`` and
:func:`tally_parquet` read, and :func:`report_table` writes):

==================  ==========================================================
mechanism           columns
==================  ==========================================================
finite designs      ``report``: int32 codes ``0..m-1``
unary encoding      ``report``: binary, ``ceil(k / 8)`` bytes of packed bits
local hashing       ``a``, ``b``: int64 (the bits of the uint64 hash seed);
                    ``y``: int32 bucket
Hadamard response   ``report``: int32 column ``0..K-1``
RAPPOR              ``cohort``: int32; ``report``: binary, packed bits
==================  ==========================================================

Only types Spark SQL has are used (it has no unsigned integers); when reading, any
integer type, ``fixed_size_binary`` and the text forms of :mod:`deniable.tables.frames`
(hexadecimal bits, decimal seeds) are read too.
A tally is computed per record batch with the mechanism's own (compiled) ``tally`` and
merged batch by batch, so memory stays bounded by the batch size, and the result is
exactly the tally of all the reports at once (counts are integers).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, overload

import numpy as np
from numpy.typing import NDArray

from .._extras import require
from ..errors import ReportValidationError
from ..mechanisms import Mechanism
from ..tallies import RapporTally, SupportTally, Tally
from ._batches import (
    BATCH_SHARE,
    MAX_BATCH_ROWS,
    batch_rows,
    check_batch,
    parquet_rows,
    report_width,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BATCH_SHARE",
    "MAX_BATCH_ROWS",
    "READ_BUFFER_BYTES",
    "AnyTally",
    "batch_rows",
    "check_batch",
    "parquet_rows",
    "report_columns",
    "report_table",
    "reports_from_batch",
    "scan_parquet",
    "tally_batches",
    "tally_by_group",
    "tally_from_parts",
    "tally_parquet",
    "tally_parts",
]

AnyTally = Tally | SupportTally | RapporTally
#: Bytes a Parquet file is read through at a time (no pre-buffering of row groups).
READ_BUFFER_BYTES = 1 << 20


def report_columns(mechanism: Mechanism[Any, Any]) -> list[str]:
    """Names of the columns holding ``mechanism``'s reports (its ``report_fields``).

    Parameters
    ----------
    mechanism : Mechanism

    Returns
    -------
    list of str

    Examples
    --------
    >>> from deniable.mechanisms import Rappor, Warner
    >>> from deniable.tables.arrow import report_columns
    >>> report_columns(Warner(p=0.75))
    ['report']
    """
    return [field.name for field in mechanism.report_fields]


def _packed(bits: NDArray[np.uint8]) -> pa.ChunkedArray:
    """Rows of packed bits, shape (n, width), as an Arrow binary column (no copy per row),
    in chunks of under 2 GiB each (a binary array's offsets are 32-bit: one array of
    more bytes would overflow them)."""
    pa = require("pyarrow", "analysis")
    rows, width = bits.shape
    bits = np.ascontiguousarray(bits)
    step = max(1, ((1 << 31) - 1) // max(width, 1))  # rows a chunk, its offsets < 2^31
    chunks = []
    for start in range(0, max(rows, 1), step):
        part = bits[start : start + step]
        offsets = pa.py_buffer(np.arange(0, (len(part) + 1) * width, width, dtype=np.int32))
        chunks.append(
            pa.Array.from_buffers(pa.binary(), len(part), [None, offsets, pa.py_buffer(part)])
        )
    return pa.chunked_array(chunks, type=pa.binary())


def _int32(values: Any) -> pa.Array:
    pa = require("pyarrow", "analysis")
    return pa.array(np.asarray(values).astype(np.int32))


def report_table(mechanism: Mechanism[Any, Any], reports: Any) -> pa.Table:
    """``reports`` (validated) as an Arrow table in the mechanism's binary column form.

    Parameters
    ----------
    mechanism : Mechanism
    reports : ndarray
        The mechanism's reports, shape (n,) or (n, width).

    Returns
    -------
    pyarrow.Table
        One row per report, the columns of :func:`report_columns`.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.array([0, 1, 1, 0, 1]), np.random.default_rng(0))
    >>> from deniable.tables.arrow import report_table
    >>> report_table(design, reports).num_rows
    5
    """
    pa = require("pyarrow", "analysis")
    arrays = mechanism.report_arrays(reports)
    columns = {
        field.name: _packed(arrays[field.name])
        if field.kind == "bytes"
        else pa.array(np.asarray(arrays[field.name]))
        for field in mechanism.report_fields
    }
    return pa.table(columns)


def _column(batch: Any, name: str) -> Any:
    pa = require("pyarrow", "analysis")
    if name not in batch.schema.names:
        raise ReportValidationError(
            f"column {name!r} is missing; the reports need columns {batch.schema.names!r} "
            f"to include it"
        )
    col = batch.column(name)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.null_count:
        raise ReportValidationError(f"column {name!r} has {col.null_count} missing values")
    return col


def _bits(col: Any, width: int, name: str) -> NDArray[np.uint8]:
    pa = require("pyarrow", "analysis")
    if pa.types.is_fixed_size_binary(col.type):
        if col.type.byte_width != width:
            raise ReportValidationError(
                f"column {name!r} must hold {width} bytes per report, got {col.type.byte_width}"
            )
        data = np.frombuffer(col.buffers()[1], dtype=np.uint8)
        start = col.offset * width
        return data[start : start + len(col) * width].reshape(len(col), width)
    if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
        kind = np.int64 if pa.types.is_large_binary(col.type) else np.int32
        offsets = np.frombuffer(col.buffers()[1], dtype=kind)[
            col.offset : col.offset + len(col) + 1
        ]
        if np.any(np.diff(offsets) != width):
            raise ReportValidationError(f"column {name!r} must hold {width} bytes per report")
        data = np.frombuffer(col.buffers()[2], dtype=np.uint8)
        return data[offsets[0] : offsets[0] + len(col) * width].reshape(len(col), width)
    from ..mechanisms import hex_rows

    return hex_rows(col.to_pylist(), width)


def _integers(col: Any, name: str) -> NDArray[Any]:
    pa = require("pyarrow", "analysis")
    if pa.types.is_integer(col.type):
        return np.asarray(col.to_numpy(zero_copy_only=False))
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        try:
            return np.array([int(x) for x in col.to_pylist()], dtype=np.uint64)
        except ValueError:
            raise ReportValidationError(f"column {name!r} must hold integers") from None
    raise ReportValidationError(f"column {name!r} must hold integers, got type {col.type}")


def _floats(col: Any, name: str) -> NDArray[np.float64]:
    pa = require("pyarrow", "analysis")
    if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    raise ReportValidationError(f"column {name!r} must hold numbers, got type {col.type}")


def reports_from_batch(mechanism: Mechanism[Any, Any], batch: Any) -> Any:
    """The reports in an Arrow record batch or table, validated by the mechanism.

    Each of the mechanism's ``report_fields`` is read by its kind (integers, floats or
    rows of bytes) and the mechanism validates the whole (``reports_from_arrays``).

    Parameters
    ----------
    mechanism : Mechanism
    batch : pyarrow.RecordBatch or pyarrow.Table
        With the columns of :func:`report_columns`.

    Returns
    -------
    ndarray
        The reports, as the mechanism's ``randomize`` returns them.

    Raises
    ------
    ReportValidationError
        For a missing column, missing values or malformed reports, naming the column.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.array([0, 1, 1, 0, 1]), np.random.default_rng(0))
    >>> from deniable.tables.arrow import report_table, reports_from_batch
    >>> reports_from_batch(design, report_table(design, reports)).tolist() == reports.tolist()
    True
    """
    arrays: dict[str, NDArray[Any]] = {}
    for field in mechanism.report_fields:
        col = _column(batch, field.name)
        if field.kind == "bytes":
            arrays[field.name] = _bits(col, field.width, field.name)
        elif field.kind == "float":
            arrays[field.name] = _floats(col, field.name)
        else:
            arrays[field.name] = _integers(col, field.name)
    return mechanism.reports_from_arrays(arrays)


def _merge(total: AnyTally | None, part: AnyTally) -> AnyTally:
    return part if total is None else total + part


def tally_batches(
    mechanism: Mechanism[Any, Any],
    batches: Iterable[Any],
    progress: Callable[[int], None] | None = None,
) -> AnyTally:
    """Merge the tallies of record batches; ``progress(rows)`` is called after each.

    Parameters
    ----------
    mechanism : Mechanism
    batches : iterable of pyarrow.RecordBatch
    progress : callable, optional
        Called with the rows read so far.

    Returns
    -------
    Tally, SupportTally, RapporTally or MeanTally
        The mechanism's tally of every batch (one pass, memory of one batch).

    Raises
    ------
    ReportValidationError
        For malformed reports in any batch, or no reports at all.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.array([0, 1, 1, 0, 1]), np.random.default_rng(0))
    >>> from deniable.tables.arrow import report_table, tally_batches
    >>> tally_batches(design, report_table(design, reports).to_batches())
    Tally(counts=array([2, 3]))
    """
    total: AnyTally | None = None
    for batch in batches:
        total = _merge(total, mechanism.tally(reports_from_batch(mechanism, batch)))
        if progress is not None:
            progress(batch.num_rows)
    if total is None:
        raise ReportValidationError("no reports: the source holds no record batches")
    return total


def _group_keys(col: Any) -> tuple[list[Any], NDArray[np.int64]]:
    pa = require("pyarrow", "analysis")
    encoded = col.dictionary_encode() if not pa.types.is_dictionary(col.type) else col
    indices = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
    return encoded.dictionary.to_pylist(), np.asarray(indices, dtype=np.int64)


def tally_by_group(
    mechanism: Mechanism[Any, Any], batch: Any, group_by: str
) -> dict[Hashable, AnyTally]:
    """One tally per value of column ``group_by`` in one record batch (missing: ``None``).

    Parameters
    ----------
    mechanism : Mechanism
    batch : pyarrow.RecordBatch or pyarrow.Table
    group_by : str
        A column of ``batch``.

    Returns
    -------
    dict of value -> tally

    Raises
    ------
    ReportValidationError
        If ``group_by`` is not a column, or the reports are malformed.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.array([0, 1, 1, 0, 1]), np.random.default_rng(0))
    >>> import pyarrow as pa
    >>> from deniable.tables.arrow import report_table, tally_by_group
    >>> table = report_table(design, reports).append_column("g", pa.array(list("ababa")))
    >>> tally_by_group(design, table, "g")
    {'a': Tally(counts=array([2, 1])), 'b': Tally(counts=array([0, 2]))}
    """
    pa = require("pyarrow", "analysis")
    if group_by not in batch.schema.names:
        raise ReportValidationError(f"group column {group_by!r} is missing")
    col = batch.column(group_by)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    keys, codes = _group_keys(col)
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    codes = np.where(valid, codes, len(keys))
    keys = [*keys, None]
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(keys) + 1))
    out: dict[Hashable, AnyTally] = {}
    for g, key in enumerate(keys):
        rows = order[bounds[g] : bounds[g + 1]]
        if rows.size:
            part = batch.take(pa.array(rows))
            out[key] = mechanism.tally(reports_from_batch(mechanism, part))
    return out


def scan_parquet(
    source: Any,
    columns: list[str],
    batch_size: int | None = None,
    *,
    batch_bytes: int | None = None,
    row_width: int = 0,
) -> Iterator[Any]:
    """Record batches of ``columns``, file by file and row group by row group.

    Reading is synchronous (``ParquetFile.iter_batches``) and streamed: without
    pre-buffering and through a read buffer of :data:`READ_BUFFER_BYTES`, memory holds
    one batch, the buffer and a page or two being decoded, whatever the size of a row
    group (pre-buffering, Arrow's default, holds a whole row group's column chunks: a
    file written as one row group would be read whole). The dataset scanner's
    asynchronous read-ahead keeps more as the consumer falls behind.

    Parameters
    ----------
    source : path, list of paths or pyarrow.dataset.Dataset
    columns : list of str
    batch_size : int, optional
        Rows a batch at most (1..2^24); by default sized from ``batch_bytes``.
    batch_bytes : int, optional
        Stored bytes a batch at most (default ``MEMORY_LIMIT / BATCH_SHARE``, 16 MiB):
        the rows of each file's batches are :func:`batch_rows`, so memory follows the
        bytes read whatever the row width.
    row_width : int, default 0
        Decoded bytes a row at least (:func:`batch_rows`).

    Returns
    -------
    iterator of pyarrow.RecordBatch

    Raises
    ------
    ReportValidationError
        For a column missing from the dataset.
    ValueError
        For a batch size or byte budget out of range.

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
    >>> from deniable.tables.arrow import report_columns, scan_parquet
    >>> [batch.num_rows for batch in scan_parquet(path, report_columns(design))]
    [5]
    """
    ds = require("pyarrow.dataset", "analysis")
    pq = require("pyarrow.parquet", "analysis")
    budget = check_batch(batch_size, batch_bytes)
    dataset = source if isinstance(source, ds.Dataset) else ds.dataset(source, format="parquet")
    missing = [c for c in columns if c not in dataset.schema.names]
    if missing:
        raise ReportValidationError(
            f"columns {missing!r} are missing from the dataset (it has {dataset.schema.names!r})"
        )
    for path in dataset.files:
        with dataset.filesystem.open_input_file(path) as handle:
            reader = pq.ParquetFile(handle, pre_buffer=False, buffer_size=READ_BUFFER_BYTES)
            rows = batch_size or batch_rows(reader.metadata, columns, budget, row_width)
            yield from reader.iter_batches(batch_size=rows, columns=columns)


@overload
def tally_parquet(
    mechanism: Mechanism[Any, Any],
    source: Any,
    *,
    group_by: None = None,
    batch_size: int | None = ...,
    batch_bytes: int | None = ...,
    progress: Callable[[int], None] | None = ...,
) -> AnyTally: ...


@overload
def tally_parquet(
    mechanism: Mechanism[Any, Any],
    source: Any,
    *,
    group_by: str,
    batch_size: int | None = ...,
    batch_bytes: int | None = ...,
    progress: Callable[[int], None] | None = ...,
) -> dict[Hashable, AnyTally]: ...


def tally_parquet(
    mechanism: Mechanism[Any, Any],
    source: Any,
    *,
    group_by: str | None = None,
    batch_size: int | None = None,
    batch_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> AnyTally | dict[Hashable, AnyTally]:
    """Tally a Parquet file, directory or ``pyarrow.dataset.Dataset`` out of core.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism the reports came from.
    source : str, path, list of paths or pyarrow.dataset.Dataset
        Parquet files (a directory is read as one dataset); the report columns and
        ``group_by`` must be stored in the files.
    group_by : str, optional
        A column to tally separately by (e.g. country); returns ``{value: tally}``.
    batch_size : int, optional
        Rows per record batch (1..2**24); by default sized from ``batch_bytes``.
    batch_bytes : int, optional
        Stored bytes per record batch (default ``MEMORY_LIMIT / BATCH_SHARE``, 16 MiB;
        :func:`scan_parquet`): memory is bounded by a few batches' bytes.
    progress : callable, optional
        Called with the number of rows after each batch.

    Returns
    -------
    tally, or dict of group value -> tally with ``group_by``

    Raises
    ------
    ValueError
        For a batch size out of range.
    ReportValidationError
        For a missing column or malformed reports.

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
    >>> from deniable.tables.arrow import tally_parquet
    >>> tally_parquet(design, path)
    Tally(counts=array([2, 3]))
    """
    check_batch(batch_size, batch_bytes)
    columns = report_columns(mechanism) + ([group_by] if group_by else [])
    width = report_width(mechanism)
    batches = scan_parquet(source, columns, batch_size, batch_bytes=batch_bytes, row_width=width)
    if group_by is None:
        return tally_batches(mechanism, batches, progress)
    groups: dict[Hashable, AnyTally] = {}
    for batch in batches:
        for key, part in tally_by_group(mechanism, batch, group_by).items():
            groups[key] = _merge(groups.get(key), part)
        if progress is not None:
            progress(batch.num_rows)
    return groups


def tally_parts(tally: AnyTally) -> dict[str, Any]:
    """A tally as plain fields (``kind``, ``n``, ``scale``, ``counts``, ``cohort_n``: bytes).

    Parameters
    ----------
    tally : Tally, SupportTally, RapporTally or MeanTally

    Returns
    -------
    dict
        ``kind``, ``n``, ``scale``, ``counts`` (little-endian int64 bytes), ``cohort_n``:
        the row a Spark job or a file keeps of a tally.

    Examples
    --------
    >>> from deniable.tables.arrow import tally_parts
    >>> from deniable.tallies import Tally
    >>> parts = tally_parts(Tally([2, 3]))
    >>> parts["kind"], parts["n"]
    ('counts', 5)
    """
    if isinstance(tally, RapporTally):
        return {
            "kind": "rappor",
            "n": tally.n,
            "scale": 1,
            "counts": tally.counts.astype("<i8").tobytes(),
            "cohort_n": tally.n_per_cohort.astype("<i8").tobytes(),
        }
    scale = tally.scale if isinstance(tally, SupportTally) else 1
    kind = "support" if isinstance(tally, SupportTally) else "counts"
    counts = tally.counts.astype("<i8").tobytes()
    return {"kind": kind, "n": tally.n, "scale": scale, "counts": counts, "cohort_n": b""}


def tally_from_parts(mechanism: Mechanism[Any, Any], parts: dict[str, Any]) -> AnyTally:
    """Inverse of :func:`tally_parts` (the mechanism gives RAPPOR's shape).

    Parameters
    ----------
    mechanism : Mechanism
    parts : dict
        From :func:`tally_parts`.

    Returns
    -------
    tally

    Examples
    --------
    >>> from deniable.mechanisms import Warner
    >>> from deniable.tables.arrow import tally_from_parts, tally_parts
    >>> from deniable.tallies import Tally
    >>> tally_from_parts(Warner(p=0.75), tally_parts(Tally([2, 3])))
    Tally(counts=array([2, 3]))
    """
    counts = np.frombuffer(parts["counts"], dtype="<i8").astype(np.int64)
    if parts["kind"] == "rappor":
        cohort_n = np.frombuffer(parts["cohort_n"], dtype="<i8").astype(np.int64)
        return RapporTally(counts.reshape(cohort_n.size, -1), cohort_n)
    if parts["kind"] == "support":
        return SupportTally(counts, int(parts["n"]), int(parts["scale"]))
    return Tally(counts)

"""Aggregation and simulation on Apache Spark (``pip install 'deniable[spark]'``).

Reports held in a Spark DataFrame (the binary column form of :mod:`deniable.tables.arrow`) are
tallied where they lie: each partition's Arrow record batches go through the
mechanism's own compiled ``tally`` (``DataFrame.mapInArrow``), each task sends back one
small tally per group, and the driver merges them. The result is exactly the
:class:`~deniable.tallies.Tally`, ``SupportTally`` or ``RapporTally`` of the same reports
in one process (integer counts), so every estimator, post-processing step and interval
works unchanged.

On a cluster the same code runs under ``spark-submit``: every executor needs Python
>= 3.11 with ``deniable`` (and so NumPy, numba, pyarrow) installed, for instance from a
wheel shipped with ``--py-files`` or a packed virtual environment
(``spark.archives``, ``PYSPARK_PYTHON``); the driver needs the same version. Nothing else
is required on the executors: no candidate list leaves the driver except inside the
pickled mechanism. See docs/scale.md.
"""

from __future__ import annotations

import itertools
import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast, overload

import numpy as np

from .._extras import require
from ..errors import ReportValidationError
from ..estimation._estimates import PrevalenceEstimate
from ..estimation._estimators import estimate as _estimate
from ..mechanisms._protocol import CategoricalMechanism
from .arrow import (
    AnyTally,
    report_columns,
    report_table,
    reports_from_batch,
    tally_by_group,
    tally_from_parts,
)
from .arrow import tally_parts as _parts

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from pyspark.sql import DataFrame, SparkSession

    from ..estimation._level_search import PrefixHeavyHitters
    from ..mechanisms._byte_prefix import BytePrefixExtension
    from ..mechanisms._prefix import PrefixExtension

__all__ = [
    "estimate",
    "heavy_hitters_parquet",
    "local_session",
    "randomize",
    "tally",
    "tally_parquet",
]

_TALLY_SCHEMA = "group string, kind string, n long, scale int, counts binary, cohort_n binary"
_NO_GROUP = "\x00all"


def local_session(cores: int = 2, memory: str = "4g") -> SparkSession:
    """A local Spark session (``local[cores]``) whose workers run this Python.

    For tests, benchmarks and one machine; on a cluster build the session as usual.

    Raises
    ------
    ModuleNotFoundError
        Without PySpark (``pip install 'deniable[spark]'``).
    """
    require("pyspark", "spark")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("deniable")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", str(2 * cores))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 20))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _group_key(value: Any) -> str | None:
    return None if value is None else str(value)


@overload
def tally(
    mechanism: CategoricalMechanism[Any, Any], frame: DataFrame, *, group_by: None = None
) -> AnyTally: ...


@overload
def tally(
    mechanism: CategoricalMechanism[Any, Any], frame: DataFrame, *, group_by: str
) -> dict[str | None, AnyTally]: ...


def tally(
    mechanism: CategoricalMechanism[Any, Any], frame: DataFrame, *, group_by: str | None = None
) -> AnyTally | dict[str | None, AnyTally]:
    """Tally the reports in ``frame`` on the cluster.

    Parameters
    ----------
    mechanism : Mechanism
        The design, frequency oracle or RAPPOR (with candidates) of the reports.
    frame : pyspark.sql.DataFrame
        Holds the report columns (:func:`deniable.tables.arrow.report_columns`) and, if given,
        ``group_by``.
    group_by : str, optional
        A column to tally separately by; returns ``{str(value) or None: tally}``.

    Raises
    ------
    ReportValidationError
        For a missing column or a malformed report in any partition (the task's error
        names the column).
    """
    columns = report_columns(mechanism) + ([group_by] if group_by else [])
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ReportValidationError(
            f"columns {missing!r} are missing (the frame has {frame.columns!r})"
        )

    def partials(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from .arrow import tally_batches

        totals: dict[str | None, AnyTally] = {}
        if group_by is None:  # streamed: one batch at a time, never the whole partition
            first = next(batches, None)
            if first is not None:
                totals[_NO_GROUP] = tally_batches(mechanism, itertools.chain([first], batches))
        else:
            for batch in batches:
                for key, part in tally_by_group(mechanism, batch, group_by).items():
                    k = _group_key(key)
                    totals[k] = part if k not in totals else totals[k] + part
        records = [{"group": key, **_parts(t)} for key, t in totals.items()]
        if records:
            schema = pa.schema(
                [
                    ("group", pa.string()),
                    ("kind", pa.string()),
                    ("n", pa.int64()),
                    ("scale", pa.int32()),
                    ("counts", pa.binary()),
                    ("cohort_n", pa.binary()),
                ]
            )
            yield pa.RecordBatch.from_pylist(records, schema=schema)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PySpark's note on pandas 3
        rows = frame.select(*columns).mapInArrow(partials, _TALLY_SCHEMA).collect()
    merged: dict[str | None, AnyTally] = {}
    for row in rows:
        part = tally_from_parts(mechanism, row.asDict())
        merged[row.group] = part if row.group not in merged else merged[row.group] + part
    if group_by is None:
        if _NO_GROUP not in merged:
            raise ReportValidationError("no reports: the frame is empty")
        return merged[_NO_GROUP]
    return merged


@overload
def tally_parquet(
    mechanism: CategoricalMechanism[Any, Any],
    spark: SparkSession,
    source: Any,
    *,
    group_by: None = None,
    tasks_per_core: int = ...,
) -> AnyTally: ...


@overload
def tally_parquet(
    mechanism: CategoricalMechanism[Any, Any],
    spark: SparkSession,
    source: Any,
    *,
    group_by: str,
    tasks_per_core: int = ...,
) -> dict[str | None, AnyTally]: ...


def tally_parquet(
    mechanism: CategoricalMechanism[Any, Any],
    spark: SparkSession,
    source: Any,
    *,
    group_by: str | None = None,
    tasks_per_core: int = 4,
) -> AnyTally | dict[str | None, AnyTally]:
    """Tally Parquet files on the cluster, each task reading its row groups with Arrow.

    The driver reads the files' footers and hands out row groups; each task opens them
    through the dataset's filesystem (local, HDFS, S3: whatever ``pyarrow.fs`` reaches
    from the executors) and tallies them batch by batch with the mechanism's compiled
    ``tally``. Spark schedules and retries the tasks; the reports never pass through
    the JVM's row format, which :func:`tally` (on a DataFrame) must convert from.

    Parameters
    ----------
    mechanism : Mechanism
    spark : SparkSession
    source : str, list of str or pyarrow.dataset.Dataset
        Parquet files or a directory (a URI such as ``s3://bucket/reports/`` too).
    group_by : str, optional
        A column stored in the files; returns ``{str(value) or None: tally}``.
    tasks_per_core : int, default 4
        Tasks per core of ``spark.sparkContext.defaultParallelism``.

    Raises
    ------
    ReportValidationError
        For a missing column, malformed reports, or no row groups.
    """
    columns = report_columns(mechanism) + ([group_by] if group_by else [])
    dataset = _parquet_dataset(source, columns)
    filesystem = dataset.filesystem
    pieces, _ = _row_groups(dataset)

    def partials(items: Iterable[tuple[Any, int]]) -> Iterable[tuple[str | None, dict[str, Any]]]:
        totals: dict[str | None, AnyTally] = {}
        for path, group in items:
            for batch in _row_group_batches(filesystem, path, group, columns):
                parts: dict[str | None, AnyTally]
                if group_by is None:
                    parts = {_NO_GROUP: mechanism.tally(reports_from_batch(mechanism, batch))}
                else:
                    parts = {
                        _group_key(k): t
                        for k, t in tally_by_group(mechanism, batch, group_by).items()
                    }
                for key, part in parts.items():
                    totals[key] = part if key not in totals else totals[key] + part
        for key, total in totals.items():
            yield key, _parts(total)

    slices = min(len(pieces), tasks_per_core * spark.sparkContext.defaultParallelism)
    rows = spark.sparkContext.parallelize(pieces, slices).mapPartitions(partials).collect()
    merged: dict[str | None, AnyTally] = {}
    for key, parts in rows:
        part = tally_from_parts(mechanism, parts)
        merged[key] = part if key not in merged else merged[key] + part
    if group_by is None:
        return merged[_NO_GROUP]
    return merged


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


def heavy_hitters_parquet(
    pem: PrefixExtension | BytePrefixExtension,
    spark: SparkSession,
    source: Any,
    threshold: float = 0.01,
    miss_rate: float = 0.05,
    *,
    tasks_per_core: int = 4,
    **options: Any,
) -> PrefixHeavyHitters:
    """Heavy hitters (PEM or byte-PEM) from Parquet report files, one Spark job a level.

    Each report row carries what decoding needs, its level included (PEM: ``level``,
    ``a``, ``b``, ``y``; byte-PEM: ``level``, ``a``, ``y``). PEM: at each level the
    driver broadcasts the candidate prefixes; every task reads its row groups batch by
    batch, counts the candidates' support among that level's reports with the compiled
    kernel and sends back one count vector; the driver adds them and prunes
    (:func:`deniable.estimation._prefix_search.search_levels`). Byte-PEM: a first job counts
    the reports of each level; then for each block of 64 surviving parents, one job in
    which every task sends back the parents' partial spectra (64 x 2^(8 step) int64,
    :func:`deniable.estimation._byte_prefix_search.extension_spectrum`), added up by Spark and
    transformed into counts on the driver, and one job counts the support of the values
    that ended before
    (:func:`deniable.estimation._byte_prefix_search.search_string_levels`). The counts are
    integers, so the result equals the in-process search
    (:func:`~deniable.estimation.find_heavy_hitters`,
    :func:`~deniable.estimation.find_string_heavy_hitters`) on the same
    reports.

    Parameters
    ----------
    pem : PrefixExtension or BytePrefixExtension
    spark : SparkSession
    source : str, list of str or pyarrow.dataset.Dataset
        Parquet files or a directory of reports (the columns of
        :func:`deniable.tables.arrow.report_columns`).
    threshold, miss_rate, **options
        As for :func:`~deniable.estimation.find_heavy_hitters` (``false_discoveries``,
        ``top_k``, ``max_survivors``, ``on_overflow``).
    tasks_per_core : int, default 4
        Tasks per core of ``spark.sparkContext.defaultParallelism``.

    Raises
    ------
    ReportValidationError
        For a missing column, malformed reports (in any task), or no row groups.
    ValueError, DetectionLimitError
        As :func:`~deniable.estimation.find_heavy_hitters`.
    """
    from ..estimation._prefix_search import level_counts, search_levels
    from ..mechanisms._byte_prefix import BytePrefixExtension

    columns = report_columns(pem)
    dataset = _parquet_dataset(source, columns)
    filesystem = dataset.filesystem
    pieces, rows = _row_groups(dataset)
    context = spark.sparkContext
    slices = min(len(pieces), tasks_per_core * context.defaultParallelism)
    groups = context.parallelize(pieces, slices).cache()
    if pem.spec_name == BytePrefixExtension.spec_name:  # reports (level, a, y)
        bpem = cast("BytePrefixExtension", pem)
        try:
            return _string_heavy_hitters(bpem, groups, filesystem, threshold, miss_rate, options)
        finally:
            groups.unpersist()
    pem = cast("PrefixExtension", pem)

    def count(level: int, candidates: NDArray[np.uint64]) -> tuple[NDArray[np.int64], int]:
        shared = context.broadcast(candidates)

        def partials(items: Iterable[tuple[str, int]]) -> Iterator[tuple[bytes, int]]:
            cands = shared.value
            total, reported = np.zeros(cands.size, dtype=np.int64), 0
            for path, group in items:
                for batch in _row_group_batches(filesystem, path, group, columns):
                    part, n = level_counts(pem, reports_from_batch(pem, batch), level, cands)
                    total += part
                    reported += n
            yield total.tobytes(), reported

        parts = groups.mapPartitions(partials).collect()
        shared.unpersist()
        counts = np.zeros(candidates.size, dtype=np.int64)
        for raw, _ in parts:
            counts += np.frombuffer(raw, dtype=np.int64)
        return counts, sum(n for _, n in parts)

    try:
        return search_levels(pem, count, rows, threshold, miss_rate, **options)
    finally:
        groups.unpersist()


def _string_heavy_hitters(
    bpem: BytePrefixExtension,
    groups: Any,
    filesystem: Any,
    threshold: float,
    miss_rate: float,
    options: dict[str, Any],
) -> PrefixHeavyHitters:
    """Byte-PEM's level search over the row groups ``groups`` (an RDD of (file, row
    group)): one job counts each level's reports, then at each level one job a block
    of parents (their spectra) and one for the values that ended (their support)."""
    from ..estimation._byte_prefix_search import (
        extension_spectrum,
        search_string_levels,
        support_counts,
    )

    columns = report_columns(bpem)
    context = groups.context

    def reports_of(items: Iterable[tuple[str, int]]) -> Iterator[NDArray[np.void]]:
        for path, group in items:
            for batch in _row_group_batches(filesystem, path, group, columns):
                yield reports_from_batch(bpem, batch)

    def level_sizes(items: Iterable[tuple[str, int]]) -> Iterator[NDArray[np.int64]]:
        total = np.zeros(bpem.levels, dtype=np.int64)
        for arr in reports_of(items):
            total += np.bincount(arr["level"], minlength=bpem.levels)
        yield total

    sizes = groups.mapPartitions(level_sizes).reduce(np.add)

    def spectrum(level: int, hashes: NDArray[np.uint64]) -> NDArray[np.int64]:
        shared = context.broadcast(hashes)

        def partials(items: Iterable[tuple[str, int]]) -> Iterator[NDArray[np.int64]]:
            cands = shared.value
            total = np.zeros((cands.size, 1 << (8 * bpem.step)), dtype=np.int64)
            for arr in reports_of(items):
                total += extension_spectrum(bpem, arr[arr["level"] == level], cands)
            yield total

        # added up on the executors first: the driver receives a few spectra, not one a task
        out = groups.mapPartitions(partials).treeReduce(np.add)
        shared.unpersist()
        return np.asarray(out, dtype=np.int64)

    def support(level: int, ids: NDArray[np.uint64]) -> NDArray[np.int64]:
        shared = context.broadcast(ids)

        def partials(items: Iterable[tuple[str, int]]) -> Iterator[NDArray[np.int64]]:
            total = np.zeros(shared.value.size, dtype=np.int64)
            for arr in reports_of(items):
                total += support_counts(bpem, arr[arr["level"] == level], shared.value)
            yield total

        out = groups.mapPartitions(partials).treeReduce(np.add)
        shared.unpersist()
        return np.asarray(out, dtype=np.int64)

    return search_string_levels(bpem, spectrum, support, sizes, threshold, miss_rate, **options)


@overload
def estimate(
    mechanism: CategoricalMechanism[Any, Any],
    frame: DataFrame,
    *,
    group_by: None = None,
    method: str = ...,
) -> PrevalenceEstimate: ...


@overload
def estimate(
    mechanism: CategoricalMechanism[Any, Any],
    frame: DataFrame,
    *,
    group_by: str,
    method: str = ...,
) -> dict[str | None, PrevalenceEstimate]: ...


def estimate(
    mechanism: CategoricalMechanism[Any, Any],
    frame: DataFrame,
    *,
    group_by: str | None = None,
    method: str = "moment",
) -> PrevalenceEstimate | dict[str | None, PrevalenceEstimate]:
    """Estimate from reports in ``frame``: :func:`tally` on the cluster, then
    :func:`deniable.estimate` on the driver (per group with ``group_by``)."""
    result = tally(mechanism, frame, group_by=group_by)
    if isinstance(result, dict):
        return {key: _estimate(mechanism, t, method) for key, t in result.items()}
    return _estimate(mechanism, result, method)


def randomize(
    mechanism: CategoricalMechanism[Any, Any],
    frame: DataFrame,
    truth: str,
    *,
    keep: tuple[str, ...] = (),
    seed: int | None = None,
) -> DataFrame:
    """Randomize column ``truth`` of ``frame`` into report columns, on the cluster.

    Parameters
    ----------
    mechanism : Mechanism
    frame : pyspark.sql.DataFrame
    truth : str
        The true answers: integer codes (designs, oracles) or strings (RAPPOR).
    keep : tuple of str
        Columns carried over beside the reports (e.g. a group column).
    seed : int, optional
        For simulation only: partition ``i`` draws from ``numpy.random.default_rng([seed,
        i])``, so a run is reproducible for a fixed partitioning. Default: the secure
        source (a keystream reseeded from ``os.urandom`` in every worker process).

    Returns
    -------
    pyspark.sql.DataFrame
        The report columns (binary form) and ``keep``.
    """
    require("pyspark", "spark")
    from pyspark.sql.pandas.types import from_arrow_schema

    from ..mechanisms._channels import BloomChannel

    # a truth to draw one sample report from: RAPPOR's truths are strings
    sample_truth = np.array(["x"]) if isinstance(mechanism.channel, BloomChannel) else np.array([0])
    sample = report_table(mechanism, mechanism.randomize(sample_truth, np.random.default_rng(0)))
    kept = frame.select(*keep).schema.fields if keep else []
    schema_arrow = sample.schema
    from pyspark.sql.types import StructType

    schema = StructType(list(from_arrow_schema(schema_arrow).fields) + list(kept))

    def draw(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        part = context.partitionId() if context is not None else 0
        rng = None if seed is None else np.random.default_rng([seed, part])
        for batch in batches:
            values = batch.column(truth)
            truths = values.to_pylist() if pa.types.is_string(values.type) else values.to_numpy()
            table = report_table(mechanism, mechanism.randomize(truths, rng))
            for name in keep:
                table = table.append_column(name, batch.column(name))
            yield from table.to_batches()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return frame.select(truth, *keep).mapInArrow(draw, schema)

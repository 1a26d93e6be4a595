"""Heavy hitters on Spark: PEM and byte-PEM's one search (:mod:`deniable.estimation`),
its counting done by Spark tasks over Parquet row groups, one job a level."""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._spark_rows import _parquet_dataset, _row_group_batches, _row_groups
from .arrow import report_columns, reports_from_batch

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from pyspark.sql import SparkSession

    from ..estimation import PrefixHeavyHitters
    from ..mechanisms import BytePrefixExtension, PrefixExtension

__all__ = ["heavy_hitters_parquet"]


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
    (:func:`deniable.estimation._prefix_search.search_levels`). Byte-PEM: a first job
    counts the reports of each level from the ``level`` column alone; the files are read
    once, by a shuffle that splits the reports by level into partitions Spark keeps
    (memory, then disk; one a level an executor, up to 16), run by the first level's
    job; each level runs on its own partitions only: where one task holds the whole
    level, one job
    in which it sends only the entries the level's rule can take; else one job a block
    of 64 parents in which every task sends its partial support counts (int32, from
    :func:`deniable.estimation._byte_prefix_search.extension_spectrum`), added on the
    driver; and one job counts the support of the values that ended before
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
        ``top_k``, ``max_survivors``, ``on_overflow``, ``progress``: called as
        ``progress(1)`` after each level, one Spark job or more a level).
    tasks_per_core : int, default 4
        Tasks per core of ``spark.sparkContext.defaultParallelism``.

    Returns
    -------
    PrefixHeavyHitters

    Raises
    ------
    ReportValidationError
        For a missing column, malformed reports (in any task), or no row groups.
    ValueError, DetectionLimitError
        As :func:`~deniable.estimation.find_heavy_hitters`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import pyarrow.parquet as pq
    >>> from deniable.mechanisms import PrefixExtension
    >>> from deniable.tables.arrow import report_table
    >>> from deniable.tables.spark import heavy_hitters_parquet, local_session
    >>> pem = PrefixExtension(4.0, max_length=3)
    >>> words = np.array(["abc"] * 3000 + ["xyz"] * 2000 + ["q"] * 5000)
    >>> reports = pem.randomize(words, np.random.default_rng(0))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pem.parquet"
    >>> pq.write_table(report_table(pem, reports), path)
    >>> heavy_hitters_parquet(pem, local_session(), str(path), threshold=0.1).values
    ['q', 'abc', 'xyz']
    """
    from ..estimation import search_levels
    from ..mechanisms import BytePrefixExtension

    columns = report_columns(pem)
    dataset = _parquet_dataset(source, columns)
    filesystem = dataset.filesystem
    pieces, rows = _row_groups(dataset)
    context = spark.sparkContext
    slices = min(len(pieces), tasks_per_core * context.defaultParallelism)
    groups = context.parallelize(pieces, slices).cache()
    try:
        if pem.spec_name == BytePrefixExtension.spec_name:  # reports (level, a, y)
            bpem = cast("BytePrefixExtension", pem)
            return _string_heavy_hitters(bpem, groups, filesystem, threshold, miss_rate, options)
        count = _level_counter(cast("PrefixExtension", pem), groups, filesystem, columns)
        return search_levels(
            cast("PrefixExtension", pem), count, rows, threshold, miss_rate, **options
        )
    finally:
        groups.unpersist()


def _level_counter(
    pem: PrefixExtension, groups: Any, filesystem: Any, columns: list[str]
) -> Callable[[int, NDArray[np.uint64]], tuple[NDArray[np.int64], int]]:
    """PEM's counting on Spark: ``count(level, candidates)``, one job over the row
    groups ``groups`` (an RDD of (file, row group)) that broadcasts the candidates and
    adds up each task's count vector."""
    from ..estimation import level_counts

    context = groups.context

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

    return count


#: Partitions of one level's cached reports at most (each task of a level's job sends
#: the driver the counts of a block of parents, 64 x 65,536 int32 = 16 MiB).
_LEVEL_PARTITIONS = 16


def _string_heavy_hitters(
    bpem: BytePrefixExtension,
    groups: Any,
    filesystem: Any,
    threshold: float,
    miss_rate: float,
    options: dict[str, Any],
) -> PrefixHeavyHitters:
    """Byte-PEM's level search over the row groups ``groups`` (an RDD of (file, row
    group)). One job counts each level's reports from the ``level`` column; the files
    are read once, by a shuffle (run by the first level's job) that splits the reports by
    level into ``levels x per_level`` partitions, kept by Spark (memory, then disk) as
    the JVM received them; each level's jobs (one a block of parents' spectra, one for
    the values that ended) run on that level's partitions only
    (``SparkContext.runJob``), so no job rereads the files or touches another level's
    reports."""
    from pyspark import StorageLevel

    from ..estimation import PARENTS_AT_ONCE, search_string_levels

    columns = report_columns(bpem)
    context = groups.context
    # one partition a level an executor: a task's compiled kernels use its cores
    executors = context._jsc.sc().getExecutorMemoryStatus().size()
    per_level = max(1, min(executors - 1 if executors > 1 else 1, _LEVEL_PARTITIONS))
    levels = bpem.levels

    def split(items: Iterable[tuple[str, int]]) -> Iterator[tuple[int, NDArray[np.void]]]:
        for path, group in items:
            for b, batch in enumerate(_row_group_batches(filesystem, path, group, columns)):
                arr = reports_from_batch(bpem, batch)
                arr = arr[np.argsort(arr["level"], kind="stable")]
                bounds = np.searchsorted(arr["level"], np.arange(levels + 1))
                spread = zlib.crc32(f"{path}:{group}:{b}".encode()) % per_level
                for level in range(levels):
                    part = arr[bounds[level] : bounds[level + 1]]
                    if part.size:
                        yield level * per_level + spread, part

    # the split is a shuffle that the first level's job runs and Spark keeps as it went
    # (its bytes, as the JVM received them); the sizes come from the level column alone
    by_level = (
        groups.mapPartitions(split)
        .partitionBy(levels * per_level, lambda key: key)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        per_task = groups.mapPartitions(functools.partial(_level_sizes, levels, filesystem))
        sizes = np.asarray(np.sum(per_task.collect(), axis=0, dtype=np.int64), dtype=np.int64)

        def on_level(level: int, partials: Callable[..., Iterator[Any]]) -> list[Any]:
            partitions = range(level * per_level, (level + 1) * per_level)
            job = by_level.mapPartitions(lambda pairs: partials(a for _, a in pairs))
            return list(context.runJob(job, lambda it: it, partitions))

        counted_ids: dict[int, tuple[NDArray[np.uint64], NDArray[np.int64]]] = {}

        def extensions(
            level: int, hashes: NDArray[np.uint64], least: int, ids: NDArray[np.uint64] | None
        ) -> Iterator[Any]:
            shared = context.broadcast(hashes)
            try:
                if per_level == 1 and least > 0:  # one task holds the level: final counts
                    job = functools.partial(_entries, bpem, shared, least, ids)
                    ((entries, support_of_ids),) = on_level(level, job)
                    if ids is not None:  # the values that ended, counted in the same pass
                        counted_ids[level] = (ids, support_of_ids)
                    yield from entries
                    return
                for p0 in range(0, hashes.size, PARENTS_AT_ONCE):
                    block = functools.partial(_partial_counts, bpem, shared, p0)
                    out = np.sum(on_level(level, block), axis=0, dtype=np.int64)
                    yield out.reshape(-1, 1 << (8 * bpem.step))
            finally:
                shared.unpersist()

        def support(level: int, ids: NDArray[np.uint64]) -> NDArray[np.int64]:
            done = counted_ids.pop(level, None)
            if done is not None and np.array_equal(done[0], ids):
                return done[1]
            shared = context.broadcast(ids)
            parts = on_level(level, functools.partial(_support, bpem, shared))
            out = np.sum(parts, axis=0, dtype=np.int64)
            shared.unpersist()
            return np.asarray(out, dtype=np.int64).reshape(ids.size)

        return search_string_levels(
            bpem, extensions, support, sizes, threshold, miss_rate, **options
        )
    finally:
        by_level.unpersist()


def _level_sizes(
    levels: int, filesystem: Any, items: Iterable[tuple[str, int]]
) -> Iterator[NDArray[np.int64]]:
    """A task's reports a level (levels,) int64, from the ``level`` column of its row
    groups alone, its range checked as the mechanism checks it."""
    from ..errors import ReportValidationError
    from .arrow import _column, _integers

    sizes = np.zeros(levels, dtype=np.int64)
    for path, group in items:
        for batch in _row_group_batches(filesystem, path, group, ["level"]):
            level = _integers(_column(batch, "level"), "level")
            if level.size and (level.min() < 0 or level.max() >= levels):
                raise ReportValidationError(f"field 'level' must be in 0..{levels - 1}")
            sizes += np.bincount(level.astype(np.int64), minlength=levels)
    yield sizes


def _level_counts(
    bpem: BytePrefixExtension, arrs: list[NDArray[np.void]], cands: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """Support counts (P, 2^(8 step)) of ``cands``' extensions among a task's reports of
    one level, counted as one array (a spectrum a batch would allocate and add P x
    65,536 int64 each time)."""
    from ..estimation import counts_from_spectrum, extension_spectrum

    reports = np.concatenate(arrs) if arrs else np.zeros(0, dtype=bpem.dtype)
    return counts_from_spectrum(bpem, extension_spectrum(bpem, reports, cands), reports.size)


def _partial_counts(
    bpem: BytePrefixExtension, shared: Any, p0: int, items: Iterable[NDArray[np.void]]
) -> Iterator[NDArray[np.int32]]:
    """A task's own counts of a block of parents (integers: any split adds up), sent as
    int32 (each at most the task's reports): half the bytes of a spectrum."""
    from ..estimation import PARENTS_AT_ONCE

    yield _level_counts(bpem, list(items), shared.value[p0 : p0 + PARENTS_AT_ONCE]).astype(np.int32)


def _entries(
    bpem: BytePrefixExtension,
    shared: Any,
    least: int,
    ids: NDArray[np.uint64] | None,
    items: Iterable[NDArray[np.void]],
) -> Iterator[tuple[list[Any], NDArray[np.int64] | None]]:
    """Every report of the level is in this task: the final counts of every block of
    parents, of which only the entries at or above ``least`` are sent, and the support
    of ``ids`` (the values that ended) from the same reports."""
    from ..estimation import PARENTS_AT_ONCE, support_counts

    arrs, cands, out = list(items), shared.value, []
    reports = np.concatenate(arrs) if arrs else np.zeros(0, dtype=bpem.dtype)
    for p0 in range(0, cands.size, PARENTS_AT_ONCE):
        counts = _level_counts(bpem, [reports], cands[p0 : p0 + PARENTS_AT_ONCE])
        rows, xs = np.nonzero(counts >= least)
        out.append((rows.astype(np.int32), xs.astype(np.int32), counts[rows, xs]))
    of_ids = None if ids is None else support_counts(bpem, reports, ids)
    yield out, of_ids


def _support(
    bpem: BytePrefixExtension, shared: Any, items: Iterable[NDArray[np.void]]
) -> Iterator[NDArray[np.int64]]:
    """A task's support counts of the values that ended, its reports as one array."""
    from ..estimation import support_counts

    arrs = list(items)
    if not arrs:
        yield np.zeros(shared.value.size, dtype=np.int64)
        return
    yield support_counts(bpem, np.concatenate(arrs), shared.value)

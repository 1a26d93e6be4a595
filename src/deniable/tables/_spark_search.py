"""Heavy hitters on Spark: PEM and byte-PEM's one search (:mod:`deniable.estimation`),
its counting done by Spark tasks over Parquet row groups, one job a level."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._spark_rows import _parquet_dataset, _row_group_batches, _row_groups
from .arrow import report_columns, reports_from_batch

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from pyspark.sql import SparkSession

    from ..estimation._level_search import PrefixHeavyHitters
    from ..mechanisms._byte_prefix import BytePrefixExtension
    from ..mechanisms._prefix import PrefixExtension

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
    from ..estimation._prefix_search import search_levels
    from ..mechanisms._byte_prefix import BytePrefixExtension

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
    from ..estimation._prefix_search import level_counts

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

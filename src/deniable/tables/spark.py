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
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from .._extras import require
from ..errors import ReportValidationError
from ..estimation import PrevalenceEstimate
from ..estimation import estimate as _estimate
from ..mechanisms import CategoricalMechanism
from ._spark_cluster import standalone_session
from ._spark_rows import (
    _parquet_dataset,
    _row_group_batches,
    _row_groups,
    arrow_batches_in_bytes,
    refuse_large_row_groups,
)
from ._spark_search import heavy_hitters_parquet
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
    from pyspark.sql import DataFrame, SparkSession


#: PySpark 4.0 warns, once a process, that it "does not yet fully support pandas >=
#: 3.0.0". deniable's Spark paths run on pandas 3 and are tested on it
#: (tests/test_spark.py), so that one message is silenced, and nothing else.
warnings.filterwarnings(
    "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
)

__all__ = [
    "estimate",
    "heavy_hitters_parquet",
    "local_session",
    "randomize",
    "standalone_session",
    "tally",
    "tally_parquet",
]

_TALLY_SCHEMA = "group string, kind string, n long, scale int, counts binary, cohort_n binary"
_NO_GROUP = "\x00all"


def local_session(cores: int = 2, memory: str = "4g") -> SparkSession:
    """A local Spark session (``local[cores]``) whose workers run this Python.

    For tests, benchmarks and one machine; on a cluster build the session as usual.

    Parameters
    ----------
    cores : int, default 2
    memory : str, default "4g"
        The driver's memory (Spark's notation).

    Returns
    -------
    pyspark.sql.SparkSession

    Raises
    ------
    ModuleNotFoundError
        Without PySpark (``pip install 'deniable[spark]'``).

    Examples
    --------
    >>> from deniable.tables.spark import local_session
    >>> local_session(cores=2).sparkContext.master
    'local[2]'
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

    Returns
    -------
    tally, or dict of group -> tally with ``group_by``

    Raises
    ------
    ReportValidationError
        For a missing column or a malformed report in any partition (the task's error
        names the column).
    MemoryLimitError
        When the frame reads Parquet row groups of more than 256 MiB of reports, which
        Spark's JVM would decode whole: the message names :func:`tally_parquet`.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> from deniable.tables.spark import local_session, randomize
    >>> spark = local_session(cores=2)
    >>> design = Warner(p=0.75)
    >>> people = spark.createDataFrame([(i % 3 == 0, "ab"[i % 2]) for i in range(3000)],
    ...                                ["truth", "country"])
    >>> people = people.selectExpr("cast(truth as int) as truth", "country")
    >>> reports = randomize(design, people, "truth", keep=("country",), seed=1)
    >>> from deniable.tables.spark import tally
    >>> int(tally(design, reports).n)
    3000
    >>> sorted(tally(design, reports, group_by="country"))
    ['a', 'b']
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

    refuse_large_row_groups(frame, columns)  # the JVM would read them whole
    with arrow_batches_in_bytes(frame, mechanism), warnings.catch_warnings():
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

    Returns
    -------
    tally, or dict of group -> tally with ``group_by``

    Raises
    ------
    ReportValidationError
        For a missing column, malformed reports, or no row groups.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import pyarrow.parquet as pq
    >>> from deniable.mechanisms import Warner
    >>> from deniable.tables.arrow import report_table
    >>> from deniable.tables.spark import local_session, tally_parquet
    >>> design = Warner(p=0.75)
    >>> reports = design.randomize(np.arange(1000) % 2, np.random.default_rng(0))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "reports.parquet"
    >>> pq.write_table(report_table(design, reports), path)
    >>> tally_parquet(design, local_session(), str(path)).counts.tolist() == (
    ...     design.tally(reports).counts.tolist())
    True
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
    :func:`deniable.estimate` on the driver (per group with ``group_by``).

    Parameters
    ----------
    mechanism : Mechanism
    frame : pyspark.sql.DataFrame
    group_by : str, optional
    method : str, default "moment"
        As :func:`deniable.estimate`.

    Returns
    -------
    PrevalenceEstimate, or dict of group -> PrevalenceEstimate with ``group_by``

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> from deniable.tables.spark import local_session, randomize
    >>> spark = local_session(cores=2)
    >>> design = Warner(p=0.75)
    >>> people = spark.createDataFrame([(i % 3 == 0, "ab"[i % 2]) for i in range(3000)],
    ...                                ["truth", "country"])
    >>> people = people.selectExpr("cast(truth as int) as truth", "country")
    >>> reports = randomize(design, people, "truth", keep=("country",), seed=1)
    >>> from deniable.tables.spark import estimate
    >>> result = estimate(design, reports)
    >>> bool(abs(result.estimate[1] - 1 / 3) < 4 * result.std_error[1])
    True
    """
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

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.mechanisms import Warner
    >>> from deniable.tables.spark import local_session, randomize
    >>> spark = local_session(cores=2)
    >>> design = Warner(p=0.75)
    >>> people = spark.createDataFrame([(i % 3 == 0, "ab"[i % 2]) for i in range(3000)],
    ...                                ["truth", "country"])
    >>> people = people.selectExpr("cast(truth as int) as truth", "country")
    >>> reports = randomize(design, people, "truth", keep=("country",), seed=1)
    >>> reports.columns
    ['report', 'country']
    """
    require("pyspark", "spark")
    from pyspark.sql.pandas.types import from_arrow_schema

    # a truth to draw one sample report from: RAPPOR's truths are strings
    sample_truth = np.array(["x"]) if mechanism.channel.string_truths else np.array([0])
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

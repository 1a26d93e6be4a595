"""Tallies, per-group estimates and randomization on Apache Spark (local[2]).

Needs a Java runtime (``.ci/run`` installs Debian's default-jre-headless); skipped with
that reason where none is found.
"""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deniable import estimate
from deniable.errors import ReportValidationError
from deniable.mechanisms import KaryRR, Rappor
from deniable.tables.arrow import report_table

from .test_arrow import cases, same

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None,
    reason="Spark needs a Java runtime (java on PATH); .ci/run installs default-jre-headless",
)

N = 1_000_000


@pytest.fixture(scope="module")
def spark():
    from deniable.tables.spark import local_session

    session = local_session(cores=2)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """10^6 reports per mechanism in Parquet, with a country column, and their tallies."""
    rng = np.random.default_rng(2026)
    out = []
    for index, (mechanism, truths) in enumerate(cases(N, rng)):
        reports = mechanism.randomize(truths, rng)
        countries = rng.choice(np.array(["de", "fr", "us", "jp"]), N)
        table = report_table(mechanism, reports).append_column("country", pa.array(countries))
        path = tmp_path_factory.mktemp(f"m{index}") / "reports.parquet"
        pq.write_table(table, path, row_group_size=200_000)
        out.append((mechanism, reports, countries, str(path)))
    return out


@pytest.mark.parametrize("index", range(6))
@pytest.mark.slow
def test_spark_tally_equals_the_in_process_tally_and_so_do_per_group_estimates(
    spark, datasets, index
):
    from deniable.tables import spark as on_spark

    mechanism, reports, countries, path = datasets[index]
    frame = spark.read.parquet(path).repartition(5)  # reports spread over 5 partitions
    whole = mechanism.tally(reports)
    assert same(on_spark.tally(mechanism, frame), whole)
    assert same(on_spark.tally_parquet(mechanism, spark, path), whole)  # row groups as tasks
    by_file = on_spark.tally_parquet(mechanism, spark, path, group_by="country")
    per_group = on_spark.estimate(mechanism, frame, group_by="country")
    assert sorted(by_file) == sorted(per_group)
    for country, part in by_file.items():
        assert same(part, per_group[country].tally)
    assert sorted(per_group) == ["de", "fr", "jp", "us"]
    for country, result in per_group.items():
        mask = countries == country
        subset = (
            type(reports)(reports.cohort[mask], reports.bits[mask])
            if isinstance(mechanism, Rappor)
            else reports[mask]
        )
        local = estimate(mechanism, subset)
        assert same(result.tally, local.tally)
        np.testing.assert_array_equal(result.estimate, local.estimate)
        np.testing.assert_array_equal(result.std_error, local.std_error)


@pytest.mark.slow
def test_randomize_on_spark_is_reproducible_when_seeded_and_secure_otherwise(spark):
    from deniable.tables import spark as on_spark

    mechanism = KaryRR(k=4, epsilon=1.0)
    rng = np.random.default_rng(5)
    truths = rng.choice(4, size=200_000, p=[0.5, 0.3, 0.15, 0.05])
    frame = spark.createDataFrame(
        pa.table({"truth": truths, "app": rng.choice(["a", "b"], 200_000)})
    )
    assert frame.rdd.getNumPartitions() > 1  # a fixed partitioning (no shuffle)
    first = on_spark.randomize(mechanism, frame, "truth", keep=("app",), seed=11)
    assert first.columns == ["report", "app"]
    a = on_spark.tally(mechanism, first)
    b = on_spark.tally(mechanism, on_spark.randomize(mechanism, frame, "truth", seed=11))
    assert same(a, b)
    secure = on_spark.estimate(mechanism, on_spark.randomize(mechanism, frame, "truth"))
    # unbiased: each share within 4 standard errors of the truth
    shares = np.bincount(truths, minlength=4) / truths.size
    assert np.all(np.abs(secure.estimate - shares) < 4 * secure.std_error)
    assert not same(secure.tally, a)


def test_a_missing_column_is_named(spark):
    from deniable.tables import spark as on_spark

    frame = spark.createDataFrame(pa.table({"answer": [0, 1, 1]}))
    with pytest.raises(ReportValidationError, match=r"columns \['report'\] are missing"):
        on_spark.tally(KaryRR(k=3, epsilon=1.0), frame)


@pytest.mark.slow
def test_heavy_hitters_on_spark_equal_the_in_process_search(spark, tmp_path):
    """PEM reports of a Zipf population in three Parquet files of several row groups:
    the search with one Spark job a level returns what the in-process search returns,
    value for value (integer counts), in threshold and in top-k mode."""
    from deniable.estimation import find_heavy_hitters
    from deniable.mechanisms import PrefixExtension
    from deniable.tables import spark as on_spark

    rng = np.random.default_rng(29)
    letters = np.array(list("abcdefgh"))
    words = np.array(sorted({"".join(rng.choice(letters, 4)) for _ in range(3000)}))
    weights = 1.0 / np.arange(1, words.size + 1) ** 1.1
    weights /= weights.sum()
    pem = PrefixExtension(2.0, max_length=4, alphabet="abcdefgh", lengths=[2, 4])
    sample = words[rng.choice(words.size, 300_000, p=weights)]
    reports = pem.randomize(sample, rng)
    for i, part in enumerate(np.array_split(reports, 3)):
        pq.write_table(report_table(pem, part), tmp_path / f"r{i}.parquet", row_group_size=30_000)
    for options in ({"threshold": 0.02}, {"top_k": 5}):
        here = find_heavy_hitters(pem, reports, **options)
        levels: list[int] = []  # progress: one call a level, each a Spark job
        there = on_spark.heavy_hitters_parquet(
            pem, spark, str(tmp_path), progress=levels.append, **options
        )
        assert levels == [1] * pem.levels
        assert there.values == here.values and len(here) > 0
        np.testing.assert_array_equal(there.estimate, here.estimate)
        np.testing.assert_array_equal(there.pvalue, here.pvalue)
        np.testing.assert_array_equal(there.reports_per_level, here.reports_per_level)
        np.testing.assert_array_equal(there.candidates_per_level, here.candidates_per_level)


@pytest.mark.slow
def test_string_heavy_hitters_on_spark_equal_the_in_process_search(spark, tmp_path):
    """Byte-PEM reports of strings up to 8 bytes (Zipf) in three Parquet files of several
    row groups: one Spark job a block of parents returns, value for value, what the
    in-process search returns (integer spectra added over tasks), in threshold and in
    top-k mode."""
    from deniable.estimation._byte_prefix_search import find_string_heavy_hitters
    from deniable.mechanisms import BytePrefixExtension
    from deniable.tables import spark as on_spark

    rng = np.random.default_rng(2929)
    letters = np.array(list("abcdefgh"))
    words = [rng.choice(letters, rng.integers(3, 8)) for _ in range(500)]
    words = np.array(sorted({"".join(w) for w in words} | {"café"}))  # 5 bytes of UTF-8
    weights = 1.0 / np.arange(1, words.size + 1) ** 1.1
    weights /= weights.sum()
    bpem = BytePrefixExtension(4.0, max_bytes=8, step=2)
    sample = words[rng.choice(words.size, 120_000, p=weights)]
    reports = bpem.randomize(sample, rng)
    for i, part in enumerate(np.array_split(reports, 3)):
        pq.write_table(report_table(bpem, part), tmp_path / f"s{i}.parquet", row_group_size=15_000)
    for options in ({"threshold": 0.03}, {"top_k": 4}):
        here = find_string_heavy_hitters(bpem, reports, **options)
        levels: list[int] = []
        there = on_spark.heavy_hitters_parquet(
            bpem, spark, str(tmp_path), progress=levels.append, **options
        )
        assert levels == [1] * bpem.levels
        assert there.values == here.values and len(here) >= 3
        np.testing.assert_array_equal(there.estimate, here.estimate)
        np.testing.assert_array_equal(there.pvalue, here.pvalue)
        np.testing.assert_array_equal(there.reports_per_level, here.reports_per_level)
        np.testing.assert_array_equal(there.candidates_per_level, here.candidates_per_level)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("column", "position", "message"),
    [("y", 2, "field 'y' must be a bucket"), ("level", 0, r"field 'level' must be in 0\.\.")],
)
def test_string_heavy_hitters_on_spark_name_a_malformed_column(
    spark, tmp_path, column, position, message
):
    """A byte-PEM file whose ``y`` (read by the split) or ``level`` (read alone for the
    reports a level) is out of range fails in the task with the field named."""
    from deniable.mechanisms import BytePrefixExtension
    from deniable.tables import spark as on_spark

    bpem = BytePrefixExtension(2.0, max_bytes=8)
    table = report_table(bpem, bpem.randomize(["ab", "cd"] * 50, np.random.default_rng(1)))
    bad = bpem.g if column == "y" else bpem.levels
    table = table.set_column(position, column, pa.array(np.full(100, bad, dtype=np.int32)))
    pq.write_table(table, tmp_path / "bad.parquet")
    with pytest.raises(Exception, match=message):
        on_spark.heavy_hitters_parquet(bpem, spark, str(tmp_path), threshold=0.05)


@pytest.mark.slow
def test_a_frame_over_large_row_groups_is_refused_naming_the_row_group_path(
    spark, tmp_path, monkeypatch
):
    """Issues 44 and 65: Spark's JVM decodes a Parquet row group's column chunks whole,
    as many at once as it runs tasks (a 1 GB row group took its heap to 3.2 GB; four of
    246 MiB on two cores added 2,194 MiB), so a DataFrame tally is refused, naming
    tally_parquet, where one row group holds more than MAX_FRAME_BYTES_IN_FLIGHT over
    the tasks (two here) of reports; the row-group path tallies the same file. The bound
    is lowered here to keep the files small: one row group of about 522,000 bytes, then
    the same reports in four row groups of about 131,000."""
    import pyarrow.parquet as pq

    from deniable.errors import MemoryLimitError
    from deniable.mechanisms import UnaryEncoding
    from deniable.tables import _spark_rows
    from deniable.tables.arrow import report_table
    from deniable.tables.spark import tally, tally_parquet

    oue = UnaryEncoding(k=1000, epsilon=1.0)
    rng = np.random.default_rng(44)
    table = report_table(oue, rng.integers(0, 256, size=(4000, 125), dtype=np.uint8))
    one, four = tmp_path / "one.parquet", tmp_path / "four.parquet"
    pq.write_table(table, one)
    pq.write_table(table, four, row_group_size=1000)
    assert _spark_rows.frame_row_group_limit(spark.read.parquet(str(one)))[1] == 2
    monkeypatch.setattr(_spark_rows, "MAX_FRAME_BYTES_IN_FLIGHT", 200_000)  # 100,000 a group
    for path in (one, four):  # four groups of about 131,000 (125 bytes a row and lengths)
        with pytest.raises(MemoryLimitError, match=r"tables\.spark\.tally_parquet"):
            tally(oue, spark.read.parquet(str(path)))
        assert tally_parquet(oue, spark, str(path)).n == 4000
    monkeypatch.setattr(_spark_rows, "MAX_FRAME_BYTES_IN_FLIGHT", 300_000)  # 150,000 a group
    assert tally(oue, spark.read.parquet(str(four))).n == 4000
    with pytest.raises(MemoryLimitError, match="2 at once"):
        tally(oue, spark.read.parquet(str(one)))


_STANDALONE_CHILD = """
import json, sys
import numpy as np
from deniable.estimation import find_string_heavy_hitters
from deniable.mechanisms import BytePrefixExtension
from deniable.tables.spark import heavy_hitters_parquet, standalone_session
from deniable.tables.arrow import report_table
import pyarrow.parquet as pq

folder = sys.argv[1]
rng = np.random.default_rng(44)
heavy = ["alpha", "beta", "gamma", "delta", "epsilonic", "z"]
words = np.array(heavy + [f"w{i}" for i in range(300)])
weights = np.array([0.2, 0.15, 0.1, 0.08, 0.06, 0.05] + [0.36 / 300] * 300)
bpem = BytePrefixExtension(3.0, max_bytes=16)
reports = bpem.randomize(words[rng.choice(words.size, 60_000, p=weights)], rng)
for i, part in enumerate(np.array_split(reports, 4)):
    pq.write_table(report_table(bpem, part), f"{folder}/r{i}.parquet", row_group_size=5_000)
here = find_string_heavy_hitters(bpem, reports, 0.04)
with standalone_session(workers=2) as spark:
    master = spark.sparkContext.master
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    there = heavy_hitters_parquet(bpem, spark, folder, 0.04)
same = bool(np.array_equal(here.estimate, there.estimate))
print(json.dumps({"master": master, "executors": executors, "here": here.values,
                  "there": there.values, "same": same}))
"""


@pytest.mark.slow
def test_heavy_hitters_on_a_standalone_cluster_of_two_executors(tmp_path):
    """Issue 44: a standalone master and two workers of one core each, started with
    pyspark's own ``bin/spark-class`` (``standalone_session``; in a child process: one
    SparkContext a process), give the in-process search's values and estimates for
    byte-PEM reports in four files of several row groups."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _STANDALONE_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["master"].startswith("spark://127.0.0.1:") and result["executors"] == 2
    assert result["there"] == result["here"] and len(result["here"]) >= 5
    assert result["same"]


@pytest.mark.slow
def test_a_local_session_gives_no_warning_about_pandas_3(tmp_path):
    """PySpark 4.0 warns once a process that it "does not yet fully support pandas >=
    3.0.0"; deniable's Spark paths are tested on pandas 3 here, so a fresh process that
    opens a local session and tallies through Spark, with every warning shown, shows
    none about pandas."""
    import subprocess
    import sys

    code = (
        "import numpy as np, pyarrow.parquet as pq\n"
        "from deniable import Warner\n"
        "from deniable.tables.arrow import report_table\n"
        "from deniable.tables import spark as on_spark\n"
        "d = Warner(p=0.8)\n"
        "reports = d.randomize(np.arange(100) % 2 == 0)\n"
        f"pq.write_table(report_table(d, reports), {str(tmp_path / 'r.parquet')!r})\n"
        "s = on_spark.local_session()\n"
        f"print(int(on_spark.tally_parquet(d, s, {str(tmp_path / 'r.parquet')!r}).n))\n"
        "s.stop()\n"
    )
    done = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.split()[-1] == "100"
    assert "support pandas" not in done.stderr, done.stderr[-2000:]

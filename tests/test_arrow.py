"""Reports as Arrow columns and tallies streamed from Parquet, batch by batch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deniable.errors import ReportValidationError
from deniable.mechanisms import (
    ForcedResponse,
    HadamardResponse,
    KaryRR,
    LocalHashing,
    Rappor,
    UnaryEncoding,
    Warner,
)
from deniable.tables.arrow import (
    report_columns,
    report_table,
    reports_from_batch,
    tally_from_parts,
    tally_parquet,
    tally_parts,
)
from deniable.tables.frames import reports_to_frame

CANDIDATES = [f"site-{i}" for i in range(40)]


def cases(n: int, rng: np.random.Generator):
    rappor = Rappor(n_bloom_bits=64, h=2, n_cohorts=8, f=0.5, p=0.25, q=0.75, candidates=CANDIDATES)
    return [
        (ForcedResponse(p_yes=0.25, p_no=0.25), rng.integers(0, 2, n)),
        (KaryRR(k=7, epsilon=1.0), rng.integers(0, 7, n)),
        (UnaryEncoding(256, 1.0, optimized=True), rng.integers(0, 256, n)),
        (LocalHashing(1000, 1.0), rng.integers(0, 1000, n)),
        (HadamardResponse(100, 1.0), rng.integers(0, 100, n)),
        (rappor, np.array(CANDIDATES)[rng.integers(0, 40, n)].tolist()),
    ]


def same(a, b) -> bool:
    return type(a) is type(b) and np.array_equal(a.counts, b.counts) and a.n == b.n


@pytest.mark.parametrize("index", range(6))
def test_streamed_tallies_equal_the_in_process_tally_whole_and_per_group(tmp_path, index):
    rng = np.random.default_rng(index)
    n = 60_000
    mechanism, truths = cases(n, rng)[index]
    reports = mechanism.randomize(truths, rng)
    groups = rng.choice(np.array(["de", "fr", "us"]), n)
    table = report_table(mechanism, reports).append_column("country", pa.array(groups))
    path = tmp_path / "reports.parquet"
    pq.write_table(table, path, row_group_size=9_999)
    whole = mechanism.tally(reports)
    rows: list[int] = []
    streamed = tally_parquet(mechanism, path, batch_size=4_096, progress=rows.append)
    assert same(streamed, whole) and sum(rows) == n and len(rows) > 10
    per_group = tally_parquet(mechanism, path, group_by="country", batch_size=5_000)
    for country in ("de", "fr", "us"):
        mask = groups == country
        subset = (
            type(reports)(reports.cohort[mask], reports.bits[mask])
            if isinstance(mechanism, Rappor)
            else reports[mask]
        )
        assert same(per_group[country], mechanism.tally(subset))
    assert same(tally_from_parts(mechanism, tally_parts(whole)), whole)


def test_the_text_forms_are_read_too():
    rng = np.random.default_rng(7)
    for mechanism, truths in cases(500, rng)[2:4]:  # unary (hex bits), local hashing (decimal)
        reports = mechanism.randomize(truths, rng)
        text = pa.Table.from_pandas(reports_to_frame(mechanism, reports))
        assert same(mechanism.tally(reports_from_batch(mechanism, text)), mechanism.tally(reports))


def test_memory_is_bounded_by_the_batch_not_the_dataset(tmp_path):
    """Arrow's allocator, sampled after every batch, holds well under a quarter of the
    64 MB of reports (measured: 12 MB, a row group's column chunk and pages at a time;
    the dataset scanner's read-ahead held 52 MB)."""
    mechanism = UnaryEncoding(256, 1.0, optimized=True)
    rng = np.random.default_rng(8)
    for part in range(8):  # 8 files x 250,000 reports x 32 bytes = 64 MB of reports
        reports = mechanism.randomize(rng.integers(0, 256, 250_000), rng)
        pq.write_table(
            report_table(mechanism, reports),
            tmp_path / f"part-{part}.parquet",
            row_group_size=25_000,
        )
    peak = [0]

    def watch(rows: int) -> None:
        peak[0] = max(peak[0], pa.total_allocated_bytes())

    batch = 20_000
    result = tally_parquet(mechanism, tmp_path, batch_size=batch, progress=watch)
    assert result.n == 2_000_000
    assert peak[0] < 2_000_000 * 32 / 4


def test_memory_is_bounded_by_the_batch_even_in_one_row_group(tmp_path):
    """A file written as ONE row group of 64 MB of reports: with Arrow's default
    pre-buffering the reader held the whole column chunk; streamed through a 1 MiB
    buffer, Arrow's allocator, sampled after every batch, holds under 1/8 of it
    (a batch of 640 KB, the read buffer and the pages being decoded)."""
    mechanism = UnaryEncoding(256, 1.0, optimized=True)
    rng = np.random.default_rng(9)
    n = 2_000_000
    reports = mechanism.randomize(rng.integers(0, 256, n), rng)
    path = tmp_path / "one-group.parquet"
    pq.write_table(report_table(mechanism, reports), path, row_group_size=n, compression="none")
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    del reports
    peak = [0]

    def watch(rows: int) -> None:
        peak[0] = max(peak[0], pa.total_allocated_bytes())

    result = tally_parquet(mechanism, path, batch_size=20_000, progress=watch)
    assert result.n == n
    assert peak[0] < n * 32 / 8, peak[0]
    # the pre-buffered reader holds the whole chunk: the bound above is not loose
    pre = pq.ParquetFile(path)
    held = [0]
    for _batch in pre.iter_batches(batch_size=20_000, columns=["report"]):
        held[0] = max(held[0], pa.total_allocated_bytes())
    assert held[0] > n * 32 / 2, held[0]


def test_analyze_on_parquet_gives_the_arrow_pool_back(tmp_path):
    """``deniable analyze`` reads Parquet through Arrow's jemalloc pool, which is
    process-wide: run in process (a notebook, a test), the command gives the caller's
    pool back when it ends, so the memory test above measures the pool it means in
    any order (it failed under pytest-xdist after an in-process analyze)."""
    from typer.testing import CliRunner

    from deniable.cli import app

    before = pa.default_memory_pool().backend_name
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"report": np.array([0, 1, 1, 0] * 50)}), path)
    out = CliRunner().invoke(app, ["analyze", str(path), "--design", "warner:p=0.7"])
    assert out.exit_code == 0, out.output
    assert "Warner" in out.output or "warner" in out.output
    assert pa.default_memory_pool().backend_name == before


def test_bad_columns_are_named(tmp_path):
    mechanism = KaryRR(k=3, epsilon=1.0)
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"answer": [0, 1]}), path)
    with pytest.raises(ReportValidationError, match=r"columns \['report'\] are missing"):
        tally_parquet(mechanism, path)
    with pytest.raises(ReportValidationError, match="'report' has 1 missing values"):
        reports_from_batch(mechanism, pa.table({"report": pa.array([0, None], pa.int32())}))
    with pytest.raises(ReportValidationError, match=r"0\.\.2"):
        reports_from_batch(mechanism, pa.table({"report": pa.array([0, 5], pa.int32())}))
    oue = UnaryEncoding(16, 1.0, optimized=True)
    with pytest.raises(ReportValidationError, match="2 bytes per report"):
        reports_from_batch(oue, pa.table({"report": pa.array([b"\x00\x01", b"\x00"])}))
    with pytest.raises(ValueError, match="batch_size must be in"):
        tally_parquet(mechanism, path, batch_size=0)


def test_deniable_analyze_streams_a_parquet_directory(tmp_path):
    """The command reads a directory of Parquet files batch by batch: its estimates equal
    the in-process estimates of all the reports, and missing reports are counted."""
    import json

    from typer.testing import CliRunner

    from deniable import estimate
    from deniable.cli import app

    rng = np.random.default_rng(9)
    design = KaryRR(k=5, epsilon=1.0)
    reports = design.randomize(rng.integers(0, 5, 30_000), rng)
    column = pa.array(reports.astype(np.int32), mask=rng.random(reports.size) < 0.01)
    folder = tmp_path / "reports"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(reports.size), 3)):
        pq.write_table(pa.table({"answer": column.take(pa.array(part))}), folder / f"{i}.parquet")
    kept = np.asarray(column.drop_null().to_numpy())
    args = ["analyze", str(folder), "--design", "kary-rr:k=5,epsilon=1", "--column", "answer"]
    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    local = estimate(design, kept)
    np.testing.assert_allclose(payload["estimate"], local.estimate, rtol=1e-12)
    assert payload["missing"] == column.null_count > 0
    oracle = LocalHashing(200, 1.0)
    olh = oracle.randomize(rng.integers(0, 200, 20_000), rng)
    pq.write_table(report_table(oracle, olh), tmp_path / "olh.parquet")
    out = CliRunner().invoke(
        app, ["analyze", str(tmp_path / "olh.parquet"), "--design", "olh:k=200,epsilon=1", "--json"]
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["n"] == 20_000


# peak resident size from /proc (VmHWM, reset by exec; ru_maxrss is not, on Linux)
_PEAK_CHILD = """
import sys
import numpy as np
import pyarrow.dataset, pyarrow.parquet
from deniable.mechanisms import LocalHashing
from deniable.tables.arrow import tally_parquet
olh = LocalHashing(k=2, epsilon=1.0)
olh.tally(olh.randomize(np.zeros(1000, dtype=np.int64), np.random.default_rng(0)))  # loads
def peak():
    with open('/proc/self/status') as status:
        line = next(x for x in status if x.startswith('VmHWM:'))
    return int(line.split()[1]) * 1024
base = peak()
result = tally_parquet(olh, sys.argv[1])
print(result.n, base, peak())
"""


def _tallied_within_400_mb(child: str, path, n: int) -> None:
    """Run ``child`` on ``path`` in a fresh process: all ``n`` rows tallied, and its peak
    resident size grew by under 400 MB over its size after imports."""
    out = subprocess.run(
        [sys.executable, "-c", child, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout.split()
    rows, base, peak = (int(x) for x in out)
    assert rows == n
    print(f"peak RSS grew by {(peak - base) / 2**20:.0f} MiB over {base / 2**20:.0f} MiB")
    assert peak - base < 400 * 2**20, (base, peak)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_one_gigabyte_row_group_is_tallied_in_bounded_memory(tmp_path):
    """Issue 29's case: one Parquet file of 1 GB in ONE row group (OLH reports: two
    random uint64 and a uint32, incompressible), tallied in a child process whose peak
    resident size grows by under 400 MB over its size after imports (the whole row
    group read at once would add over 1 GB)."""
    mechanism = LocalHashing(k=2, epsilon=1.0)
    n = 62_500_000
    rng = np.random.default_rng(29)
    table = report_table(mechanism, mechanism.randomize(rng.integers(0, 2, n), rng))
    path = tmp_path / "one-gigabyte.parquet"
    pq.write_table(table, path, row_group_size=n, compression="none")
    del table
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    assert path.stat().st_size > 10**9
    _tallied_within_400_mb(_PEAK_CHILD, path, n)


def test_batches_are_sized_in_bytes_whatever_the_row_width(tmp_path):
    """Issue 44: the rows of a streamed batch follow its stored bytes, so a wide row
    (OUE k = 1,000: 125 bytes) gets fewer rows than a narrow one (Warner: 1 byte)."""
    from deniable.tables.arrow import BATCH_SHARE, batch_rows, scan_parquet

    rng = np.random.default_rng(44)
    wide, narrow = UnaryEncoding(k=1000, epsilon=1.0), Warner(p=0.75)
    n = 20_000
    sizes = {}
    for name, mech, reports in (
        ("wide", wide, rng.integers(0, 256, size=(n, 125), dtype=np.uint8)),
        ("narrow", narrow, rng.integers(0, 2, n).astype(np.uint8)),
    ):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(report_table(mech, reports), path, compression="none")
        meta = pq.ParquetFile(path).metadata
        budget = 256 * 1024
        rows = batch_rows(meta, report_columns(mech), budget)
        stored = meta.row_group(0).column(0).total_uncompressed_size / n
        assert rows == int(budget // (stored + 8))
        got = [b.num_rows for b in scan_parquet(path, report_columns(mech), batch_bytes=budget)]
        assert sum(got) == n and max(got) == min(rows, n)
        sizes[name] = rows
    assert sizes["wide"] * 10 < sizes["narrow"]  # 134 against 9 bytes a row
    assert 2**31 // BATCH_SHARE == 16 * 2**20  # the default: 16 MiB of a 2 GiB limit
    for bad in (0, 2**40, 1.5):
        with pytest.raises(ValueError, match="batch_bytes must be an integer"):
            next(scan_parquet(tmp_path / "wide.parquet", report_columns(wide), batch_bytes=bad))


_PEAK_CHILD_OUE = _PEAK_CHILD.replace(
    "olh = LocalHashing(k=2, epsilon=1.0)", "olh = UnaryEncoding(k=1000, epsilon=1.0)"
).replace(
    "from deniable.mechanisms import LocalHashing", "from deniable.mechanisms import UnaryEncoding"
)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_one_gigabyte_row_group_of_wide_rows_is_tallied_in_bounded_memory(tmp_path):
    """Issue 44's case: 1 GB in ONE row group of OUE k = 1,000 reports (125 bytes a
    row, incompressible), tallied in a child whose peak resident size grows by under
    400 MB over its size after imports. Batches of 2^20 rows took 542 MiB here; sized
    in bytes (16 MiB stored a batch), 173 MiB."""
    mechanism = UnaryEncoding(k=1000, epsilon=1.0)
    n = 8_000_000
    rng = np.random.default_rng(44)  # any bit pattern is an OUE report
    table = report_table(mechanism, rng.integers(0, 256, size=(n, 125), dtype=np.uint8))
    path = tmp_path / "one-gigabyte-wide.parquet"
    pq.write_table(table, path, row_group_size=n, compression="none")
    del table
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    assert path.stat().st_size > 10**9
    _tallied_within_400_mb(_PEAK_CHILD_OUE, path, n)


@pytest.mark.slow
def test_a_table_of_more_than_two_gigabytes_of_reports_is_written_in_chunks():
    """A binary array's offsets are 32-bit: 2.2 GB of OUE reports (k = 1,000) become a
    column of two chunks, each under 2 GiB, and every row keeps its bytes."""
    mechanism = UnaryEncoding(k=1000, epsilon=1.0)
    n = 17_500_000  # 125 bytes a row: 2.19 GB
    bits = np.zeros((n, 125), dtype=np.uint8)
    bits[0, 0], bits[-1, -1] = 1, 128
    column = report_table(mechanism, bits).column("report")
    assert column.num_chunks == 2 and len(column) == n
    assert all(chunk.nbytes < 2**31 + 8 * n for chunk in column.chunks)
    assert column[0].as_py()[0] == 1 and column[n - 1].as_py()[-1] == 128

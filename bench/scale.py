"""Cost as work grows: tallies from Parquet in process and on Spark, n = 10^5 .. 10^8.

    python -m uv run python bench/scale.py [--max-exponent 8] [--workdir DIR]

For OUE (k = 256) and OLH (k = 10^4) at epsilon = 1: seeded reports are written to a
Parquet directory (setup, not timed), then

- **in process**: ``deniable.tables.arrow.tally_parquet`` streams the directory batch by batch
  (the same path as ``deniable analyze``), in a fresh process each time, so the peak
  resident memory (``ru_maxrss``) is that one run's;
- **Spark** (``local[2]``, one session, start-up and one warm-up job not counted):
  ``deniable.tables.spark.tally_parquet`` (tasks read row groups with Arrow: the Spark column)
  and ``deniable.tables.spark.tally`` on ``spark.read.parquet(dir)`` (a DataFrame through
  ``mapInArrow``: the "frame" column).

Every file is read once before it is timed, so times measure the tally with the data
in the page cache (compute, not the disk: a cold read of OUE's 3.2 GB at 10^8 took 23 s
here against 8.7 s warm). In-process times exclude one-off imports and loading the
compiled kernels (a warm-up tally of a small Arrow batch through the same path); Spark's
exclude the session's start and one warm-up job per mechanism and path. Arrow allocates
from jemalloc (``ARROW_DEFAULT_MEMORY_POOL``; see below).

Both tallies must be equal. Printed side by side, with the log-log slope of time
against n (least squares over n >= 10^6, and over every n). Goals (issue 16): slope
between 0.9 and 1.1; Spark within 2x of in-process at 10^8; peak memory in process under
2 GB at 10^8. Results go to docs/scale.json and the plot to docs/scale.png.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import multiprocessing as mp
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

# Arrow's jemalloc pool: mimalloc (the default in this pyarrow) spends its first passes
# over a large file growing its segments (2.6 s, 1.1 s, 0.48 s for three reads of the same
# 10^7 OUE reports here, against 0.77 s, 0.36 s, 0.42 s with jemalloc); set before any
# process starts, so the in-process children and Spark's Python workers inherit it
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 10_000_000  # reports generated and written per file


def build(spec: str):
    from deniable.mechanisms import mechanism_from_spec

    return mechanism_from_spec(spec)


def write_reports(spec: str, n: int, folder: Path) -> None:
    import pyarrow.parquet as pq

    from deniable.tables.arrow import report_table

    mechanism = build(spec)
    rng = np.random.default_rng(n)
    k = mechanism.n_truths
    weights = 1.0 / np.arange(1, k + 1)  # Zipf(1) values
    weights /= weights.sum()
    folder.mkdir(parents=True)
    for i, start in enumerate(range(0, n, CHUNK)):
        size = min(CHUNK, n - start)
        truths = rng.choice(k, size=size, p=weights)
        table = report_table(mechanism, mechanism.randomize(truths, rng))
        pq.write_table(table, folder / f"part-{i:04d}.parquet", row_group_size=1 << 20)


def sample_table(mechanism, n: int = 1000):
    """A small Arrow table of reports (warm-up jobs)."""
    from deniable.tables.arrow import report_table

    truths = np.arange(n) % mechanism.n_truths
    return report_table(mechanism, mechanism.randomize(truths, np.random.default_rng(0)))


def read_once(folder: Path) -> None:
    """Read every file of ``folder`` so the timed runs find it in the page cache."""
    buffer = bytearray(1 << 24)
    for path in sorted(folder.iterdir()):
        with path.open("rb", buffering=0) as f:
            while f.readinto(buffer):
                pass


def in_process(spec: str, folder: str, queue: mp.Queue) -> None:
    from deniable.tables.arrow import tally_batches, tally_parquet

    mechanism = build(spec)
    for name in ("pyarrow.dataset", "pyarrow.parquet"):  # one-off imports are not timed
        importlib.import_module(name)
    # load the compiled kernels (numba) and start Arrow's reader through the same path
    # as the timed tally
    tally_batches(mechanism, sample_table(mechanism).to_batches())
    t0 = time.perf_counter()
    tally = tally_parquet(mechanism, folder)
    seconds = time.perf_counter() - t0
    peak_mb = peak_resident_mb()
    queue.put((seconds, peak_mb, tally.counts.tolist(), tally.n))


def peak_resident_mb() -> float:
    """This process's peak resident memory (VmHWM; ru_maxrss would include the parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def slope(ns: list[int], seconds: list[float]) -> float:
    if len(ns) < 2:
        return math.nan
    return float(np.polyfit(np.log10(ns), np.log10(seconds), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-exponent", type=int, default=8)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="deniable-scale-"))
    ns = [10**e for e in range(5, args.max_exponent + 1)]
    specs = {"OUE k=256": "oue:k=256,epsilon=1", "OLH k=10^4": "olh:k=10000,epsilon=1"}
    spark = None
    if not args.no_spark:
        from deniable.tables.spark import local_session

        spark = local_session(cores=2)
        from deniable.tables import spark as on_spark

        for spec in specs.values():  # start every Python worker, compile the kernels
            import pyarrow.parquet as pq

            warm = build(spec)
            sample = work / f"warm-{spec.split(':')[0]}"
            sample.mkdir(parents=True, exist_ok=True)
            # 16 row groups: tasks for every core, so no worker starts in a timed job
            pq.write_table(sample_table(warm, 16_000), sample / "part-0000.parquet", 1000)
            on_spark.tally(warm, spark.read.parquet(str(sample)).repartition(8))
            on_spark.tally_parquet(warm, spark, str(sample))
    ctx = mp.get_context("spawn")
    results: dict[str, list[dict[str, float]]] = {}
    head = f"{'mechanism':12s} {'n':>12s} {'in process s':>13s} {'peak MB':>8s} {'Spark s':>8s}"
    print(head + f" {'Spark/in':>9s} {'frame s':>8s} {'equal':>6s}")
    for name, spec in specs.items():
        rows = results.setdefault(name, [])
        for n in ns:
            folder = work / f"{spec.split(':')[0]}-{n}"
            if not folder.exists():
                write_reports(spec, n, folder)
            read_once(folder)
            queue = ctx.Queue()
            proc = ctx.Process(target=in_process, args=(spec, str(folder), queue))
            proc.start()
            seconds, peak_mb, counts, total = queue.get()
            proc.join()
            row = {"n": n, "in_process_s": seconds, "peak_mb": peak_mb}
            equal = ""
            if spark is not None:
                from deniable.tables import spark as on_spark

                mechanism = build(spec)
                t0 = time.perf_counter()
                tally = on_spark.tally_parquet(mechanism, spark, str(folder))
                row["spark_s"] = time.perf_counter() - t0
                frame = spark.read.parquet(str(folder))
                t0 = time.perf_counter()
                via_frame = on_spark.tally(mechanism, frame)
                row["spark_frame_s"] = time.perf_counter() - t0
                equal = str(
                    tally.counts.tolist() == counts == via_frame.counts.tolist()
                    and tally.n == total == via_frame.n
                )
            rows.append(row)
            spark_s = row.get("spark_s", math.nan)
            frame_s = row.get("spark_frame_s", math.nan)
            print(
                f"{name:12s} {n:12,d} {seconds:13.2f} {peak_mb:8.0f} {spark_s:8.2f} "
                f"{spark_s / seconds:9.2f} {frame_s:8.2f} {equal:>6s}",
                flush=True,
            )
        for key in ("in_process_s", "spark_s", "spark_frame_s"):
            if key not in rows[0]:
                continue
            big = [r for r in rows if r["n"] >= 10**6]
            s_big = slope([r["n"] for r in big], [r[key] for r in big])
            s_all = slope([r["n"] for r in rows], [r[key] for r in rows])
            print(f"{name}: slope of {key} against n: {s_big:.3f} (n >= 10^6), {s_all:.3f} (all)")
    if spark is not None:
        spark.stop()
    (ROOT / "docs" / "scale.json").write_text(json.dumps(results, indent=1) + "\n")
    plot(results, ROOT / "docs" / "scale.png")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


def plot(results: dict[str, list[dict[str, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name, rows in results.items():
        n = [r["n"] for r in rows]
        left.loglog(n, [r["in_process_s"] for r in rows], "o-", label=f"{name}, in process")
        if "spark_s" in rows[0]:
            label = f"{name}, Spark local[2] (row groups)"
            left.loglog(n, [r["spark_s"] for r in rows], "s--", label=label)
        right.semilogx(n, [r["peak_mb"] for r in rows], "o-", label=f"{name}, in process")
    left.set(xlabel="reports n", ylabel="seconds to tally", title="Time against n (log-log)")
    right.set(xlabel="reports n", ylabel="peak resident memory (MB)", title="Memory against n")
    right.set_ylim(bottom=0)
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()

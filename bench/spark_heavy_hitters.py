"""Heavy hitters on Spark against in process: byte-PEM (and PEM) at n = 10^7.

    python -m uv run python bench/spark_heavy_hitters.py [--n 1e7] [--eps 1,2]
        [--master local[2]] [--executors 2] [--runs 3] [--short]

The vocabulary is bench/heavy_hitters.py's: 100,000 web2 words of any length drawn
Zipf(1.1) through ``BytePrefixExtension`` (or, with ``--short``, its words of at most 6
letters through ``PrefixExtension`` over the default 39-symbol alphabet). Seeded reports
are written to Parquet (row groups of 2^20 reports, files of 10^7; setup, not timed),
then, each ``runs`` times with the median printed:

- **in process**: the reports are read from the Parquet files into one array and
  searched (``find_string_heavy_hitters`` / ``find_heavy_hitters``); the read is timed
  with the search, as Spark's is;
- **Spark**: ``deniable.tables.spark.heavy_hitters_parquet`` on one session (its start
  and one warm-up search on a small file are not counted).

The two must return the same values with the same estimates (integer counts). Goal
(issue 44): Spark within 2x of in process on one machine at n = 10^7. ``--master``
takes ``local[N]``; ``--master standalone`` starts a standalone master and
``--executors`` workers of one core each with pyspark's own ``bin/spark-class``
(``deniable.tables.spark.standalone_session``), runs on them, and stops them.
The machine's load average is printed before each row.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from heavy_hitters import vocabulary

THRESHOLD = 0.01
CHUNK = 10_000_000


def write_reports(mechanism, words, weights, n: int, folder: Path, seed: int) -> None:
    """Seeded reports of ``n`` respondents in Parquet files of ``CHUNK`` reports."""
    import pyarrow.parquet as pq

    from deniable.tables.arrow import report_table

    rng = np.random.default_rng(seed)
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        sample = words[rng.choice(words.size, size=size, p=weights)]
        reports = mechanism.randomize(sample, rng)
        path = folder / f"part-{start // CHUNK:03d}.parquet"
        pq.write_table(report_table(mechanism, reports), path, row_group_size=1 << 20)


def in_process(mechanism, folder: Path):
    """Read every file into one report array and search it."""
    import pyarrow.parquet as pq

    from deniable.estimation import find_heavy_hitters, find_string_heavy_hitters
    from deniable.tables.arrow import reports_from_batch

    parts = [
        reports_from_batch(mechanism, batch)
        for path in sorted(folder.glob("*.parquet"))
        for batch in pq.ParquetFile(path).iter_batches(batch_size=1 << 20)
    ]
    reports = np.concatenate(parts)
    search = find_heavy_hitters if mechanism.spec_name == "pem" else find_string_heavy_hitters
    return search(mechanism, reports, THRESHOLD)


def session(master: str, executors: int, stack: contextlib.ExitStack):
    from deniable.tables.spark import local_session, standalone_session

    if master == "standalone":
        return stack.enter_context(standalone_session(workers=executors, memory="3g"))
    cores = int(master[6:-1]) if master.startswith("local[") else 1
    return local_session(cores=cores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", default="1e7")
    parser.add_argument("--eps", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--short", action="store_true", help="PEM over 6-symbol words")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()

    from deniable.mechanisms import BytePrefixExtension, PrefixExtension
    from deniable.tables.spark import heavy_hitters_parquet

    words = vocabulary(long=not args.short)
    weights = 1.0 / np.arange(1, words.size + 1) ** 1.1
    weights /= weights.sum()
    with contextlib.ExitStack() as stack:
        spark = session(args.master, args.executors, stack)
        print(
            f"master {spark.sparkContext.master}, default parallelism "
            f"{spark.sparkContext.defaultParallelism}; {words.size:,} words; "
            f"{'PEM (39 symbols)' if args.short else 'byte-PEM'}",
            flush=True,
        )
        print(f"{'n':>8s} {'eps':>4s} {'in process s':>13s} {'Spark s':>9s} {'ratio':>6s} same")
        for n in (int(float(x)) for x in args.n.split(",")):
            for eps in (float(x) for x in args.eps.split(",")):
                mech = (
                    PrefixExtension(eps, max_length=6) if args.short else BytePrefixExtension(eps)
                )
                with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
                    folder = Path(tmp)
                    write_reports(mech, words, weights, n, folder, seed=int(eps * 10))
                    warm = folder / "warm"
                    warm.mkdir()
                    write_reports(mech, words, weights, 20_000, warm, seed=1)
                    heavy_hitters_parquet(mech, spark, str(warm), THRESHOLD)
                    data = [str(p) for p in sorted(folder.glob("*.parquet"))]
                    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
                    print(f"  load {load}", flush=True)
                    local, remote, same = [], [], True
                    for _ in range(args.runs):
                        t0 = time.perf_counter()
                        mine = in_process(mech, folder)
                        local.append(time.perf_counter() - t0)
                        t0 = time.perf_counter()
                        theirs = heavy_hitters_parquet(mech, spark, data, THRESHOLD)
                        remote.append(time.perf_counter() - t0)
                        same &= mine.values == theirs.values and np.array_equal(
                            mine.estimate, theirs.estimate
                        )
                    a, b = statistics.median(local), statistics.median(remote)
                    print(
                        f"{n:8.0e} {eps:4g} {a:13.1f} {b:9.1f} {b / a:6.2f} {same} "
                        f"({len(mine.values)} values; in process "
                        f"{', '.join(f'{t:.1f}' for t in local)}; Spark "
                        f"{', '.join(f'{t:.1f}' for t in remote)})",
                        flush=True,
                    )
        spark.stop()


if __name__ == "__main__":
    main()

"""RAPPOR decoding time and peak memory as the candidate list grows.

Usage::

    python -m uv run python bench/rappor_decode.py [--candidates 1000 10000] [--n 200000]

For each candidate count: 64 cohorts, 128 Bloom bits, h = 2, ``--n`` reports whose
values are 10 planted candidates (5% each) and the rest spread evenly; prints the
seconds ``estimate`` takes, the process's peak resident memory before and after the
decode (``ru_maxrss``; the decode adds nothing when the peak does not move), and how
many of the 10 planted values are detected (Bonferroni at 5%) with how many others.
Issue 29 measured 49 s and 2.7 GB for 10,000 candidates with a dense design matrix.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from deniable import estimate
from deniable.mechanisms._rappor import Rappor


def peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--candidates", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--n", type=int, default=200_000)
    args = ap.parse_args()
    print(f"{'candidates':>10} {'decode s':>9} {'peak MB before':>15} {'after':>6} {'planted':>8}")
    for m in args.candidates:
        candidates = [f"value-{i}" for i in range(m)]
        rappor = Rappor(n_bloom_bits=128, h=2, n_cohorts=64, candidates=candidates)
        rng = np.random.default_rng(0)
        shares = np.r_[np.full(10, 0.05), np.full(m - 10, 0.5 / (m - 10))]
        values = [candidates[i] for i in rng.choice(m, args.n, p=shares)]
        reports = rappor.randomize(values, rng)
        before = peak_mb()
        start = time.perf_counter()
        result = estimate(rappor, reports)
        seconds = time.perf_counter() - start
        found = int(result.detected[:10].sum())
        others = int(result.detected[10:].sum())
        print(
            f"{m:>10,} {seconds:>9.1f} {before:>15,} {peak_mb():>6,} "
            f"{found:>5}/10 (+{others} others)"
        )


if __name__ == "__main__":
    main()

"""Throughput of randomize and estimate at n = 10^7, beside NumPy's raw uniform rate.

    python -m uv run python bench/throughput.py [--n 10000000] [--repeats 5]

Prints reports per second (best of --repeats) and ratios against NumPy's
``Generator.random`` measured in the same run. Goals (issue 2): a binary design
randomizes at >= 1/3 of the raw uniform rate with the seeded generator; estimate (tally
+ moment estimator) handles >= 10^8 reports per second. Goal (issue 16): a binary design
randomizes with ``SecureRandom`` (the keystream respondents' reports come from) at
>= 0.5x the raw seeded uniform rate.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

from deniable import ForcedResponse, KaryRR, Kuk, SecureRandom, Warner, estimate


def best(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, reps = args.n, args.repeats
    rng = np.random.default_rng(0)
    raw = n / best(lambda: rng.random(n), reps)
    print(f"n = {n:,}; NumPy Generator.random: {raw / 1e6:8.1f} M uniforms/s (reference)")
    truths = rng.random(n) < 0.3
    codes = rng.integers(0, 10, n)
    rows = [
        ("ForcedResponse(0.25, 0.25), seeded", ForcedResponse(p_yes=0.25, p_no=0.25), truths, rng),
        ("Warner(0.7), seeded", Warner(p=0.7), truths, rng),
        ("ForcedResponse, SecureRandom", ForcedResponse(p_yes=0.25, p_no=0.25), truths, None),
        ("KaryRR(k=10, ln 3), seeded", KaryRR(k=10, epsilon=math.log(3)), codes, rng),
        (
            "Kuk(0.6, 0.2, draws=25), seeded",
            Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=25),
            truths.astype(np.uint8),
            rng,
        ),
    ]
    print(f"{'randomize':40s} {'M reports/s':>12s} {'x raw uniform':>14s}")
    reports = {}
    for name, design, t, source in rows:
        rate = n / best(lambda d=design, t=t, s=source: d.randomize(t, s), reps)
        reports[name] = design.randomize(t, source)
        print(f"{name:40s} {rate / 1e6:12.1f} {rate / raw:14.2f}")
    secure = n / best(lambda: SecureRandom().random(n), reps)
    print(f"{'SecureRandom.random (AES-CTR DRBG)':40s} {secure / 1e6:12.1f} {secure / raw:14.2f}")
    print(f"{'estimate (tally + moment estimator)':40s} {'M reports/s':>12s}")
    for name, design, _, _ in rows[:1] + rows[3:]:
        r = reports[name]
        rate = n / best(lambda d=design, r=r: estimate(d, r), reps)
        print(f"{name.split(',')[0]:40s} {rate / 1e6:12.1f}")


if __name__ == "__main__":
    main()

"""Throughput of randomize and estimate at n = 10^7, beside NumPy's raw uniform rate.

    python -m uv run python bench/throughput.py [--n 10000000] [--repeats 5] [--paths numba,numpy]

Prints reports per second (best of --repeats) and ratios against NumPy's
``Generator.random`` measured in the same run, then the inner loops on each path
(``numba``, the ``fast`` extra's compiled kernels, and ``numpy``, the core install's),
and the NumPy path's time over the compiled one's (issue 28: at most 3x).

Goals (issue 2): a binary design
randomizes at >= 1/3 of the raw uniform rate with the seeded generator; estimate (tally
+ moment estimator) handles >= 10^8 reports per second. Goal (issue 16): a binary design
randomizes with ``SecureRandom`` (the keystream respondents' reports come from) at
>= 0.5x the raw seeded uniform rate.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import time
from collections.abc import Callable

import numpy as np

from deniable import (
    ForcedResponse,
    KaryRR,
    Kuk,
    LocalHashing,
    SecureRandom,
    UnaryEncoding,
    Warner,
    estimate,
)
from deniable.estimation._unified import unified_share_interval
from deniable.mechanisms import Piecewise
from deniable.mechanisms._kernels import ENV, kernel_backend


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
    parser.add_argument("--paths", default="numba,numpy", help="kernel paths to compare")
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
    secure_bytes(n, reps)
    print(f"{'estimate (tally + moment estimator)':40s} {'M reports/s':>12s}")
    for name, design, _, _ in rows[:1] + rows[3:]:
        r = reports[name]
        rate = n / best(lambda d=design, r=r: estimate(d, r), reps)
        print(f"{name.split(',')[0]:40s} {rate / 1e6:12.1f}")
    compare_paths(n, reps, [p for p in args.paths.split(",") if p])


def openssl_aes_ctr() -> float | None:
    """``openssl speed -evp aes-256-ctr`` on 16 KiB blocks, bytes per second (None
    without the openssl command)."""
    try:
        run = subprocess.run(
            ["openssl", "speed", "-evp", "aes-256-ctr", "-bytes", "16384", "-seconds", "2"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    last = run.stdout.strip().splitlines()[-1].split()
    return float(last[-1].rstrip("k")) * 1000 if last and last[-1].endswith("k") else None


def secure_bytes(n: int, reps: int) -> None:
    """Issue 44: ``SecureRandom.bytes_view`` at >= 0.8x the byte rate of ``.random`` (8
    bytes a uniform), beside ``.bytes`` (a ``bytes`` copy, issue 65) and OpenSSL's own
    AES-256-CTR rate, in the same run."""
    source = SecureRandom()
    length = 8 * n
    as_uniforms = length / best(lambda: source.random(n), reps)
    as_view = length / best(lambda: source.bytes_view(length), reps)
    as_bytes = length / best(lambda: source.bytes(length), reps)
    cipher = openssl_aes_ctr()
    print(
        f"SecureRandom keystream, {length / 1e6:.0f} MB: .bytes_view {as_view / 1e9:.2f} GB/s, "
        f".bytes {as_bytes / 1e9:.2f} GB/s, .random {as_uniforms / 1e9:.2f} GB/s; ratio "
        f"{as_view / as_uniforms:.2f} (goal >= 0.8)"
        + (f"; openssl speed -evp aes-256-ctr {cipher / 1e9:.2f} GB/s" if cipher else "")
    )


def path_rows(n: int) -> list[tuple[str, int, Callable[[], object]]]:
    """(name, items per call, call) of the work whose inner loops have two paths."""
    rng = np.random.default_rng(1)
    m = max(n // 10, 1000)
    codes = rng.integers(0, 100, m)
    truths = rng.random(n) < 0.3
    oue, olh, pm = (
        UnaryEncoding(k=100, epsilon=1.0),
        LocalHashing(k=100, epsilon=1.0),
        Piecewise(1.0),
    )
    oue_reports, olh_reports = oue.randomize(codes, rng), olh.randomize(codes, rng)
    x = rng.uniform(-1, 1, n)
    fc_y, fc_n = np.array([300_000]), np.array([10**6])
    return [
        (
            "ForcedResponse randomize, seeded",
            n,
            lambda: ForcedResponse(p_yes=0.25, p_no=0.25).randomize(truths, rng),
        ),
        ("SecureRandom.random", n, lambda: SecureRandom().random(n)),
        ("Piecewise(eps 1) randomize, seeded", n, lambda: pm.randomize(x, rng)),
        ("OUE(k=100, eps 1) randomize, seeded", m, lambda: oue.randomize(codes, rng)),
        ("OUE(k=100) estimate", m, lambda: estimate(oue, oue_reports)),
        ("OLH(k=100, eps 1) randomize, seeded", m, lambda: olh.randomize(codes, rng)),
        ("OLH(k=100) estimate", m, lambda: estimate(olh, olh_reports)),
        (
            "Feldman-Cousins interval, n = 10^6",
            1,
            lambda: unified_share_interval(fc_y, fc_n, 0.25, 0.75, 0.95),
        ),
    ]


def compare_paths(n: int, reps: int, paths: list[str]) -> None:
    """Items per second of each row on each path, and the NumPy path's slowdown."""
    rates: dict[str, dict[str, float]] = {}
    for path in paths:
        os.environ[ENV] = path
        try:
            ran = kernel_backend()
        except ModuleNotFoundError as exc:
            print(f"path {path}: skipped ({exc})")
            continue
        for name, items, call in path_rows(n):
            call()  # compile (numba) or warm caches outside the clock
            rates.setdefault(name, {})[ran] = items / best(call, reps)
    os.environ.pop(ENV, None)
    ran_paths = [p for p in ("numba", "numpy") if any(p in r for r in rates.values())]
    head = "".join(f"{p + ' /s':>14s}" for p in ran_paths)
    print(f"\n{'inner loops, by path':40s}{head}{'numpy time x':>14s}")
    for name, by in rates.items():
        cells = "".join(f"{by[p]:14.3g}" for p in ran_paths)
        ratio = by["numba"] / by["numpy"] if {"numba", "numpy"} <= by.keys() else float("nan")
        print(f"{name:40s}{cells}{ratio:14.2f}")


if __name__ == "__main__":
    main()

"""Heavy hitters without a candidate list (PEM): accuracy and time at n = 10^6.

    python -m uv run python bench/heavy_hitters.py [--runs 10]

Zipf(1.0) over 10^5 distinct random 5-letter strings, n = 10^6 respondents, epsilon =
4, threshold 1% (the 8 values at or above it), miss rate 5%: per run, the values
missed and the false positives, the client time (secure randomness) and the analyst's
time to find the heavy hitters. Goals (issue 16): false negatives <= 5%, on average
<= 1 false positive, identification under 60 s.
"""

from __future__ import annotations

import argparse
import string
import time

import numpy as np

from deniable.estimation import find_heavy_hitters
from deniable.mechanisms import PrefixExtension


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(16)
    letters = np.array(list(string.ascii_lowercase))
    words: set[str] = set()
    while len(words) < 100_000:
        words.update("".join(row) for row in rng.choice(letters, (100_000, 5)).tolist())
    values = np.array(sorted(words)[:100_000])
    rng.shuffle(values)
    weights = 1.0 / np.arange(1, values.size + 1)
    weights /= weights.sum()
    heavy = set(values[weights >= 0.01].tolist())
    pem = PrefixExtension(4.0, max_length=5, alphabet=string.ascii_lowercase)
    print(f"{pem!r}: {len(heavy)} values >= 1%; epsilon {pem.epsilon:.4f}")
    print(f"{'run':>3s} {'missed':>6s} {'false +':>7s} {'client s':>8s} {'find s':>7s} candidates")
    totals = np.zeros(4)
    for run in range(args.runs):
        sample = values[rng.choice(values.size, size=1_000_000, p=weights)]
        t0 = time.perf_counter()
        reports = pem.randomize(sample)  # the secure source, as on devices
        client = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = find_heavy_hitters(pem, reports, threshold=0.01, miss_rate=0.05)
        find = time.perf_counter() - t0
        missed, false = len(heavy - set(result.values)), len(set(result.values) - heavy)
        totals += (missed, false, client, find)
        print(
            f"{run:3d} {missed:6d} {false:7d} {client:8.2f} {find:7.2f} "
            f"{result.candidates_per_level.tolist()}"
        )
    runs = args.runs
    missed, false, client, find = totals / runs
    print(
        f"false-negative rate {missed / len(heavy):.3f}; false positives per run {false:.2f}; "
        f"mean client {client:.2f} s, find {find:.2f} s"
    )


if __name__ == "__main__":
    main()

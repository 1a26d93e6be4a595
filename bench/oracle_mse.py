"""MSE / exact variance of an oracle's unbiased estimator over many independent surveys.

Usage::

    python -m uv run python bench/oracle_mse.py oue:10:4:1000000 [olh:10:0.5:1000000 ...]
        [--surveys 1000] [--seed 7]

Each setting is ``ORACLE:K:EPSILON:N`` (ORACLE: oue | olh | hadamard). The population
is the one ``bench/oracles.py`` uses (Zipf(1.1), fixed), each survey randomizes it
afresh with a seeded generator (independent surveys, unlike the main benchmark's rows,
whose seeded surveys repeat across epsilon), and the ratio is the mean over values and
surveys of the squared error divided by the mean exact variance, ± its standard error
over the surveys. A setting the main benchmark measures on few surveys (n = 10^6) can
be checked here on many.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from deniable import estimate
from oracles import ORACLES, population


def mse_ratio(
    name: str, k: int, eps: float, n: int, surveys: int, seed: int
) -> tuple[float, float]:
    oracle = ORACLES[name](k, eps)
    values = population(k, n)
    truth = np.bincount(values, minlength=k) / n
    var = oracle.variance(truth, n).mean()
    rng = np.random.default_rng(seed)
    ratios = np.array(
        [
            np.mean((estimate(oracle, oracle.randomize(values, rng)).estimate - truth) ** 2) / var
            for _ in range(surveys)
        ]
    )
    return float(ratios.mean()), float(ratios.std(ddof=1) / math.sqrt(surveys))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("settings", nargs="+", help="ORACLE:K:EPSILON:N")
    ap.add_argument("--surveys", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    for setting in args.settings:
        try:
            name, k, eps, n = setting.split(":")
            if name not in ORACLES:
                raise ValueError
        except ValueError:
            ap.error(f"setting {setting!r}: expected ORACLE:K:EPSILON:N, ORACLE in {list(ORACLES)}")
        start = time.perf_counter()
        ratio, se = mse_ratio(name, int(k), float(eps), int(n), args.surveys, args.seed)
        print(
            f"{name} k={k} eps={eps} n={n}: MSE / variance {ratio:.3f} ± {se:.3f} "
            f"({args.surveys} surveys, {time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()

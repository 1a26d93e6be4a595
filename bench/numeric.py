"""Numeric means under local DP: accuracy, interval coverage and client speed.

    python -m uv run python bench/numeric.py [--surveys 20000] [--n 500]

For each mean mechanism (Duchi et al. 2018; piecewise and hybrid, Wang et al. 2019;
1BitMean, Ding et al. 2017) at epsilon in {0.5, 1, 2, 4}: MSE of the unbiased mean over
simulated surveys divided by its exact variance (goal: within 5% of 1), and the coverage
of the 95% normal interval (goal: 95% +- 1%); values drawn afresh for each survey from
Beta(2, 5) on [10, 50]. Then client speed: seeded reports per second at n = 10^7 (goal:
>= 10^7 per second), and with the secure source.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from deniable.mechanisms import DBitFlip, DuchiMean, HybridMean, OneBitMean, Piecewise

LOW, HIGH = 10.0, 50.0
POPULATION = stats.beta(2, 5, loc=LOW, scale=HIGH - LOW)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--surveys", type=int, default=20_000)
    parser.add_argument("--n", type=int, default=500)
    args = parser.parse_args()
    n, surveys = args.n, args.surveys
    chunk = min(surveys, 5000)
    print(f"{surveys:,} surveys of n = {n} per cell; MSE ratio = MSE / exact variance")
    print(f"{'mechanism':12s} {'epsilon':>7s} {'MSE ratio':>10s} {'coverage':>9s}")
    truth = POPULATION.mean()
    for eps in (0.5, 1.0, 2.0, 4.0):
        rng = np.random.default_rng(int(eps * 1000))
        for mech in (
            DuchiMean(eps, LOW, HIGH),
            Piecewise(eps, LOW, HIGH),
            HybridMean(eps, LOW, HIGH),
            OneBitMean(eps, LOW, HIGH),
        ):
            within = POPULATION.expect(lambda v, m=mech: float(m.report_variance(np.array([v]))[0]))
            exact = (within + POPULATION.var()) / n
            errors, covered = [], 0
            for _ in range(surveys // chunk):
                values = POPULATION.rvs(size=(chunk, n), random_state=rng)
                y = mech.debias(mech.randomize(values.ravel(), rng)).reshape(chunk, n)
                est, se = y.mean(axis=1), y.std(axis=1, ddof=1) / math.sqrt(n)
                covered += int(np.count_nonzero(np.abs(est - truth) <= 1.959963984540054 * se))
                errors.append(est - truth)
            err = np.concatenate(errors)
            print(
                f"{type(mech).__name__:12s} {eps:7.1f} {np.mean(err**2) / exact:10.3f} "
                f"{covered / err.size:9.4f}"
            )
    size = 10_000_000
    rng = np.random.default_rng(0)
    values = LOW + (HIGH - LOW) * rng.random(size)
    print(f"\nclient speed at n = {size:,} (best of 3), M reports/s")
    print(f"{'mechanism':12s} {'seeded':>8s} {'secure':>8s}")
    codes = rng.integers(0, 32, size)
    for mech, data in (
        (DuchiMean(1.0, LOW, HIGH), values),
        (Piecewise(1.0, LOW, HIGH), values),
        (HybridMean(1.0, LOW, HIGH), values),
        (OneBitMean(1.0, LOW, HIGH), values),
        (DBitFlip(32, 1.0, d=4), codes),
    ):
        rates = []
        for source in (rng, None):
            mech.randomize(data[:100], source)
            best = math.inf
            for _ in range(3):
                t0 = time.perf_counter()
                mech.randomize(data, source)
                best = min(best, time.perf_counter() - t0)
            rates.append(size / best / 1e6)
        print(f"{type(mech).__name__:12s} {rates[0]:8.1f} {rates[1]:8.1f}")


if __name__ == "__main__":
    main()

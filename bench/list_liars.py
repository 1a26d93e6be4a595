"""The list experiment's ceiling and floor liars (Blair & Imai 2012) over many surveys:
bias, interval coverage and the boundary of a liars' share (issue 65).

Each survey: n respondents, J control items each held with probability 0.5, a sensitive
trait of prevalence 0.3, half treated; of the treated carriers whose truthful count
would be J + 1 a share ``ceiling`` answers J, of those whose count would be 1 a share
``floor`` answers 0. The model ``list_regression("y ~ 1", ..., ceiling=True,
floor=True)`` (maximum likelihood) estimates the prevalence; its 95% Wald interval
should cover 0.3 in 95% of surveys, and a share whose maximum is at 0 is held there
(NaN standard error and a warning) instead of reporting a standard error of 10^5 with
``converged=True``.

    python -m uv run python bench/list_liars.py [--surveys 1000] [--n 2000]

Prints, per setting: the mean estimate, the standard deviation over surveys against the
median standard error, the coverage with its binomial standard error, the surveys with
a share held at the boundary, and the largest finite standard error of any coefficient.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import pandas as pd

from deniable.list_experiment import list_regression

PREVALENCE = 0.3
J = 3


def survey(rng: np.random.Generator, n: int, ceiling: float, floor: float) -> pd.DataFrame:
    """One simulated survey's counts and arms (simulation only: seeded)."""
    treated = rng.random(n) < 0.5
    carrier = rng.random(n) < PREVALENCE
    control = rng.binomial(J, 0.5, n)
    to_ceiling = treated & carrier & (control == J) & (rng.random(n) < ceiling)
    to_floor = treated & carrier & (control == 0) & (rng.random(n) < floor)
    y = control + (treated & carrier) - to_ceiling - to_floor
    return pd.DataFrame({"y": y, "treat": treated.astype(int)})


def run(surveys: int, n: int, ceiling: float, floor: float, seed: int) -> dict[str, float]:
    """The summary of ``surveys`` fits at one setting."""
    rng = np.random.default_rng(seed)
    estimates, errors, held, largest = [], [], 0, 0.0
    for _ in range(surveys):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            fit = list_regression("y ~ 1", survey(rng, n, ceiling, floor), treat="treat",
                                  items=J, ceiling=True, floor=True)  # fmt: skip
        estimates.append(fit.prevalence)
        errors.append(fit.prevalence_se)
        held += any("boundary" in str(w.message) for w in said)
        finite = fit.bse[np.isfinite(fit.bse)]
        largest = max(largest, float(finite.max()) if fit.converged else 0.0)
    est, se = np.array(estimates), np.array(errors)
    covered = float(np.mean(np.abs(est - PREVALENCE) <= 1.959963984540054 * se))
    return {
        "mean": float(est.mean()),
        "sd": float(est.std(ddof=1)),
        "median_se": float(np.median(se)),
        "coverage": covered,
        "coverage_se": math.sqrt(0.95 * 0.05 / surveys),
        "held": held,
        "largest_finite_se": largest,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surveys", type=int, default=1_000)
    parser.add_argument("--n", type=int, default=2_000)
    args = parser.parse_args(argv)
    print(f"{args.surveys} surveys of {args.n}, J = {J}, prevalence {PREVALENCE}")
    for seed, (ceiling, floor) in enumerate([(0.3, 0.3), (0.3, 0.0), (0.0, 0.0)]):
        start = time.perf_counter()
        r = run(args.surveys, args.n, ceiling, floor, seed)
        print(
            f"ceiling {ceiling:.1f}, floor {floor:.1f}: mean {r['mean']:.4f}, sd {r['sd']:.4f}"
            f" vs median se {r['median_se']:.4f}; coverage {r['coverage']:.3f} (se "
            f"{r['coverage_se']:.3f}); held at a boundary in {r['held']}; largest finite se "
            f"{r['largest_finite_se']:.3g}; {time.perf_counter() - start:.0f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

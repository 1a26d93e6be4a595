"""The suite's largest grids, run in full (the suite keeps a small version of each).

Usage::

    python -m uv run python bench/simulation_grids.py [--only shuffle|ecwm]

* ``shuffle``: issue 43's one-release bound of binary randomized response on the grid
  of epsilon_0 in {0.5, 1, 2, 4} and delta in {1e-6, 1e-9} at n = 100,000 (the suite
  runs n = 1,000 and 10,000): the bound is never below the exact curve of the dataset
  where every other person answers 0 and within 5% of it
  (``tests/test_shuffle.py::test_the_one_release_bound_on_the_grid``).
* ``ecwm``: the extended crosswise model's bias, coverage and fit test over 2,000
  simulated surveys per cell at n in {1,000, 5,000} and pi in {0.05, 0.2, 0.5} (the
  suite runs n = 1,000; ``tests/test_ecwm_simulation.py``).
* ``list_bayes``: the Bayesian list regression's posterior means against importance
  sampling with 20,000 chain draws (50,000 for ``control="none"``) and 40,000
  importance draws (the suite: 10,000 or 40,000, and 16,000;
  ``tests/test_list_bayes.py``, ``tests/test_list_bayes_predict.py``).
* ``zipf``: prefix-extension heavy hitters on a Zipf population of 10^5 strings, 10
  runs of n = 10^6 (the suite runs 4; ``tests/test_prefix.py``).
* ``sbc``: simulation-based calibration of ``rr_logit_bayes`` over 800 replicates (the
  suite runs 100; ``tests/test_analysis_bayes_logit.py``).

Each check raises on failure, as the test does; each cell prints its time and, for the
extended crosswise model, its figures.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[1] / "tests"


def _load(name: str) -> ModuleType:
    """A test module, imported as part of the ``tests`` namespace package (the checks
    live beside the suite's, and import its helpers relatively)."""
    root = str(TESTS.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(f"tests.{name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["shuffle", "ecwm", "list_bayes", "sbc", "zipf"])
    args = parser.parse_args()
    if args.only in (None, "shuffle"):
        shuffle = _load("test_shuffle")
        start = time.perf_counter()
        shuffle.test_the_one_release_bound_on_the_grid(10**5)
        print(f"shuffle grid at n = 100,000: holds ({time.perf_counter() - start:.0f} s)")
    if args.only in (None, "ecwm"):
        ecwm = _load("test_ecwm_simulation")
        for n in (1_000, 5_000):
            for pi in (0.05, 0.2, 0.5):
                start = time.perf_counter()
                ecwm.test_ecwm_bias_coverage_and_fit_test(n, pi)
                print(f"  ({time.perf_counter() - start:.0f} s)")
    if args.only in (None, "list_bayes"):
        _list_bayes()
    if args.only in (None, "zipf"):
        start = time.perf_counter()
        _load("test_prefix").test_zipf_heavy_hitters_are_found_with_few_misses_and_false_positives(
            10
        )
        print(f"Zipf heavy hitters, 10 runs of 10^6: goals met ({_since(start)})")
    if args.only in (None, "sbc"):
        start = time.perf_counter()
        _load("test_analysis_bayes_logit").test_simulation_based_calibration(800)
        print(f"simulation-based calibration, 800 replicates: uniform ranks ({_since(start)})")


def _since(start: float) -> str:
    return f"{time.perf_counter() - start:.0f} s"


def _list_bayes() -> None:
    """The list posteriors' checks against importance sampling, with more draws."""
    import pandas as pd

    lb = _load("test_list_bayes")
    start = time.perf_counter()
    lb.test_the_posterior_means_equal_importance_sampling_on_the_race_data(20_000, 40_000)
    print(f"list_bayes, race data: holds ({_since(start)})")
    for case in (("list_race.csv", "intercept", None), ("list_multi.csv", "full", "level")):
        start = time.perf_counter()
        lb.test_the_other_designs_posterior_means_equal_importance_sampling(*case, 20_000, 40_000)
        print(f"list_bayes, {case[0]} {case[1]}: holds ({_since(start)})")
    start = time.perf_counter()
    lb.test_the_unconstrained_posterior_equals_importance_sampling(50_000, 20_000, 40_000)
    print(f"list_bayes, control='none': holds ({_since(start)})")
    predict = _load("test_list_bayes_predict")
    start = time.perf_counter()
    race = pd.read_csv(TESTS / "data" / "list_race.csv")
    predict.test_the_south_gap_equals_importance_sampling(race, 20_000, 40_000)
    print(f"list_bayes, the South's gap: holds ({_since(start)})")


if __name__ == "__main__":
    main()

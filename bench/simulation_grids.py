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

Each check raises on failure, as the test does; each cell prints its time and, for the
extended crosswise model, its figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[1] / "tests"


def _load(name: str) -> ModuleType:
    """A test module, loaded from its file (the checks live beside the suite's)."""
    spec = importlib.util.spec_from_file_location(name, TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["shuffle", "ecwm"])
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


if __name__ == "__main__":
    main()

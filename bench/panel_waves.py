"""Coverage and width of the change-between-waves interval (issue 40's simulation).

300 panels of 1,000 per cell (seed 1, as tests/test_panel.py): Warner, forced response,
unrelated question, crosswise and k-ary RR, each under a permanent layer, and a direct
arm; the population's share rises by 0, 0.05 or 0.2 between the waves; 50% or 100% of
the first wave's people answer the second. Prints the markdown table of
docs/collection.md ("Running a panel"): coverage of the population change, median
width, and the median width and coverage of the interval an analyst who could link each
person's two reports (who knew the overlap) would use.

Run: python bench/panel_waves.py
"""

from __future__ import annotations

import time

from deniable.analysis._waves import coverage_grid


def main() -> None:
    start = time.perf_counter()
    print(
        "| design (instantaneous) | change | re-answering | coverage | median width "
        "| linked: width | linked: coverage |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    worst = 1.0
    for r in coverage_grid():
        worst = min(worst, r["coverage"])
        print(
            f"| {r['design']} | {r['change']:g} | {r['share_again']:.0%} | "
            f"{r['coverage']:.3f} | {r['median_width']:.3f} | {r['oracle_width']:.3f} | "
            f"{r['oracle_coverage']:.3f} |"
        )
    print(f"\nlowest coverage {worst:.3f}; {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

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

from deniable.analysis.waves import simulate_wave_change
from deniable.mechanisms import (
    Crosswise,
    Direct,
    ForcedResponse,
    KaryRR,
    TwoLayerDesign,
    UnrelatedQuestion,
    Warner,
)

PERMANENT = Warner(p=0.85)
DESIGNS = {
    "Warner p=0.85": TwoLayerDesign(PERMANENT, Warner(p=0.85)),
    "forced response 1/6, 1/6": TwoLayerDesign(PERMANENT, ForcedResponse(p_yes=1 / 6, p_no=1 / 6)),
    "unrelated question p=0.7, 0.3": TwoLayerDesign(
        PERMANENT, UnrelatedQuestion(p=0.7, innocuous_prevalence=0.3)
    ),
    "crosswise p=0.25": TwoLayerDesign(PERMANENT, Crosswise(p=0.25)),
    "k-ary RR k=4, eps 2": TwoLayerDesign(KaryRR(k=4, epsilon=2.0), KaryRR(k=4, epsilon=2.0)),
    "direct (one layer)": Direct(k=2),
}


def main() -> None:
    start = time.perf_counter()
    print(
        "| design (instantaneous) | change | re-answering | coverage | median width "
        "| linked: width | linked: coverage |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    worst = 1.0
    for name, design in DESIGNS.items():
        base = [0.4, 0.3, 0.2, 0.1] if design.n_truths == 4 else [0.7, 0.3]
        for change in (0.0, 0.05, 0.2):
            for again in (0.5, 1.0):
                r = simulate_wave_change(design, base, change, again, rng=1)
                worst = min(worst, r["coverage"])
                print(
                    f"| {name} | {change:g} | {again:.0%} | {r['coverage']:.3f} | "
                    f"{r['median_width']:.3f} | {r['oracle_width']:.3f} | "
                    f"{r['oracle_coverage']:.3f} |"
                )
    print(f"\nlowest coverage {worst:.3f}; {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

"""Coverage of the 95% intervals, measured by simulation.

For each design, prevalence in {0.02, 0.3, 0.5} and n in {100, 1000, 10000}, draw
``--surveys`` simulated surveys (seeded), compute every interval method and count how
often the interval contains the true prevalence of "yes". Prints a Markdown table
(and writes it with --output). The Monte-Carlo standard error of each coverage is
``sqrt(0.95 * 0.05 / surveys)`` (0.0015 at 20,000 surveys).

    python -m uv run python bench/interval_coverage.py --output docs/coverage.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from deniable import ForcedResponse, Warner
from deniable.estimation.bayes import DEFAULT_BURN_IN, posterior_draws
from deniable.estimation.common import moment_batch
from deniable.estimation.intervals import INTERVAL_METHODS, prevalence_intervals
from deniable.planning.simulation import simulate_tallies

PREVALENCES = (0.02, 0.3, 0.5)
SIZES = (100, 1_000, 10_000)
LEVEL = 0.95


def coverage_table(design, surveys: int, bayes_surveys: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for pi in PREVALENCES:
        for n in SIZES:
            counts = simulate_tallies(design, pi, n, surveys, rng)
            est, var = moment_batch(design, counts)
            for method in INTERVAL_METHODS:
                if method == "bayes":
                    sub = counts[:bayes_surveys]
                    post = posterior_draws(
                        design, sub, np.ones(2), draws=2000, burn_in=DEFAULT_BURN_IN, rng=rng
                    )
                    low, high = prevalence_intervals(design, sub, method, LEVEL, posterior=post)
                else:
                    low, high = prevalence_intervals(
                        design, counts, method, LEVEL, estimate=est, variance=var
                    )
                hit = (low[:, 1] <= pi) & (pi <= high[:, 1])
                out[(pi, n, method)] = (float(hit.mean()), len(hit))
    return out


def markdown(design, table: dict) -> str:
    lines = [f"### {design!r} (epsilon = {design.epsilon:.4g} nats)", ""]
    header = (
        "| method | " + " | ".join(f"pi={pi}, n={n:,}" for pi in PREVALENCES for n in SIZES) + " |"
    )
    lines += [header, "|---" * (1 + len(PREVALENCES) * len(SIZES)) + "|"]
    for method in INTERVAL_METHODS:
        cells = []
        for pi in PREVALENCES:
            for n in SIZES:
                cov, _ = table[(pi, n, method)]
                flag = (
                    ""
                    if abs(cov - LEVEL) <= 0.01
                    else (" **low**" if cov < LEVEL - 0.01 else " high")
                )
                cells.append(f"{cov:.3f}{flag}")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--surveys", type=int, default=20_000)
    parser.add_argument("--bayes-surveys", type=int, default=4_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    parts = []
    for design in (ForcedResponse(p_yes=0.25, p_no=0.25), Warner(p=0.7)):
        table = coverage_table(design, args.surveys, args.bayes_surveys, args.seed)
        parts.append(markdown(design, table))
    text = "\n".join(parts)
    print(text)
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()

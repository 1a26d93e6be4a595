"""Coverage and width of every interval method over a grid that includes the boundary.

For forced response (two), Warner, crosswise and k-ary RR, prevalences
pi in {0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.3, 0.5, 0.95, 0.99, 1} and n in {100,
300, 1,000, 3,000, 10,000}, every method (``bayes`` included: its interval of a category
is that of the exact one-dimensional posterior given the category's report count), all
**exact** by enumerating the counts of the report share the category's interval depends
on, with no simulation error: coverage among all surveys, coverage among those the
warning leaves unwarned and the share warned
(:func:`deniable.estimation._coverage_warning.warned_coverage`), and the expected width
(:func:`~deniable.estimation._coverage_warning.interval_coverage`).

Writes docs/coverage.md (with ``--output``) and prints it.

    python -m uv run python bench/interval_coverage.py --output docs/coverage.md
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from deniable import Crosswise, ForcedResponse, KaryRR, Warner
from deniable.estimation._coverage_warning import (
    goal_attainable,
    interval_coverage,
    warned_coverage,
)
from deniable.estimation._intervals import INTERVAL_METHODS

PREVALENCES = (0.0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.3, 0.5, 0.95, 0.99, 1.0)
SIZES = (100, 300, 1_000, 3_000, 10_000)
LEVEL = 0.95
#: Coverage every offered method is held to (issue 17), and the default's promise.
FLOOR = 0.94
DESIGNS = (
    ForcedResponse(p_yes=0.25, p_no=0.25),
    ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
    ForcedResponse(p_yes=0.1, p_no=0.2),
    Warner(p=0.7),
    Warner(p=0.8),
    Crosswise(p=0.25),
    KaryRR(k=4, epsilon=1.5),
    KaryRR(k=7, epsilon=2.0),
)
#: The grid every stated minimum is taken over (issue 65): 0, 0.001, ..., 1.
FINE = tuple(round(i / 1000, 3) for i in range(1001))
#: The sizes of the minimum tables.
MINIMUM_SIZES = (100, 300, 1_000, 3_000)


def category(design) -> int:
    """The category whose prevalence is varied: "yes", or the first of k-ary RR."""
    return 0 if isinstance(design, KaryRR) else design.n_truths - 1


def grid(design) -> dict:
    """``(method, n, pi) -> (coverage, unwarned coverage, share warned, width)``."""
    out = {}
    j = category(design)
    for method in INTERVAL_METHODS:
        for n in SIZES:
            every, unwarned, warned = warned_coverage(design, n, method, LEVEL, j, PREVALENCES)
            _, width = interval_coverage(design, n, method, LEVEL, j, PREVALENCES)
            for i, pi in enumerate(PREVALENCES):
                out[method, n, pi] = (
                    float(every[i]),
                    float(unwarned[i]),
                    float(warned[i]),
                    float(width[i]),
                )
    return out


def fine_minimums(design, sizes=MINIMUM_SIZES, methods=INTERVAL_METHODS) -> dict:
    """``(method, n) -> (lowest coverage, its pi, lowest among the unwarned (NaN where
    none is), its pi, largest share warned where the method covers >= 0.95)`` over
    :data:`FINE`, exactly (:func:`warned_coverage`)."""
    out = {}
    j = category(design)
    for method in methods:
        for n in sizes:
            every, unwarned, warned = warned_coverage(design, n, method, LEVEL, j, FINE)
            i = int(np.argmin(every))
            kept = np.where(warned < 0.999, unwarned, np.nan)  # judged where 0.1% go unwarned
            u = int(np.nanargmin(kept)) if np.isfinite(kept).any() else -1
            covering = every >= 0.95
            out[method, n] = (
                float(every[i]),
                FINE[i],
                float(kept[u]) if u >= 0 else math.nan,
                FINE[u] if u >= 0 else math.nan,
                float(warned[covering].max()) if covering.any() else 0.0,
            )
    return out


def minimum_table(minimums: dict, sizes=MINIMUM_SIZES) -> list[str]:
    """Per method and n: the lowest coverage over :data:`FINE` (and where), the lowest
    among the unwarned, and the largest share warned where the method covers >= 0.95;
    in bold where issue 43's goal is missed."""
    lines = ["| method | " + " | ".join(f"n = {n:,}" for n in sizes) + " |",
             "|---" * (1 + len(sizes)) + "|"]  # fmt: skip
    for method in INTERVAL_METHODS:
        cells = []
        for n in sizes:
            low, at, unwarned, _, warned = minimums[method, n]
            text = f"{low:.4f} at {at:g}; unwarned {unwarned:.4f}; warned {warned:.0%}"
            bad = (not math.isnan(unwarned) and unwarned < FLOOR) or warned > 0.10
            cells.append(f"**{text}**" if bad else text)
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def _short(cell: tuple[float, float, float, float]) -> bool:
    """Issue 43's goal missed: the unwarned covered below 0.94 (where at least 0.1% go
    unwarned), or more than 10% warned where the method covers at least 0.95."""
    every, unwarned, warned, _ = cell
    return (warned < 0.999 and unwarned < FLOOR) or (every >= 0.95 and warned > 0.10)


def cells_table(table: dict) -> list[str]:
    """Every method at every cell: coverage among all / among the unwarned / share
    warned (a dash where at least 99.9% are warned); in bold where issue 43's goal is
    missed."""
    lines = [
        "| method | n | " + " | ".join(f"{pi:g}" for pi in PREVALENCES) + " |",
        "|---" * (2 + len(PREVALENCES)) + "|",
    ]
    for method in INTERVAL_METHODS:
        for n in SIZES:
            shown = []
            for pi in PREVALENCES:
                cell = table[method, n, pi]
                every, unwarned, warned, _ = cell
                hidden = math.isnan(unwarned) or warned >= 0.999
                text = f"{every:.3f} / " + ("-" if hidden else f"{unwarned:.3f}")
                text += f" / {warned:.0%}"
                shown.append(f"**{text}**" if _short(cell) else text)
            lines.append(f"| {method} | {n:,} | " + " | ".join(shown) + " |")
    return lines


def method_summary(table: dict, minimums: dict) -> list[str]:
    """Per method: the lowest coverage over :data:`FINE` at n up to 3,000, the cells of
    the coarse grid below 0.94 and short of the goal, and two widths."""
    lines = [
        "| method | lowest coverage on the 0.001 grid, n 100-3,000 | where (n, pi) | "
        "cells below 0.94 | cells short of the goal | width at pi = 0, n = 1,000 | "
        "width at pi = 0.5, n = 1,000 |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in INTERVAL_METHODS:
        cells = {key[1:]: value for key, value in table.items() if key[0] == method}
        n, (low, pi, *_) = min(
            ((n, v) for (m, n), v in minimums.items() if m == method), key=lambda t: t[1][0]
        )
        below = sum(c[0] < FLOOR for c in cells.values())
        short = sum(_short(c) for c in cells.values())
        lines.append(
            f"| {method} | {low:.4f} | {n:,}, {pi:g} | {below} of {len(cells)} | {short} | "
            f"{cells[1000, 0.0][3]:.4f} | {cells[1000, 0.5][3]:.4f} |"
        )
    return lines


def default_table(table: dict) -> list[str]:
    lines = [
        "| n | " + " | ".join(f"pi = {pi:g}" for pi in PREVALENCES) + " |",
        "|---" * (1 + len(PREVALENCES)) + "|",
    ]
    for n in SIZES:
        cells = [table["feldman_cousins", n, pi] for pi in PREVALENCES]
        lines.append(f"| {n:,} | " + " | ".join(f"{c[0]:.4f} ({c[3]:.3f})" for c in cells) + " |")
    return lines


HEAD = """# Coverage of the 95% intervals, at and near the boundary

Printed by `python -m uv run python bench/interval_coverage.py --output docs/coverage.md`
({seconds:.0f} s on 2 cores). Grid: prevalence pi in {{{pis}}} and n in {{{ns}}}, for
each design below. Every method is evaluated **exactly**: the interval of a category
depends only on the count of one report, which is binomial, so coverage is a finite sum
over the counts (`deniable.estimation._coverage_warning.warned_coverage`; no simulation
error). `bayes` is the highest-density set of the exact one-dimensional posterior of the
category given its report's count, under the prior's Beta marginal, so it is enumerated
too (on k-ary RR it used to come from posterior draws of the whole vector, and covered
0.68-0.83 at prevalence 0: the shortest window of draws missed 0 by a draw's width).
Width is the expected `high - low`.

The default for binary designs and k-ary RR is `feldman_cousins`: the unified interval
of Feldman & Cousins (1998) for the report share, whose range is the image of
prevalences in [0, 1], with the power constraint of Cowan, Cranmer, Gross & Vitells
(2011). It is a Neyman construction, so its coverage is at least 95% for every
prevalence and n; the tables confirm it.

**Every interval is power-constrained.** `normal`, `wilson`, `agresti_coull`, `beta`,
`jeffreys` and `bayes` are never narrower than the interval of the count a boundary
predicts: where the data fall below what prevalence 0 would give, their interval is the
one at that count, `[0, u]` with `u` about two standard errors, instead of collapsing
onto 0. `chebyshev` never collapses either: an estimate beyond a boundary gets the
interval of an estimate at it.

**Where a method falls short, it warns, on the survey in hand.** `confidence_interval`
averages the exact coverage of the asked method for the estimate's design and n over
the prevalences within one of the largest standard errors (`|slope| / (2 sqrt(n))`) of
the estimate (on a grid of a quarter of a count's step, so the saw-tooth of a discrete
count's coverage is averaged, not taken at its lowest tooth); below 0.94,
`IntervalCoverageWarning` gives that mean and the neighbourhood and recommends
`feldman_cousins` (`deniable.estimation._coverage_warning.coverage_warning`). `bayes`
also warns when its interval leaves out a boundary that `feldman_cousins` keeps; both
warnings are counted in every table below.

**`bayes`** is the union of the highest-density set and the equal-tailed interval of
the exact one-dimensional posterior of the category given its report's count (the
highest-density set alone holds a boundary by pulling its other end in to the one-sided
point, and covered 0.93 over stretches 2-4 standard errors from the boundary), taken at
the count a quarter below and a quarter above the count observed: at the count alone its
lowest coverage on the 0.001 grid was 0.939 (KaryRR(4, 1.5), n = 100), at the teeth of a
discrete count's coverage, for intervals 1-3% narrower. Without a prior given it puts a
uniform prior on each category, and the `bayes` *estimator* (`estimate(...,
method="bayes")`) does the same on k-ary RR: each category's posterior mean and interval
come from its own report's count under Beta(1, 1). The uniform Dirichlet over 7
categories gives a category a Beta(1, 6) marginal, which pulled a prevalence of 0.88 to
0.65 at n = 100, and its interval missed in 75% of surveys. A prior given keeps its
Dirichlet marginal, and warns where that under-covers.

`normal` is the Wald interval with a continuity correction (Newcombe 1998, method 2):
`pi_hat +/- (z SE + |slope| / (2 n))`, half a report's step wider on each side than
the plain Wald interval of R's `rr` and `RRreg` (0.0105 at n = 100 on KaryRR(7, 2),
0.0010 at n = 1,000; to get theirs, take `estimate +/- z std_error`). Within a count's
step the coverage of a discrete count's interval alternates (Brown, Cai & DasGupta
2001). Whatever a warning is decided on (the estimate, the interval, anything computed
from the data), it is a function of the category's report count, so a rule is a set of
counts to warn. Whether any set meets the goal at every prevalence of a grid is an
integer program, linear in the set's indicators
(`deniable.estimation._coverage_warning.goal_attainable`; HiGHS through
`scipy.optimize.milp`); "no" is a proof. We do not ship a randomized rule where one
exists: a warning that depends on a coin flip, or on counts that say nothing about the
prevalence asked, would tell the analyst nothing. The warning stays the mean over the
neighbourhood, which warns where a method falls short over a standard error rather than
at one tooth.

**Every stated minimum is exact over the grid 0, 0.001, ..., 1.** Where a method other
than the default falls below 0.94 there, unwarned, at n from 100 to 3,000: {short}.
The remedy is another method: `feldman_cousins` (the default) covers at least 0.95 at
every prevalence and n, by construction; `beta` (Clopper-Pearson on the report share)
at least {beta_min} and `bayes` at least {bayes_min} at every point of the grid, on every
design and n of these tables.

{attainable}
"""


#: The grid on which the attainability of the goal is asked (an integer program a cell).
COARSE = tuple(round(i / 100, 2) for i in range(101))
ATTAINABLE_SIZES = (100, 300, 1_000)


def attainable_table() -> list[str]:
    """Per design and method (but the two guaranteed), whether any warning rule meets
    the goal at every prevalence of :data:`COARSE`, with the lowest coverage on
    :data:`FINE`."""
    methods = [m for m in INTERVAL_METHODS if m not in ("feldman_cousins", "chebyshev")]
    lines = [
        "Is the goal attainable by any warning rule on the grid 0, 0.01, ..., 1 (lowest "
        "coverage on the grid 0, 0.001, ..., 1)?",
        "",
        "| design | method | " + " | ".join(f"n = {n:,}" for n in ATTAINABLE_SIZES) + " |",
        "|---" * (2 + len(ATTAINABLE_SIZES)) + "|",
    ]
    for design in DESIGNS:
        j = category(design)
        for method in methods:
            cells = []
            for n in ATTAINABLE_SIZES:
                low = float(interval_coverage(design, n, method, LEVEL, j, FINE)[0].min())
                ok = goal_attainable(design, n, method, LEVEL, j, np.array(COARSE))
                cells.append(f"{'yes' if ok else '**no**'} ({low:.3f})")
            lines.append(f"| {design!r} | {method} | " + " | ".join(cells) + " |")
    return lines


def lowest(found: dict, method: str) -> float:
    """The lowest coverage of ``method`` over every design, n and point of :data:`FINE`."""
    return min(v[0] for m in found.values() for (name, _), v in m.items() if name == method)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    parts = []
    found = {}
    for design in DESIGNS:
        table = grid(design)
        minimums = fine_minimums(design)
        found[design] = minimums
        name = f"{design!r} (epsilon = {design.epsilon:.4g} nats"
        name += ", category 0)" if isinstance(design, KaryRR) else ", prevalence of yes)"
        block = [f"## {name}", "", "Every method:", "", *method_summary(table, minimums)]
        block += ["", "Exact minimum over the 0.001 grid, per n (coverage among all, "
                  "where; among the unwarned; the largest share warned where the method "
                  "covers at least 0.95):", "", *minimum_table(minimums)]  # fmt: skip
        block += ["", "The default (`feldman_cousins`), coverage (width):", ""]
        block += [*default_table(table), ""]
        block += [
            "Every cell (coverage among all / among the unwarned / share warned):",
            "",
            *cells_table(table),
            "",
        ]
        parts += block
        print("\n".join(block), flush=True)
    attainable = attainable_table()
    print("\n".join(attainable), flush=True)
    short = [
        f"{method} on {design!r} at n = {n:,}, {low:.4f} at {at:g}"
        for design, minimums in found.items()
        for (method, n), (low, at, unwarned, _, _) in minimums.items()
        if not math.isnan(unwarned) and unwarned < FLOOR
    ]
    head = HEAD.format(
        short="; ".join(short) or "none",
        beta_min=f"{lowest(found, 'beta'):.4f}",
        bayes_min=f"{lowest(found, 'bayes'):.4f}",
        attainable="\n".join(attainable),
        seconds=time.perf_counter() - start,
        pis=", ".join(f"{pi:g}" for pi in PREVALENCES),
        ns=", ".join(f"{n:,}" for n in SIZES),
    )
    text = head + "\n" + "\n".join(parts)
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()

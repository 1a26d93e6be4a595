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

from deniable import ForcedResponse, Warner
from deniable.estimation._coverage_warning import (
    goal_attainable,
    interval_coverage,
    warned_coverage,
)
from deniable.estimation._intervals import INTERVAL_METHODS
from deniable.mechanisms._binary import Crosswise
from deniable.mechanisms._designs import KaryRR

PREVALENCES = (0.0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.3, 0.5, 0.95, 0.99, 1.0)
SIZES = (100, 300, 1_000, 3_000, 10_000)
LEVEL = 0.95
#: Coverage every offered method is held to (issue 17), and the default's promise.
FLOOR = 0.94
DESIGNS = (
    ForcedResponse(p_yes=0.25, p_no=0.25),
    ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
    Warner(p=0.7),
    Crosswise(p=0.25),
    KaryRR(k=7, epsilon=2.0),
)


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


def method_summary(table: dict) -> list[str]:
    lines = [
        "| method | lowest coverage | where (n, pi) | cells below 0.94 | cells short of the "
        "goal | width at pi = 0, n = 1,000 | width at pi = 0.5, n = 1,000 |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in INTERVAL_METHODS:
        cells = {key[1:]: value for key, value in table.items() if key[0] == method}
        (n, pi), low = min(cells.items(), key=lambda item: item[1][0])
        below = sum(c[0] < FLOOR for c in cells.values())
        short = sum(_short(c) for c in cells.values())
        lines.append(
            f"| {method} | {low[0]:.4f} | {n:,}, {pi:g} | {below} of {len(cells)} | {short} | "
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

**Every interval is power-constrained** (but `bayes`). `normal`, `wilson`,
`agresti_coull`, `beta` and `jeffreys` are never narrower than the interval of the
count a boundary predicts: where the data fall below what prevalence 0 would give, their
interval is the one at that count, `[0, u]` with `u` about two standard errors, instead
of collapsing onto 0. `chebyshev` never collapses either: an estimate beyond a boundary
gets the interval of an estimate at it.

**Where a method falls short, it warns, on the survey in hand.** `confidence_interval`
averages the exact coverage of the asked method for the estimate's design and n over
the prevalences within one of the largest standard errors (`|slope| / (2 sqrt(n))`) of
the estimate (on a grid of a quarter of a count's step, so the saw-tooth of a discrete
count's coverage is averaged, not taken at its lowest tooth); below 0.94,
`IntervalCoverageWarning` gives that mean and the neighbourhood and recommends
`feldman_cousins` (`deniable.estimation._coverage_warning.coverage_warning`). A credible
interval is not power-constrained; `bayes` also warns when its interval leaves out a
boundary the data do not rule out, or is narrower there than an estimate at the boundary
would be (not counted below).

Each cell below gives the coverage among all surveys / among the surveys the warning
leaves unwarned (a dash where at least 99.9% are warned) / the share warned. Issue 43's
goal: the unwarned covered at least 0.94 (judged where at least 0.1% go unwarned), and
at most 10% warned where the method covers at least 0.95; cells that miss it are in
bold. `bayes` is the union of the highest-density set and the equal-tailed interval of
the posterior: the highest-density set alone holds a boundary by pulling its other end
in to the one-sided point, and covered 0.93 over stretches 2-4 standard errors from the
boundary, where 20-44% of surveys were warned and the unwarned covered 0.88-0.92. On
k-ary RR, `bayes` takes, by default, a prior uniform on the category asked about (the
rest Dirichlet(1, ..., 1) over what is left; `deniable.estimation._bayes.category_prior`):
the uniform Dirichlet over 7 categories gives a category a Beta(1, 6) marginal, which
pulled it towards 0 (coverage 0.000-0.108 at prevalence 0.99 for n from 100 to 10,000,
0.896 at 0.5 for n = 100). A prior given, or the `bayes` estimator's, keeps its Dirichlet
marginal, and warns where that under-covers.

`normal` is the Wald interval with a continuity correction (Newcombe 1998, method 2):
`pi_hat +/- (z SE + |slope| / (2 n))`, half a report's step wider on each side than
the plain Wald interval of R's `rr` and `RRreg` (0.0105 at n = 100 on KaryRR(7, 2),
0.0010 at n = 1,000; to get theirs, take `estimate +/- z std_error`). Plain Wald missed
the goal in three cells, on KaryRR(7, 2) at n <= 300 (0.931 at 0.5 and n = 100, the
unwarned 0.934; 0.937 at 0.1 and n = 300), and **no warning rule could remove them**.
Within a count's step the coverage of a discrete count's interval alternates (Brown, Cai
& DasGupta 2001): at n = 100, over prevalences 0.25-0.6, plain Wald lay below 0.94 at 33%
of them (as low as 0.926) and averaged 0.943. Whatever a warning is decided on (the
estimate, the interval, anything computed from the data), it is a function of the
category's report count, so a rule is a set of counts to warn. Whether any set meets the
goal at every prevalence of a grid is an integer program, linear in the set's indicators
(`deniable.estimation._coverage_warning.goal_attainable`; HiGHS through
`scipy.optimize.milp`); "no" is a proof. For plain Wald at n = 100 it had no solution on
the grid 0, 0.01, ..., 1 on any of the five designs, and on KaryRR(7, 2) its relaxation
(`randomized=True`: a rule that warns a count with a probability, or draws on the other
categories' counts) had none either: no rule of any kind met the goal there. A warning
cannot fix that interval, so the interval changed: with the correction, `normal` covers at
least 0.9416 at every point of that grid at n = 100 on KaryRR(7, 2) (0.9475 on forced
response), and every cell below meets the goal with none warned.

The table below asks the integer program for every method on that grid. `wilson` and
`jeffreys` on KaryRR(7, 2) at n = 100 dip below 0.94 at teeth of the fine grid that no
rule can single out (0.936 and 0.935); the 12 prevalences of the tables fall between
those teeth. We do not ship a randomized rule where one exists: a warning that depends on
a coin flip, or on counts that say nothing about the prevalence asked, would tell the
analyst nothing. The warning stays the mean over the neighbourhood, which warns where a
method falls short over a standard error rather than at one tooth; where a method falls
short at a tooth the remedy is another method: `feldman_cousins` (the default) covers at
least 0.95 at every prevalence, and `beta` (Clopper-Pearson on the report share) at
every point of the fine grid.

{attainable}
"""


#: The fine grid on which the attainability of the goal is asked.
FINE = tuple(round(i / 100, 2) for i in range(101))
ATTAINABLE_SIZES = (100, 300, 1_000)


def attainable_table() -> list[str]:
    """Per design and method (but the two guaranteed), whether any warning rule meets
    the goal at every prevalence of :data:`FINE`, with the lowest coverage there."""
    methods = [m for m in INTERVAL_METHODS if m not in ("feldman_cousins", "chebyshev")]
    lines = [
        "Is the goal attainable by any warning rule on the grid 0, 0.01, ..., 1 (lowest "
        "coverage on that grid)?",
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
                ok = goal_attainable(design, n, method, LEVEL, j, np.array(FINE))
                cells.append(f"{'yes' if ok else '**no**'} ({low:.3f})")
            lines.append(f"| {design!r} | {method} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    parts = []
    for design in DESIGNS:
        table = grid(design)
        name = f"{design!r} (epsilon = {design.epsilon:.4g} nats"
        name += ", category 0)" if isinstance(design, KaryRR) else ", prevalence of yes)"
        block = [f"## {name}", "", "Every method over the grid:", "", *method_summary(table)]
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
    head = HEAD.format(
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

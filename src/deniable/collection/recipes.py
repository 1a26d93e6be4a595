"""Recipes a person can follow with dice or coins to randomize a report by hand.

A design's column for a true answer ``t`` gives ``Pr(report r | t)``. When every such
chance is a whole number of sixths, thirty-sixths (two dice), or 2^-m (m coins, m <= 4),
the column becomes a table of outcomes: roll, then look up the report. Otherwise no
ordinary dice or coins give the design's chances exactly, and :func:`dice_recipe` says
so instead of asking for a chance like 71.12% that no die gives.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["DEVICES", "NO_RECIPE", "dice_recipe"]

#: What the respondent is told when no dice or coins give the design's chances.
NO_RECIPE = (
    "This design's chances cannot be made exactly with ordinary dice or coins, so it "
    "cannot be randomized by hand: let this device randomize."
)

#: The devices tried, in order: (number of equally likely outcomes, how to get them).
DEVICES: tuple[tuple[int, str], ...] = (
    (2, "Flip a coin: heads is 1, tails is 2."),
    (4, "Flip two coins: heads-heads is 1, heads-tails 2, tails-heads 3, tails-tails 4."),
    (6, "Roll a die."),
    (
        8,
        "Flip three coins and count heads as 1 and tails as 0, first coin worth 4, second 2, "
        "third 1; add 1 (so outcomes run 1 to 8).",
    ),
    (
        16,
        "Flip four coins: first worth 8, second 4, third 2, fourth 1 for heads; add 1 "
        "(so outcomes run 1 to 16).",
    ),
    (36, "Roll two dice, a first and a second: the outcome is 6 x (first - 1) + second (1 to 36)."),
)


def dice_recipe(
    columns: NDArray[np.float64], truth_labels: list[str], report_labels: list[str]
) -> str | None:
    """A dice or coin recipe for the design, or ``None`` if none gives its chances exactly.

    Parameters
    ----------
    columns : ndarray of float, shape (k, m)
        ``columns[t, r] = Pr(report r | truth t)``; each row sums to 1.
    truth_labels : list of str, length k
    report_labels : list of str, length m

    Returns
    -------
    str or None
        "<how to roll> If your true answer is 'a': outcomes 1-4 mean 'x', 5-6 'y'. ..."
    """
    cols = np.asarray(columns, dtype=np.float64)
    for outcomes, how in DEVICES:
        counts = cols * outcomes
        if not np.allclose(counts, np.round(counts), atol=1e-9):
            continue
        whole = np.round(counts).astype(int)
        lines = []
        for t, truth in enumerate(truth_labels):
            start, parts = 1, []
            for r, n in enumerate(whole[t]):
                if n == 0:
                    continue
                end = start + n - 1
                span = f"{start}" if n == 1 else f"{start}-{end}"
                parts.append(f"{span} mean '{report_labels[r]}'")
                start = end + 1
            lines.append(f"If your true answer is '{truth}': outcomes " + ", ".join(parts) + ".")
        return how + " " + " ".join(lines) + " Enter only the answer the outcome gives."
    return None

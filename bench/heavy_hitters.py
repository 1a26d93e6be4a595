"""Heavy hitters without a candidate list (PEM): precision, recall, size, time, memory.

    python -m uv run python bench/heavy_hitters.py [--runs 20] [--n 1e6,1e7] [--eps 1,2,4]
        [--alphabet default|a-z]

The vocabulary is real, Webster's Second International Dictionary (the ``web2`` list of
the ``english-words`` package, a pinned dev dependency), lower case, in a fixed shuffled
order: its 33,918 words of at most 6 letters (PEM, ``PrefixExtension`` over its default
39-symbol alphabet, a-z, 0-9 and ``-_.``, as package names need; ``--alphabet a-z``
for the 26 letters alone, the words' own), or with
``--long`` 100,000 words of any length, up to 28 bytes (byte-PEM,
``BytePrefixExtension``: 32 levels of 2 bytes over 64, level ``j`` drawn with
probability proportional to ``level_decay^j``, default 0.95; ``--level-decay 1`` is
PEM's uniform assignment). Values are drawn Zipf(1.1)
(the i-th word's frequency proportional to i^-1.1). Per (n, epsilon), over ``runs``
seeded runs (mean and 10th percentile):

- threshold 1%, every run: precision over the runs that returned a value (a returned
  value is correct when its frequency in the
  sample is at least half the threshold: ``find_heavy_hitters`` bounds the expected
  number of the others by ``false_discoveries`` = 0.05), recall of the values at or
  above 1.2%, values returned, the analyst's time (median and largest over the runs)
  and the process's peak RSS;
- top-10 (the first ``--side-runs`` runs, default 5): the share of the true top 10
  returned;
- beside them: the OLH ceiling (the first ``--side-runs`` runs: the same test of
  ``frequency <= threshold / 2`` over the true vocabulary as candidates, Bonferroni
  over its words) and the detection limit that ``detection_limit`` predicts for recall
  0.9 (byte-PEM: for a value of the median length of the words >= 1.2%).

Before each row it prints the search's cost as :func:`deniable.estimation.search_cost`
gives it before any report is read (the candidates of each level, expected and at
most) and the machine's load average (1, 5 and 15 minutes), and after it the
candidates each run tested at most, beside the cost's bound.

Reports are randomized with a seeded generator (simulation); the client's secure
rate is in bench/oracles.py.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
from scipy import special

from deniable.estimation import (
    detection_limit,
    find_heavy_hitters,
    find_string_heavy_hitters,
    search_cost,
)
from deniable.mechanisms import BytePrefixExtension, LocalHashing, PrefixExtension
from deniable.mechanisms._kernels import kernel_backend
from deniable.mechanisms._prefix import DEFAULT_ALPHABET

THRESHOLD = 0.01
RECALL_FROM = 0.012
FALSE_DISCOVERIES = 0.05


def vocabulary(long: bool) -> np.ndarray:
    """web2's lower-case words in a fixed shuffled order: those of at most 6 letters, or
    (``long``) 100,000 of any length (1-28 letters, all within 64 bytes)."""
    from english_words import get_english_words_set

    every = sorted(get_english_words_set(["web2"], lower=True, alpha=True))
    words = every if long else [w for w in every if len(w) <= 6]
    order = np.random.default_rng(1934).permutation(len(words))
    chosen = np.array(words)[order]
    return chosen[:100_000] if long else chosen


def olh_ceiling(
    words: np.ndarray, codes: np.ndarray, eps: float, rng: np.random.Generator
) -> set[str]:
    """The values an OLH oracle over the true vocabulary returns by the same rule."""
    olh = LocalHashing(k=words.size, epsilon=eps)
    tally = olh.tally(olh.randomize(codes, rng))
    counts, n = tally.counts, tally.n
    null = olh.q_star + (olh.p_star - olh.q_star) * THRESHOLD / 2
    pvalue = np.where(counts > 0, special.bdtrc(counts - 1, n, null), 1.0)
    return set(words[pvalue <= FALSE_DISCOVERIES / words.size].tolist())


def olh_ceiling_by_law(
    words: np.ndarray, codes: np.ndarray, eps: float, rng: np.random.Generator
) -> set[str]:
    """The same rule on support counts drawn from their exact law: a word held by
    ``n_v`` of the ``n`` respondents is supported by ``Binomial(n_v, p*) + Binomial(n -
    n_v, q*)`` reports (OLH with a pairwise-independent hash family: a report supports a
    word other than its own with probability ``q* = 1/g``, and any two words' supports
    are uncorrelated). Drawn independently per word: O(k) instead of OLH's n x k hash
    tests, for n = 10^7 and 100,000 words (10^12 tests)."""
    olh = LocalHashing(k=words.size, epsilon=eps)
    held = np.bincount(codes, minlength=words.size)
    n = codes.size
    counts = rng.binomial(held, olh.p_star) + rng.binomial(n - held, olh.q_star)
    null = olh.q_star + (olh.p_star - olh.q_star) * THRESHOLD / 2
    pvalue = np.where(counts > 0, special.bdtrc(counts - 1, n, null), 1.0)
    return set(words[pvalue <= FALSE_DISCOVERIES / words.size].tolist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--n", default="1e6,1e7")
    parser.add_argument("--eps", default="1,2,4")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the OLH ceiling")
    parser.add_argument(
        "--ceiling",
        choices=("oracle", "law"),
        default="oracle",
        help="the OLH ceiling by running OLH (n x k hash tests) or from its support "
        "counts' exact law (O(k); for n x k beyond 10^11)",
    )
    parser.add_argument(
        "--ceiling-only",
        action="store_true",
        help="skip PEM: only the OLH ceiling, over every run",
    )
    parser.add_argument(
        "--side-runs",
        type=int,
        default=5,
        help="runs (the first ones) that also time the top-10 search and the OLH ceiling",
    )
    parser.add_argument(
        "--long",
        action="store_true",
        help="100,000 words of any length through BytePrefixExtension (strings up to 64 bytes)",
    )
    parser.add_argument(
        "--alphabet",
        choices=("default", "a-z"),
        default="default",
        help="PrefixExtension's alphabet: its default 39 symbols, or the 26 letters",
    )
    parser.add_argument(
        "--level-decay",
        type=float,
        default=None,
        help="BytePrefixExtension's level_decay (default: the mechanism's, 0.95; 1 is uniform)",
    )
    args = parser.parse_args()
    decay = {} if args.level_decay is None else {"level_decay": args.level_decay}
    words = vocabulary(args.long)
    weights = 1.0 / np.arange(1, words.size + 1) ** 1.1
    weights /= weights.sum()
    kind = f"any length (up to {max(map(len, words))} bytes)" if args.long else "<= 6 letters"
    print(
        f"vocabulary: {words.size:,} web2 words of {kind}, Zipf(1.1); "
        f"{int((weights >= THRESHOLD).sum())} words >= 1%; kernels: {kernel_backend()}"
    )
    head = (
        f"{'n':>9s} {'eps':>4s} {'precision':>15s} {'recall>=1.2%':>15s} {'returned':>9s} "
        f"{'top-10':>7s} {'time s med/max':>14s} {'peak GB':>8s} {'limit':>7s} "
        f"{'OLH prec/rec':>13s}"
    )
    print(head)
    alphabet = DEFAULT_ALPHABET if args.alphabet == "default" else "abcdefghijklmnopqrstuvwxyz"
    if args.long:
        print(f"mechanism: {BytePrefixExtension(1.0, **decay)!r} (epsilon as in each row)")
    else:
        print(f"alphabet: {alphabet!r} ({len(alphabet)} symbols)")
    for n in (int(float(x)) for x in args.n.split(",")):
        for eps in (float(x) for x in args.eps.split(",")):
            pem: Any = (
                BytePrefixExtension(eps, **decay)
                if args.long
                else PrefixExtension(eps, max_length=6, alphabet=alphabet)
            )
            search = find_string_heavy_hitters if args.long else find_heavy_hitters
            # byte-PEM: for a value of the median length of the words >= 1.2%
            heavy = words[weights >= RECALL_FROM]
            size = {"length": int(np.median([len(w.encode()) for w in heavy]))} if args.long else {}
            limit = detection_limit(pem, n, THRESHOLD, false_discoveries=FALSE_DISCOVERIES, **size)
            cost = search_cost(pem, n, THRESHOLD, false_discoveries=FALSE_DISCOVERIES)
            load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
            print(f"  n = {n:.0e}, eps {eps:g}: load {load}; {cost}", flush=True)
            rows = []
            tested = np.zeros(cost.candidates.size)
            for run in range(args.runs):
                rng = np.random.default_rng([29, n, int(eps * 10), run])
                codes = rng.choice(words.size, size=n, p=weights)
                share = np.bincount(codes, minlength=words.size) / n
                sample = words[codes]
                if args.ceiling_only:
                    reports, found, elapsed, side, top = (
                        None,
                        SimpleNamespace(values=[]),
                        np.nan,
                        True,
                        None,
                    )
                else:
                    reports = pem.randomize(sample, rng)
                    t0 = time.perf_counter()
                    found = search(pem, reports, THRESHOLD)
                    elapsed = time.perf_counter() - t0
                    tested = np.maximum(tested, found.candidates_per_level)
                    side = run < args.side_runs
                    top = search(pem, reports, top_k=10) if side else None
                del sample
                index = {w: i for i, w in enumerate(words.tolist())}
                got = [index.get(v) for v in found.values]
                correct = sum(i is not None and share[i] >= THRESHOLD / 2 for i in got)
                wanted = set(np.flatnonzero(share >= RECALL_FROM).tolist())
                recall = len(wanted & {i for i in got if i is not None}) / max(len(wanted), 1)
                true_top = set(words[np.argsort(-share)[:10]].tolist())
                ceiling = (np.nan, np.nan)
                if not args.no_ceiling and side:
                    ceiling_of = olh_ceiling if args.ceiling == "oracle" else olh_ceiling_by_law
                    olh = ceiling_of(words, codes, eps, rng)
                    olh_ok = sum(share[index[v]] >= THRESHOLD / 2 for v in olh)
                    ceiling = (
                        olh_ok / max(len(olh), 1),
                        len(wanted & {index[v] for v in olh}) / max(len(wanted), 1),
                    )
                # the precision of a run that returned nothing is undefined, not 0
                pem_columns = (correct / len(got) if got else np.nan, recall, len(got))
                rows.append(
                    (
                        *((np.nan,) * 3 if args.ceiling_only else pem_columns),
                        len(true_top & set(top.values)) / 10 if top else np.nan,
                        elapsed,
                        *ceiling,
                    )
                )
                del reports, codes
            table = np.array(rows, dtype=float)
            with warnings.catch_warnings():  # a column of NaN (no top-10, no ceiling)
                warnings.simplefilter("ignore", RuntimeWarning)
                mean, p10 = np.nanmean(table, axis=0), np.nanpercentile(table, 10, axis=0)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            tops = table[:, 3][~np.isnan(table[:, 3])]
            top10 = float(tops.mean()) if tops.size else float("nan")
            olh = (
                (np.nanmean(table[:, 5]), np.nanmean(table[:, 6]))
                if not args.no_ceiling
                else (np.nan,) * 2
            )
            print(
                f"{n:9.0e} {eps:4.0f} {mean[0]:7.3f} ({p10[0]:5.3f}) "
                f"{mean[1]:7.3f} ({p10[1]:5.3f}) {mean[2]:9.1f} {top10:7.2f} "
                f"{np.median(table[:, 4]):6.1f}/{np.max(table[:, 4]):7.1f} {peak:8.2f} "
                f"{limit:7.4f} {olh[0]:6.2f}/{olh[1]:5.2f}",
                flush=True,
            )
            if not args.ceiling_only:
                within = bool(np.all(tested <= cost.candidates_bound))
                print(
                    f"  candidates tested, most over the runs: {np.max(tested):,.0f} a level "
                    f"(expected at most {np.max(cost.candidates):,.0f}); within the bound: "
                    f"{within}",
                    flush=True,
                )


if __name__ == "__main__":
    main()

"""Arm comparisons under the release rule, over many simulated studies (issue 58).

Usage::

    python -m uv run python bench/release_bias.py [--studies 1000] [--seed 58]

Each study is simulated at the protocol level, with the server's own pieces: 600
people, each with two key answers asked before treatment (4 x 2 = 8 key cells of
uneven size, some under ``min_release`` = 30), a 20% item whose prevalence is a logit
in the two key answers, a 5% item, and a direct question asked after treatment whose
nonresponse differs by arm (30% in the direct arm, 10% elsewhere; the rule must not
take it as a key). Each person is assigned an arm at random (direct questioning, forced
response, unrelated question; weights 1:1:1) and answers truthfully, so the true
method effect is exactly 0. The device randomizes (the arm's design), the server
post-randomizes the direct arm's answers (:func:`post_randomize`, the survey's
channel), responses arrive in random order, a release every 100 arrivals takes the
complete key cells (:func:`select_release`), the close releases the last complete ones
and withholds the rest. Each arm's prevalence is then estimated from its released rows
through its design (the direct arm's through the channel), and each randomized arm is
compared with the direct arm.

Printed: per item and comparison, the mean difference (the truth is 0) with its Monte
Carlo SE and |bias| / MC SE (goal < 3), the coverage of the 95% Wald interval (goal
>= 0.94); the sample-ratio test's rejection rate at 5% on the arrivals and on the
released rows (goal: 0.05 within 3 MC SEs); each arm's mean released share.
``tests/test_release_bias.py`` runs 150 studies.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy import stats

from deniable import estimate
from deniable.collection.model import load_survey
from deniable.collection.store._payload import NO_ANSWER, StagedResponse
from deniable.collection.store._pram import post_randomize
from deniable.collection.store._release_control import disclosure_plan, select_release

SURVEY = {
    "id": "bias",
    "version": 1,
    "title": "Bias",
    "privacy_budget": 8.0,
    "min_release": 30,
    "arms": {
        "dq": {"weight": 1, "designs": {"rare": {"name": "direct"}, "item": {"name": "direct"}}},
        "fr": {"weight": 1},
        "uq": {
            "weight": 1,
            "designs": {
                "item": {"name": "unrelated-question",
                         "params": {"p": 0.7, "innocuous_prevalence": 0.25},
                         "innocuous_question": "Born in winter?"},
                "rare": {"name": "unrelated-question",
                         "params": {"p": 0.7, "innocuous_prevalence": 0.25},
                         "innocuous_question": "Born in winter?"},
            },
        },
    },
    "questions": [
        {"id": "k1", "text": "K1?", "choices": ["a", "b", "c", "d"], "design": {"name": "direct"}},
        {"id": "k2", "text": "K2?", "choices": ["x", "y"], "design": {"name": "direct"}},
        {"id": "item", "text": "Item?",
         "design": {"name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0.2}}},
        {"id": "rare", "text": "Rare?",
         "design": {"name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0.2}}},
        {"id": "mood", "text": "Mood?", "choices": ["bad", "good"], "design": {"name": "direct"},
         "allow_no_answer": True},
    ],
}  # fmt: skip

ITEMS = ("item", "rare")
ARMS = ("dq", "fr", "uq")


@dataclass
class Outcome:
    """Per study: per item and randomized arm, the difference to dq and its SE; the
    sample-ratio p-values on arrivals and released rows; each arm's released share."""

    differences: dict[tuple[str, str], tuple[float, float]]
    p_arrivals: float
    p_released: float
    shares: dict[str, float]


def one_study(survey, rng: np.random.Generator, n: int = 600, every: int = 100) -> Outcome:
    """One simulated study (see the module docstring)."""
    k1 = rng.choice(4, size=n, p=[0.45, 0.3, 0.15, 0.1])
    k2 = rng.choice(2, size=n, p=[0.7, 0.3])
    item = rng.random(n) < 1 / (1 + np.exp(-(-1.7 + 0.4 * k1 - 0.5 * k2)))
    rare = rng.random(n) < 0.05
    arm = rng.integers(0, 3, size=n)
    skips = rng.random(n) < np.where(arm == 0, 0.3, 0.1)
    mood = np.where(skips, NO_ANSWER, rng.integers(0, 2, size=n))
    codes = np.column_stack([k1, k2, item, rare, mood]).astype(np.int64)
    for a, name in enumerate(ARMS):  # the device: each arm's design on its rows
        rows = arm == a
        for i, qid in ((2, "item"), (3, "rare")):
            design = next(q for q in survey.questions_in(name) if q.id == qid)
            if not design.is_direct:
                codes[rows, i] = design.mechanism.randomize(codes[rows, i], rng)
    staged = [
        StagedResponse("bias", 1, 0, tuple(int(c) for c in row), int(a))
        for row, a in zip(codes, arm, strict=True)
    ]
    staged = post_randomize(staged, survey.report_plan.channels, rng)  # the server
    order = rng.permutation(n)
    plan = disclosure_plan(survey)
    released = np.zeros(n, dtype=bool)
    waiting: list[int] = []
    for start in range(0, n, every):
        waiting += order[start : start + every].tolist()
        take = select_release(plan, [staged[i].codes for i in waiting], survey.min_release)
        released[[i for i, t in zip(waiting, take, strict=True) if t]] = True
        waiting = [i for i, t in zip(waiting, take, strict=True) if not t]
    stored = np.array([s.codes for s in staged])
    differences = {}
    for qi, qid in ((2, "item"), (3, "rare")):
        per_arm = {}
        for a, name in enumerate(ARMS):
            design = next(q for q in survey.questions_in(name) if q.id == qid).mechanism
            reports = stored[released & (arm == a), qi]
            est = estimate(design, reports)
            per_arm[name] = (float(est.estimate[1]), float(est.std_error[1]))
        for name in ("fr", "uq"):
            d = per_arm[name][0] - per_arm["dq"][0]
            se = float(np.hypot(per_arm[name][1], per_arm["dq"][1]))
            differences[qid, name] = (d, se)
    arrivals = np.bincount(arm, minlength=3)
    out = np.bincount(arm[released], minlength=3)
    return Outcome(
        differences,
        float(stats.chisquare(arrivals).pvalue),
        float(stats.chisquare(out).pvalue),
        {name: float(out[a] / arrivals[a]) for a, name in enumerate(ARMS)},
    )


def simulate(studies: int, seed: int) -> dict:
    """``studies`` simulated studies: per (item, arm) the mean difference, its MC SE and
    the Wald interval's coverage of 0; the sample-ratio rejection rates at 5%; the mean
    released share per arm with its MC SE."""
    survey = load_survey(SURVEY)
    rng = np.random.default_rng(seed)
    outcomes = [one_study(survey, rng) for _ in range(studies)]
    out: dict = {"studies": studies, "comparisons": {}}
    z = stats.norm.ppf(0.975)
    for key in outcomes[0].differences:
        d = np.array([o.differences[key][0] for o in outcomes])
        se = np.array([o.differences[key][1] for o in outcomes])
        covered = np.abs(d) <= z * se
        out["comparisons"][key] = {
            "mean": float(d.mean()),
            "mc_se": float(d.std(ddof=1) / np.sqrt(studies)),
            "coverage": float(covered.mean()),
        }
    out["srt_arrivals"] = float(np.mean([o.p_arrivals < 0.05 for o in outcomes]))
    out["srt_released"] = float(np.mean([o.p_released < 0.05 for o in outcomes]))
    shares = {name: np.array([o.shares[name] for o in outcomes]) for name in ARMS}
    out["shares"] = {
        name: (float(s.mean()), float(s.std(ddof=1) / np.sqrt(studies)))
        for name, s in shares.items()
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--studies", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=58)
    args = ap.parse_args()
    result = simulate(args.studies, args.seed)
    print(f"{args.studies} simulated studies, true method effect 0 (seed {args.seed})")
    print(f"{'item':<6} {'arm - dq':<9} {'mean':>9} {'MC SE':>8} {'|bias|/SE':>10} {'cover':>7}")
    for (qid, arm), c in result["comparisons"].items():
        ratio = abs(c["mean"]) / c["mc_se"]
        print(
            f"{qid:<6} {arm + ' - dq':<9} {c['mean']:>+9.4f} {c['mc_se']:>8.4f} "
            f"{ratio:>10.2f} {c['coverage']:>7.3f}"
        )
    mc = np.sqrt(0.05 * 0.95 / args.studies)
    print(
        f"sample-ratio test at 5%: arrivals {result['srt_arrivals']:.3f}, released "
        f"{result['srt_released']:.3f} (nominal 0.05, MC SE {mc:.3f})"
    )
    for name, (share, se) in result["shares"].items():
        print(f"released share of arm {name}: {share:.4f} (MC SE {se:.4f})")


if __name__ == "__main__":
    main()

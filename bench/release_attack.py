"""The analyst who injects and polls, against the server's post-randomization (issue
58): 1,000 targets.

Usage::

    python -m uv run python bench/release_attack.py [--targets 1000] [--seed 58]

Each target answers "cheat" in the direct arm of ``tests/test_pram.py``'s study; the
analyst knows the target's arm and key cell, adds ``min_release - 1`` responses of
their own to that cell from a device they control (in the randomizing arm, with the
report they choose), and asks for a release right after the target's arrival. The
release is then exactly that cell, and the value left over is the target's stored,
post-randomized answer: the best guess there is. Printed: the balanced accuracy over
targets whose true answers are balanced by design, with its Monte Carlo SE, beside the
channel's bound e^eps / (e^eps + 1) (goal: at most the bound plus 3 MC SEs). Then the
same against the sensitive item behind a list count (:func:`attack_list`).
``tests/test_pram.py`` runs 200 targets of each.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np

from deniable.collection.model import load_survey
from deniable.collection.store._storage import Store

#: Two key questions asked before treatment (faculty 3 x year 2 = 6 key cells), the arm
#: comparison on cheat (dq asks it directly, fr randomizes it), a direct question asked
#: after treatment (never a key), and a list experiment.
STUDY = {
    "id": "study",
    "version": 1,
    "title": "Study",
    "privacy_budget": 6.0,
    "min_release": 10,
    "allow_small_release": False,
    "arms": {
        "dq": {"weight": 1, "designs": {"cheat": {"name": "direct"}}},
        "fr": {"weight": 1},
    },
    "questions": [
        {"id": "faculty", "text": "Faculty?", "choices": ["a", "b", "c"],
         "design": {"name": "direct"}},
        {"id": "year", "text": "Year?", "choices": ["1", "2"], "design": {"name": "direct"}},
        {"id": "cheat", "text": "Cheated?",
         "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}}},
        {"id": "mood", "text": "How was the exam?", "choices": ["bad", "good"],
         "design": {"name": "direct"}, "allow_no_answer": True},
        {"id": "upset", "text": "How many?", "design": {"name": "list-experiment"},
         "items": ["x", "y", "z"], "sensitive_item": "s"},
    ],
}  # fmt: skip


def body(f: int, y: int, cheat: int, mood: int | None, count: int, group: int, arm: str):
    """One response as ``submit`` takes it: (reports, arm, the list's group)."""
    return {"faculty": f, "year": y, "cheat": cheat, "mood": mood, "upset": count}, arm, group


def submit(store: Store, survey, bodies) -> None:
    """Store ``bodies`` (from :func:`body`) in one batch."""
    store.submit_batch(
        survey,
        [b[0] for b in bodies],
        [b[1] for b in bodies],
        [{"upset": b[2]} for b in bodies],
    )


def make_store(folder: Path, seed: int, **changes):
    """A store on a fresh SQLite file in ``folder`` with the study published and the
    server's post-randomization seeded (``seed``: simulation only)."""
    store = Store(f"sqlite:///{folder / f'db{seed}.sqlite'}")
    survey = load_survey({**STUDY, **changes})
    store.publish(survey)
    store.pram_rng = np.random.default_rng(seed)
    return store, survey


def attack(tmp_path, targets: int, seed: int, min_release: int = 10) -> tuple[float, float]:
    """The analyst who knows the target's arm (dq) and key cell, injects min_release - 1
    responses of their own into that cell and asks for a release right after the
    target's arrival. Their responses come from a device they control, in the arm that
    randomizes cheat, with the report they choose (0), so the released cell is the
    target's row and rows whose values they know: the value left over is the target's
    stored value, the best guess there is. Returns the balanced accuracy over targets
    whose true answers are balanced by design, and its Monte Carlo SE."""
    store, survey = make_store(tmp_path, seed, min_release=min_release)
    rng = np.random.default_rng(seed + 1)
    truths = np.tile([0, 1], targets // 2)
    rng.shuffle(truths)
    guesses = []
    released, yes = 0, 0
    for t in truths:
        submit(store, survey, [body(0, 0, int(t), 1, 1, 0, "dq")])  # the target
        submit(store, survey, [body(0, 0, 0, 1, 1, 0, "fr")] * (min_release - 1))
        store.release()
        # what they keep of every release: the released count and the tally of cheat
        now, now_yes = (
            store.released.count("study"),
            int(store.released.tallies(survey)["cheat"].counts[1]),
        )
        assert now - released == min_release  # the release is exactly this cell's
        guesses.append(now_yes - yes)  # their own reports are all 0
        released, yes = now, now_yes
    store.close()
    guess = np.array(guesses)
    tpr = float(np.mean(guess[truths == 1] == 1))
    tnr = float(np.mean(guess[truths == 0] == 0))
    half = targets / 2
    se = 0.5 * math.sqrt(tpr * (1 - tpr) / half + tnr * (1 - tnr) / half)
    return (tpr + tnr) / 2, se


def attack_list(
    tmp_path: Path, targets: int, seed: int, min_release: int = 10
) -> tuple[float, float]:
    """The same analyst against the sensitive item behind a list count: the target (in
    the longer list) has one control item for certain, known to the analyst, and the
    sensitive item or not (balanced by design); the analyst adds min_release - 1
    responses of count 0 to the target's key cell and asks for a release. Every count is
    post-randomized by the server (the analyst's too), so the best they can do is the
    released sum less their rows' expected stored count: guess "yes" above 1.5. Returns
    the balanced accuracy and its Monte Carlo SE; the channel's bound between counts 1
    and 2 is e^eps / (e^eps + 1) = 0.9 at ln 9."""
    store, survey = make_store(tmp_path, seed, min_release=min_release)
    channel = survey.question("upset").release_channel
    theirs = float(channel.matrix[:, 0] @ np.arange(channel.n_reports))  # E[stored | 0]
    rng = np.random.default_rng(seed + 1)
    truths = np.tile([0, 1], targets // 2)
    rng.shuffle(truths)
    guesses, total = [], 0
    for z in truths:
        submit(store, survey, [body(0, 0, 0, 1, 1 + int(z), 1, "fr")])  # the target
        submit(store, survey, [body(0, 0, 0, 1, 0, 0, "fr")] * (min_release - 1))
        store.release()
        now = int(store.released.tallies(survey)["upset"].counts @ np.arange(channel.n_reports))
        guesses.append(int(now - total - (min_release - 1) * theirs > 1.5))
        total = now
    store.close()
    guess = np.array(guesses)
    tpr = float(np.mean(guess[truths == 1] == 1))
    tnr = float(np.mean(guess[truths == 0] == 0))
    half = targets / 2
    se = 0.5 * math.sqrt(tpr * (1 - tpr) / half + tnr * (1 - tnr) / half)
    return (tpr + tnr) / 2, se


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--targets", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=58)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [
            ("direct answer (k-ary RR, ln 3)", attack(Path(tmp), args.targets, args.seed), 0.75),
            (
                "list item (geometric, ln 9)",
                attack_list(Path(tmp), args.targets, args.seed + 1),
                0.9,
            ),
        ]
    for what, (accuracy, se), bound in results:
        print(
            f"{what}, {args.targets} targets: balanced accuracy {accuracy:.4f} (MC SE "
            f"{se:.4f}); the channel's bound {bound:.4f}; goal <= bound + 3 SE: "
            f"{'met' if accuracy <= bound + 3 * se else 'NOT met'}"
        )


if __name__ == "__main__":
    main()

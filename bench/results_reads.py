"""How long ``GET /api/surveys/{id}/results`` takes as responses grow (issue 65, item 6):
the first read after a release, which computes, and the reads after it, which the
per-release cache answers (:func:`deniable.collection.study.survey_results`), for a plain
survey, a survey with arms (the campus survey) and one with a panel question and a list
question.

    python -m uv run python bench/results_reads.py [--responses 100000]

Each survey is filled with simulated responses in one batch and released; the reads
run in process (the route adds only JSON encoding). Prints the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from deniable.collection.model import load_survey
from deniable.collection.respondent import simulate_responses
from deniable.collection.store import Store
from deniable.collection.study import survey_results

ROOT = Path(__file__).resolve().parents[1]

PLAIN = {
    "format": 1,
    "id": "plain",
    "version": 1,
    "title": "Three randomized questions",
    "privacy_budget": 6.0,
    "min_release": 30,
    "questions": [
        {"id": "cheat", "text": "Have you ever cheated on an exam?",
         "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}}},
        {"id": "drugs", "text": "Have you used a drug in the last year?",
         "design": {"name": "crosswise", "params": {"p": 0.25}}},
        {"id": "tax", "text": "How much of your income did you declare?",
         "choices": ["all", "most", "half", "little"],
         "design": {"name": "kary-rr", "params": {"epsilon": 2.0}}},
    ],
}  # fmt: skip
PANEL_AND_LIST = {
    "format": 1,
    "id": "panel-list",
    "version": 1,
    "title": "A panel question and a list question",
    "privacy_budget": 6.0,
    "lifetime_budget": 30.0,
    "min_release": 30,
    "questions": [
        {
            "id": "used",
            "text": "Did you use it in the last month?",
            "design": {"name": "warner", "params": {"p": 0.9}},
            "panel": {"permanent": {"name": "warner", "params": {"p": 0.9}}},
        },
        {
            "id": "upset",
            "text": "How many of these make you angry or upset? Not which, only how many.",
            "design": {"name": "list-experiment"},
            "items": [
                "the federal government increasing the tax on gasoline",
                "professional athletes getting million-dollar-plus salaries",
                "large corporations polluting the environment",
            ],
            "sensitive_item": "a black family moving next door to you",
        },
    ],
}


def filled(survey, n: int, seed: int = 0) -> Store:
    """A new store with ``survey`` published, ``n`` simulated responses and a release."""
    store = Store(f"sqlite:///{Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    store.publish(survey)
    rng = np.random.default_rng(seed)
    for start in range(0, n, 20_000):
        m = min(20_000, n - start)
        truths = {q.id: rng.integers(0, 2, m) for q in survey.questions}
        bodies = simulate_responses(survey, truths, rng)
        store.submit_batch(survey, [b["reports"] for b in bodies], [b["arm"] for b in bodies],
                           [b["groups"] for b in bodies])  # fmt: skip
    store.release()
    return store


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--responses", type=int, default=100_000)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}")  # fmt: skip
    surveys = {
        "plain": load_survey(PLAIN),
        "arms (campus)": load_survey(ROOT / "examples" / "campus.yaml"),
        "panel and list": load_survey(PANEL_AND_LIST),
    }
    print("| survey | responses | first read (computes), s | later reads, median s | max s | "
          "goal 0.5 s |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, survey in surveys.items():
        store = filled(survey, args.responses)
        start = time.perf_counter()
        first = survey_results(store, survey, 0.95)
        computed = time.perf_counter() - start
        later = []
        for _ in range(20):
            start = time.perf_counter()
            survey_results(store, survey, 0.95)
            later.append(time.perf_counter() - start)
        met = "met" if max(later) <= 0.5 else "NOT met"
        median = float(np.median(later))
        print(f"| {name} | {first['released']:,} | {computed:.2f} | {median:.4f} | "
              f"{max(later):.4f} | {met} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

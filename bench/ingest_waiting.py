"""Ingestion and release cost as responses wait (issue 58): the store's commit rate of
one-response groups (what the group committer does under light load) with 0, 10^4 and
10^5 responses waiting in about 10^4 key cells, against the same survey without direct
questions, and the time of one release with 10^5 waiting.

Usage::

    python -m uv run python bench/ingest_waiting.py [--commits 2000] [--invitations]

``--invitations`` makes every response carry a credential (the nullifier check that
used to scan every waiting slot on every commit). The goals: the rate with 10^5 waiting
within 0.8x of the survey without direct questions, and the release under 1 s.
``bench/ingest.py`` runs this after its server measurements.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from deniable.collection.credentials import Credential, finalize, new_credential_request
from deniable.collection.model import load_survey
from deniable.collection.store import Store

LEVELS = (0, 10_000, 100_000)


def survey(keys: bool, invitations: bool) -> dict:
    """Three key questions (64 x 64 x 3 = 12,288 cells) and one randomized question, or
    the randomized question alone."""
    questions = [
        {"id": "cheat", "text": "Cheated?",
         "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}}},
    ]  # fmt: skip
    if keys:
        questions = [
            {"id": "a", "text": "A?", "choices": [f"a{i}" for i in range(64)],
             "design": {"name": "direct"}},
            {"id": "b", "text": "B?", "choices": [f"b{i}" for i in range(64)],
             "design": {"name": "direct"}},
            {"id": "c", "text": "C?", "choices": ["x", "y", "z"], "design": {"name": "direct"}},
            *questions,
        ]  # fmt: skip
    return {
        "id": "keys" if keys else "plain",
        "version": 1,
        "title": "Bench",
        "privacy_budget": 2.0,
        "min_release": 30,
        "requires_invitation": invitations,
        "questions": questions,
    }


def response(rng: np.random.Generator, keys: bool) -> dict[str, int]:
    out = {"cheat": int(rng.integers(2))}
    if keys:
        out |= {"a": int(rng.integers(64)), "b": int(rng.integers(64)), "c": int(rng.integers(3))}
    return out


def credentials(store: Store, survey_id: str, n: int) -> list[Credential]:
    """``n`` credentials, made before the clock starts."""
    key = store.invitations.credential_key(survey_id)
    out = []
    for token in store.invitations.issue_tokens(survey_id, n):
        blinded, state = new_credential_request(key.public_key)
        signature = finalize(
            key.public_key, state, store.invitations.issue_credential(survey_id, token, blinded)
        )
        out.append(Credential(state.prepared, signature))
    return out


def measure(folder: Path, commits: int, invitations: bool) -> dict[bool, dict[int, float]]:
    """Commits per second of one-response groups at each waiting level, for the survey
    with key questions (True) and without (False): the two stores are filled to each
    level, then timed in alternating blocks of 100 commits (the disk's and the cache's
    drift falls on both alike)."""
    rng = np.random.default_rng(58)
    stores, surveys = {}, {}
    for keys in (True, False):
        stores[keys] = Store(f"sqlite:///{folder / ('keys' if keys else 'plain')}.sqlite")
        surveys[keys] = load_survey(survey(keys, invitations))
        stores[keys].publish(surveys[keys])
    rates: dict[bool, dict[int, float]] = {True: {}, False: {}}
    waiting = 0
    for level in LEVELS:
        for keys in (True, False):
            store, s = stores[keys], surveys[keys]
            fill = level - waiting
            while fill > 0:  # the responses that wait
                k = min(fill, 5000)
                if invitations:
                    creds = credentials(store, s.id, k)
                    store.commit_group([store.prepare(s, response(rng, keys), c) for c in creds])
                else:
                    store.submit_batch(s, [response(rng, keys) for _ in range(k)])
                fill -= k
        pending = {}
        for keys in (True, False):
            store, s = stores[keys], surveys[keys]
            creds = credentials(store, s.id, commits) if invitations else [None] * commits
            pending[keys] = [store.prepare(s, response(rng, keys), c) for c in creds]
        seconds = {True: 0.0, False: 0.0}
        for start in range(0, commits, 100):
            for keys in (True, False):
                block = pending[keys][start : start + 100]
                began = time.perf_counter()
                for p in block:
                    stores[keys].commit_group([p], forget=False)
                seconds[keys] += time.perf_counter() - began
        for keys in (True, False):
            rates[keys][level] = commits / seconds[keys]
        waiting = level + commits
    for store in stores.values():
        store.close()
    return rates


def release_time(folder: Path) -> tuple[int, float, int]:
    """One release with 10^5 responses waiting in the 12,288 key cells."""
    rng = np.random.default_rng(7)
    store = Store(f"sqlite:///{folder / 'release.sqlite'}")
    s = load_survey(survey(True, False))
    store.publish(s)
    for _ in range(20):
        store.submit_batch(s, [response(rng, True) for _ in range(5000)])
    waiting = store.waiting(s.id)[1]
    start = time.perf_counter()
    released = store.release()
    seconds = time.perf_counter() - start
    store.close()
    return waiting, seconds, released


def main(commits: int = 2000, invitations: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rates = measure(folder, commits, invitations)
        with_keys, plain = rates[True], rates[False]
        waiting, seconds, released = release_time(folder)
    what = "with credentials" if invitations else "without credentials"
    print(f"\nOne-response commits per second ({commits} each, {what}), by responses waiting")
    print(f"{'waiting':>9} {'10^4 key cells':>15} {'no direct questions':>20} {'ratio':>7}")
    for level in LEVELS:
        ratio = with_keys[level] / plain[level]
        print(f"{level:>9,} {with_keys[level]:>15,.0f} {plain[level]:>20,.0f} {ratio:>7.2f}")
    worst = min(with_keys[level] / plain[level] for level in LEVELS)
    print(f"goal: ratio >= 0.8 at every level: {'met' if worst >= 0.8 else 'NOT met'}")
    print(
        f"one release with {waiting:,} waiting in 12,288 key cells: {seconds:.2f} s "
        f"({released:,} released); goal < 1 s: {'met' if seconds < 1 else 'NOT met'}"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--invitations", action="store_true")
    args = ap.parse_args()
    main(args.commits, args.invitations)

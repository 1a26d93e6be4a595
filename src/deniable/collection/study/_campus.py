"""The documentation's example study, built in one place.

The examples of the store, the exports, the study's analyses and the waves all start
from the same store: the campus survey (``examples/campus.yaml``) published in a
temporary SQLite file, with simulated respondents. They import it from here instead of
repeating its ten lines. Simulation only: a seeded generator, never a respondent's
randomness.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model import Survey, load_survey
from ..respondent import simulate_responses
from ..store import Store

__all__ = ["CampusStore", "campus_store"]


@dataclass(frozen=True)
class CampusStore:
    """A store holding the simulated campus study.

    Attributes
    ----------
    store : Store
        The store (a SQLite file in ``folder``).
    surveys : list of Survey
        Each published version (one per wave), oldest first.
    folder : pathlib.Path
        A fresh temporary folder holding the database, for an example's files.

    Examples
    --------
    >>> campus = campus_store(responses=50)
    >>> [s.version for s in campus.surveys], campus.folder.is_dir()
    ([1], True)
    """

    store: Store
    surveys: list[Survey]
    folder: Path

    @property
    def survey(self) -> Survey:
        """The latest version."""
        return self.surveys[-1]


def campus_store(
    *,
    waves: int = 1,
    responses: int = 600,
    seed: int = 0,
    release: bool = False,
    path: str | Path = "examples/campus.yaml",
) -> CampusStore:
    """Publish the campus survey in a new store and submit simulated responses.

    Each simulated respondent's true answers are uniform over the answers of every
    question (``rng.integers(0, 2, responses)``), randomized as the survey file says
    (:func:`~deniable.collection.respondent.simulate_responses`) and submitted in one
    batch per wave.

    Parameters
    ----------
    waves : int in 1..5, default 1
        Versions published in turn, each a wave of the same questions (with several,
        ``lifetime_budget`` is 8 nats, which two waves' direct answers fit).
    responses : int >= 1, default 600
        Responses per wave.
    seed : int, default 0
        The simulation's seed.
    release : bool, default False
        Run the release after each wave, as the next scheduled release would.
    path : str or pathlib.Path, default "examples/campus.yaml"
        The survey file (relative to the repository's root).

    Returns
    -------
    CampusStore

    Raises
    ------
    ValueError
        For ``waves`` outside 1..5 or ``responses`` below 1.

    Examples
    --------
    >>> campus = campus_store()
    >>> campus.survey.id, campus.store.status("campus")["responses"]
    ('campus', 600)
    """
    if not 1 <= waves <= 5 or responses < 1:
        raise ValueError(f"waves must be in 1..5 and responses >= 1, got {waves}, {responses}")
    folder = Path(tempfile.mkdtemp())
    store = Store(f"sqlite:///{folder / 'rr.sqlite'}")
    first = load_survey(path)
    if waves > 1:
        first = load_survey(json.loads(first.canonical_json()) | {"lifetime_budget": 8.0})
    rng = np.random.default_rng(seed)
    surveys = []
    for wave in range(1, waves + 1):
        survey = (
            first
            if wave == 1
            else load_survey(json.loads(first.canonical_json()) | {"version": wave})
        )
        store.publish(survey)
        truths = {q.id: rng.integers(0, 2, responses) for q in survey.questions}
        bodies = simulate_responses(survey, truths, rng)
        store.submit_batch(survey, [b["reports"] for b in bodies], [b["arm"] for b in bodies],
                           [b["groups"] for b in bodies])  # fmt: skip
        if release:
            store.release()
        surveys.append(survey)
    return CampusStore(store, surveys, folder)

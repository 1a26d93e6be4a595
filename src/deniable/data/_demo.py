"""The main job: a private survey over a real population, and real surveys analysed.

:func:`adult_survey` asks the 48,842 people of the UCI Adult census extract sensitive
questions through randomized-response designs (each person's answer randomized on
their "device" with the secure source unless a seed is given) and sets the estimate
and its 95% confidence interval beside the true rate. :func:`real_surveys` estimates
the prevalences of the shipped real randomized-response surveys.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from ..estimation import estimate
from ..mechanisms import Design, ForcedResponse, KaryRR
from ._sets import load_adult, real_survey_items

__all__ = ["DemoRow", "adult_survey", "real_surveys"]


@dataclass(frozen=True)
class DemoRow:
    """One estimated prevalence, ready to print.

    Examples
    --------
    >>> from deniable.data import real_surveys
    >>> row = real_surveys()[0]
    >>> row.survey, row.interval_method, row.low <= row.estimate <= row.high
    ('rr/nigeria', 'feldman_cousins', True)
    """

    survey: str
    question: str
    category: str
    design: str
    epsilon: float
    n: int
    estimate: float
    std_error: float
    mle: float
    low: float
    high: float
    interval_method: str
    truth: float | None

    @property
    def covered(self) -> bool | None:
        """Whether the interval contains the known truth (None when it is unknown)."""
        if self.truth is None:
            return None
        return self.low <= self.truth <= self.high

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (infinite epsilon as the string "inf")."""
        out = asdict(self)
        out["epsilon"] = self.epsilon if math.isfinite(self.epsilon) else "inf"
        out["covered"] = self.covered
        return out


def _rows(
    survey: str,
    question: str,
    design: Design,
    reports: np.ndarray,
    truth: np.ndarray | None,
    categories: list[int],
) -> list[DemoRow]:
    est = estimate(design, reports)
    mle = estimate(design, est.tally, method="mle")
    method = est.default_interval_method
    ci = est.confidence_interval(0.95, method)
    return [
        DemoRow(
            survey=survey,
            question=question,
            category=design.truth_labels[j],
            design=repr(design),
            epsilon=design.epsilon,
            n=est.n,
            estimate=float(est.estimate[j]),
            std_error=float(est.std_error[j]),
            mle=float(mle.estimate[j]),
            low=float(ci.low[j]),
            high=float(ci.high[j]),
            interval_method=method,
            truth=None if truth is None else float(truth[j]),
        )
        for j in categories
    ]


def adult_survey(
    rng: np.random.Generator | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[DemoRow]:
    """Run a private survey over the UCI Adult population.

    Questions: "income over $50K?" and "divorced?" through the two-coin device
    ``ForcedResponse(p_yes=0.25, p_no=0.25)`` (epsilon = ln 3), and marital status
    (7 categories) through ``KaryRR(k=7, epsilon=2)``.

    Parameters
    ----------
    rng : numpy.random.Generator, optional
        Seeded generator for a reproducible simulation; by default every simulated
        respondent's device uses the secure source, as a real one would.
    progress : callable, optional
        Called with a short message before each question.

    Returns
    -------
    list of DemoRow
        Each question's estimate beside the population's truth.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.data import adult_survey
    >>> rows = adult_survey(np.random.default_rng(0))
    >>> rows[0].question, rows[0].n
    ('Is your income over $50K?', 48842)
    """
    people = load_adult()
    coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    rows: list[DemoRow] = []
    binary = [
        ("Is your income over $50K?", people["income"] == ">50K"),
        ("Are you divorced?", people["marital-status"] == "Divorced"),
    ]
    for question, answer in binary:
        if progress:
            progress(question)
        truths = answer.to_numpy(dtype=bool)
        reports = coins.randomize(truths, rng)
        truth = np.array([1.0 - truths.mean(), truths.mean()])
        rows += _rows("UCI Adult", question, coins, reports, truth, [1])
    question = "What is your marital status?"
    if progress:
        progress(question)
    labels = sorted(people["marital-status"].unique())
    codes = people["marital-status"].map({v: i for i, v in enumerate(labels)}).to_numpy()
    kary = KaryRR(k=len(labels), epsilon=2.0, labels=tuple(labels))
    reports = kary.randomize(codes, rng)
    truth = np.bincount(codes, minlength=len(labels)) / codes.size
    rows += _rows("UCI Adult", question, kary, reports, truth, list(range(len(labels))))
    return rows


def real_surveys(progress: Callable[[str], None] | None = None) -> list[DemoRow]:
    """Prevalence estimates for the shipped real randomized-response surveys.

    Parameters
    ----------
    progress : callable, optional
        Called with a line of text per survey.

    Returns
    -------
    list of DemoRow
        One per item of :func:`real_survey_items` (no truth: these are real surveys).

    Examples
    --------
    >>> from deniable.data import real_surveys
    >>> len(real_surveys())
    16
    """
    rows: list[DemoRow] = []
    for item in real_survey_items():
        if progress:
            progress(item.survey)
        truth = (
            None
            if item.true_prevalence is None
            else np.array([1.0 - item.true_prevalence, item.true_prevalence])
        )
        rows += _rows(item.survey, item.question, item.design, item.reports, truth, [1])
    return rows

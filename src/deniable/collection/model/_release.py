"""What a release may show: which direct answers are keys, which are post-randomized.

Protection by randomization, not by withholding
-----------------------------------------------
A randomized report is deniable because the device randomized it. A direct answer is
not, and withholding the rows whose answers are rare cannot protect it: which rows wait
then depends on the answer, so the released rows are a selection on the outcome (an arm
comparison is biased), and an analyst who times arrivals or injects responses still
reads the answer. So every *sensitive* direct value is randomized by the server before
its first write, through a known channel (post-randomization, PRAM: Gouweleeuw,
Kooiman, Willenborg & de Wolf 1998; sdcMicro's ``pram``), and the analysis undoes the
channel like any design's (:meth:`Question.with_release` makes the channel the stored
question's :attr:`~Question.mechanism`):

- a question some arm asks directly and another randomizes (a validation study's
  control arm), and a question asked directly everywhere that the file marks ``pram:
  true``: k-ary randomized response (Warner 1965) over its answers, epsilon-LDP on the
  answer, with ``release_epsilon`` nats, by default the smallest epsilon among the arms
  that randomize the question (the direct arm is never the weak link), ln 9 where none
  does (:data:`DEFAULT_RELEASE_EPSILON`);
- a list experiment's count: the range-restricted geometric channel over ``0..J+1`` in
  both groups (Ghosh, Roughgarden & Sundararajan 2009;
  :class:`~deniable.mechanisms.GeometricCount`), epsilon-DP for counts that differ by
  one, so the sensitive item is the privacy unit; ``release_epsilon`` (default ln 9).

``allow_unprotected_release: true`` stores those answers as sent; it needs
``no_lifetime_budget: true``, and the page, ``survey check`` and the dashboard show
their epsilon as infinite: whoever reads the released rows learns them.

The live operator, who sees each request, still sees the answer as sent; whoever holds
the stored bytes or the releases sees only the randomized value.

Keys (quasi-identifiers)
------------------------
Only what comes before treatment may decide what waits. *Treatment* starts at the
first question whose design differs by arm or that draws a group (a group design, a
list experiment); the *key variables* are the questions asked directly in every arm
before it (and not post-randomized). A key cell is a combination of their answers, the
arms together; a release takes whole key cells (:mod:`deniable.collection.store`).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from ...mechanisms import GeometricCount, KaryRR

if TYPE_CHECKING:
    from ._questions import Question
    from ._survey import Survey

__all__ = [
    "DEFAULT_RELEASE_EPSILON",
    "DEFAULT_RELEASE_EVERY",
    "key_positions",
    "parse_duration",
    "protect",
    "release_epsilon",
    "treatment_start",
]

#: Nats of a post-randomization where no arm randomizes the question: ln 9, a keep
#: probability of 0.9 on a yes/no answer (0.8 on a list count's unit).
DEFAULT_RELEASE_EPSILON = math.log(9.0)
#: Seconds between scheduled releases by default (one hour).
DEFAULT_RELEASE_EVERY = 3600
#: The shortest and longest period between scheduled releases, seconds.
RELEASE_EVERY_RANGE = (1, 31 * 86400)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*")


def parse_duration(value: object, field: str = "release_every") -> int:
    """A duration in whole seconds: an int (seconds) or text like ``"90s"``, ``"15m"``,
    ``"1h"``, ``"2d"``.

    Raises
    ------
    ValueError
        Naming ``field``, for anything else or a value outside 1 s .. 31 days.
    """
    seconds: float | None = None
    if isinstance(value, bool):
        seconds = None
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        match = _DURATION.fullmatch(value)
        if match:
            seconds = float(match.group(1)) * _UNITS[match.group(2)]
    low, high = RELEASE_EVERY_RANGE
    if seconds is None or not math.isfinite(seconds) or not low <= seconds <= high:
        raise ValueError(
            f"{field} must be a duration from 1 s to 31 days: seconds, or text like "
            f"'90s', '15m', '1h', '2d'; got {value!r}"
        )
    return round(seconds)


def treatment_start(survey: Survey) -> int:
    """The position of the first question whose design differs by arm or that draws a
    group (group designs, list experiments); the number of questions if none does."""
    for i, q in enumerate(survey.questions):
        variants = survey.variants(q.id)
        differs = len({v.content_digest for v in variants}) > 1 or any(
            v.is_direct != variants[0].is_direct for v in variants
        )
        if differs or q.is_list or len(q.groups) > 1:
            return i
    return len(survey.questions)


def key_positions(survey: Survey) -> tuple[int, ...]:
    """Positions of the key variables: the questions asked directly in every arm, before
    treatment (:func:`treatment_start`), whose answers are stored as sent."""
    start = treatment_start(survey)
    return tuple(
        i
        for i, q in enumerate(survey.questions[:start])
        if all(v.is_direct and not v.is_list for v in survey.variants(q.id)) and not q.pram
    )


def release_epsilon(survey: Survey, question_id: str) -> float | None:
    """Nats of the post-randomization of a question's direct answers: its
    ``release_epsilon``, else the smallest epsilon among the arms that randomize it
    (a one-sided design's protected cost), else ln 9 for a ``pram`` question or a list;
    ``None`` where nothing is post-randomized (a key, a randomized question, or
    ``allow_unprotected_release``)."""
    base = survey.question(question_id)
    variants = survey.variants(question_id)
    direct = [v for v in variants if v.is_direct]
    randomizing = [v for v in variants if not v.is_direct]
    if survey.allow_unprotected_release or not direct:
        return None
    if not (base.is_list or base.pram or randomizing):
        return None
    if base.release_epsilon is not None:
        return base.release_epsilon
    if randomizing:
        return min(v.epsilon if math.isfinite(v.epsilon) else v.cost for v in randomizing)
    return DEFAULT_RELEASE_EPSILON


def _channel(q: Question, epsilon: float) -> KaryRR | GeometricCount:
    labels = tuple(q.mechanism.truth_labels)
    if q.is_list:
        return GeometricCount(k=q.mechanism.n_truths, epsilon=epsilon, labels=labels)
    return KaryRR(k=q.mechanism.n_truths, epsilon=epsilon, labels=labels)


def protect(survey: Survey, arm_questions: dict[str, list[Question]]) -> None:
    """Give every direct answer that :func:`release_epsilon` post-randomizes its
    channel (:meth:`Question.with_release`), in place: in ``survey.questions`` (a
    ``pram`` question, a list) and in each arm's questions (``arm_questions``, built by
    the survey). The definition (its canonical JSON, its digest) is unchanged.

    Raises
    ------
    ValueError
        Naming the field: ``pram`` with ``allow_no_answer`` (a skipped answer cannot be
        post-randomized) or on a question no arm asks directly; ``release_epsilon`` on
        a question whose answers are not post-randomized.
    """
    for i, q in enumerate(survey.questions):
        variants = survey.variants(q.id)
        if q.pram and not all(v.is_direct and not v.is_list for v in variants):
            raise ValueError(
                f"questions.{q.id}.pram: only a question asked directly in every arm takes "
                "pram (one some arm randomizes is post-randomized in its direct arms anyway)"
            )
        if q.pram and q.allow_no_answer:
            raise ValueError(
                f"questions.{q.id}.pram: a skipped answer cannot be post-randomized; "
                "remove allow_no_answer"
            )
        epsilon = release_epsilon(survey, q.id)
        if epsilon is None:
            if q.release_epsilon is not None and not survey.allow_unprotected_release:
                raise ValueError(
                    f"questions.{q.id}.release_epsilon: only a list, a pram question or one "
                    "that some arm asks directly and another randomizes is post-randomized"
                )
            continue
        if q.is_direct:
            survey.questions[i] = q.with_release(_channel(q, epsilon))
        for asked in arm_questions.values():
            if asked[i].is_direct:
                asked[i] = asked[i].with_release(_channel(asked[i], epsilon))

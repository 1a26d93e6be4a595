"""The arms of a study: each respondent's device draws one, by weight, and answers
the questions with that arm's designs (Höglinger, Jann & Diekmann 2016).

The survey file's ``arms`` (:class:`~deniable.collection.survey.Survey`) maps each
arm's name to an :class:`Arm`; the survey builds each arm's questions from them
(:meth:`~deniable.collection.survey.Survey.questions_in`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .questions import DesignChoice, Slug, Text

__all__ = ["MAX_ARMS", "Arm", "ArmDesign"]

#: Most arms a survey may have.
MAX_ARMS = 16


class ArmDesign(DesignChoice):
    """An arm's design for one question: a :class:`DesignChoice`, and the innocuous
    question(s) the arm's design asks, which replace the question's own (an
    unrelated-question arm names its innocuous question)."""

    innocuous_question: Text | None = None
    innocuous_complement: Text | None = None


class Arm(BaseModel):
    """One arm of a study: respondents are assigned at random, by ``weight``, on their
    own device (Höglinger, Jann & Diekmann 2016 compare direct questioning with several
    randomized-response designs this way).

    Attributes
    ----------
    weight : float in (0, 10^6]
        The arm's share is its weight over the sum of the weights.
    designs : dict of question id -> DesignChoice
        The designs this arm uses instead of the questions' own (``{name: direct}`` asks
        the question directly in this arm: a control arm).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    weight: float = Field(default=1.0, gt=0, le=1e6, allow_inf_nan=False)
    designs: dict[Slug, ArmDesign] = Field(default_factory=dict, max_length=100)

    @model_validator(mode="before")
    @classmethod
    def _designs_by_question(cls, data: Any) -> Any:
        if isinstance(data, dict) and "design" in data:
            raise ValueError(
                "an arm names a design per question it changes: write designs: "
                "{QUESTION_ID: {name: ..., params: {...}}} (designs, plural), not design"
            )
        return data

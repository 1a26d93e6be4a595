"""The arms of a study: each respondent's device draws one, by weight, and answers
the questions with that arm's designs (Höglinger, Jann & Diekmann 2016).

The survey file's ``arms`` (:class:`~deniable.collection.model.Survey`) maps each
arm's name to an :class:`Arm`; the survey builds each arm's questions from them
(:meth:`~deniable.collection.model.Survey.questions_in`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ._fields import DesignChoice, Slug, Text
from ._questions import Question
from ._survey_designs import survey_design

__all__ = ["MAX_ARMS", "Arm", "ArmDesign", "arm_questions"]

#: Question fields a question asked directly in an arm drops.
_NOT_DIRECT = (
    "reports",
    "sensitive",
    "innocuous_question",
    "innocuous_complement",
    "control",
    "panel",
)


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
    pool : bool, default False
        Whether this arm's directly asked questions join the estimate pooled over the
        arms. Randomized arms always do; a direct arm is the one a validation study
        suspects of under-reporting, so it joins only when the survey file says so.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> survey = load_survey("examples/campus.yaml")
    >>> {name: arm.weight for name, arm in survey.arms.items()}
    {'dq': 1.0, 'rr': 2.0}
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    weight: float = Field(default=1.0, gt=0, le=1e6, allow_inf_nan=False)
    designs: dict[Slug, ArmDesign] = Field(default_factory=dict, max_length=100)
    pool: bool = False

    @model_validator(mode="before")
    @classmethod
    def _designs_by_question(cls, data: Any) -> Any:
        if isinstance(data, dict) and "design" in data:
            raise ValueError(
                "an arm names a design per question it changes: write designs: "
                "{QUESTION_ID: {name: ..., params: {...}}} (designs, plural), not design"
            )
        return data


def arm_questions(questions: list[Question], name: str, arm: Arm) -> list[Question]:
    """The questions as arm ``name`` asks them: each question its arm design overrides
    rebuilt with it (a direct one without the fields of randomization, a group design
    without a panel's layers).

    Raises
    ------
    ValueError
        Naming ``arms.<name>.designs.<question>`` if the rebuilt question is not valid or
        asks for other answers than the question's own.
    """
    out: list[Question] = []
    for index, q in enumerate(questions):
        override = arm.designs.get(q.id)
        if override is None:
            out.append(q)
            continue
        design = {"name": override.name, "params": override.params}
        data = q.model_dump(exclude_defaults=True) | {"design": design}
        entry = survey_design(override.name)
        if entry.is_direct:
            for field in _NOT_DIRECT:
                data.pop(field, None)
        if not entry.innocuous:  # the question's own goes
            data.pop("innocuous_question", None)
        if not entry.complement:
            data.pop("innocuous_complement", None)
        if entry.kind == "group":  # drawn per group: one layer
            data.pop("panel", None)
        for field in ("innocuous_question", "innocuous_complement"):
            if getattr(override, field) is not None:
                data[field] = getattr(override, field)
        try:
            out.append(Question.model_validate(data))
        except ValidationError as exc:
            msg = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
            raise ValueError(f"arms.{name}.designs.{q.id}: {msg}") from None
        if q.range is None and out[index].mechanism.n_truths != q.mechanism.n_truths:
            raise ValueError(
                f"arms.{name}.designs.{q.id}: the arm's design must ask for the "
                "same answers as the question's own"
            )
    return out

"""Survey definitions: questions, their designs, and a per-respondent privacy budget.

A survey file (YAML or JSON) is validated by pydantic: ``examples/campus.yaml`` and
``examples/workplace.yaml`` are commented ones, and :class:`Survey` shows the least
one (an id, a version, a title, a privacy budget in nats and its questions, each with
its design).

Numeric questions
-----------------
A question with a ``range`` asks for a number, randomized to one bit; see
(:mod:`deniable.collection.model`).

Privacy accounting
------------------
Each question declares its *sensitive* answers (default: every answer except one
labelled "no"; every answer if none is). What a question costs (:attr:`Question.cost`,
nats, rounded upward) is the local-DP epsilon of its design's misclassification matrix
(:attr:`deniable.mechanisms.Design.epsilon`). One-sided designs (Mangat, triangular)
have infinite epsilon; a question may use one only with ``allow_infinite_epsilon: true``
and only when no report can prove a sensitive answer, and it then costs its
protected likelihood ratio (:func:`deniable.mechanisms._designs.protected_epsilon`).
No question bypasses the budget. One guard bounds each cost
(:func:`deniable.mechanisms._protocol.check_question_epsilon`): at most 30 nats, and above
5 only with ``allow_large_epsilon: true``.

A respondent answers every question once, so by sequential composition (Dwork & Roth
2014, Thm 3.16) a version spends the *sum* of its questions' costs, which must not
exceed ``privacy_budget`` (a slack of :data:`BUDGET_SLACK` nats absorbs the upward
rounding of each epsilon). Across versions the survey id has a lifetime budget
(``lifetime_budget``, default ``privacy_budget``): an unchanged question (same id, text,
choices, reports and design: :attr:`Question.content_digest`) reuses the report
memoized on the respondent's device and costs nothing again; a changed or new one is
charged (:mod:`deniable.collection.model`).

A published survey is immutable: any change, including to its text, is a new
``version`` (:attr:`Survey.digest` identifies a definition).
"""

from __future__ import annotations

from ..._extras import require

require("pydantic", "server")
require("yaml", "server")

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from ...errors import BudgetExceededError, SurveyError
from ...mechanisms import MAX_EPSILON
from ._arms import MAX_ARMS, Arm, arm_questions
from ._canonical import L_DIVERSITY, MIN_RELEASE, canonical_json
from ._fields import SLUG_PATTERN, Slug, Text
from ._i18n import (
    SurveyTranslation,
    check_translations,
    untranslated,
)
from ._questions import Question
from ._release import DEFAULT_RELEASE_EVERY, key_positions, parse_duration, protect
from ._views import survey_view
from ._where import unknown_field, where

__all__ = [
    "BUDGET_SLACK",
    "L_DIVERSITY",
    "MAX_SURVEY_CELLS",
    "MIN_RELEASE",
    "SLUG_PATTERN",
    "SMALL_RELEASE",
    "Question",
    "ReportPlan",
    "Survey",
    "load_survey",
    "parse_survey",
    "survey_error",
]

#: Nats of slack in the budget check (absorbs each epsilon's upward rounding).
BUDGET_SLACK = 1e-9
#: Most matrix cells (reports x answers, all questions) one survey may publish.
MAX_SURVEY_CELLS = 20_000
#: The smallest ``min_release`` accepted without ``allow_small_release: true``.
SMALL_RELEASE = 10


#: Question fields an override to ``direct`` drops (a direct question takes none).


@dataclass(frozen=True)
class ReportPlan:
    """What a response to a survey version must hold (:attr:`Survey.report_plan`)."""

    ids: tuple[str, ...]
    grouped: tuple[str, ...]
    arms: tuple[str, ...]
    #: arm name (``None`` without arms) -> index stored with the response
    arm_index: dict[str | None, int]
    sizes: tuple[tuple[int, ...], ...]
    skippable: tuple[tuple[bool, ...], ...]
    #: list-experiment question id -> report codes group 0 may send (its J + 1 counts)
    control_counts: dict[str, int]
    #: per arm, per question: the channel the server post-randomizes the answer with
    #: before it is stored (:mod:`._release`), or ``None``
    channels: tuple[tuple[Any, ...], ...] = ()


def survey_error(exc: ValidationError, data: Any = None, text: str | None = None) -> SurveyError:
    """Convert pydantic's error list to a :class:`SurveyError` naming each field by its
    path; each message ends with the question's id and the file's line where ``data``
    and ``text`` (the parsed file and its text) tell them (:func:`._where.where`)."""
    out = []
    over_budget = False
    for e in exc.errors():
        over_budget |= isinstance(e.get("ctx", {}).get("error"), BudgetExceededError)
        field = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = unknown_field(e["loc"], Survey.model_fields)
        msg += where(e["loc"], data, text)
        if not field and ": " in msg:  # model-level checks name their field first
            field, _, msg = msg.partition(": ")
        out.append((field or "survey", msg))
    return BudgetExceededError(out) if over_budget else SurveyError(out)


class Survey(BaseModel):
    """A versioned survey definition (``format: 1``).

    Attributes
    ----------
    id : str
        Lower-case slug (``[a-z][a-z0-9_-]{0,63}``).
    version : int >= 1
        A published (id, version) never changes; edits need a new version.
    title, description : str
    privacy_budget : float in (0, 30]
        Per-respondent budget of this version in nats; the questions' costs must sum to
        at most this (sequential composition).
    lifetime_budget : float in (0, 30], optional
        Budget of the survey id over all its versions (default ``privacy_budget``); fixed
        by the first version (:mod:`deniable.collection.model`).
    requires_invitation : bool
        Whether a response needs a one-time invitation token.
    disclosure_prior : float in (0, 1)
        The prior belief in "yes" used to explain the disclosure risk to respondents.
    consent : str
        Consent and contact text shown before the questions (plain text, at most
        10,000 characters; default none).
    min_release : int in [1, 100000], default 30
        The smallest crowd a release adds, overall and to every cell of direct answers
        it touches (:mod:`deniable.collection.store`); below
        :data:`SMALL_RELEASE` only with ``allow_small_release: true``, which the
        respondent page then shows.
    no_lifetime_budget : bool, default False
        The opt-in for a design that can prove an answer (infinite epsilon, even when
        the answer proved is not the sensitive one): no finite lifetime budget can bound
        what it reveals, so the survey id has none, and the respondent page says so.
    allow_small_release : bool, default False
        The opt-in for ``min_release`` below :data:`SMALL_RELEASE`.
    l_diversity : int
        Retired (no rule selects on an answer any more); kept so that stored
        definitions still parse, and ignored.
    release_every : int (seconds) or text like "15m", "1h", default 3600
        The period of scheduled releases, 1 s to 31 days: responses are released at
        these moments (and at the close), never inside an arrival
        (:mod:`deniable.collection.store`).
    allow_unprotected_release : bool, default False
        Store sensitive direct answers and list counts as sent instead of
        post-randomizing them (:mod:`._release`); needs ``no_lifetime_budget``.
    expected_responses : int in [1, 10^9], optional
        How many responses the study plans for; ``survey check`` divides it by the
        number of cells the direct questions make together and warns when a cell
        would hold fewer than ``min_release`` (:meth:`direct_cells`).
    translations : dict of language -> SurveyTranslation
        The survey's texts in other languages of the respondent page
        (:mod:`deniable.collection.model`).
    arms : dict of name -> Arm, optional
        2 to 16 arms; each respondent's device draws one by weight and answers the
        questions with that arm's designs (:meth:`questions_in`). A question costs the
        largest over its arms (and a group design's groups).
    questions : list of Question
        1 to 100 questions with unique ids.

    Raises
    ------
    pydantic.ValidationError
        On any malformed field; use :func:`load_survey` for a :class:`SurveyError`.

    Examples
    --------
    >>> from deniable.collection.model import parse_survey
    >>> survey = parse_survey('''
    ... format: 1
    ... id: health
    ... version: 1
    ... title: Campus health
    ... privacy_budget: 2.0
    ... questions:
    ...   - id: cannabis
    ...     text: Have you used cannabis in the last 12 months?
    ...     design: {name: forced-response, params: {p_yes: 0.2, p_no: 0.2}}
    ... ''')
    >>> survey.id, survey.version, [q.id for q in survey.questions]
    ('health', 1, ['cannabis'])
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal[1] = 1
    id: Slug
    version: int = Field(ge=1, le=1_000_000)
    title: Text
    description: Annotated[str, StringConstraints(max_length=10_000)] = ""
    privacy_budget: float = Field(gt=0, le=MAX_EPSILON, allow_inf_nan=False)
    lifetime_budget: float | None = Field(default=None, gt=0, le=MAX_EPSILON, allow_inf_nan=False)
    requires_invitation: bool = False
    disclosure_prior: float = Field(default=0.5, gt=0, lt=1)
    consent: Annotated[str, StringConstraints(max_length=10_000)] = ""
    min_release: int = Field(default=MIN_RELEASE, ge=1, le=100_000)
    l_diversity: int = Field(default=L_DIVERSITY, ge=1, le=1_000)
    allow_small_release: bool = False
    no_lifetime_budget: bool = False
    release_every: int = DEFAULT_RELEASE_EVERY
    allow_unprotected_release: bool = False
    expected_responses: int | None = Field(default=None, ge=1, le=1_000_000_000)
    translations: dict[Literal["en", "de"], SurveyTranslation] = Field(default_factory=dict)
    arms: dict[Slug, Arm] | None = Field(default=None, min_length=2, max_length=MAX_ARMS)
    questions: list[Question] = Field(min_length=1, max_length=100)
    _arm_questions: dict[str, list[Question]] = PrivateAttr(default_factory=dict)

    @field_validator("arms", mode="before")
    @classmethod
    def _arms_a_mapping(cls, arms: Any) -> Any:
        if isinstance(arms, list):
            raise ValueError(
                "arms is a mapping of each arm's name to its weight and designs: write "
                "arms: {dq: {weight: 1, designs: {QUESTION_ID: {name: direct}}}, rr: "
                "{weight: 2}}, not a list"
            )
        return arms

    @field_validator("arms")
    @classmethod
    def _arms_by_name(cls, arms: dict[str, Arm] | None) -> dict[str, Arm] | None:
        # in the order of their names, as the stored (canonical) definition has them: a
        # stored arm is its position in this order
        return None if arms is None else dict(sorted(arms.items()))

    @field_validator("questions")
    @classmethod
    def _unique(cls, qs: list[Question]) -> list[Question]:
        seen: set[str] = set()
        for q in qs:
            if q.id in seen:
                raise ValueError(f"question id {q.id!r} is used twice")
            seen.add(q.id)
        return qs

    @model_validator(mode="after")
    def _build_arms(self) -> Survey:
        ids = [q.id for q in self.questions]
        for name, arm in (self.arms or {}).items():
            unknown = sorted(set(arm.designs) - set(ids))
            if unknown:
                raise ValueError(f"arms.{name}.designs: no question {', '.join(unknown)}")
            out = arm_questions(self.questions, name, arm)
            self._arm_questions[name] = out
        return self

    @field_validator("release_every", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> int:
        return parse_duration(value)

    @model_validator(mode="after")
    def _protect(self) -> Survey:
        protect(self, self._arm_questions)
        if self.allow_unprotected_release and not self.no_lifetime_budget:
            raise ValueError(
                "allow_unprotected_release: sensitive direct answers stored as sent can be "
                "read by whoever reads the released rows (epsilon infinite); add "
                "no_lifetime_budget: true to say so, or remove allow_unprotected_release"
            )
        return self

    @cached_property
    def key_positions(self) -> tuple[int, ...]:
        """Positions of the key variables (:func:`._release.key_positions`), computed
        once (a published version never changes)."""
        return key_positions(self)

    @cached_property
    def report_plan(self) -> ReportPlan:
        """What a response must hold, computed once: the question ids in order, those
        of group designs, the arms, and per arm each question's number of report codes
        and whether it may be left unanswered."""
        arms = tuple(self.arm_names)
        keys: list[str | None] = list(arms) or [None]
        return ReportPlan(
            ids=tuple(q.id for q in self.questions),
            grouped=tuple(q.id for q in self.questions if len(q.groups) > 1),
            arms=arms,
            arm_index={arm: i for i, arm in enumerate(keys)},
            sizes=tuple(tuple(q.mechanism.n_reports for q in self.questions_in(a)) for a in keys),
            skippable=tuple(tuple(q.allow_no_answer for q in self.questions_in(a)) for a in keys),
            control_counts={q.id: len(q.items or ()) + 1 for q in self.questions if q.is_list},
            channels=tuple(tuple(q.release_channel for q in self.questions_in(a)) for a in keys),
        )

    @property
    def arm_names(self) -> list[str]:
        """The arms' names in the order of their names (empty without arms); a report
        row stores its arm as the position in this list."""
        return list(self.arms or {})

    def questions_in(self, arm: str | None) -> list[Question]:
        """The questions as the respondents of ``arm`` answer them (an arm's designs in
        place of the questions' own); ``None`` on a survey without arms.

        Raises
        ------
        KeyError
            For an arm the survey does not have (or ``None`` on a survey with arms).
        """
        if self.arms is None and arm is None:
            return self.questions
        return self._arm_questions[arm]  # type: ignore[index]

    def variants(self, question_id: str) -> list[Question]:
        """The question as each arm asks it (one entry per arm; the question alone
        without arms)."""
        if self.arms is None:
            return [self.question(question_id)]
        return [next(q for q in self._arm_questions[a] if q.id == question_id) for a in self.arms]

    def question_cost(self, question_id: str) -> float:
        """What the question spends (nats): its largest cost over the arms (and over a
        group design's groups); 0 when every arm asks it directly."""
        return max(q.cost for q in self.variants(question_id))

    @property
    def control_arms(self) -> list[str]:
        """The arms that ask directly a question the others randomize."""
        return [
            name
            for name in self.arm_names
            if any(
                q.is_direct and not base.is_direct
                for q, base in zip(self._arm_questions[name], self.questions, strict=True)
            )
        ]

    @model_validator(mode="after")
    def _proofs(self) -> Survey:
        proving = [
            q.id
            for q in self.questions
            if any(
                not math.isfinite(d.epsilon)
                for v in self.variants(q.id)
                if not v.is_direct
                for d in v.groups
            )
        ]
        if self.no_lifetime_budget and self.lifetime_budget is not None:
            raise ValueError(
                "no_lifetime_budget: a survey without a lifetime budget takes no "
                "lifetime_budget; remove one of the two"
            )
        if proving and not self.no_lifetime_budget:
            raise ValueError(
                f"no_lifetime_budget: {', '.join(proving)} can prove an answer (a report "
                "rules one out: infinite epsilon), so a finite lifetime budget cannot bound "
                "what it reveals. Add no_lifetime_budget: true (the respondent page then "
                "says the survey has no privacy budget), or choose a design with finite "
                "epsilon"
            )
        return self

    @model_validator(mode="after")
    def _small_release(self) -> Survey:
        if self.min_release < SMALL_RELEASE and not self.allow_small_release:
            raise ValueError(
                f"min_release: {self.min_release} is below {SMALL_RELEASE}; a release that "
                "small lets two releases side by side tell a few respondents apart. Raise "
                f"min_release to at least {SMALL_RELEASE}, or add allow_small_release: true "
                "(the respondent page then says how small a crowd a release may add)"
            )
        return self

    @model_validator(mode="after")
    def _budget(self) -> Survey:
        cells = sum(
            d.n_truths * d.n_reports
            for q in self.questions
            for v in self.variants(q.id)
            for d in v.groups
        )
        if cells > MAX_SURVEY_CELLS:
            raise ValueError(
                f"questions: the designs have {cells} matrix cells in all; at most "
                f"{MAX_SURVEY_CELLS} fit on a respondent's page"
            )
        if self.lifetime_budget is not None and self.privacy_budget > self.lifetime_budget:
            raise ValueError(
                f"privacy_budget: {self.privacy_budget:g} nats exceeds lifetime_budget "
                f"{self.lifetime_budget:g}"
            )
        spent = self.total_epsilon
        if spent > self.privacy_budget + BUDGET_SLACK:
            parts = ", ".join(f"{q.id}={self.question_cost(q.id):.6g}" for q in self.questions)
            raise BudgetExceededError(
                [
                    (
                        "privacy_budget",
                        f"the questions spend {spent:.6g} nats ({parts}) but the budget is "
                        f"{self.privacy_budget:g} nats; raise privacy_budget or lower the "
                        "questions' epsilons",
                    )
                ]
            )
        check_translations(
            {str(lang): tr for lang, tr in self.translations.items()},
            {
                q.id: (q.mechanism.n_truths, q.mechanism.n_reports, q.range is not None)
                for q in self.questions
            },
        )
        return self

    @property
    def total_epsilon(self) -> float:
        """What one whole response spends (nats): the sum of the questions' costs, each
        the largest over its arms and groups (:meth:`question_cost`)."""
        return math.fsum(self.question_cost(q.id) for q in self.questions)

    @property
    def lifetime(self) -> float:
        """The lifetime budget of the survey id (nats): ``lifetime_budget`` or, if not
        given, ``privacy_budget``; ``inf`` with ``no_lifetime_budget``."""
        if self.no_lifetime_budget:
            return math.inf
        return self.lifetime_budget if self.lifetime_budget is not None else self.privacy_budget

    def untranslated(self) -> dict[str, list[str]]:
        """Per declared language, the dotted names of the texts its translation leaves as
        written (a design's default labels are translated by the page's catalog)."""
        texts = {"title": self.title, "description": self.description, "consent": self.consent}
        questions = {
            q.id: {
                "text": True,
                "choices": q.choices is not None,
                "reports": q.reports is not None,
                "innocuous_question": q.innocuous_question is not None,
                "innocuous_complement": q.innocuous_complement is not None,
                "unit": bool(q.range and q.range.unit),
            }
            for q in self.questions
        }
        return {
            str(lang): untranslated(tr, texts, questions) for lang, tr in self.translations.items()
        }

    @property
    def direct_questions(self) -> list[Question]:
        """The questions asked directly in every arm and stored as sent (not
        post-randomized): the covariates."""
        return [
            q
            for q in self.questions
            if all(v.is_direct and v.release_channel is None for v in self.variants(q.id))
        ]

    def direct_cells(self) -> int:
        """How many cells the key variables make together (the product of their numbers
        of answers; 1 with none): each combination is a quasi-identifier, and a cell with
        few responses singles out its members (a skipped answer, its own category in the
        release rule, is counted by :func:`~deniable.collection.store.disclosure_report`)."""
        return math.prod(self.questions[i].mechanism.n_truths for i in self.key_positions)

    def question(self, question_id: str) -> Question:
        """The question with this id; KeyError if there is none."""
        for q in self.questions:
            if q.id == question_id:
                return q
        raise KeyError(question_id)

    def canonical_json(self) -> str:
        """The definition as canonical JSON (sorted keys, no whitespace); fields added
        later are left out at their defaults, so a published digest does not change."""
        return canonical_json(self.model_dump(mode="json"))

    @cached_property
    def digest(self) -> str:
        """SHA-256 (hex) of :meth:`canonical_json`: identifies the published content."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    def respondent_view(self, lang: str = "en") -> dict[str, Any]:
        """What the respondent's device needs: matrices, labels, epsilons, explanations.

        Each question carries ``columns`` (``columns[t][r] = Pr(report r | truth t)``,
        the design matrix transposed), its epsilon, the posterior belief an observer
        would hold after each report (at :attr:`disclosure_prior`), and instructions for
        randomizing with a physical coin or die; texts in ``lang`` (one of
        :data:`~deniable.collection.model.LANGUAGES`) where the survey translates them.
        """
        return survey_view(self, lang)


def load_survey(source: str | Path | Mapping[str, Any]) -> Survey:
    """Load and validate a survey from a YAML/JSON file path or an already parsed mapping.

    Parameters
    ----------
    source : str, pathlib.Path or mapping
        A YAML or JSON file (UTF-8), or its content already parsed.

    Returns
    -------
    Survey
        The validated survey (frozen).

    Raises
    ------
    SurveyError
        Naming every invalid field (dotted path) and why; also for unreadable YAML.
    FileNotFoundError
        If the file does not exist.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> [q.id for q in load_survey("examples/campus.yaml").questions]
    ['faculty', 'year', 'cheat', 'plagiarism', 'transplant']
    """
    if isinstance(source, Mapping):
        return _validate(source)
    return parse_survey(Path(source).read_text(encoding="utf-8"))


def parse_survey(text: str) -> Survey:
    """Validate a survey given as YAML or JSON text (JSON is a subset of YAML 1.2).

    Parameters
    ----------
    text : str
        The survey file's text.

    Returns
    -------
    Survey

    Raises
    ------
    SurveyError
        As :func:`load_survey`.

    Examples
    --------
    >>> from deniable.collection.model import parse_survey
    >>> parse_survey('''{"format": 1, "id": "s", "version": 1, "title": "S",
    ...   "privacy_budget": 1.5, "questions": [{"id": "q", "text": "Q?",
    ...   "design": {"name": "warner", "params": {"p": 0.75}}}]}''').questions[0].mechanism
    Warner(p=0.75)
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SurveyError([("survey", f"not valid YAML/JSON: {exc}")]) from None
    return _validate(data, text)


def _validate(data: Any, text: str | None = None) -> Survey:
    if not isinstance(data, Mapping):
        raise SurveyError([("survey", "must be a mapping of fields")])
    try:
        return Survey.model_validate(dict(data))
    except ValidationError as exc:
        raise survey_error(exc, data, text) from None

"""The survey file's building blocks: identifiers, texts and labels, a named design,
a numeric question's range, and a panel question's two layers (re-exported by
:mod:`deniable.collection.model`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from ...mechanisms import (
    DESIGNS,
    Design,
    DuchiMean,
    OneBitMean,
    TwoLayerDesign,
    check_parameters,
    check_question_epsilon,
)
from ._groups import GROUP_DESIGNS
from ._list_question import LIST_EXPERIMENT
from ._survey_designs import survey_design

__all__ = [
    "MAX_CATEGORIES",
    "MAX_RANGE_BOUND",
    "NUMERIC_DESIGNS",
    "SLUG_PATTERN",
    "DesignChoice",
    "Label",
    "NumericRange",
    "Panel",
    "Slug",
    "Text",
    "two_layers",
]

#: Most true answers or report symbols a question may have (bounds every page and
#: matrix before anything is built).
MAX_CATEGORIES = 64

#: Mechanisms a numeric question (one with ``range``) may use: one-bit reports.
NUMERIC_DESIGNS: dict[str, type[DuchiMean] | type[OneBitMean]] = {
    "duchi": DuchiMean,
    "1bitmean": OneBitMean,
}
#: Largest magnitude of a numeric question's bounds.
MAX_RANGE_BOUND = 1e12

#: Identifiers of surveys and questions: lower-case letter, then up to 63 of [a-z0-9_-].
SLUG_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=2000, strip_whitespace=True)]
Label = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]


class DesignChoice(BaseModel):
    """A named design and its parameters (see :data:`deniable.mechanisms._registry.DESIGNS`,
    and :data:`NUMERIC_DESIGNS` for a question with a ``range``).

    ``kary-rr`` takes ``k`` from the question's number of choices when not given.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(
        description="Design name: " + ", ".join([*sorted(DESIGNS), *GROUP_DESIGNS, LIST_EXPERIMENT])
    )
    params: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, data: Any) -> Any:
        if isinstance(data, str):  # "design: direct": say how to write it
            raise ValueError(f"a design is a mapping: write {{name: {data}}}, not {data!r}")
        return data

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        name = v.strip().lower().replace("_", "-")
        known = (*DESIGNS, *NUMERIC_DESIGNS, *GROUP_DESIGNS, LIST_EXPERIMENT)
        if name not in known:
            real = " (its reports are real numbers, which a survey cannot store as report codes)"
            raise ValueError(
                f"unknown design {v!r}{real if name in ('piecewise', 'hybrid') else ''}; "
                f"allowed: {', '.join(sorted(DESIGNS))}; in two groups: "
                f"{', '.join(GROUP_DESIGNS)}; with a range: "
                f"{', '.join(NUMERIC_DESIGNS)}; a count of items: {LIST_EXPERIMENT}"
            )
        return name


class Panel(BaseModel):
    """A question asked again in later waves: ``permanent`` names the permanent layer,
    a design over the question's answers with one report per answer (``warner`` or
    ``kary-rr`` for instance), drawn once per distinct answer on the device; the
    question's ``design`` is the instantaneous layer applied afresh to it in every wave
    (Erlingsson, Pihur & Korolova 2014; :mod:`deniable.mechanisms`).

    Examples
    --------
    >>> from deniable.collection.model import Panel
    >>> Panel(permanent={"name": "warner", "params": {"p": 0.75}}).permanent.name
    'warner'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    permanent: DesignChoice


class NumericRange(BaseModel):
    """The range ``[low, high]`` of a numeric question's answer (finite, ``low < high``,
    each bound at most :data:`MAX_RANGE_BOUND` in magnitude), and its unit (a label
    shown beside the input, e.g. "drinks", at most 40 characters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    low: float = Field(ge=-MAX_RANGE_BOUND, le=MAX_RANGE_BOUND, allow_inf_nan=False)
    high: float = Field(ge=-MAX_RANGE_BOUND, le=MAX_RANGE_BOUND, allow_inf_nan=False)
    unit: Annotated[str, StringConstraints(max_length=40, strip_whitespace=True)] = ""

    @model_validator(mode="after")
    def _ordered(self) -> NumericRange:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low:g}) must be below high ({self.high:g})")
        return self


def two_layers(
    spec: DesignChoice,
    instantaneous: Design,
    labels: tuple[str, ...] | None,
    allow_large_epsilon: bool,
) -> TwoLayerDesign:
    """A panel question's layers: the permanent design ``spec`` (``panel.permanent``)
    under the question's ``design`` (``instantaneous``, over ``k`` answers).

    Raises
    ------
    ValueError
        Naming ``panel.permanent`` if it is not a square design over the ``k`` answers
        (``warner`` for two, ``kary-rr`` with ``k``), its parameters are not valid, it
        can prove an answer, or its epsilon is over the guard.
    """
    k = instantaneous.n_truths
    params: dict[str, Any] = dict(spec.params)
    if survey_design(spec.name).kind != "finite":
        raise ValueError(
            f"panel.permanent: {spec.name!r} is not a design over the answers; use "
            "warner (two answers) or kary-rr"
        )
    if survey_design(spec.name).answers_from_choices:
        params.setdefault("k", k)
        if params["k"] != k:
            raise ValueError(
                f"panel.permanent.params.k must be {k} (the answers), got {params['k']:g}"
            )
        params["k"] = k
    try:
        check_parameters("panel.permanent", spec.name, DESIGNS[spec.name], params)
        permanent = DESIGNS[spec.name](**params)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"panel.permanent.params: {exc}") from None
    try:
        two = TwoLayerDesign(permanent, instantaneous, truth_labels=labels)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    if permanent.requires_opt_in:
        raise ValueError(
            f"panel.permanent: {spec.name!r} with these parameters can prove an answer "
            "(infinite epsilon); the permanent layer must protect every answer"
        )
    check_question_epsilon(permanent.epsilon, "panel.permanent", allow_large_epsilon)
    return two


def numeric_mechanism(
    design: DesignChoice, value_range: NumericRange, allow_large_epsilon: bool
) -> DuchiMean | OneBitMean:
    """A numeric question's one-bit mechanism from ``design: {name, params: {epsilon}}``.

    Raises
    ------
    ValueError
        Naming ``design.params`` when they are not exactly ``{epsilon}`` with epsilon > 0
        nats (and within the guard, :func:`check_question_epsilon`).
    """
    extra = sorted(set(design.params) - {"epsilon"})
    if extra or "epsilon" not in design.params:
        raise ValueError(
            f"design.params of {design.name!r} must be exactly {{epsilon}}"
            + (f"; got {', '.join(extra)}" if extra else "")
        )
    eps = design.params["epsilon"]
    if not eps > 0:
        raise ValueError(f"design.params.epsilon must be > 0 nats, got {eps:g}")
    check_question_epsilon(eps, "design", allow_large_epsilon)
    return NUMERIC_DESIGNS[design.name](eps, low=value_range.low, high=value_range.high)

"""Survey questions: a choice or a number, its design, labels and privacy cost (the
survey file and its privacy accounting: :mod:`deniable.collection.model`).

Numeric questions: a question with a ``range`` asks for a number in ``[low, high]`` and
randomizes it with a one-bit mechanism: Duchi, Jordan & Wainwright's (2018) ``duchi`` or
Ding, Kulkarni & Yekhanin's (2017) ``1bitmean`` (the same report distribution: the bit
is 1 with probability ``(1 + z (e^eps - 1)) / (e^eps + 1)``, ``z = (v - low) / (high -
low)``). That probability is linear in ``z``, so the report is exactly Warner's (1965)
design with ``p = e^eps / (e^eps + 1)`` applied to ``v`` rounded at random to ``low``
(chance ``1 - z``) or ``high`` (chance ``z``): :attr:`Question.mechanism` is that Warner
design over the truths ``[low, high]``, the stored report is its code (0 or 1), the
question costs ``eps``, and the mean of ``v`` is ``low + (high - low) pi`` with ``pi``
the estimated prevalence of ``high`` (:meth:`Question.mean_estimate`). Mechanisms whose
reports are real numbers (``piecewise``, ``hybrid``) cannot be stored as report codes.
"""

from __future__ import annotations

from ..._extras import require

require("pydantic", "server")

import hashlib
import itertools
import json
import math
from functools import cached_property
from typing import Annotated, Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ...mechanisms import (
    DESIGNS,
    Design,
    Direct,
    DuchiMean,
    ForcedResponse,
    KaryRR,
    OneBitMean,
    TwoLayerDesign,
    UnrelatedQuestion,
    Warner,
    check_parameters,
    check_question_epsilon,
    protected_epsilon,
)
from ...planning import DisclosureRisk, answer_odds_factors, disclosure_risk
from ._fields import (
    MAX_CATEGORIES,
    NUMERIC_DESIGNS,
    DesignChoice,
    Label,
    NumericRange,
    Panel,
    Slug,
    Text,
    numeric_mechanism,
    two_layers,
)
from ._groups import GROUP_DESIGNS, check_innocuous, check_validation_item, group_design
from ._list_question import MAX_LIST_ITEMS, build_list_question
from ._meaning import check_meaning_ids
from ._numeric_answers import NumericAnswers
from ._survey_designs import survey_design

__all__ = ["Question"]


class Question(NumericAnswers, BaseModel):
    """One question: randomized by its design, or asked directly (``direct``).

    Attributes
    ----------
    id : str
        Lower-case slug, unique in the survey.
    text : str
        The question as shown to respondents.
    choices : list of str, optional
        Labels of the true answers (default the design's, ``["no", "yes"]`` for binary
        designs); their number must equal the design's number of truths.
    choice_ids : list of str, optional
        The canonical ids of ``choices`` (in the same order, up to 200 characters each;
        default the labels themselves): what the design digest covers, so that a
        label's wording can be corrected without changing what a report means
        (:mod:`._meaning`).
    reports : list of str, optional
        Labels of the report symbols (default the design's).
    design : DesignChoice
    innocuous_question : str, optional
        The innocuous question of an unrelated-question or crosswise design, shown to
        respondents who randomize physically.
    sensitive : list of str, optional
        The sensitive answers (labels among ``choices``); default every answer except
        one labelled "no" (every answer if none is).
    allow_infinite_epsilon : bool
        Opt in to a one-sided design (infinite epsilon), allowed only when no report can
        prove a sensitive answer.
    allow_large_epsilon : bool
        Opt in to a cost above 5 nats (never above 30).
    allow_no_answer : bool
        A direct question may be left unanswered ("prefer not to say"): the response
        sends ``null`` for it, and it is stored as missing.
    bins : list of float, optional
        A direct question with a ``range``: the edges of the categories its numbers are
        counted in (``low`` first, ``high`` last, increasing; 2 to 64 bins); the
        device sends the bin of the number entered (:meth:`bin_of`).
    control : "zero", optional
        A zero-prevalence control item (Höglinger & Diekmann 2017): its estimate
        measures false positives.
    known_prevalence : float in [0, 1], optional
        A validation item's known prevalence (two answers): below it, false negatives;
        above, false positives (:func:`deniable.analysis.validation_check`).
    innocuous_complement : str, optional
        Group 1's innocuous question of ``extended-crosswise`` (the complement of
        ``innocuous_question``, true for ``1 - p`` of people).
    items, sensitive_item : list of str, str, optional
        A list experiment's 2 to 20 control items and its sensitive item (:mod:`._list_question`).
    item_ids, sensitive_item_id : list of str, str, optional
        Their canonical ids (default the texts), as ``choice_ids``.
    pram : bool, default False
        A question asked directly in every arm whose answer is sensitive: the server
        post-randomizes it before storing (PRAM, :mod:`._release`), as it does a
        question some arm asks directly and another randomizes.
    release_epsilon : float in (0, 30], optional
        Nats of the post-randomization of the question's direct answers (default: the
        smallest epsilon among the arms that randomize it, ln 9 where none does;
        :mod:`._release`).
    panel : Panel, optional
        Two layers for a question asked in several waves: ``design`` is applied to every
        report sent (the instantaneous layer), ``panel.permanent`` is drawn once per
        distinct answer on the device. The question's :attr:`mechanism` is then the
        composed channel, its :attr:`epsilon` what one report reveals (epsilon_1), its
        :attr:`cost` the permanent layer's epsilon (epsilon_inf, the bound of one device
        per distinct answer); the ledgers charge what a report from a new device costs
        in every wave (:mod:`deniable.collection.model`).
    range : NumericRange, optional
        Makes the question numeric: the respondent enters a number in ``[low, high]``,
        randomized by ``duchi`` or ``1bitmean`` (``params: {epsilon}``, in nats); no
        ``choices``, ``reports``, ``sensitive`` or ``innocuous_question``.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> cheat = load_survey("examples/campus.yaml").questions[2]
    >>> cheat.id, cheat.mechanism, cheat.report_labels
    ('cheat', ForcedResponse(p_yes=0.25, p_no=0.25), ['no', 'yes'])
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: Slug
    text: Text
    choices: list[Label] | None = Field(default=None, min_length=2, max_length=MAX_CATEGORIES)
    choice_ids: list[Label] | None = Field(default=None, min_length=2, max_length=MAX_CATEGORIES)
    reports: list[Label] | None = Field(default=None, min_length=2, max_length=MAX_CATEGORIES)
    design: DesignChoice
    innocuous_question: Text | None = None
    sensitive: list[Label] | None = Field(default=None, min_length=1, max_length=MAX_CATEGORIES)
    allow_infinite_epsilon: bool = False
    allow_large_epsilon: bool = False
    range: NumericRange | None = None
    allow_no_answer: bool = False
    bins: list[Annotated[float, Field(allow_inf_nan=False)]] | None = Field(
        default=None, min_length=3, max_length=MAX_CATEGORIES + 1
    )
    control: Literal["zero"] | None = None
    known_prevalence: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | None = None
    innocuous_complement: Text | None = None
    items: list[Text] | None = Field(default=None, max_length=MAX_LIST_ITEMS)
    sensitive_item: Text | None = None
    item_ids: list[Label] | None = Field(default=None, max_length=MAX_LIST_ITEMS)
    sensitive_item_id: Label | None = None
    panel: Panel | None = None
    pram: bool = False
    release_epsilon: float | None = Field(default=None, gt=0, le=30, allow_inf_nan=False)
    _design: Design = PrivateAttr()
    _release: Design | None = PrivateAttr(default=None)
    _groups: tuple[Design, ...] = PrivateAttr(default=())
    _numeric: DuchiMean | OneBitMean | None = PrivateAttr(default=None)
    _cost: float = PrivateAttr()

    @model_validator(mode="after")
    def _build(self) -> Question:
        entry = survey_design(self.design.name)
        direct = entry.is_direct
        check_meaning_ids(self)
        if self.range is None and entry.kind == "numeric":
            raise ValueError(
                f"design {self.design.name!r} randomizes a number: give the question a "
                "range: {low, high}"
            )
        if entry.kind == "list" or self.items or self.sensitive_item:
            return build_list_question(self)
        if self.allow_no_answer and not direct:
            raise ValueError(
                "allow_no_answer: only a direct question may go unanswered (a randomized "
                "question always sends a report, so that sending one reveals nothing)"
            )
        if self.bins is not None and not (direct and self.range):
            raise ValueError("bins: only a direct question with a range takes bins")
        if self.control is not None and (direct or self.range):
            raise ValueError("control: only a randomized question with choices can be a control")
        check_validation_item(self.design.name, bool(self.range), len(self.choices or "ab"), self)
        check_innocuous(self.design.name, self.innocuous_question, self.range is not None)
        if self.innocuous_complement is not None and not entry.complement:
            raise ValueError("innocuous_complement: only an extended-crosswise question takes one")
        if self.panel is not None and (entry.kind == "group" or self.is_direct):
            raise ValueError(
                f"panel: a {self.design.name!r} question takes no panel (a direct question "
                "is sent as given; a group design is drawn per group): give panel to a "
                "question randomized by one design"
            )
        if entry.kind == "group":
            return self._build_groups()
        if self.range is not None and direct:
            return self._build_binned()
        if self.range is not None:
            return self._build_numeric()
        params: dict[str, Any] = dict(self.design.params)
        for name in entry.whole_params:  # sizes are bounded before anything is allocated
            if name not in params:
                continue
            if not 1 <= params[name] <= MAX_CATEGORIES:
                raise ValueError(
                    f"design.params.{name} must be in 1..{MAX_CATEGORIES}, got {params[name]:g}"
                )
            if not float(params[name]).is_integer():
                raise ValueError(
                    f"design.params.{name} must be a whole number, got {params[name]:g}"
                )
            params[name] = int(params[name])
        if direct:
            for name in ("reports", "sensitive", "innocuous_question"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name}: a direct question (sent as given) takes none; it is "
                        "outside the privacy accounting"
                    )
            if set(params) - {"k"}:
                raise ValueError("design.params of 'direct' take at most k")
        if entry.answers_from_choices:
            if self.choices is None and "k" not in params and not direct:
                raise ValueError(f"{entry.name} needs choices (or params.k)")
            params.setdefault("k", len(self.choices or ["no", "yes"]))
            if self.choices is not None:
                params["labels"] = tuple(self.choices)
        try:
            check_parameters("design", self.design.name, DESIGNS[self.design.name], params)
        except ValueError as exc:
            raise ValueError(f"design.params: {exc}") from None
        try:
            design = DESIGNS[self.design.name](**params)
        except TypeError as exc:
            raise ValueError(f"design.params do not fit {self.design.name!r}: {exc}") from None
        if self.choices is not None and len(self.choices) != design.n_truths:
            raise ValueError(
                f"choices has {len(self.choices)} labels but design {self.design.name!r} "
                f"has {design.n_truths} true answers"
            )
        if self.reports is not None and len(self.reports) != design.n_reports:
            raise ValueError(
                f"reports has {len(self.reports)} labels but design {self.design.name!r} "
                f"has {design.n_reports} report symbols"
            )
        check_validation_item(self.design.name, False, design.n_truths, self)
        if direct:  # outside the accounting: protects nothing
            self._design, self._cost = design, 0.0
            return self
        if self.panel is not None:
            return self._build_panel(design)
        self._design = design
        self._cost = self._cost_of(design)
        return self

    def _build_panel(self, instantaneous: Design) -> Question:
        """The two layers: ``design`` instantaneous, ``panel.permanent`` permanent; the
        mechanism is their composition, the cost the permanent layer's epsilon."""
        assert self.panel is not None
        self._design = instantaneous  # labels, until the composition replaces it
        if self._numeric is None:
            self._cost_of(instantaneous)  # checks `sensitive` and a one-sided design's opt-in
        labels = tuple(self.choice_labels) if self.range is None else None
        self._design = two_layers(
            self.panel.permanent, instantaneous, labels, self.allow_large_epsilon
        )
        self._cost = self._design.epsilon_inf
        return self

    def _cost_of(self, design: Design) -> float:
        """The nats a randomizer spends: its epsilon, or a one-sided design's protected
        epsilon (with the opt-in); checked against the guard."""
        if design.requires_opt_in and not self.allow_infinite_epsilon:
            raise ValueError(
                f"design {self.design.name!r} has infinite epsilon (one answer is never "
                "protected); set allow_infinite_epsilon: true to use it"
            )
        labels = self.choice_labels
        if self.sensitive is not None:
            unknown = sorted(set(self.sensitive) - set(labels))
            if unknown:
                raise ValueError(f"sensitive names {unknown}, which are not among {labels}")
        cost = design.epsilon
        if math.isinf(cost):
            cost = protected_epsilon(design.matrix, self.sensitive_indices)
            if math.isinf(cost):
                raise ValueError(
                    f"design: a report of {self.design.name!r} with these parameters proves "
                    f"a sensitive answer ({', '.join(labels[i] for i in self.sensitive_indices)})"
                    "; no opt-in allows that. Make every report possible under every answer"
                )
        check_question_epsilon(cost, "design", self.allow_large_epsilon)
        return cost

    def _build_groups(self) -> Question:
        """A group design (:mod:`.groups`): two randomizers, the cost the larger."""
        if self.range is not None:
            raise ValueError(f"range: design {self.design.name!r} asks a yes/no question")
        if self.choices is not None and len(self.choices) != 2:
            raise ValueError(f"choices: design {self.design.name!r} has 2 true answers (no, yes)")
        if self.reports is not None and len(self.reports) != 2:
            raise ValueError(f"reports: design {self.design.name!r} has 2 report symbols")
        self._groups = group_design(self.design.name, self.design.params)
        self._design = self._groups[0]
        self._cost = max(self._cost_of(d) for d in self._groups)
        return self

    @property
    def groups(self) -> tuple[Design, ...]:
        """The randomizer of each group of a group design (:mod:`.groups`), in group
        order; a single design otherwise."""
        return self._groups or (self._design,)

    @property
    def group_channel(self) -> Any:
        """The :class:`~deniable.analysis._group_channels.Channel` the analysis fits to a group
        design's reports and groups (labels 0 and 1); ``None`` for other questions."""
        spec = GROUP_DESIGNS.get(self.design.name)
        return None if spec is None else spec.channel(self.design.params)

    def _build_binned(self) -> Question:
        """A direct numeric question: the device sends the bin of the number entered."""
        assert self.range is not None
        edges = self.bins
        if edges is None:
            raise ValueError(
                "bins: a direct question with a range needs bins, the edges of the "
                f"categories counted (from low {self.range.low:g} to high {self.range.high:g})"
            )
        if edges[0] != self.range.low or edges[-1] != self.range.high:
            raise ValueError(
                f"bins must start at low ({self.range.low:g}) and end at high "
                f"({self.range.high:g}), got {edges[0]:g} .. {edges[-1]:g}"
            )
        if any(b <= a for a, b in itertools.pairwise(edges)):
            raise ValueError("bins must increase strictly")
        for name in ("choices", "reports", "sensitive", "innocuous_question"):
            if getattr(self, name) is not None:
                raise ValueError(f"{name}: a direct numeric question (with bins) takes none")
        labels = tuple(f"{a:g}–{b:g}" for a, b in itertools.pairwise(edges))
        self._design = Direct(k=len(labels), labels=labels)
        self._cost = 0.0
        return self

    def _build_numeric(self) -> Question:
        assert self.range is not None
        if self.design.name not in NUMERIC_DESIGNS:
            raise ValueError(
                f"design: a question with a range needs one of {', '.join(NUMERIC_DESIGNS)}, "
                f"got {self.design.name!r}"
            )
        for name in ("choices", "reports", "sensitive", "innocuous_question"):
            if getattr(self, name) is not None:
                raise ValueError(f"{name}: a numeric question (with a range) takes none")
        numeric = numeric_mechanism(self.design, self.range, self.allow_large_epsilon)
        e = math.exp(numeric.epsilon)
        self._numeric = numeric
        if self.panel is not None:  # the rounded bound is the answer of both layers
            return self._build_panel(Warner(p=e / (e + 1.0)))
        self._design = Warner(p=e / (e + 1.0))
        self._cost = numeric.epsilon
        return self

    @property
    def is_direct(self) -> bool:
        """Whether the answer is sent as given (``direct``, or a list experiment's count):
        never memoized, costs no budget as it protects nothing (listed apart)."""
        return survey_design(self.design.name).kind in ("direct", "list")

    @property
    def release_channel(self) -> Design | None:
        """The channel the server applies to this question's direct answer before it is
        stored (PRAM, :mod:`._release`); ``None`` where the answer is stored as sent
        (a randomized report, a key variable, or ``allow_unprotected_release``)."""
        return self._release

    def with_release(self, channel: Design) -> Question:
        """This direct question with the server's post-randomization ``channel``: its
        :attr:`mechanism` becomes the channel (what the stored code went through, so
        every analysis undoes it) and its :attr:`cost` the channel's epsilon."""
        out = Question.model_validate(self.model_dump(exclude_defaults=True))
        out._design = channel
        if out._groups:  # a list's two groups: one channel over 0..J+1 in both
            out._groups = (channel, channel)
        out._cost = channel.epsilon
        out._release = channel
        return out

    @property
    def is_list(self) -> bool:
        """Whether the question is a list experiment (:mod:`._list_question`)."""
        return survey_design(self.design.name).kind == "list"

    @property
    def numeric(self) -> DuchiMean | OneBitMean | None:
        """The numeric mechanism of a question with a ``range`` (else ``None``)."""
        return self._numeric

    @property
    def sensitive_indices(self) -> list[int]:
        """Indices of the sensitive true answers (see ``sensitive``)."""
        labels = self.choice_labels
        if self.sensitive is not None:
            return [i for i, label in enumerate(labels) if label in self.sensitive]
        no = [i for i, label in enumerate(labels) if label.strip().lower() == "no"]
        return [i for i in range(len(labels)) if i not in no[:1]]

    @property
    def cost(self) -> float:
        """Nats this question spends: its epsilon, or for a one-sided design its
        protected likelihood ratio (always finite, at most 30); 0 for a direct question,
        which is outside the accounting (:attr:`is_direct`)."""
        return self._cost

    @cached_property
    def content_digest(self) -> str:
        """SHA-256 (hex) of what the respondent answers and how it is randomized: id,
        text, answer and report labels, design name and matrix. Equal digests across
        versions mean the device may reuse its memoized report."""
        content = {"id": self.id, **self._answered()}
        if self.range is not None:  # absent for other questions: their digests are unchanged
            content["range"] = self.range.model_dump()
        return self._hash(content)

    def _answered(self) -> dict[str, Any]:
        """What both digests cover: text, labels, design name and matrix."""
        return {
            "text": self.text,
            "choices": self.choice_labels,
            "reports": self.report_labels,
            "design": self.design.name,
            "matrix": self._design.matrix.round(15).tolist(),
        }

    def _hash(self, content: dict[str, Any]) -> str:
        """SHA-256 of ``content`` with the groups, panel and list where there are (absent
        otherwise, so that other questions' digests are unchanged)."""
        if self._groups:
            content["groups"] = [d.matrix.round(15).tolist() for d in self._groups]
        if self.panel is not None:
            content["panel"] = self.permanent_key
        if self.is_list:  # new items make a new question
            content["list"] = [*(self.items or ()), self.sensitive_item]
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()

    @property
    def validation_prevalence(self) -> float | None:
        """A validation item's known prevalence (0 for ``control: zero``), else ``None``."""
        return 0.0 if self.control == "zero" else self.known_prevalence

    @cached_property
    def memo_digest(self) -> str:
        """SHA-256 (hex) of what the respondent answers and how it is randomized, without
        the question's id: text, answer and report labels, design name and matrix (and
        range). A device memoizes its report under this and the owner, so the same
        question under a new version or another survey id reuses the report."""
        range_ = self.range.model_dump() if self.range is not None else None
        return self._hash(self._answered() | {"range": range_})

    @property
    def two_layer(self) -> TwoLayerDesign | None:
        """A panel question's two layers (:class:`~deniable.mechanisms.TwoLayerDesign`,
        also its :attr:`mechanism`); ``None`` without ``panel``."""
        return self._design.two_layer

    @property
    def epsilon_inf(self) -> float:
        """Nats every report of one answer on one device reveals over any number of
        waves: the permanent layer's epsilon with ``panel``, else :attr:`epsilon`."""
        two = self.two_layer
        return two.epsilon_inf if two is not None else self.epsilon

    @cached_property
    def permanent_key(self) -> str | None:
        """SHA-256 (hex) of what fixes a panel question's permanent reports: text,
        answer labels, range and the permanent matrix (not the instantaneous layer, so a
        new instantaneous design keeps them); ``None`` without ``panel``."""
        two = self.two_layer
        if two is None:
            return None
        content = {
            "text": self.text,
            "choices": self.choice_labels,
            "range": self.range.model_dump() if self.range is not None else None,
            "permanent": two.permanent.matrix.round(15).tolist(),
        }
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()

    @property
    def mechanism(self) -> Design:
        """The built :class:`~deniable.mechanisms.Design` (``design``: its name, parameters)."""
        return self._design

    @property
    def epsilon(self) -> float:
        """Epsilon of this question's design, in nats (``inf`` for one-sided designs)."""
        if self._numeric is not None and self.panel is None:
            return self._numeric.epsilon
        return max(d.epsilon for d in self.groups)  # a group design: its larger

    @property
    def choice_labels(self) -> list[str]:
        """Labels of the true answers (a numeric question's: its bounds, ``[low, high]``)."""
        if self.bins is not None:  # a direct numeric question: its bins
            return list(self._design.truth_labels)
        if self.range is not None:
            return [f"{self.range.low:g}", f"{self.range.high:g}"]
        return list(self.choices or self._design.truth_labels)

    @property
    def report_labels(self) -> list[str]:
        """Labels of the report symbols (a numeric question's: ``["0", "1"]``, 1 pointing
        towards ``high``)."""
        if self.bins is not None:
            return list(self._design.report_labels)
        if self.range is not None:
            return ["0", "1"]
        if self.reports is not None:
            return list(self.reports)
        same_symbols = KaryRR | Warner | ForcedResponse | UnrelatedQuestion
        two = self.two_layer
        applied = two.instantaneous if two is not None else self._design
        if self.choices is not None and isinstance(applied, same_symbols):
            return list(self.choices)
        return list(self._design.report_labels)

    def prior(self, prior_yes: float) -> NDArray[np.float64]:
        """The prior over true answers used for this question's disclosure risk.

        Binary questions use ``prior_yes`` (in [0, 1]) on "yes"; questions with k > 2
        answers use the uniform prior (no category is singled out). Shape ``(k,)``.
        """
        k = self._design.n_truths
        if k == 2:
            return np.array([1.0 - prior_yes, prior_yes])
        return np.full(k, 1.0 / k)

    @cached_property
    def odds_factors(self) -> list[float]:
        """Per true answer (aligned with :attr:`choice_labels`), the largest factor by
        which a report can multiply the odds of that answer against another
        (:func:`~deniable.planning.answer_odds_factors`; ``inf`` where a report proves
        it), over every answer whatever ``sensitive`` says. A numeric question's is its
        mechanism's ``exp(epsilon)`` for both bounds."""
        if self._numeric is not None:
            return [math.exp(self._numeric.epsilon)] * 2
        factors = np.max([answer_odds_factors(d.matrix) for d in self.groups], axis=0)
        return [float(x) for x in factors]  # a group design: the larger of its groups'

    @property
    def exposed_answers(self) -> list[str]:
        """Labels of the answers some report proves (an infinite :attr:`odds_factors`):
        whoever reads that report knows the answer for certain."""
        labels = self.choice_labels
        return [labels[i] for i, f in enumerate(self.odds_factors) if math.isinf(f)]

    def disclosure_risk(self, prior_yes: float) -> DisclosureRisk:
        """:func:`~deniable.planning.disclosure_risk` of this question at :meth:`prior`."""
        return disclosure_risk(self._design, self.prior(prior_yes))

"""The respondent's view of a survey and its questions: what the device needs to
randomize them and to explain, in the page's language, what the server will learn."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ...mechanisms import Design, Direct
from ...planning import answer_odds_factors, disclosure_risk
from ._i18n import QuestionTranslation, SurveyTranslation, catalog, default_label
from ._meaning import design_digest
from ._questions import Question
from ._recipes import physical_instructions

if TYPE_CHECKING:
    from ._survey import Survey

__all__ = ["question_view", "survey_view"]


def question_view(
    q: Question, tr: SurveyTranslation | None, lang: str, prior_yes: float
) -> dict[str, Any]:
    """What the respondent's device needs of one question (see
    :meth:`~deniable.collection.model.Survey.respondent_view`): texts in ``lang``, the
    matrix columns, epsilon, the disclosure at ``prior_yes`` (in (0, 1)), instructions
    for randomizing by hand, and for a group design each group's own."""
    release = q.release_channel
    # what the device applies: a post-randomized direct answer is sent as given
    d = q.mechanism if release is None else Direct(k=release.n_truths, labels=release.truth_labels)
    qt = tr.questions.get(q.id) if tr else None
    choices, reports = _labels(q, qt, lang)
    innocuous = (qt and qt.innocuous_question) or q.innocuous_question
    how = physical_instructions(q, lang, choices, reports, innocuous)
    view = {
        "id": q.id,
        "text": (qt and qt.text) or q.text,
        "choices": choices,
        "reports": reports,
        # what the device applies to each report: a panel question's instantaneous layer
        "columns": (q.two_layer.instantaneous if q.two_layer else d).matrix.T.tolist(),
        "epsilon": _json_float(q.epsilon if release is None else d.epsilon),
        # the server's post-randomization before the first write: what whoever reads the
        # stored data or the releases can learn of the answer (docs/collection.md)
        "release": None
        if release is None
        else {"channel": release.spec, "epsilon": _json_float(release.epsilon)},
        "cost": q.cost,
        "sensitive": [choices[i] for i in q.sensitive_indices],
        "memo_key": q.memo_digest,
        "design_digest": design_digest(q),
        "direct": q.is_direct,
        "allow_no_answer": q.allow_no_answer,
        "bins": q.bins,
        "design": q.design.name,
        "params": q.numeric.params if q.numeric is not None else d.params,
        "disclosure": _disclosure(q, prior_yes),
        "instructions": how,
        # a panel question's permanent draw is the device's to keep: never by hand
        "by_hand": how != catalog(lang)["instructions"]["no_recipe"] and q.panel is None,
        "innocuous_question": innocuous,
        "numeric": q.range and q.range.model_dump() | ({"unit": qt.unit} if qt and qt.unit else {}),
        "groups": [],
        "panel": None,
    }
    if q.two_layer is not None:  # two layers: the device keeps the permanent one
        e_inf, e_1 = q.epsilon_inf, q.epsilon
        view["panel"] = {
            "columns": q.two_layer.permanent.matrix.T.tolist(),
            "epsilon_inf": e_inf,
            "key": q.permanent_key,
            "note": catalog(lang)["panel_note"].format(
                times=f"{math.exp(e_inf):.3g}", eps=f"{e_inf:.2f}", one=f"{math.exp(e_1):.3g}"
            ),
        }
    if q.is_list:
        return view | _list_view(q, qt, lang)
    if len(q.groups) > 1:  # a group design: what each group's device shows
        complement = (
            (qt and qt.innocuous_complement)
            or q.innocuous_complement
            or (innocuous and catalog(lang)["not_question"].format(question=innocuous))
        )
        for g, design in enumerate(q.groups):
            inn = innocuous if g == 0 else complement
            how = physical_instructions(q, lang, choices, reports, inn, design)
            view["groups"].append(
                {
                    "columns": design.matrix.T.tolist(),
                    "epsilon": _json_float(design.epsilon),
                    "disclosure": _disclosure(q, prior_yes, design),
                    "instructions": how,
                    "by_hand": how != catalog(lang)["instructions"]["no_recipe"],
                    "innocuous_question": inn,
                }
            )
    return view


def _list_view(q: Question, qt: QuestionTranslation | None, lang: str) -> dict[str, Any]:
    """A list experiment's view (:mod:`._list_question`): no recipe (nothing is
    randomized), the note that a count of 0 or of every item is seen for certain, and
    per group the list shown and the counts it allows (group 1's list ends with the
    sensitive item)."""
    own = list(q.items or [])
    items = list(qt.items) if qt and qt.items and len(qt.items) == len(own) else own
    sensitive = (qt and qt.sensitive_item) or q.sensitive_item
    note = catalog(lang)["list_note"]
    groups = []
    for shown in (items, [*items, sensitive]):
        counts = [str(c) for c in range(len(shown) + 1)]
        groups.append(
            {
                "items": shown,
                "choices": counts,
                "reports": counts,
                "list_note": note.format(all=len(shown)),
            }
        )
    return {"instructions": None, "by_hand": False, "list": True, "groups": groups}


def _labels(q: Question, qt: QuestionTranslation | None, lang: str) -> tuple[list[str], list[str]]:
    """A question's answer and report labels in ``lang``: the translation's, else the
    survey's own as written, else the design's defaults through the catalog."""
    if qt and qt.choices:
        choices = list(qt.choices)
    elif q.choices is not None or q.range is not None:
        choices = q.choice_labels
    else:
        choices = [default_label(label, lang) for label in q.choice_labels]
    if qt and qt.reports:
        reports = list(qt.reports)
    elif q.reports is not None:
        reports = q.report_labels
    elif q.report_labels == q.choice_labels:  # the same symbols: follow the answers
        reports = choices
    else:
        reports = [default_label(label, lang) for label in q.report_labels]
    return choices, reports


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


def _disclosure(q: Question, prior_yes: float, design: Design | None = None) -> dict[str, Any]:
    """The posterior after each report and each answer's largest odds factor, for the
    question's design or one group's (``design``)."""
    if design is None:
        risk = q.disclosure_risk(prior_yes)
        factors = q.odds_factors
    else:
        risk = disclosure_risk(design, q.prior(prior_yes))
        factors = [float(x) for x in answer_odds_factors(design.matrix)]
    post = risk.posterior
    return {
        "prior": q.prior(prior_yes).tolist(),
        "posterior": [[None if np.isnan(x) else float(x) for x in row] for row in post],
        # per answer (null: some report proves it), whatever `sensitive` says; a
        # numeric question keeps its mechanism's single factor
        "max_odds_factor": (
            math.exp(q.epsilon)
            if q.numeric is not None
            else [float(f"{f:.12g}") if math.isfinite(f) else None for f in factors]
        ),
    }


def survey_view(survey: Survey, lang: str) -> dict[str, Any]:
    """:meth:`Survey.respondent_view <deniable.collection.model._survey.Survey.respondent_view>`:
    the survey's texts in ``lang``, each question's :func:`question_view`, each arm's
    questions that differ from the survey's own, and the flags the page shows.

    Raises
    ------
    ValueError
        For a language not in :data:`~deniable.collection.model.LANGUAGES`.
    """
    catalog(lang)  # refuses an unknown language
    tr = survey.translations.get(lang)  # type: ignore[call-overload]
    out: dict[str, Any] = {
        "id": survey.id,
        "version": survey.version,
        "lang": lang,
        "title": (tr and tr.title) or survey.title,
        "description": (tr and tr.description) or survey.description,
        "consent": (tr and tr.consent) or survey.consent,
        "requires_invitation": survey.requires_invitation,
        "privacy_budget": survey.privacy_budget,
        "total_epsilon": survey.total_epsilon,
        "digest": survey.digest,
    }
    prior = survey.disclosure_prior
    out["questions"] = [question_view(q, tr, lang, prior) for q in survey.questions]
    # each arm's questions that differ from the survey's own; the device draws an
    # arm by weight and shows only its questions (and one group of a group design)
    out["arms"] = [
        {
            "id": name,
            "weight": arm.weight,
            "questions": {
                q.id: question_view(q, tr, lang, prior)
                for q in survey.questions_in(name)
                if q.id in arm.designs
            },
        }
        for name, arm in (survey.arms or {}).items()
    ]
    out["control_arm"] = bool(survey.control_arms)
    out["no_lifetime_budget"] = survey.no_lifetime_budget
    return out

"""The respondent page's languages: message catalogs and survey translations.

Every text the respondent page shows comes from a catalog,
``deniable/collection/model/messages/{lang}.json`` (:data:`LANGUAGES`: English and German);
the page's language is the one asked for with ``?lang=``, else the first of the
browser's ``Accept-Language`` that has a catalog, else English. A survey file may carry
translations of its own texts (``translations: {de: {title, description, consent,
questions: {id: {text, choices, reports, innocuous_question, unit}}}}``); what a
translation leaves out is shown as written, except the labels a design gives when the
survey names none ("no", "yes", "different", "same", ...), which the catalog translates
(:func:`default_label`). ``survey check`` lists what a declared language leaves
untranslated (:func:`untranslated`). A question's memo key does not depend on the
language, so switching languages never draws a report again.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = [
    "LANGUAGES",
    "QuestionTranslation",
    "SurveyTranslation",
    "catalog",
    "check_translations",
    "choose_language",
    "default_label",
    "untranslated",
]

#: Languages with a catalog; the first is the default.
LANGUAGES = ("en", "de")

_Text = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
_Long = Annotated[str, StringConstraints(max_length=10_000)]
_Label = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class QuestionTranslation(BaseModel):
    """A question's texts in another language (each optional)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: _Text | None = None
    choices: list[_Label] | None = Field(default=None, max_length=64)
    reports: list[_Label] | None = Field(default=None, max_length=64)
    innocuous_question: _Text | None = None
    innocuous_complement: _Text | None = None
    items: list[_Text] | None = Field(default=None, max_length=20)
    sensitive_item: _Text | None = None
    unit: Annotated[str, StringConstraints(max_length=40)] | None = None


class SurveyTranslation(BaseModel):
    """A survey's texts in another language (each optional)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: _Text | None = None
    description: _Long | None = None
    consent: _Long | None = None
    questions: dict[str, QuestionTranslation] = Field(default_factory=dict, max_length=100)


@functools.cache
def catalog(lang: str) -> dict[str, Any]:
    """The message catalog of ``lang`` (one of :data:`LANGUAGES`).

    Raises
    ------
    ValueError
        For a language without a catalog.
    """
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    text = (resources.files("deniable.collection.model") / "messages" / f"{lang}.json").read_text(
        encoding="utf-8"
    )
    messages: dict[str, Any] = json.loads(text)
    return messages


def choose_language(requested: str | None, accept_language: str | None) -> str:
    """``requested`` if it has a catalog, else the best of ``Accept-Language`` (by its
    q-values, RFC 9110 Section 12.5.4) that has one, else ``"en"``."""
    if requested in LANGUAGES:
        return str(requested)
    ranked: list[tuple[float, int, str]] = []
    for i, part in enumerate((accept_language or "")[:500].split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and q > 0:
            ranked.append((-q, i, primary))
    return min(ranked)[2] if ranked else LANGUAGES[0]


def default_label(label: str, lang: str) -> str:
    """A design's default label (``no``, ``yes``, ``different``, ``same``, ``circle``,
    ``triangle``, ``N red``) in ``lang``'s catalog; any other label as it is."""
    labels: dict[str, str] = catalog(lang)["labels"]
    if label in labels:
        return labels[label]
    count, _, word = label.partition(" ")
    if count.isdigit() and word == "red":
        return labels["{n} red"].format(n=count)
    return label


def untranslated(
    translation: SurveyTranslation,
    texts: dict[str, str],
    questions: dict[str, dict[str, bool]],
) -> list[str]:
    """Dotted names of the texts ``translation`` leaves as written.

    ``texts`` holds the survey's own texts by field (``title``, and ``description`` and
    ``consent`` when not empty); ``questions`` maps each question id to which of its
    fields exist and are the survey's own (``text``, ``choices``, ``reports``,
    ``innocuous_question``, ``innocuous_complement``, ``unit``): a design's default
    labels are translated by the catalog, so they are not listed.
    """
    out = [name for name, value in texts.items() if value and getattr(translation, name) is None]
    for qid, fields in questions.items():
        given = translation.questions.get(qid)
        for name, own in fields.items():
            if own and (given is None or getattr(given, name) is None):
                out.append(f"questions.{qid}.{name}")
    return out


def check_translations(
    translations: dict[str, SurveyTranslation], questions: dict[str, tuple[int, int, bool]]
) -> None:
    """Check that translations name known questions and keep the number of labels.

    ``questions`` maps each question id to its (number of choices, number of reports,
    whether it is numeric: only a numeric question has a ``unit``).

    Raises
    ------
    ValueError
        Naming the language, the question and the field.
    """
    for lang, tr in translations.items():
        for qid, qt in tr.questions.items():
            if qid not in questions:
                raise ValueError(f"translations.{lang}.questions: no question {qid!r}")
            choices, reports, numeric = questions[qid]
            if qt.unit is not None and not numeric:
                raise ValueError(
                    f"translations.{lang}.questions.{qid}.unit: only a numeric question "
                    "(with a range) has a unit"
                )
            for field, size in zip(("choices", "reports"), (choices, reports), strict=True):
                given = getattr(qt, field)
                if given is not None and len(given) != size:
                    raise ValueError(
                        f"translations.{lang}.questions.{qid}.{field} must have {size} "
                        f"labels, got {len(given)}"
                    )

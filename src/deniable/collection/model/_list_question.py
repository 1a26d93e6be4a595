"""The list experiment as a survey question (``design: {name: list-experiment}``).

A list experiment (item count technique; Raghavarao & Federer 1979, Imai 2011) shows
each respondent a list and asks *how many* items apply, not which. The device draws the
respondent's group with equal chances, as for a group design: group 0 sees the ``J``
control ``items``, group 1 the same items and the ``sensitive_item`` (last). The count
is sent as given (nothing is randomized, so the question is outside the privacy
accounting, like a direct one, and never kept on the device). A count of 0 or of every
item shows what each item's answer is, for certain: the page says so in those words, and
the release rule treats the count as a key (:mod:`deniable.collection.store`). The
analysis is the difference of the two groups' mean counts
(:func:`deniable.analysis.list_difference_in_means`).
"""

from __future__ import annotations

from typing import Any, TypeVar

from ...mechanisms import Direct

__all__ = ["LIST_EXPERIMENT", "MAX_LIST_ITEMS", "build_list_question", "list_labels"]

QuestionT = TypeVar("QuestionT", bound=Any)

#: The design's name in a survey file.
LIST_EXPERIMENT = "list-experiment"
#: Control items a list may have (Glynn 2013 advises 3 to 5; more dilutes the estimate).
MAX_LIST_ITEMS = 20

_NOT_TAKEN = (
    "choices",
    "reports",
    "sensitive",
    "innocuous_question",
    "range",
    "bins",
    "control",
    "known_prevalence",
    "panel",
    "innocuous_complement",
)


def list_labels(items: int) -> tuple[str, ...]:
    """The report labels of a list of ``items`` control items: the counts ``0..J+1``."""
    return tuple(str(c) for c in range(items + 2))


def build_list_question(q: QuestionT) -> QuestionT:
    """Check a list-experiment question and give it its two groups' designs (a direct
    count ``0..J+1``; group 0 may send at most ``J``) and no cost; return it.

    Raises
    ------
    ValueError
        Naming the field: ``items`` or ``sensitive_item`` on another design; ``items``
        missing, fewer than 2 or more than :data:`MAX_LIST_ITEMS`, or repeated;
        ``sensitive_item`` missing or among the items; ``design.params`` given; or a
        field a list question does not take.
    """
    if q.design.name != LIST_EXPERIMENT:
        raise ValueError("items: only a list-experiment question takes items and sensitive_item")
    for name in _NOT_TAKEN:
        if getattr(q, name) not in (None, False):
            raise ValueError(f"{name}: a list-experiment question takes none (it asks for a count)")
    if q.allow_no_answer:
        raise ValueError("allow_no_answer: a list-experiment question always sends a count")
    if q.design.params:
        raise ValueError(
            "design.params: list-experiment takes none (give the list as items and sensitive_item)"
        )
    items = q.items
    if not items or not 2 <= len(items) <= MAX_LIST_ITEMS:
        raise ValueError(
            f"items: a list-experiment question needs 2 to {MAX_LIST_ITEMS} control items, "
            f"got {len(items or [])}"
        )
    if len(set(items)) != len(items):
        raise ValueError("items: each control item must differ")
    if not q.sensitive_item:
        raise ValueError("sensitive_item: a list-experiment question needs its sensitive item")
    if q.sensitive_item in items:
        raise ValueError("sensitive_item: must not be one of the control items")
    design = Direct(k=len(items) + 2, labels=list_labels(len(items)))
    q._groups, q._design, q._cost = (design, design), design, 0.0
    return q

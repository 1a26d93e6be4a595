"""What a question means, apart from its wording: the canonical ids of its choices and
of a list's items, and the design digest over them.

A report is a code: ``2`` means "six or more" only while the third choice is "six or
more". A survey embedded in a host (:mod:`deniable.collection.exports`) travels apart
from the file that analyses its export, so the report carries the digest of what its
code meant when it was drawn, and an export whose digest is not the question's is
refused row by row. The digest covers the meaning: the design and its channel, the
canonical choice ids in their order, the list's item ids and which one is sensitive.
It leaves out the wording: display texts and translations (a typo fixed, a German
version added), which a host may change without changing what a code means.

A choice's id is ``choice_ids[i]`` where the survey file gives them, else its label in
the source language: a survey first published without ids keeps its digest when ids
equal to its old labels are added beside the corrected labels. A list item's id is
``item_ids[i]`` (``sensitive_item_id``) likewise.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["check_meaning_ids", "design_digest", "designs_digest", "meaning"]


def check_meaning_ids(q: Any) -> None:
    """Check a question's ``choice_ids``, ``item_ids`` and ``sensitive_item_id``.

    Raises
    ------
    ValueError
        Naming the field: ids without the labels they name, a count other than the
        labels', a repeated id, or the sensitive item's id among the control items'.
    """
    pairs = (("choice_ids", "choices"), ("item_ids", "items"))
    for ids_name, labels_name in pairs:
        ids, labels = getattr(q, ids_name), getattr(q, labels_name)
        if ids is None:
            continue
        if labels is None:
            raise ValueError(f"{ids_name}: give {labels_name} too (the ids name them in order)")
        if len(ids) != len(labels):
            raise ValueError(
                f"{ids_name} has {len(ids)} ids but {labels_name} has {len(labels)} labels"
            )
        if len(set(ids)) != len(ids):
            raise ValueError(f"{ids_name}: each id must differ")
    if q.sensitive_item_id is not None:
        if q.sensitive_item is None:
            raise ValueError("sensitive_item_id: give sensitive_item too")
        if q.sensitive_item_id in (q.item_ids or q.items or ()):
            raise ValueError("sensitive_item_id: must not be one of the control items' ids")


def meaning(q: Any) -> dict[str, Any]:
    """What a report of question ``q`` means, as the digest covers it: the design's name,
    its channel (a panel question's composed channel; each group's), the range and
    bins, the permanent layer, the choice ids in order and, for a list, the item ids and the
    sensitive item's id.

    Returns
    -------
    dict
        JSON-serialisable.
    """
    content: dict[str, Any] = {
        "design": q.design.name,
        "matrix": q.mechanism.matrix.round(15).tolist(),
        "groups": [d.matrix.round(15).tolist() for d in q.groups] if len(q.groups) > 1 else None,
        "range": q.range.model_dump(exclude={"unit"}) if q.range is not None else None,
        "permanent": q.permanent_key,
        "bins": q.bins,
    }
    if q.range is None and not q.is_list:
        content["choices"] = list(q.choice_ids or q.choice_labels)
    if q.is_list:
        content["items"] = list(q.item_ids or q.items)
        content["sensitive_item"] = q.sensitive_item_id or q.sensitive_item
    return content


def design_digest(q: Any) -> str:
    """SHA-256 (hex) of what a question's reports mean (:func:`meaning`): the design and
    its channel, the choice ids in order, a list's item ids and its sensitive item's; not
    the display texts or translations, which a host may change.

    A browser component hands it back with each report, and
    :func:`~deniable.collection.exports.read_host_export` refuses, counting them, the
    rows whose digest is not the question's.

    Parameters
    ----------
    q : Question

    Returns
    -------
    str
        64 lower-case hex digits.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> survey = load_survey("examples/campus.yaml")
    >>> len(design_digest(survey.questions[0]))
    64
    """
    content = json.dumps(meaning(q), sort_keys=True)
    return hashlib.sha256(content.encode()).hexdigest()


def designs_digest(survey: Any) -> str:
    """16 hex digits of SHA-256 over what every report of one survey version means: each
    question's :func:`design_digest`, in each arm (a study's arms ask some questions
    through other designs).

    Every export carries it beside each row's version (the column ``designs_digest``),
    and :func:`~deniable.collection.exports.read_export` refuses an export whose version
    was drawn under other designs than the survey file's (a survey file edited after the
    export, or another survey's with the same id and version). 64 bits catch a file
    paired by mistake; they are not a seal against someone who edits both files.

    Parameters
    ----------
    survey : Survey
        One version.

    Returns
    -------
    str
        16 lower-case hex digits.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> survey = load_survey("examples/campus.yaml")
    >>> len(designs_digest(survey))
    16
    """
    arms = list(survey.arms) if survey.arms else [None]
    content = {str(arm): {q.id: design_digest(q) for q in survey.questions_in(arm)} for arm in arms}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]

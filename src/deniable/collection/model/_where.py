"""Where in a survey file an error is: the question's id and the line, and the field a
misspelt key most likely meant."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

__all__ = ["unknown_field", "where"]


def where(loc: Sequence[int | str], data: Any, text: str | None) -> str:
    """`` (question 'drugs', line 14)`` for an error at ``loc`` (pydantic's path) in the
    parsed file ``data`` and its ``text``; ``""`` when neither says more."""
    parts = []
    if len(loc) >= 2 and loc[0] == "questions" and isinstance(loc[1], int):
        questions = data.get("questions") if isinstance(data, Mapping) else None
        if isinstance(questions, list) and loc[1] < len(questions):
            qid = questions[loc[1]].get("id") if isinstance(questions[loc[1]], Mapping) else None
            if isinstance(qid, str):
                parts.append(f"question {qid!r}")
    line = _line(loc, text)
    if line is not None:
        parts.append(f"line {line}")
    return f" ({', '.join(parts)})" if parts else ""


def _line(loc: Sequence[int | str], text: str | None) -> int | None:
    """The 1-based line of ``loc`` in the YAML (or JSON) ``text``: of the key itself for
    a mapping's entry, of the item for a list's; ``None`` when it cannot be found."""
    if text is None:
        return None
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            hit = [
                (k, v)
                for k, v in node.value
                if isinstance(k, yaml.ScalarNode) and k.value == str(part)
            ]
            if not hit:
                break
            line, node = hit[0][0].start_mark.line + 1, hit[0][1]
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def unknown_field(loc: Sequence[int | str], survey_fields: Mapping[str, Any]) -> str:
    """The message for a key the model does not know: the closest field it has (a
    question's, or ``survey_fields``: the survey model's)."""
    from ._questions import Question

    key = str(loc[-1])
    in_question = len(loc) == 3 and loc[0] == "questions"
    fields = Question.model_fields if in_question else survey_fields
    known = sorted(set(fields) | {f.alias for f in fields.values() if f.alias})
    close = difflib.get_close_matches(key, known, n=1)
    what = "a question" if in_question else "the survey" if len(loc) == 1 else "this place"
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"
    return f"{key!r} is not a field of {what}{hint}"

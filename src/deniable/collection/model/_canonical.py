"""The canonical JSON of a survey definition: what its digest covers.

Fields added after surveys were first published are left out at their defaults, so a
published digest never changes when the model gains a field.
"""

from __future__ import annotations

import json
from typing import Any

from ._release import DEFAULT_RELEASE_EVERY

__all__ = ["canonical_json"]

#: Default crowd size (kept here and re-exported by the survey module).
MIN_RELEASE = 30
#: The retired l-diversity's default (stored definitions may still carry it).
L_DIVERSITY = 2

#: Fields added after surveys were first published, with their defaults.
_LATER_FIELDS: dict[str, Any] = {
    "consent": "",
    "min_release": MIN_RELEASE,
    "l_diversity": L_DIVERSITY,
    "allow_small_release": False,
    "no_lifetime_budget": False,
    "release_every": DEFAULT_RELEASE_EVERY,
    "allow_unprotected_release": False,
    "translations": {},
    "expected_responses": None,
    "arms": None,
}
#: Question fields added later, with their defaults.
_LATER_QUESTION_FIELDS: dict[str, Any] = {
    "range": None,
    "allow_no_answer": False,
    "bins": None,
    "control": None,
    "known_prevalence": None,
    "innocuous_complement": None,
    "panel": None,
    "items": None,
    "sensitive_item": None,
    "pram": False,
    "release_epsilon": None,
    "choice_ids": None,
    "item_ids": None,
    "sensitive_item_id": None,
}


def canonical_json(data: dict[str, Any]) -> str:
    """Sorted keys, no whitespace; later fields dropped at their defaults.

    Parameters
    ----------
    data : dict
        A survey's ``model_dump(mode="json")`` (changed in place).
    """
    for name, default in _LATER_FIELDS.items():
        if data.get(name) == default:
            del data[name]
    for question in data["questions"]:
        for name, default in _LATER_QUESTION_FIELDS.items():
            if question.get(name) == default:
                del question[name]
    for tr in data.get("translations", {}).values():  # a list's texts: added later
        for question in tr["questions"].values():
            for name in ("items", "sensitive_item"):
                if question.get(name) is None:
                    question.pop(name, None)
    for arm in (data.get("arms") or {}).values():
        if arm.get("pool") is False:  # added later: absent at its default
            arm.pop("pool")
        for design in arm["designs"].values():
            for name in ("innocuous_question", "innocuous_complement"):
                if design.get(name) is None:
                    design.pop(name, None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"))

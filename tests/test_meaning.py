"""The design digest covers what a report means, not its wording (issue 61, item 3):
reordering choices, editing a list item or moving the sensitive item changes it, and
`deniable analyze` refuses the export's rows by name with their count; correcting a
label (its id kept) or adding a German text does not."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.model import design_digest, load_survey
from deniable.estimation import estimate

CHOICES = ["none", "one or two", "three to five", "six or mor"]  # a typo, fixed later
SURVEY: dict[str, Any] = {
    "id": "meant",
    "title": "Meant",
    "version": 1,
    "privacy_budget": 6,
    "questions": [
        {
            "id": "drinks",
            "text": "How many drinks did you have last Saturday?",
            "choices": CHOICES,
            "design": {"name": "kary-rr", "params": {"epsilon": 1.5}},
        },
        {
            "id": "done",
            "text": "How many of these have you done? Not which, only how many.",
            "design": {"name": "list-experiment"},
            "items": ["Recycled a bottle", "Voted", "Run a marathon"],
            "sensitive_item": "Driven after drinking",
        },
    ],
}
N = 600


def _changed(**edits: Any) -> dict[str, Any]:
    """The survey with each question's fields replaced: ``edits[qid] = {field: value}``."""
    out = copy.deepcopy(SURVEY)
    for q in out["questions"]:
        q.update(edits.get(q["id"], {}))
    return out


def _digests(body: dict[str, Any]) -> dict[str, str]:
    return {q.id: design_digest(q) for q in load_survey(body).questions}


BEFORE = _digests(SURVEY)

#: Edits that change what a report means (refused), and edits of wording only (kept).
MEANING = {
    "choices reordered": {"drinks": {"choices": [CHOICES[3], *CHOICES[:3]]}},
    "choice ids reordered": {
        "drinks": {"choices": CHOICES, "choice_ids": [CHOICES[1], CHOICES[0], *CHOICES[2:]]}
    },
    "a list item edited": {"done": {"items": ["Recycled a bottle", "Voted", "Run a mile"]}},
    "the sensitive item moved": {
        "done": {
            "items": ["Recycled a bottle", "Voted", "Driven after drinking"],
            "sensitive_item": "Run a marathon",
        }
    },
}
WORDING = {
    "a label's typo fixed, its id kept": {
        "drinks": {"choices": [*CHOICES[:3], "six or more"], "choice_ids": CHOICES}
    },
    "a list item reworded, its id kept": {
        "done": {
            "items": ["Recycled a bottle", "Voted in an election", "Run a marathon"],
            "item_ids": ["Recycled a bottle", "Voted", "Run a marathon"],
        }
    },
    "a question's text changed": {"drinks": {"text": "Last Saturday, how many drinks?"}},
}


@pytest.mark.parametrize("edit", sorted(MEANING))
def test_a_change_of_meaning_changes_the_digest(edit: str) -> None:
    after = _digests(_changed(**MEANING[edit]))
    changed = {qid for qid in after if after[qid] != BEFORE[qid]}
    assert changed == set(MEANING[edit]), edit


@pytest.mark.parametrize("edit", sorted(WORDING))
def test_a_change_of_wording_keeps_the_digest(edit: str) -> None:
    assert _digests(_changed(**WORDING[edit])) == BEFORE, edit


def test_a_translation_keeps_the_digest() -> None:
    german = copy.deepcopy(SURVEY) | {
        "translations": {
            "de": {
                "title": "Gemeint",
                "questions": {
                    "drinks": {
                        "text": "Wie viele Getränke hatten Sie letzten Samstag?",
                        "choices": ["keins", "ein oder zwei", "drei bis fünf", "sechs oder mehr"],
                    }
                },
            }
        }
    }
    assert _digests(german) == BEFORE


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"drinks": {"choice_ids": ["a", "b"]}}, "choice_ids has 2 ids but choices has 4"),
        ({"drinks": {"choice_ids": ["a", "b", "c", "a"]}}, "choice_ids: each id must differ"),
        ({"done": {"item_ids": ["a", "b"]}}, "item_ids has 2 ids but items has 3"),
        (
            {"done": {"item_ids": ["a", "b", "c"], "sensitive_item_id": "b"}},
            "sensitive_item_id: must not be one of the control items' ids",
        ),
        ({"drinks": {"sensitive_item_id": "x"}}, "sensitive_item_id: give sensitive_item too"),
    ],
)
def test_malformed_ids_are_refused_by_name(edit: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_survey(_changed(**edit))


def _export(tmp: Path, reports: dict[str, np.ndarray], groups: np.ndarray) -> Path:
    """An oTree export of the survey as embedded before the edits (its digests)."""
    path = tmp / "otree.csv"
    prefix = "rr.1.player."
    cols = ["participant.code"] + [
        f"{prefix}deniable_{qid}{suffix}"
        for qid in ("drinks", "done")
        for suffix in ("", "_digest") + (("_group",) if qid == "done" else ())
    ]
    rows = []
    for i in range(N):
        row = [f"p{i}", str(reports["drinks"][i]), BEFORE["drinks"]]
        row += [str(reports["done"][i]), BEFORE["done"], str(groups[i])]
        rows.append(",".join(row))
    path.write_text(",".join(cols) + "\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def embedded(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray], np.ndarray]:
    tmp = tmp_path_factory.mktemp("meaning")
    gen = np.random.default_rng(61)
    survey = load_survey(SURVEY)
    truths = gen.choice(4, N, p=[0.4, 0.3, 0.2, 0.1])
    reports = {"drinks": survey.question("drinks").mechanism.randomize(truths, gen)}
    groups = gen.integers(0, 2, N)
    reports["done"] = gen.binomial(3, 0.4, N) + groups * (gen.random(N) < 0.2)
    return _export(tmp, reports, groups), reports, groups


def _analyze(tmp: Path, export: Path, body: dict[str, Any]) -> Any:
    survey_file = tmp / "survey.json"
    survey_file.write_text(json.dumps(body))
    return CliRunner().invoke(app, ["analyze", str(export), "--survey", str(survey_file), "--json"])


def _n(item: dict[str, Any]) -> int:
    """Rows estimated from: a list's two groups, or a question's ``n``."""
    got = item.get("list")
    return int(got["n_treated"] + got["n_control"]) if got else int(item["n"])


@pytest.mark.parametrize("edit", sorted(MEANING))
def test_analyze_refuses_the_rows_of_a_question_whose_meaning_changed(
    embedded, tmp_path: Path, edit: str
) -> None:
    export, _, _ = embedded
    out = _analyze(tmp_path, export, _changed(**MEANING[edit]))
    assert out.exit_code == 0, out.output
    by_id = {item["question"]: item for item in json.loads(out.stdout)["questions"]}
    (qid,) = MEANING[edit]
    assert by_id[qid]["refused"] == N and by_id[qid]["n"] == 0, edit
    assert f"every row refused ({N})" in by_id[qid]["note"]
    other = ({"drinks", "done"} - {qid}).pop()
    assert by_id[other]["refused"] == 0 and _n(by_id[other]) == N
    assert f"{qid}: {N} row(s) refused" in " ".join(out.stderr.split())


@pytest.mark.parametrize("edit", sorted(WORDING))
def test_analyze_keeps_every_row_after_a_change_of_wording(
    embedded, tmp_path: Path, edit: str
) -> None:
    export, reports, _ = embedded
    out = _analyze(tmp_path, export, _changed(**WORDING[edit]))
    assert out.exit_code == 0, out.output
    by_id = {item["question"]: item for item in json.loads(out.stdout)["questions"]}
    assert by_id["drinks"]["refused"] == by_id["done"]["refused"] == 0
    assert _n(by_id["drinks"]) == _n(by_id["done"]) == N
    mechanism = load_survey(SURVEY).question("drinks").mechanism
    lib = estimate(mechanism, reports["drinks"].astype(np.int64))
    np.testing.assert_allclose(by_id["drinks"]["estimate"], lib.estimate, rtol=0, atol=1e-12)

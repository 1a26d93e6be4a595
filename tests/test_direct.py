"""Direct questions (``design: {name: direct}``): the answer is sent as given, never
memoized, and kept outside the privacy accounting, which lists it apart; the cells the
direct answers make together are counted against ``min_release``."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable import estimate
from deniable.cli import app
from deniable.collection.model._budget import check_lifetime
from deniable.collection.model._survey import load_survey
from deniable.collection.server._live import serve_in_thread
from deniable.collection.store._release_control import cell_warning
from deniable.collection.store._storage import Store
from deniable.errors import SurveyError
from deniable.mechanisms import Direct
from deniable.mechanisms._registry import design_from_spec

from .conftest import ANALYST, AUTH

STUDY = {
    "format": 1,
    "id": "campus",
    "version": 1,
    "title": "Campus study",
    "privacy_budget": 1.2,
    "min_release": 30,
    "expected_responses": 600,
    "questions": [
        {
            "id": "faculty",
            "text": "Which faculty are you in?",
            "choices": ["law", "medicine", "science", "arts"],
            "design": {"name": "direct"},
        },
        {
            "id": "year",
            "text": "Which year of study are you in?",
            "choices": ["first", "second", "third", "fourth", "later"],
            "design": {"name": "direct"},
            "allow_no_answer": True,
        },
        {
            "id": "cheat",
            "text": "Have you cheated in an exam this year?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
    ],
}


def test_the_direct_design_reports_the_truth_and_estimates_proportions(rng):
    d = design_from_spec("direct:k=4")
    assert isinstance(d, Direct) and np.array_equal(d.matrix, np.eye(4))
    assert math.isinf(d.epsilon)
    truths = rng.integers(0, 4, size=10_000)
    reports = d.randomize(truths, rng)
    assert np.array_equal(reports, truths)
    est = estimate(d, reports)
    share = np.bincount(truths, minlength=4) / truths.size
    assert est.estimate == pytest.approx(share, abs=1e-12)
    # the binomial standard error of a sample proportion
    assert est.std_error == pytest.approx(np.sqrt(share * (1 - share) / truths.size), rel=1e-9)


def test_a_direct_question_costs_nothing_and_is_listed_apart():
    survey = load_survey(copy.deepcopy(STUDY))
    faculty, year, cheat = survey.questions
    assert faculty.is_direct and year.is_direct and not cheat.is_direct
    assert faculty.cost == year.cost == 0.0
    assert survey.total_epsilon == pytest.approx(math.log(3))  # the randomized one only
    assert [q.id for q in survey.direct_questions] == ["faculty", "year"]
    ledger = check_lifetime([], survey)
    assert [e.question_id for e in ledger.entries] == ["cheat"]
    view = survey.respondent_view()
    assert [q["direct"] for q in view["questions"]] == [True, True, False]
    assert view["questions"][0]["reports"] == ["law", "medicine", "science", "arts"]
    # a direct question is no way round the budget: the randomized ones still must fit
    over = copy.deepcopy(STUDY) | {"privacy_budget": 1.0}
    with pytest.raises(SurveyError, match="privacy_budget"):
        load_survey(over)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sensitive", ["law"]),
        ("innocuous_question", "Is your birthday in spring?"),
        ("reports", ["a", "b", "c", "d"]),
    ],
)
def test_a_direct_question_refuses_what_only_a_randomized_one_takes(field, value):
    data = copy.deepcopy(STUDY)
    data["questions"][0][field] = value
    with pytest.raises(SurveyError, match=rf"questions\.0.*{field}: a direct question"):
        load_survey(data)


def test_cells_of_direct_answers_are_counted_against_min_release():
    """4 faculties x 5 years = 20 cells: 600 expected responses leave 30 per cell, the
    crowd size (no warning); 599 leave fewer, and the warning names both questions."""
    survey = load_survey(copy.deepcopy(STUDY))
    assert survey.direct_cells() == 20 and cell_warning(survey) is None
    thin = load_survey(copy.deepcopy(STUDY) | {"expected_responses": 599})
    warning = cell_warning(thin)
    assert warning is not None
    assert "(faculty, year) make 20 cells" in warning and "min_release (30)" in warning
    assert cell_warning(load_survey(copy.deepcopy(STUDY) | {"expected_responses": None})) is None


def test_survey_check_lists_direct_questions_apart(tmp_path):
    path = tmp_path / "campus.json"
    path.write_text(json.dumps(STUDY | {"expected_responses": 200}))
    out = CliRunner().invoke(app, ["survey", "check", str(path), "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert [q["id"] for q in payload["questions"]] == ["cheat"]
    assert payload["direct_questions"] == [
        {"id": "faculty", "choices": ["law", "medicine", "science", "arts"]},
        {"id": "year", "choices": ["first", "second", "third", "fourth", "later"]},
    ]
    assert payload["direct_cells"] == 20 and len(payload["warnings"]) == 1
    table = CliRunner().invoke(app, ["survey", "check", str(path)], env={"COLUMNS": "200"})
    assert table.exit_code == 0
    assert "Asked directly (sent as given, outside the budget; 20 cells together)" in table.stdout
    assert "faculty (law, medicine, science, arts)" in table.stdout
    assert "10 per cell on average, below min_release (30)" in table.output


def respond_in_terminal(tmp_path, data: dict, typed: str):
    """`deniable respond` on a live server with ``data`` published: the CLI's result and
    the store (released after the response), the memo in ``tmp_path/data``."""
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store.publish(load_survey(data | {"min_release": 1, "allow_small_release": True}))
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "200"}
    with serve_in_thread(store, ANALYST) as base:
        out = CliRunner().invoke(
            app, ["respond", f"{base}/s/campus", "--yes"], env=env, input=typed
        )
    assert out.exit_code == 0, out.output
    store.release()  # as the next scheduled release would
    return out, store


def test_the_terminal_client_sends_a_direct_answer_as_given_and_keeps_none(tmp_path):
    out, store = respond_in_terminal(tmp_path, copy.deepcopy(STUDY), "science\n4\n1\n")
    assert "except the questions asked directly" in out.output
    assert "1-4 or its label; sent as given" in out.output
    assert "1-2 or its label; stays on this computer" in out.output
    assert "Sent as given: this answer is not randomized" in out.output
    frame = store.released.export("campus")
    sent = dict(zip(frame["question_id"], frame["report"], strict=True))
    assert sent["faculty"] == 2 and sent["year"] == 3 and sent["cheat"] in (0, 1)
    keys = {q.id: q.memo_digest for q in store.survey("campus").questions}
    memo = json.loads((tmp_path / "data" / "deniable" / "memo.json").read_text())
    (kept,) = memo.values()  # one owner: this computer
    assert kept == {keys["cheat"]: sent["cheat"]}  # the direct answers are not kept
    store.close()


@pytest.mark.anyio
async def test_the_dashboard_shows_a_direct_question_as_its_sample_proportions(client, rng):
    """Direct answers are stored as given: the results' estimate for a direct question
    is the sample proportion of each answer, and the dashboard page renders it."""
    data = copy.deepcopy(STUDY) | {"min_release": 10}
    r = await client.post("/api/surveys", json=data, headers=AUTH)
    assert r.status_code == 201, r.text
    # every cell (faculty x one year) fills crowds of min_release exactly: all released
    faculties = rng.permutation(np.repeat([0, 1, 2, 3], [20, 10, 20, 10]))
    for i, f in enumerate(faculties):
        body = {"version": 1, "reports": {"faculty": int(f), "year": 1, "cheat": i % 2}}
        assert (await client.post("/api/surveys/campus/responses", json=body)).status_code == 201
    res = (await client.get("/api/surveys/campus/results", headers=AUTH)).json()
    faculty = next(q for q in res["questions"] if q["id"] == "faculty")
    share = np.bincount(faculties, minlength=4) / faculties.size
    assert faculty["estimate"] == pytest.approx(share.tolist(), abs=1e-12)
    page = await client.get("/surveys/campus/results", headers=AUTH)
    assert page.status_code == 200 and "Which faculty are you in?" in page.text
    assert faculty["direct"] is True and "direct, sent as given" in page.text


def test_the_campus_example_checks():
    from pathlib import Path

    path = Path(__file__).parents[1] / "examples" / "campus.yaml"
    out = CliRunner().invoke(app, ["survey", "check", str(path), "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    rows = [(q["id"], q["arm"], q["group"]) for q in payload["questions"]]
    assert rows == [
        ("cheat", "rr", None),  # asked directly in dq
        ("plagiarism", None, 0),
        ("plagiarism", None, 1),
        ("transplant", None, None),
    ]
    assert payload["direct_cells"] == 20
    # an open study with arms: one arm per device, not per person (issue 59)
    assert [w.split(":")[0] for w in payload["warnings"]] == ["arms without invitations"]
    assert [a["id"] for a in payload["arms"]] == ["dq", "rr"]
    # the release rule's planning report: 600 expected over 25 key cells (skipping the
    # faculty is a category), the arms together, so every arm's released share is the
    # same; dq's direct answer to cheat is post-randomized at the forced-response arm's
    # epsilon (ln 3), and the report says what that costs in interval width
    report = payload["disclosure"]
    assert report["keys"] == ["faculty", "year"]
    assert report["cells"] == 25 and report["expected_per_cell"] == pytest.approx(24)
    assert len(set(report["released_share"].values())) == 1
    (channel,) = report["channels"]
    assert channel["question"] == "cheat" and channel["arm"] == "dq"
    assert channel["epsilon"] == pytest.approx(math.log(3))
    assert channel["width"] > channel["width_as_sent"] > 0
    assert any("year" in s for s in report["suggestions"])
    (risk,) = payload["self_selection"]  # a quarter of dq drawing again, at n = 600
    assert risk["arm"] == "dq" and 0.2 < risk["power"] < 0.5


def test_a_cell_of_direct_answers_under_min_release_waits_whole(tmp_path):
    """min_release 5; a batch of 13 responses: (law, first) x 6, (medicine, first) x 5,
    (law, second) x 2. The last cell is under 5: its two responses wait, whole (their
    randomized reports too), and appear in no tally or export, although "law" alone
    has 8; nothing released is recoded to missing. Three more (law, second) release
    the cell's five together."""
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    survey = load_survey(copy.deepcopy(STUDY) | {"min_release": 5, "allow_small_release": True})
    store.publish(survey)
    cells = [(0, 0)] * 6 + [(1, 0)] * 5 + [(0, 1)] * 2
    batch = [{"faculty": f, "year": y, "cheat": 1} for f, y in cells]
    store.submit_batch(survey, batch)
    store.release()
    assert store.released.count("campus") == 11 and store.waiting("campus") == {1: 2}
    tallies = store.released.tallies(survey)
    assert tallies["faculty"].counts.tolist() == [6, 5, 0, 0]
    assert tallies["year"].counts.tolist() == [11, 0, 0, 0, 0]
    assert tallies["cheat"].n == 11
    long = store.released.export("campus")
    assert len(long) == 3 * 11
    assert "second" not in set(long["report_label"])
    for fmt in ("wide", "parquet"):
        wide = read_export_bytes(tmp_path, store, fmt)
        assert len(wide) == 11 and wide[["faculty", "year", "cheat"]].notna().all().all()
    store.submit_batch(survey, batch[-1:] * 3)  # (law, second) x 3 more: the cell holds 5
    store.release()
    assert store.released.count("campus") == 16 and store.waiting("campus") == {}
    assert store.released.tallies(survey)["year"].counts.tolist() == [11, 5, 0, 0, 0]
    store.close()


def read_export_bytes(folder, store: Store, fmt: str):
    from deniable.collection.exports._export import export_bytes, read_export, survey_file

    content, _, name = export_bytes(store, "campus", fmt)
    path = folder / name
    path.write_bytes(content)
    (folder / "campus.survey.json").write_text(json.dumps(survey_file(store, "campus")))
    frame, _ = read_export(path)
    return frame


def test_only_a_direct_question_may_go_unanswered():
    data = copy.deepcopy(STUDY)
    data["questions"][2]["allow_no_answer"] = True
    with pytest.raises(SurveyError, match=r"questions\.2.*allow_no_answer: only a direct"):
        load_survey(data)


@pytest.mark.anyio
async def test_prefer_not_to_say_is_stored_as_missing(client):
    """``null`` for a direct question with allow_no_answer: stored, and missing in the
    tallies and exports; ``null`` anywhere else is refused (422) and nothing is stored."""
    data = copy.deepcopy(STUDY) | {"min_release": 2, "allow_small_release": True}
    assert (await client.post("/api/surveys", json=data, headers=AUTH)).status_code == 201
    for year in (None, 2, None, 2):  # two cells of two: none under min_release
        body = {"version": 1, "reports": {"faculty": 0, "year": year, "cheat": 1}}
        r = await client.post("/api/surveys/campus/responses", json=body)
        assert r.status_code == 201, r.text
    for bad in ({"faculty": None, "year": 1, "cheat": 1}, {"faculty": 0, "year": 1, "cheat": None}):
        r = await client.post("/api/surveys/campus/responses", json={"version": 1, "reports": bad})
        assert r.status_code == 422, r.text
        assert "must be an integer report code" in r.json()["error"]["message"]
    store = client.store
    store.release()
    assert store.released.count("campus") == 4
    survey = store.survey("campus")
    tallies = store.released.tallies(survey)
    assert tallies["year"].counts.tolist() == [0, 0, 2, 0, 0]
    assert tallies["faculty"].n == 4 and tallies["cheat"].n == 4
    long = store.released.export("campus")
    assert len(long) == 10 and (long["question_id"] == "year").sum() == 2


def test_spss_and_stata_labels_say_which_columns_hold_randomized_reports(tmp_path):
    """A randomized question's variable label says its codes are reports, not answers;
    a direct question's is its text."""
    import pyreadstat

    from deniable.collection.exports._export import export_bytes

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    survey = load_survey(copy.deepcopy(STUDY) | {"min_release": 1, "allow_small_release": True})
    store.publish(survey)
    store.submit_batch(survey, [{"faculty": 0, "year": 1, "cheat": 1}])
    store.release()
    for fmt, reader in (("sav", pyreadstat.read_sav), ("dta", pyreadstat.read_dta)):
        content, _, name = export_bytes(store, "campus", fmt)
        (tmp_path / name).write_bytes(content)
        _, meta = reader(str(tmp_path / name))
        labels = dict(zip(meta.column_names, meta.column_labels, strict=True))
        assert labels["cheat"].startswith("Randomized report, not the answer: Have you cheated")
        assert labels["faculty"] == "Which faculty are you in?"
        assert meta.variable_value_labels["cheat"] == {0: "no", 1: "yes"}
    store.close()


def test_the_forest_plot_labels_each_category(tmp_path, monkeypatch):
    """A long question with four answers: each row of the forest plot is labelled by the
    question id and its own category, not by the question's first words."""
    from deniable.collection.server import _pages as pages

    drawn: list[list[str]] = []
    real = pages.forest_labels
    monkeypatch.setattr(pages, "forest_labels", lambda rows: drawn.append(real(rows)) or drawn[-1])
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    survey = load_survey(copy.deepcopy(STUDY) | {"min_release": 1, "allow_small_release": True})
    store.publish(survey)
    store.submit_batch(survey, [{"faculty": i % 4, "year": 0, "cheat": i % 2} for i in range(8)])
    store.release()
    pages.results_page(store, survey)
    (labels,) = drawn
    assert labels[:4] == ["faculty: law", "faculty: medicine", "faculty: science", "faculty: arts"]
    assert labels[-1] == "cheat: yes" and len(set(labels)) == len(labels)
    store.close()


AGE = {
    "id": "age",
    "text": "How old are you?",
    "range": {"low": 16, "high": 80, "unit": "years"},
    "bins": [16, 20, 25, 30, 40, 80],
    "design": {"name": "direct"},
}


def test_a_direct_number_is_sent_as_its_bin():
    widest = copy.deepcopy(STUDY)  # 64 bins, the most a question may have
    widest["questions"].insert(0, copy.deepcopy(AGE) | {"bins": [16 + i for i in range(64)] + [80]})
    assert len(load_survey(widest).question("age").choice_labels) == 64
    data = copy.deepcopy(STUDY)
    data["questions"].insert(0, copy.deepcopy(AGE))
    survey = load_survey(data)
    age = survey.question("age")
    assert age.is_direct and age.cost == 0 and age.numeric is None
    assert age.choice_labels == ["16–20", "20–25", "25–30", "30–40", "40–80"]
    assert [age.bin_of(v) for v in (16, 19.99, 20, 29.5, 40, 79, 80)] == [0, 0, 1, 2, 4, 4, 4]
    with pytest.raises(ValueError, match=r"age must be a number in \[16, 80\]"):
        age.bin_of(81)
    assert survey.direct_cells() == 5 * 4 * 5
    view = survey.respondent_view()["questions"][0]
    assert view["bins"] == [16, 20, 25, 30, 40, 80] and view["numeric"]["unit"] == "years"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"bins": None}, "needs bins"),
        ({"bins": [10, 20, 80]}, "must start at low"),
        ({"bins": [16, 30, 20, 80]}, "increase strictly"),
        # at most 64 bins (65 edges), bounded before anything is built
        ({"bins": [16 + i * 64 / 65 for i in range(66)]}, r"bins.*at most 65"),
        ({"design": {"name": "duchi", "params": {"epsilon": 1.0}}}, "only a direct question"),
    ],
)
def test_bins_are_checked(change, message):
    data = copy.deepcopy(STUDY)
    data["questions"].insert(0, copy.deepcopy(AGE) | change)
    with pytest.raises(SurveyError, match=message):
        load_survey(data)


def test_the_terminal_client_sends_a_direct_number_as_its_bin(tmp_path):
    data = copy.deepcopy(STUDY)
    data["questions"].insert(0, copy.deepcopy(AGE))
    out, store = respond_in_terminal(tmp_path, data, "27.5\nlaw\n6\nno\n")
    assert "its range is sent as given" in out.output
    frame = store.released.export("campus")
    sent = dict(zip(frame["question_id"], frame["report_label"], strict=True))
    assert sent["age"] == "25–30" and sent["faculty"] == "law" and "year" not in sent
    store.close()

"""``deniable analyze EXPORT --question ID --by Q`` and ``--formula 'ID ~ Q'`` on what
the service collected: the direct questions enter by their labels, missing ones are
left out, and the numbers are the library's on the same rows."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from deniable.analysis import rr_logit, subgroup_prevalence
from deniable.cli import app
from deniable.collection.exports._export import export_bytes, survey_file
from deniable.collection.model._survey import load_survey
from deniable.collection.store._storage import Store

from .test_direct import STUDY

#: True prevalence of cheating per faculty (law, medicine, science, arts).
TRUTH = np.array([0.10, 0.20, 0.35, 0.50])


@pytest.fixture
def exported(tmp_path, rng):
    """2,000 simulated respondents (faculty drawn, cheating by faculty, randomized as the
    device does); a wide CSV export and its survey file."""
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    survey = load_survey(copy.deepcopy(STUDY) | {"min_release": 30})
    store.publish(survey)
    n = 2_000
    faculty = rng.integers(0, 4, size=n)
    year = rng.integers(0, 2, size=n)  # 8 cells of about 250
    truth = (rng.random(n) < TRUTH[faculty]).astype(np.int64)
    cheat = survey.question("cheat").mechanism.randomize(truth, rng)
    batch = [
        {"faculty": int(f), "year": int(y), "cheat": int(c)}
        for f, y, c in zip(faculty, year, cheat, strict=True)
    ]
    store.submit_batch(survey, batch)
    store.release()
    content, _, name = export_bytes(store, "campus", "wide")
    path = tmp_path / name
    path.write_bytes(content)
    (tmp_path / "campus.survey.json").write_text(json.dumps(survey_file(store, "campus")))
    long = store.released.export("campus")  # fresh response ids in every export: read it once
    frame = long.pivot(index="response_id", columns="question_id", values="report_label")
    codes = long.pivot(index="response_id", columns="question_id", values="report")
    store.close()
    return path, survey, frame.join(codes[["cheat"]].rename(columns={"cheat": "code"}))


def run(*args: str) -> dict:
    out = CliRunner().invoke(app, ["analyze", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_by_a_direct_question_equals_the_library(exported):
    path, survey, frame = exported
    payload = run(str(path), "--question", "cheat", "--by", "faculty")
    design = survey.question("cheat").mechanism
    res = subgroup_prevalence(design, frame["code"].to_numpy(np.int64), frame["faculty"].to_numpy())
    table = res.table(0.95)
    groups = {g["group"]: g for g in payload["groups"]}
    assert set(groups) == {"law", "medicine", "science", "arts"}
    for label, row in table.iterrows():
        assert groups[label]["estimate"] == pytest.approx(row["estimate"], abs=1e-10)
        assert groups[label]["std_error"] == pytest.approx(row["std_error"], abs=1e-10)
    # each faculty's truth within 4 of its standard errors
    for j, label in enumerate(["law", "medicine", "science", "arts"]):
        g = groups[label]
        assert abs(g["estimate"] - TRUTH[j]) < 4 * g["std_error"]
    # the faculties differ: noncentrality about 45 on 3 df, power above 99% at 0.01
    assert payload["test_equal"]["pvalue"] < 0.01


def test_a_formula_on_direct_questions_equals_rr_logit(exported):
    path, survey, frame = exported
    payload = run(str(path), "--question", "cheat", "--formula", "cheat ~ faculty")
    # the covariate's first answer is the reference (as R's factors), not the first in
    # alphabetical order
    order = survey.question("faculty").report_labels
    faculty = pd.Categorical(frame["faculty"], categories=order)
    data = pd.DataFrame({"cheat": frame["code"].to_numpy(np.int64), "faculty": faculty})
    fit = rr_logit("cheat ~ faculty", data, survey.question("cheat").mechanism)
    assert f"faculty[T.{order[0]}]" not in fit.params.index
    params = dict(zip(payload["labels"], payload["estimate"], strict=True))
    for term, value in fit.params.items():
        assert params[term] == pytest.approx(value, abs=1e-8)
    # the formula's left side names the question: --question may be left out
    assert run(str(path), "--formula", "cheat ~ faculty") == payload


def test_a_formula_without_a_survey_still_needs_a_design(exported, tmp_path):
    """On a file without its survey beside it, the formula's left side is a column,
    not a question: --design is asked for, as before."""
    path, _, _ = exported
    alone = tmp_path / "alone.csv"
    alone.write_bytes(path.read_bytes())
    out = CliRunner().invoke(app, ["analyze", str(alone), "--formula", "cheat ~ faculty"])
    assert out.exit_code != 0 and "--design is required" in out.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--by", "nosuch"], "'nosuch' must be another question of the survey"),
        (["--formula", "faculty ~ year"], "must have --question 'cheat' on its left"),
        (["--by", "faculty", "--formula", "cheat ~ year"], "at most one of --formula and --by"),
        (["--by", "faculty", "--strata", "year"], "--strata"),
    ],
)
def test_what_an_export_analysis_cannot_honour_is_an_error(exported, args, message):
    path, _, _ = exported
    out = CliRunner().invoke(app, ["analyze", str(path), "--question", "cheat", *args])
    assert out.exit_code != 0
    assert message in " ".join(out.output.split())


def test_the_dashboard_breakdown_equals_analyze_by(exported, tmp_path):
    """The results' breakdown of cheat by faculty (and by year) is what `deniable
    analyze EXPORT --question cheat --by ...` prints, to 1e-10, and the page shows it."""
    from deniable.collection.study._survey_results import survey_results

    path, survey, _ = exported
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    results = survey_results(store, store.survey("campus"), 0.95)
    store.close()
    by = {(b["question"], b["by"]): b for b in results["breakdowns"]}
    assert set(by) == {("cheat", "faculty"), ("cheat", "year")}
    for direct in ("faculty", "year"):
        payload = run(str(path), "--question", "cheat", "--by", direct)
        cli = {g["group"]: g for g in payload["groups"]}
        board = by["cheat", direct]
        assert [g["group"] for g in board["groups"]] == [
            label for label in survey.question(direct).choice_labels if label in cli
        ]
        for g in board["groups"]:
            for key in ("n", "estimate", "std_error", "low", "high"):
                assert g[key] == pytest.approx(cli[g["group"]][key], abs=1e-10)
        assert board["test_equal"]["pvalue"] == pytest.approx(
            payload["test_equal"]["pvalue"], abs=1e-10
        )


@pytest.mark.anyio
async def test_the_dashboard_page_shows_the_breakdown(client, rng):
    data = copy.deepcopy(STUDY) | {"min_release": 10}
    from .conftest import AUTH

    assert (await client.post("/api/surveys", json=data, headers=AUTH)).status_code == 201
    for i in range(40):
        body = {"version": 1, "reports": {"faculty": i % 2, "year": 0, "cheat": int(i % 3 == 0)}}
        assert (await client.post("/api/surveys/campus/responses", json=body)).status_code == 201
    page = await client.get("/surveys/campus/results", headers=AUTH)
    assert page.status_code == 200, page.text
    assert 'id="by-cheat-faculty"' in page.text
    assert 'Have you cheated in an exam this year? ("yes") by Which faculty' in page.text
    res = (await client.get("/api/surveys/campus/results", headers=AUTH)).json()
    (faculty,) = [b for b in res["breakdowns"] if b["by"] == "faculty"]
    assert [g["group"] for g in faculty["groups"]] == ["law", "medicine"]
    assert [g["n"] for g in faculty["groups"]] == [20, 20]


def test_pooled_over_versions_equals_the_dashboards_pooled_view(tmp_path):
    """Version 2 changes only the title: cheat is asked unchanged in both, so `analyze
    --question cheat --pooled` reads both versions' reports and equals the dashboard's
    pooled estimate to 1e-10; without --pooled it reads version 2 alone."""
    from deniable.collection.study._survey_results import survey_results

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    rng = np.random.default_rng(20261125)
    for version in (1, 2):
        data = copy.deepcopy(STUDY) | {"version": version, "min_release": 10}
        data["title"] = f"Campus study, wave {version}"
        survey = load_survey(data)
        store.publish(survey)
        n = 300 * version
        truth = (rng.random(n) < 0.2).astype(np.int64)
        cheat = survey.question("cheat").mechanism.randomize(truth, rng)
        store.submit_batch(survey, [{"faculty": 0, "year": 0, "cheat": int(c)} for c in cheat])
        store.release()
    content, _, name = export_bytes(store, "campus", "parquet")
    path = tmp_path / name
    path.write_bytes(content)
    pooled = survey_results(store, store.survey("campus", 2), 0.95, pooled=True)
    alone = survey_results(store, store.survey("campus", 2), 0.95)
    store.close()
    for flags, board in ((["--pooled"], pooled), ([], alone)):
        payload = run(str(path), "--question", "cheat", *flags)
        (cheat_row,) = [q for q in board["questions"] if q["id"] == "cheat"]
        assert payload["n"] == cheat_row["n"] == (900 if flags else 600)
        assert payload["estimate"] == pytest.approx(cheat_row["estimate"], abs=1e-10)
    bad = CliRunner().invoke(
        app, ["analyze", str(path), "--question", "cheat", "--pooled", "--by", "faculty"]
    )
    assert bad.exit_code != 0 and "--pooled takes --question alone" in bad.output

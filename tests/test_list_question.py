"""The list experiment as a survey question (``design: {name: list-experiment}``): the
survey file, the respondent's view, the server's checks, the release rule and the
study's results."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from deniable.analysis import list_difference_in_means
from deniable.collection.model._survey import load_survey
from deniable.collection.respondent import simulate_responses
from deniable.collection.store import disclosure_plan
from deniable.collection.store._storage import Store
from deniable.collection.study._survey_results import survey_results
from deniable.errors import ReportValidationError, SurveyError

from .conftest import Z4

ITEMS = [
    "the federal government increasing the tax on gasoline",
    "professional athletes getting million-dollar-plus salaries",
    "large corporations polluting the environment",
]


def _study(covariate: bool = False, **question) -> dict:
    questions = [
        {
            "id": "upset",
            "text": "How many of these make you angry or upset? Not which, only how many.",
            "design": {"name": "list-experiment"},
            "items": ITEMS,
            "sensitive_item": "a black family moving next door to you",
        }
        | question,
        {
            "id": "cheat",
            "text": "Have you ever cheated on an exam?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0.2}},
        },
    ]
    if covariate:
        questions.insert(
            0,
            {
                "id": "faculty",
                "text": "Faculty",
                "design": {"name": "direct"},
                "choices": ["a", "b"],
            },
        )
    return {
        "format": 1,
        "id": "upset",
        "version": 1,
        "title": "What upsets people",
        "privacy_budget": 4.0,
        "min_release": 20,
        "questions": questions,
    }


def test_the_survey_file_takes_a_list_and_its_sensitive_item():
    """The count is sent as given and post-randomized by the server over 0..J+1 in both
    groups (the range-restricted geometric channel at ln 9 per item), which the
    question is charged."""
    q = load_survey(_study()).questions[0]
    assert q.is_list and q.is_direct and q.cost == pytest.approx(math.log(9))
    assert len(q.groups) == 2 and q.choice_labels == ["0", "1", "2", "3", "4"]
    assert q.release_channel.spec_name == "geometric-count"
    assert q.groups == (q.release_channel, q.release_channel) == (q.mechanism, q.mechanism)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"items": None}, "items"),
        ({"items": ITEMS[:1]}, "items"),
        ({"items": [f"item {i}" for i in range(21)]}, "items"),
        ({"items": [ITEMS[0], ITEMS[0]]}, "items"),
        ({"sensitive_item": None}, "sensitive_item"),
        ({"sensitive_item": ITEMS[1]}, "sensitive_item"),
        ({"design": {"name": "list-experiment", "params": {"k": 3}}}, "design.params"),
        ({"choices": ["none", "some"]}, "choices"),
        ({"allow_no_answer": True}, "allow_no_answer"),
        ({"known_prevalence": 0.1}, "known_prevalence"),
        ({"design": {"name": "warner", "params": {"p": 0.7}}}, "items"),
    ],
)
def test_a_malformed_list_question_is_refused_naming_the_field(changes, field):
    with pytest.raises(SurveyError) as err:
        load_survey(_study(**changes))
    assert field in str(err.value), str(err.value)


def test_each_group_sees_its_list_and_is_told_what_can_be_seen_for_certain():
    view = load_survey(_study()).respondent_view("en")
    q = next(v for v in view["questions"] if v["id"] == "upset")
    assert q["direct"] and q["list"] and not q["by_hand"] and q["instructions"] is None
    short, long_ = q["groups"]
    assert short["items"] == ITEMS and short["choices"] == ["0", "1", "2", "3"]
    assert long_["items"][-1].startswith("a black family") and len(long_["choices"]) == 5
    assert "can be seen for certain" in long_["list_note"] and "0 or 4" in long_["list_note"]
    assert "0 or 3" in short["list_note"]


def test_the_server_refuses_a_count_the_group_cannot_send(tmp_path):
    survey = load_survey(_study())
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    with pytest.raises(ReportValidationError, match=r"reports.upset must be a count in 0..3"):
        store.submit(survey, {"upset": 4, "cheat": 1}, groups={"upset": 0})
    with pytest.raises(ReportValidationError, match=r"groups must give 0 or 1"):
        store.submit(survey, {"upset": 2, "cheat": 1})
    store.submit(survey, {"upset": 4, "cheat": 1}, groups={"upset": 1})
    assert store.waiting(survey.id).get(survey.version, 0) == 1  # the refused stored nothing


def test_the_count_is_never_a_key_of_the_release_rule():
    """Replaces the count as a key (a rule that made rare counts wait selected on the
    outcome): only faculty, asked before the list, is a key; the count is protected by
    its channel."""
    survey = load_survey(_study(covariate=True))
    plan = disclosure_plan(survey)
    assert plan.keys == (0,)
    assert survey.questions[1].release_channel is not None


def _truths(rng: np.random.Generator, n: int, prevalence: float) -> dict[str, np.ndarray]:
    z = rng.random(n) < prevalence
    c = rng.binomial(3, 0.5, n)
    return {"upset": c + 4 * z, "cheat": rng.integers(0, 2, n)}


def _channelled_sd(survey, prevalence: float, n: int) -> float:
    """The exact SD of the difference in means through the channel: per group, the
    variance of w[report] (w = P^-T c) under the report distribution P pi, over n / 2."""
    P = survey.questions[0].release_channel.matrix
    w = np.linalg.solve(P.T, np.arange(5.0))
    control = np.append(stats.binom.pmf(np.arange(4), 3, 0.5), 0.0)
    treated = (1 - prevalence) * control + prevalence * np.roll(control, 1)
    var = 0.0
    for pi in (control, treated):
        lam = P @ pi
        var += (lam @ w**2 - (lam @ w) ** 2) / (n / 2)
    return math.sqrt(var)


def test_the_study_estimates_the_prevalence_from_the_two_lists(tmp_path):
    """4,000 respondents at prevalence 0.2: every row is released (no key), the stored
    counts went through the channel, and the difference in means through it is within
    4 exact SDs of the truth, and so is the maximum likelihood through the channel;
    the design-effect test through the channel finds none (none was simulated) and
    equals the library's."""
    survey = load_survey(_study())
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    rng = np.random.default_rng(2026)
    store.pram_rng = rng  # the server's post-randomization, seeded to simulate
    n, prevalence = 4000, 0.2
    bodies = simulate_responses(survey, _truths(rng, n, prevalence), rng)
    store.submit_batch(survey, [b["reports"] for b in bodies], None, [b["groups"] for b in bodies])
    assert survey_results(store, survey, 0.95)["released"] == 0  # nothing before a release
    store.release()
    out = survey_results(store, survey, 0.95)
    item = next(q for q in out["questions"] if q["id"] == "upset")["list"]
    assert out["released"] == n and item["n_treated"] + item["n_control"] == n
    frame = store.released.export("upset")
    rows = frame[frame["question_id"] == "upset"]
    stored = rows["report"].to_numpy()
    sent = np.array([b["reports"]["upset"] for b in bodies])
    assert sorted(stored.tolist()) != sorted(sent.tolist())  # not the counts as sent
    direct = list_difference_in_means(
        stored, rows["group"].to_numpy(), items=3, channel=survey.questions[0].release_channel
    )
    assert item["estimate"] == pytest.approx(direct.estimate)
    assert abs(item["estimate"] - prevalence) < Z4 * _channelled_sd(survey, prevalence, n)
    assert item["result"] == "ListEstimate"  # the one shape of every estimate
    assert item["interval"]["low"] < item["estimate"] < item["interval"]["high"]
    # the maximum likelihood through the channel (tests/test_list_channel.py), within 4
    # SDs of the difference in means' exact SD (it is the more efficient of the two)
    assert abs(item["mle"] - prevalence) < Z4 * _channelled_sd(survey, prevalence, n)
    from deniable.analysis import list_design_effect_test

    test = list_design_effect_test(
        stored, rows["group"].to_numpy(), items=3, channel=survey.questions[0].release_channel
    )
    assert item["design_effect"]["pvalue"] == pytest.approx(test.pvalue) and test.pvalue > 0.01
    assert item["warnings"] == [] and item["channel"].startswith("geometric")


def test_what_waits_is_chosen_by_no_count(tmp_path):
    """Replaces "rows that wait are named in a warning": faculty is the only key, so a
    release takes both faculties' cells whole whatever the counts, and no warning about
    waiting counts is left."""
    survey = load_survey(_study(covariate=True))
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    rng = np.random.default_rng(7)
    n = 600
    truths = _truths(rng, n, 0.2) | {"faculty": rng.integers(0, 2, n)}
    bodies = simulate_responses(survey, truths, rng)
    store.submit_batch(survey, [b["reports"] for b in bodies], None, [b["groups"] for b in bodies])
    store.release()
    out = survey_results(store, survey, 0.95)
    item = next(q for q in out["questions"] if q["id"] == "upset")["list"]
    assert out["waiting"] == 0 and out["released"] == n
    assert not any("wait" in w for w in item["warnings"])


def test_the_dashboard_shows_the_list_and_what_its_counts_reveal(tmp_path):
    from fastapi.testclient import TestClient

    from deniable.collection.server import create_app

    from .conftest import ANALYST

    survey = load_survey(_study())
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    rng = np.random.default_rng(3)
    bodies = simulate_responses(survey, _truths(rng, 800, 0.2), rng)
    store.submit_batch(survey, [b["reports"] for b in bodies], None, [b["groups"] for b in bodies])
    client = TestClient(create_app(store, analyst_token=ANALYST, release_tick=None))
    auth = {"Authorization": f"Bearer {ANALYST}"}
    assert client.post("/api/surveys/upset/release", headers=auth).json()["released"] == 800
    page = client.get("/surveys/upset/results", headers=auth)
    assert page.status_code == 200
    assert "List experiment upset" in page.text
    assert "post-randomized by the server before it was stored" in page.text
    api = client.get("/api/surveys/upset/results", headers=auth).json()
    item = next(q for q in api["questions"] if q["id"] == "upset")
    assert item["list"]["n_treated"] + item["list"]["n_control"] == api["released"] == 800


@pytest.mark.parametrize("group", [0, 1])
def test_the_terminal_client_shows_the_groups_list_and_sends_the_count(tmp_path, group):
    import json

    from .test_direct import respond_in_terminal

    data = _study() | {"id": "campus"}
    survey = load_survey(data)
    key = survey.questions[0].memo_digest
    memo = tmp_path / "data" / "deniable" / "memo.json"
    memo.parent.mkdir(parents=True)
    # this computer's group for the list, as an earlier draw would have kept it
    memo.write_text(json.dumps({"device": {f"group/{key}": group}}))
    most = 3 + group
    out, store = respond_in_terminal(tmp_path, data, f"{most + 1}\n{most}\n1\n")
    text = " ".join(out.output.split())  # the terminal may wrap at any width
    assert "a black family moving next door" in text if group else "black" not in text
    assert "can be seen for certain" in text
    assert "randomized by the server before it is stored" in text
    assert f"Please type a whole number from 0 to {most}." in text  # J + 2 refused
    frame = store.released.export("campus")
    row = frame[frame["question_id"] == "upset"].iloc[0]
    # stored through the channel over 0..J+1 (tests/test_pram.py checks its law)
    assert 0 <= int(row["report"]) <= 4 and int(row["group"]) == group
    kept = json.loads(memo.read_text())
    assert not any(k == key for owner in kept.values() for k in owner)  # the count is not kept
    store.close()


@pytest.mark.parametrize("host", ["jspsych", "otree", "qualtrics", "limesurvey"])
def test_a_survey_tool_is_handed_the_list_question(tmp_path, host):
    """The list question goes into every host's files beside the randomized ones
    (tests/test_embed_list.py reads each host's export back)."""
    from deniable.collection.exports import embed

    files = embed(host, load_survey(_study()), tmp_path / host)
    text = "".join(f.read_text(encoding="utf-8") for f in files if f.suffix in (".js", ".py"))
    assert "a black family moving next door to you" in text
    assert "upset" in text


def test_a_list_question_beside_arms_is_estimated_over_every_arm(tmp_path):
    data = _study() | {
        "arms": {
            "fr": {"weight": 1},
            "dq": {"weight": 1, "designs": {"cheat": {"name": "direct"}}},
        }
    }
    survey = load_survey(data)
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    rng = np.random.default_rng(11)
    n = 3000
    bodies = simulate_responses(survey, _truths(rng, n, 0.3), rng)
    store.submit_batch(
        survey,
        [b["reports"] for b in bodies],
        [b["arm"] for b in bodies],
        [b["groups"] for b in bodies],
    )
    store.release()
    out = survey_results(store, survey, 0.95)
    item = next(q for q in out["questions"] if q["id"] == "upset")["list"]
    # no key: every row released, whatever its arm, count or direct answer
    assert item["n_treated"] + item["n_control"] == out["released"] == n
    assert abs(item["estimate"] - 0.3) < Z4 * _channelled_sd(survey, 0.3, n)
    assert [s["question"] for s in out["study"]] == ["cheat"]  # the list is no arm study


def test_the_r_bundle_gives_the_difference_in_means_and_never_uses_the_count_as_a_covariate(
    tmp_path,
):
    """The bundle's R script fits the list question in base R (difference in means, Neyman
    SE), keeps the count out of the covariates of the randomized questions' regressions,
    and, where Rscript is installed, R's figures from the wide CSV equal the library's."""
    import csv
    import json
    import os
    import re
    import shutil
    import subprocess

    from typer.testing import CliRunner

    from deniable.cli import app
    from deniable.collection.server._live import serve_in_thread

    from .conftest import ANALYST

    survey = load_survey(_study(covariate=True))
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    rng = np.random.default_rng(31)
    n = 600
    truths = _truths(rng, n, 0.3) | {"faculty": rng.integers(0, 2, n)}
    bodies = simulate_responses(survey, truths, rng)
    store.submit_batch(survey, [b["reports"] for b in bodies], None, [b["groups"] for b in bodies])
    store.release()  # what waits is released at the next release time
    env = {"DENIABLE_ANALYST_TOKEN": ANALYST, "COLUMNS": "200"}
    with serve_in_thread(store, ANALYST) as base:
        out = CliRunner().invoke(
            app,
            ["survey", "export", "upset", "--format", "bundle", "--output",
             str(tmp_path / "bundle"), "--server", base, "--json"],
            env=env,
        )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert [os.path.basename(f) for f in json.loads(out.stdout)["files"]][-1] == "upset.R"
    script = (tmp_path / "bundle" / "upset.R").read_text()
    assert "RRglm(cheat ~ faculty," in script and "d$upset <- factor" not in script
    assert "upset, all: difference in means" in script
    rscript = shutil.which("Rscript")
    if rscript is None:
        store.close()
        return
    # the whole script: its base-R parts run without RRreg and GLMMRR
    ran = subprocess.run(
        [rscript, "upset.R"], cwd=tmp_path / "bundle", capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    found = re.search(r"difference in means ([-0-9.e]+) SE ([-0-9.e]+)", ran.stdout)
    assert found, ran.stdout
    with (tmp_path / "bundle" / "upset.wide.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["upset"] != ""]
    counts = np.array([int(r["upset"]) for r in rows])
    treated = np.array([int(r["upset__group"]) for r in rows])
    # the server post-randomized every count: the script undoes the channel as the library does
    channel = survey.question("upset").release_channel
    assert channel is not None and "w_upset <- c(" in script
    mine = list_difference_in_means(counts, treated, items=3, channel=channel)
    assert float(found.group(1)) == pytest.approx(mine.estimate, rel=1e-5)
    assert float(found.group(2)) == pytest.approx(mine.std_error, rel=1e-5)
    store.close()


def test_a_list_question_at_every_moment_of_the_study(tmp_path):
    """Before the first response, with rows all waiting, and after close: the results
    page, the dashboard and the API answer (never a 500), the list's figures appear only
    once rows are released, and a closed survey refuses new counts."""
    from fastapi.testclient import TestClient

    from deniable.collection.server import create_app

    from .conftest import ANALYST

    survey = load_survey(_study())
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    client = TestClient(create_app(store, analyst_token=ANALYST))
    auth = {"Authorization": f"Bearer {ANALYST}"}

    def look() -> dict:
        for path in ("/surveys/upset/results", "/"):
            page = client.get(path, headers=auth)
            assert page.status_code == 200, (path, page.text[-500:])
        api = client.get("/api/surveys/upset/results", headers=auth)
        assert api.status_code == 200, api.text
        return next(q for q in api.json()["questions"] if q["id"] == "upset")

    empty = look()  # before the first response
    assert not empty.get("list") or empty["list"]["n_treated"] + empty["list"]["n_control"] == 0
    rng = np.random.default_rng(5)
    few = simulate_responses(survey, _truths(rng, 15, 0.2), rng)  # fewer than min_release
    store.submit_batch(survey, [b["reports"] for b in few], None, [b["groups"] for b in few])
    waiting = look()
    assert not waiting.get("list") or (
        waiting["list"]["n_treated"] + waiting["list"]["n_control"] == 0
    )
    more = simulate_responses(survey, _truths(rng, 2000, 0.2), rng)
    store.submit_batch(survey, [b["reports"] for b in more], None, [b["groups"] for b in more])
    assert client.post("/api/surveys/upset/close", headers=auth).status_code == 200
    closed = look()
    assert closed["list"]["n_treated"] + closed["list"]["n_control"] > 1500
    # the results page: the test through the channel, and no count seen for certain
    text = client.get("/surveys/upset/results", headers=auth).text
    shown = text[text.index('id="list-upset"') :].split("</p>")[0]
    assert "no design effect p = " in shown and "(through the channel)" in shown
    assert "no stored count shows an item's answer for certain" in shown
    assert "an estimated " in shown and "seen for certain" not in shown
    from deniable.errors import SurveyClosedError

    with pytest.raises(SurveyClosedError, match="closed"):
        store.submit_batch(survey, [few[0]["reports"]], None, [few[0]["groups"]])
    store.close()


def _list_crowd(rng: np.random.Generator, n: int) -> list[dict]:
    """``n`` device bodies of the covariate study: faculty 0 for most, a count drawn as
    the list's respondents answer (the sensitive item held by a fifth), group at random."""
    faculty = rng.choice(2, size=n, p=[0.8, 0.2])
    group = rng.integers(0, 2, n)
    count = rng.binomial(3, 0.5, n) + group * (rng.random(n) < 0.2)
    return [
        {"reports": {"faculty": int(f), "upset": int(c), "cheat": int(rng.integers(2))},
         "groups": {"upset": int(g)}}
        for f, c, g in zip(faculty, count, group, strict=True)
    ]  # fmt: skip


@pytest.mark.slow
def test_an_attacker_with_every_release_sees_key_cells_grow_by_crowds_and_counts_randomized(
    tmp_path,
):
    """Replaces "the list's count is a key of the release rule" (a rule on the count
    made rare counts wait, a selection on the outcome; the flip test in tests/test_pram.py
    now shows a count changes no release but its own randomized value). An attacker who
    asks for a release and downloads the wide export and the results after every crowd
    (one crowd being nine others and one faculty-0 respondent whose count of every item,
    4, says "yes" for certain as sent) finds every faculty cell, every per-faculty
    breakdown and the list's two groups together grow by 0 or by at least min_release,
    and the stored counts are not the counts as sent (the channel). Control: what was
    sent, crowd by crowd, does single that respondent out by (faculty, count)."""
    from fastapi.testclient import TestClient

    from deniable.collection.server import create_app

    from .conftest import ANALYST

    survey = load_survey(_study(covariate=True))
    m = survey.min_release
    store = Store(f"sqlite:///{tmp_path / 'rr.sqlite'}")
    store.publish(survey)
    client = TestClient(create_app(store, analyst_token=ANALYST, release_tick=None))
    auth = {"Authorization": f"Bearer {ANALYST}"}
    rng = np.random.default_rng(43)
    the_one = {"reports": {"faculty": 0, "upset": 4, "cheat": 1}, "groups": {"upset": 1}}
    snapshots, sent, sent_so_far = [], [], []
    for size in [80, 45, None, 30, 60, 25, 70, 40]:
        crowd = _list_crowd(rng, size) if size else [*_list_crowd(rng, 9), the_one]
        bodies, groups = [b["reports"] for b in crowd], [b["groups"] for b in crowd]
        store.submit_batch(survey, bodies, None, groups)
        sent.extend(crowd)
        sent_so_far.append(list(sent))
        assert client.post("/api/surveys/upset/release", headers=auth).status_code == 200
        wide = client.get("/api/surveys/upset/export?format=wide", headers=auth)
        assert wide.status_code == 200, wide.text
        rows = [line.split(",") for line in wide.text.strip().splitlines()]
        at = {name: i for i, name in enumerate(rows[0])}
        cells = Counter(r[at["faculty"]] for r in rows[1:])
        res = client.get("/api/surveys/upset/results", headers=auth).json()
        counts = {f"cell {c}": n for c, n in cells.items()}
        for b in res["breakdowns"]:
            for g in b["groups"]:
                counts[f"breakdown {b['question']} by {b['by']} = {g['group']}"] = g["n"]
        listed = next(q for q in res["questions"] if q["id"] == "upset").get("list") or {}
        counts["lists"] = listed.get("n_treated", 0) + listed.get("n_control", 0)
        snapshots.append((res["released"], counts, Counter(r[at["upset"]] for r in rows[1:])))

    def singled_out(before: dict, after: dict) -> dict:
        diffs = {k: after.get(k, 0) - before.get(k, 0) for k in {*before, *after}}
        return {k: d for k, d in diffs.items() if d < 0 or 0 < d < m}

    released = [r for r, _, _ in snapshots]
    assert len(set(released)) >= 4 and released[-1] <= len(sent), released
    for (_, a, _), (_, b, _) in itertools.combinations(snapshots, 2):
        assert singled_out(a, b) == {}, singled_out(a, b)
    as_sent = Counter(str(x["reports"]["upset"]) for x in sent)
    assert snapshots[-1][2] != as_sent  # the released counts went through the channel
    control = [
        Counter((str(x["reports"]["faculty"]), str(x["reports"]["upset"])) for x in s)
        for s in sent_so_far
    ]
    assert any(
        singled_out({f"cell {c}": n for c, n in control[i].items()},
                    {f"cell {c}": n for c, n in control[i + 1].items()})
        for i in range(len(control) - 1)
    )  # fmt: skip
    store.close()

"""Arms and group designs in a survey: the file, the accounting, what is stored and
exported, and what the respondent's device is given."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._export import export_bytes, read_export
from deniable.collection.model._budget import check_lifetime, lifetime_ledger
from deniable.collection.model._survey import load_survey
from deniable.collection.store._staging import StagedResponse, pack, unpack
from deniable.collection.store._storage import Store
from deniable.errors import BudgetExceededError, ReportValidationError, SurveyError

from .conftest import AUTH, assert_error_shape

#: The issue's campus study (with its usual header fields).
CAMPUS = {
    "format": 1,
    "id": "campus",
    "version": 1,
    "title": "Campus study",
    "privacy_budget": 4.0,
    "min_release": 30,
    "expected_responses": 600,
    "arms": {
        "dq": {"weight": 1, "designs": {"cheat": {"name": "direct"}}},
        "rr": {"weight": 2},
    },
    "questions": [
        {
            "id": "faculty",
            "text": "Which faculty are you in?",
            "choices": ["law", "medicine", "science", "arts"],
            "design": {"name": "direct"},
            "allow_no_answer": True,
        },
        {
            "id": "cheat",
            "text": "Have you cheated in an exam this year?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "plagiarism",
            "text": "Have you ever handed in someone else's work as your own?",
            "innocuous_question": "Is your mother's birthday in January, February or March?",
            "design": {"name": "extended-crosswise", "params": {"p": 0.25}},
        },
    ],
}
LN3 = math.log(3)


def with_(base: dict, **changes) -> dict:
    return json.loads(json.dumps(base)) | changes


def test_the_issue_file_is_accepted_and_each_arm_and_group_costed(tmp_path):
    survey = load_survey(CAMPUS)
    assert survey.arm_names == ["dq", "rr"] and survey.control_arms == ["dq"]
    assert [q.design.name for q in survey.questions_in("dq")] == [
        "direct",
        "direct",
        "extended-crosswise",
    ]
    assert survey.question_cost("cheat") == pytest.approx(LN3)  # the largest over arms
    assert survey.question_cost("plagiarism") == pytest.approx(LN3)  # over groups
    assert survey.total_epsilon == pytest.approx(2 * LN3)
    assert [q.id for q in survey.direct_questions] == ["faculty"]  # direct in every arm
    path = tmp_path / "campus.json"
    path.write_text(json.dumps(CAMPUS))
    out = CliRunner().invoke(app, ["survey", "check", str(path), "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    arms = {a["id"]: a for a in payload["arms"]}
    # dq's direct cheat is post-randomized at rr's epsilon (ln 3), which dq is charged
    assert arms["dq"]["cost"] == pytest.approx(2 * LN3) and arms["dq"]["direct"] == [
        "faculty",
        "cheat",
    ]
    assert arms["rr"]["cost"] == pytest.approx(2 * LN3)
    assert arms["dq"]["share"] == pytest.approx(1 / 3)
    rows = [(r["id"], r["arm"], r["group"]) for r in payload["questions"]]
    assert rows == [("cheat", "rr", None), ("plagiarism", None, 0), ("plagiarism", None, 1)]
    assert [d["id"] for d in payload["direct_questions"]] == ["faculty"]
    text = CliRunner().invoke(app, ["survey", "check", str(path)], env={"COLUMNS": "200"})
    assert "Arm dq (drawn with chance 0.333): 2.1972 nats; asked directly: faculty, cheat" in (
        text.stdout
    )


def test_a_question_costs_its_largest_arm():
    survey = load_survey(
        with_(
            CAMPUS,
            arms={
                "low": {"designs": {"cheat": {"name": "warner", "params": {"p": 0.6}}}},
                "high": {"designs": {"cheat": {"name": "warner", "params": {"p": 0.9}}}},
            },
        )
    )
    assert survey.question_cost("cheat") == pytest.approx(math.log(9))
    with pytest.raises(BudgetExceededError, match=r"cheat=2\.19722"):
        load_survey(with_(CAMPUS, privacy_budget=3.0, arms=survey.model_dump()["arms"]))


@pytest.mark.parametrize(
    ("arms", "message"),
    [
        ({"only": {"weight": 1}}, "arms: Dictionary should have at least 2 items"),
        ({"a": {"weight": 0}, "b": {}}, "arms.a.weight"),
        ({"a": {"designs": {"nope": {"name": "direct"}}}, "b": {}}, "no question nope"),
        (
            {"a": {"designs": {"cheat": {"name": "kary-rr", "params": {"k": 3}}}}, "b": {}},
            "arms.a.designs.cheat",
        ),
        ({"a": {"colour": "red"}, "b": {}}, "arms.a.colour"),
    ],
)
def test_bad_arms_are_refused_naming_the_field(arms, message):
    with pytest.raises(SurveyError, match=message):
        load_survey(with_(CAMPUS, arms=arms))


def _question(design: dict, **extra) -> dict:
    return {"id": "q", "text": "Have you?", "design": design} | extra


@pytest.mark.parametrize(
    ("design", "extra", "message"),
    [
        ({"name": "extended-crosswise", "params": {"p": 0.5}}, {}, "must not be 0.5"),
        ({"name": "extended-crosswise", "params": {"p": 1.2}}, {}, r"p must be in \(0, 1\)"),
        ({"name": "extended-crosswise", "params": {"q": 0.2}}, {}, "exactly {p}"),
        (
            {"name": "cheating-detection", "params": {"p1": 0.3, "p2": 0.3}},
            {"allow_infinite_epsilon": True},
            "must differ",
        ),
        (
            {"name": "cheating-detection", "params": {"p1": 0.3, "p2": 0.7}},
            {},
            "allow_infinite_epsilon",
        ),
        (
            {"name": "stochastic-lie-detector", "params": {"p1": 0.2, "p2": 0.8}},
            {"choices": ["a", "b", "c"]},
            "2 true answers",
        ),
        ({"name": "warner", "params": {"p": 0.7}}, {"innocuous_complement": "x?"}, "only an"),
        ({"name": "direct"}, {"control": "zero"}, "control"),
    ],
)
def test_bad_group_designs_are_refused(design, extra, message):
    survey = {"id": "s", "version": 1, "title": "t", "privacy_budget": 5.0}
    with pytest.raises(SurveyError, match=message):
        load_survey(survey | {"questions": [_question(design, **extra)]})


def test_group_designs_cost_their_largest_group():
    # one-sided designs: a report proves the answer that is not sensitive
    survey = {"id": "s", "version": 1, "title": "t", "privacy_budget": 5.0}
    survey |= {"no_lifetime_budget": True}
    cdm = load_survey(
        survey
        | {
            "questions": [
                _question(
                    {"name": "cheating-detection", "params": {"p1": 0.3, "p2": 0.6}},
                    allow_infinite_epsilon=True,
                )
            ]
        }
    ).questions[0]
    # a forced "yes" with chance p: a "yes" report multiplies the odds by 1 / p
    assert cdm.cost == pytest.approx(-math.log(0.3))
    assert [d.params for d in cdm.groups] == [
        {"p_yes": 0.3, "p_no": 0.0},
        {"p_yes": 0.6, "p_no": 0.0},
    ]
    sld = load_survey(
        survey
        | {
            "questions": [
                _question(
                    {"name": "stochastic-lie-detector", "params": {"p1": 2 / 12, "p2": 10 / 12}},
                    allow_infinite_epsilon=True,
                )
            ]
        }
    ).questions[0]
    # Mangat's device: a "yes" report multiplies the odds by 1 / (1 - p)
    assert sld.cost == pytest.approx(-math.log(1 - 10 / 12))
    assert sld.group_channel.p.tolist() == pytest.approx([2 / 12, 10 / 12])


def test_the_device_gets_each_arm_and_each_group():
    view = load_survey(CAMPUS).respondent_view()
    assert [a["id"] for a in view["arms"]] == ["dq", "rr"] and view["control_arm"]
    dq = view["arms"][0]["questions"]
    assert list(dq) == ["cheat"] and dq["cheat"]["direct"] is True
    assert view["arms"][1]["questions"] == {}
    plag = view["questions"][2]
    assert [g["columns"] for g in plag["groups"]] == [
        [[0.25, 0.75], [0.75, 0.25]],
        [[0.75, 0.25], [0.25, 0.75]],
    ]
    assert plag["groups"][1]["innocuous_question"] == (
        "Is the answer to “Is your mother's birthday in January, February or March?” no?"
    )
    assert view["questions"][1]["groups"] == []


def test_staged_payloads_carry_arm_and_groups_and_old_payloads_still_read():
    item = StagedResponse("campus", 3, 1_700_000_000, (1, 0, 255), 1, (0, 0, 1))
    payload = pack(item)
    assert len(payload) == 256 and unpack(payload) == item
    big = StagedResponse("x" * 64, 2**31 - 1, 2**40, (7,) * 100, 15, (1, 0) * 50)
    assert unpack(pack(big)) == big  # the largest response still fits the slot
    # the format before arms: length-prefixed id, version, bucket, codes
    old = bytes([6]) + b"campus" + (3).to_bytes(4, "big") + (5).to_bytes(8, "big")
    old += bytes([2, 1, 0])
    assert unpack(old + bytes(256 - len(old))) == StagedResponse("campus", 3, 5, (1, 0))


def _store(tmp_path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'arms.sqlite'}")
    # crowds of one, no l-diversity: these tests are about the columns, not the release
    store.publish(load_survey(with_(CAMPUS, min_release=1, allow_small_release=True)))
    return store


def test_stored_rows_hold_arm_and_group_and_bad_ones_store_nothing(tmp_path):
    store = _store(tmp_path)
    survey = store.survey("campus")
    bad = [
        ({"faculty": 0, "cheat": 1, "plagiarism": 0}, None, {"plagiarism": 0}, "arm must be"),
        ({"faculty": 0, "cheat": 1, "plagiarism": 0}, "zz", {"plagiarism": 0}, "arm must be"),
        ({"faculty": 0, "cheat": 1, "plagiarism": 0}, "rr", None, "groups must give"),
        ({"faculty": 0, "cheat": 1, "plagiarism": 0}, "rr", {"plagiarism": 2}, "groups must"),
        ({"faculty": 0, "cheat": 2, "plagiarism": 0}, "dq", {"plagiarism": 0}, "cheat must"),
    ]
    for reports, arm, groups, message in bad:
        with pytest.raises(ReportValidationError, match=message):
            store.submit(survey, reports, None, arm, groups)
    assert store.response_count("campus") == 0
    for i in range(10):
        store.submit(
            survey,
            {"faculty": i % 4, "cheat": i % 2, "plagiarism": 1},
            None,
            "dq" if i < 4 else "rr",
            {"plagiarism": i % 2},
        )
    store.release()
    long = store.released.export("campus")
    assert list(long.columns[-2:]) == ["arm", "group"]
    assert sorted(long.groupby("response_id")["arm"].first()) == ["dq"] * 4 + ["rr"] * 6
    plag = long[long.question_id == "plagiarism"]
    assert sorted(plag["group"]) == [0] * 5 + [1] * 5
    assert set(long.loc[long.question_id != "plagiarism", "group"]) == {0}
    store.close()


@pytest.mark.parametrize("fmt", ["csv", "wide", "parquet", "sav", "dta"])
def test_exports_carry_arm_and_group_columns_back_into_analysis(tmp_path, fmt):
    store = _store(tmp_path)
    survey = store.survey("campus")
    rng = np.random.default_rng(5)
    sent = []
    for _ in range(20):
        arm = str(rng.choice(["dq", "rr"]))
        group = int(rng.integers(2))
        reports = {"faculty": int(rng.integers(4)), "cheat": int(rng.integers(2))}
        reports["plagiarism"] = int(rng.integers(2))
        store.submit(survey, reports, None, arm, {"plagiarism": group})
        sent.append((arm, group, reports["cheat"], reports["plagiarism"]))
    store.release()
    content, _, name = export_bytes(store, "campus", fmt)
    path = tmp_path / name
    path.write_bytes(content)
    (tmp_path / "campus.survey.json").write_bytes(export_bytes(store, "campus", "survey")[0])
    frame, versions = read_export(path)
    assert versions[0].arm_names == ["dq", "rr"]
    got = sorted(
        zip(
            frame["arm"],
            frame["plagiarism__group"].astype(int),
            frame["cheat"].astype(int),
            frame["plagiarism"].astype(int),
            strict=True,
        )
    )

    # dq asks cheat directly: its answer was post-randomized before it was stored, so
    # only its arm, group and plagiarism report come back as sent
    def seen(rows):
        return sorted((a, g, c if a == "rr" else -1, p) for a, g, c, p in rows)

    assert seen(got) == seen(sent)
    assert {c for a, _, c, _ in got if a == "dq"} <= {0, 1}
    store.close()


def test_the_ledger_charges_a_question_its_largest_arm_and_a_changed_arm_again():
    first = load_survey(CAMPUS)
    ledger = lifetime_ledger([first])
    assert [e.question_id for e in ledger.entries] == ["cheat", "plagiarism"]
    assert ledger.spent == pytest.approx(2 * LN3)
    same = load_survey(with_(CAMPUS, version=2))
    # unchanged, yet dq's direct answer to cheat is post-randomized afresh by the server
    # in every version (no device memo spares it): charged again; plagiarism is free
    assert check_lifetime([first], same).cumulative[-1][1] == pytest.approx(LN3)
    changed = with_(CAMPUS, version=2, privacy_budget=4.0)
    changed["arms"]["dq"]["designs"]["cheat"] = {"name": "warner", "params": {"p": 0.75}}
    ledger = check_lifetime([first], load_survey(changed))
    assert ledger.cumulative[-1][1] == pytest.approx(LN3)  # cheat is charged again
    tight = load_survey(with_(CAMPUS, privacy_budget=3.0))  # lifetime 3 nats
    with pytest.raises(BudgetExceededError, match=r"would spend 3\.296"):
        check_lifetime([tight], load_survey(changed | {"privacy_budget": 3.0}))


@pytest.mark.anyio
async def test_the_protocol_takes_arm_and_groups_and_refuses_them_where_they_do_not_fit(client):
    assert (await client.post("/api/surveys", json=CAMPUS, headers=AUTH)).status_code == 201
    ok = {
        "version": 1,
        "reports": {"faculty": None, "cheat": 1, "plagiarism": 0},
        "arm": "dq",
        "groups": {"plagiarism": 1},
    }
    r = await client.post("/api/surveys/campus/responses", json=ok)
    assert r.status_code == 201, r.text
    for change, field in [
        ({"arm": "Control!"}, "arm"),
        ({"arm": "xx"}, "arm must be one of"),
        ({"groups": {"plagiarism": 1, "cheat": 0}}, "groups must give"),
        ({"groups": {"plagiarism": True}}, "groups"),
    ]:
        r = await client.post("/api/surveys/campus/responses", json=ok | change)
        assert field in assert_error_shape(r, 422)["message"]
    view = (await client.get("/api/surveys/campus")).json()
    assert [a["id"] for a in view["arms"]] == ["dq", "rr"]
    assert client.store.response_count("campus") == 1


def campus_truths(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Known truths: faculty uniform (a tenth prefer not to say), cheating 25% in law
    and 10% elsewhere, plagiarism 15%."""
    faculty = rng.integers(0, 4, size=n)
    cheat = (rng.random(n) < np.where(faculty == 0, 0.25, 0.10)).astype(np.int64)
    faculty[rng.random(n) < 0.1] = -1
    return {
        "faculty": faculty,
        "cheat": cheat,
        "plagiarism": (rng.random(n) < 0.15).astype(np.int64),
    }


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_dashboard_by_arm_equals_the_library_on_every_export(client, tmp_path):
    from deniable.collection.respondent._devices import simulate_responses
    from deniable.collection.study._by_arm import arm_analysis

    # everything released at once: this test is about the dashboard against analyze, and
    # at min_release 30 the release rules keep the control arm's rare "yes" cells waiting
    study = with_(CAMPUS, min_release=1, allow_small_release=True)
    assert (await client.post("/api/surveys", json=study, headers=AUTH)).status_code == 201
    survey = load_survey(study)
    rng = np.random.default_rng(20261126)
    sent = simulate_responses(survey, campus_truths(900, rng), rng)
    client.store.submit_batch(
        survey,
        [r["reports"] for r in sent],
        [r["arm"] for r in sent],
        [r["groups"] for r in sent],
    )
    res = await client.get("/api/surveys/campus/results?regress=cheat&on=faculty", headers=AUTH)
    res = res.json()
    assert [s["question"] for s in res["study"]] == ["cheat", "plagiarism"]
    board = {(b["question"], b["by"]): b for b in res["breakdowns"]}
    fit = res["regression"]  # the fit's one shape: a label per term
    coefficients = {
        term: {"coef": fit["estimate"][i], "std_error": fit["std_error"][i]}
        for i, term in enumerate(fit["labels"])
    }
    counts = res["arms"]["counts"]
    assert sum(counts) == 900 and res["arms"]["pvalue"] > 1e-3  # drawn by weight
    by_question = {q["id"]: q for q in res["questions"]}
    assert by_question["cheat"]["design"] == "by arm"
    # the study's pooled row is the joint likelihood over the randomized arms (issue 43)
    assert by_question["cheat"]["mle"][1] == pytest.approx(
        res["study"][0]["pooled"]["estimate"], abs=1e-12
    )
    assert res["study"][0]["pooled"]["arms"] == ["rr"]
    # the pooled question is the library's estimate through each row's design (the one
    # shape of a PrevalenceEstimate), and its MLE the pooled MLE, inside [0, 1]
    from deniable.collection.study._by_arm import pooled_estimate

    wide_rows, _ = read_export_bytes(
        (await client.get("/api/surveys/campus/export?format=wide", headers=AUTH)).content,
        (await client.get("/api/surveys/campus/export?format=survey", headers=AUTH)).content,
        tmp_path,
    )
    lib = pooled_estimate(wide_rows, survey, "cheat")
    assert by_question["cheat"]["result"] == "PrevalenceEstimate"
    assert by_question["cheat"]["std_error"] == pytest.approx(lib.std_error.tolist(), abs=1e-12)
    mle = pooled_estimate(wide_rows, survey, "cheat", method="mle").estimate
    assert by_question["cheat"]["mle"] == pytest.approx(mle.tolist(), abs=1e-12)
    assert min(by_question["cheat"]["mle"]) >= 0 and max(by_question["cheat"]["mle"]) <= 1
    (tmp_path / "campus.survey.json").write_bytes(
        (await client.get("/api/surveys/campus/export?format=survey", headers=AUTH)).content
    )
    for fmt in ("csv", "wide", "parquet", "sav", "dta"):
        body = await client.get(f"/api/surveys/campus/export?format={fmt}", headers=AUTH)
        path = tmp_path / f"campus.{'wide.csv' if fmt == 'wide' else fmt}"
        path.write_bytes(body.content)
        frame, versions = read_export(path)
        again = [item.to_dict(0.95) for item in arm_analysis(frame, versions[-1])]
        assert_close(again, res["study"])
        out = CliRunner().invoke(app, ["analyze", str(path), "--arms", "--json"])
        assert out.exit_code == 0, out.output
        assert_close(json.loads(out.stdout)["questions"], res["study"])
        sub = CliRunner().invoke(app, ["analyze", "arms", str(path), "--json"])
        assert sub.exit_code == 0 and sub.stdout == out.stdout, sub.output
        # the regression and the breakdowns, each row through its arm's and group's design
        for question in ("cheat", "plagiarism"):
            out = CliRunner().invoke(
                app, ["analyze", str(path), "--question", question, "--by", "faculty", "--json"]
            )
            assert out.exit_code == 0, out.output
            cli = {g["group"]: g for g in json.loads(out.stdout)["groups"]}
            for g in board[question, "faculty"]["groups"]:
                for key in ("estimate", "std_error", "low", "high"):
                    assert abs(cli[g["group"]][key] - g[key]) < 1e-10, (fmt, question, key)
        out = CliRunner().invoke(
            app,
            ["analyze", str(path), "--question", "cheat", "--formula", "cheat ~ faculty", "--json"],
        )
        assert out.exit_code == 0, out.output
        fitted = json.loads(out.stdout)
        params = dict(zip(fitted["labels"], fitted["estimate"], strict=True))
        assert set(params) == set(coefficients)
        for term, c in coefficients.items():
            assert abs(params[term] - c["coef"]) < 1e-10, (fmt, term)
    html = (await client.get("/surveys/campus/results", headers=AUTH)).text
    assert 'id="arms-cheat"' in html and 'id="groups-plagiarism"' in html
    assert "Sample-ratio test of the weights" in html


def assert_close(a, b, tol: float = 1e-10) -> None:
    """Equal structures, numbers to ``tol``."""
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            assert_close(a[k], b[k], tol)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_close(x, y, tol)
    elif isinstance(a, float) and not isinstance(b, str):
        assert b is not None and ((math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol), (a, b)
    else:
        assert a == b


@pytest.mark.slow
def test_the_terminal_client_draws_arm_and_group_once_and_sends_them(tmp_path):
    """Twenty respondents on one computer-owner pair draw the arm once (the memo), a
    group for the ECWM question once, and send both; a respondent with another memo
    may draw another arm."""
    from deniable.collection.server._live import serve_in_thread

    from .conftest import ANALYST

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    # every response released at the next release (this test is about the device)
    every = {"min_release": 1, "allow_small_release": True}
    store.publish(load_survey(with_(CAMPUS, **every)))
    arms = []
    with serve_in_thread(store, ANALYST) as base:
        for person in range(12):
            env = {"XDG_DATA_HOME": str(tmp_path / f"data{person}"), "COLUMNS": "200"}
            out = CliRunner().invoke(
                app, ["respond", f"{base}/s/campus", "--yes"], env=env, input="law\n1\n1\n"
            )
            assert out.exit_code == 0, out.output
            assert "some respondents are asked some questions directly" in out.output
            memo_file = tmp_path / f"data{person}" / "deniable" / "memo.json"
            memo = json.loads(memo_file.read_text())
            (kept,) = memo.values()
            arm_keys = [k for k in kept if k.startswith("arm/")]
            group_keys = [k for k in kept if k.startswith("group/")]
            assert len(arm_keys) == 1 and len(group_keys) == 1
            arms.append(["dq", "rr"][kept[arm_keys[0]]])
            # in dq the cheating question is asked directly and never memoized
            direct = 2 if arms[-1] == "dq" else 1
            assert out.output.count("Sent as given") == direct
            assert len(kept) == 2 + 3 - direct  # arm, group and each report drawn
            # the same person again: the same arm and group, the same reports
            again = CliRunner().invoke(
                app, ["respond", f"{base}/s/campus", "--yes", "--json"], env=env, input="law\n1\n"
            )
            assert again.exit_code == 0, again.output
            assert json.loads(memo_file.read_text()) == memo
            # what the request held (the test runner echoes typed input before it)
            printed = json.loads(again.stdout[again.stdout.index("{") :])
            assert printed["arm"] == arms[-1] and set(printed["groups"]) == {"plagiarism"}
            assert set(printed["reports"]) == {"faculty", "cheat", "plagiarism"}
    store.release()  # as the next scheduled release would
    long = store.released.export("campus")
    stored = long.groupby("response_id")["arm"].first()
    assert sorted(stored) == sorted(arms * 2)
    assert {"dq", "rr"} == set(arms)  # 12 draws at 1/3 and 2/3: both (chance 0.992)
    store.close()


def test_a_zero_prevalence_control_is_shown_as_a_check_of_false_positives(tmp_path):
    """Nobody carries the control item: its crosswise reports give an estimate near 0,
    and the results say it measures false positives, with a one-sided test against 0."""
    from deniable.collection.respondent._devices import simulate_responses
    from deniable.collection.study._survey_results import survey_results

    data = {
        "id": "control",
        "version": 1,
        "title": "t",
        "privacy_budget": 2.0,
        "min_release": 30,
        "questions": [
            {
                "id": "heart",
                "text": "Have you received a donated heart this year?",
                "control": "zero",
                "design": {"name": "crosswise", "params": {"p": 0.25}},
            }
        ],
    }
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    survey = load_survey(data)
    store.publish(survey)
    rng = np.random.default_rng(11)
    sent = simulate_responses(survey, {"heart": np.zeros(2000, dtype=np.int64)}, rng)
    store.submit_batch(survey, [r["reports"] for r in sent])
    store.release()
    (item,) = survey_results(store, survey, 0.95)["questions"]
    assert any("zero-prevalence control" in w for w in item["warnings"])
    # crosswise p = 0.25: Var(estimate) = lam (1 - lam) / (n (2p - 1)^2) at lam = 0.75
    se = math.sqrt(0.75 * 0.25 / 2000) / 0.5
    assert abs(item["control"]["estimate"]) < 4 * se
    assert 0 < item["control"]["pvalue"] < 1
    store.close()


def test_arms_keep_the_order_of_their_names_whatever_the_file_says():
    """A stored arm is its position among the arms: the file's order must not matter, as
    the stored (canonical, sorted) definition is what reads it back."""
    data = with_(CAMPUS)
    data["arms"] = {"rr": data["arms"]["rr"], "dq": data["arms"]["dq"]}
    survey = load_survey(data)
    assert survey.arm_names == ["dq", "rr"]
    assert load_survey(json.loads(survey.canonical_json())).arm_names == ["dq", "rr"]
    assert survey.digest == load_survey(CAMPUS).digest


def test_the_complement_is_translated_and_listed_when_it_is_not():
    data = with_(CAMPUS)
    data["questions"][2]["innocuous_complement"] = "Is your mother's birthday in April to December?"
    data["translations"] = {"de": {"questions": {"plagiarism": {"text": "Plagiat?"}}}}
    survey = load_survey(data)
    assert "questions.plagiarism.innocuous_complement" in survey.untranslated()["de"]
    data["translations"]["de"]["questions"]["plagiarism"]["innocuous_complement"] = (
        "Hat Ihre Mutter von April bis Dezember Geburtstag?"
    )
    view = load_survey(data).respondent_view("de")
    assert view["questions"][2]["groups"][1]["innocuous_question"] == (
        "Hat Ihre Mutter von April bis Dezember Geburtstag?"
    )
    assert "questions.plagiarism.innocuous_complement" not in load_survey(data).untranslated()["de"]


def test_a_database_from_before_arms_is_migrated_and_its_waiting_responses_released(tmp_path):
    """A database made before migration 0007: its reports gain arm 0 and group 0, and a
    response waiting in the payload format before arms is released as it was sent."""
    import os

    from sqlalchemy import text

    from deniable.collection.store._schema import staging

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    store = Store(url)
    survey = load_survey(
        {
            "id": "old",
            "version": 1,
            "title": "t",
            "privacy_budget": 2.0,
            "min_release": 2,
            "allow_small_release": True,
            "questions": [
                {"id": "q", "text": "Q?", "design": {"name": "warner", "params": {"p": 0.75}}}
            ],
        }
    )
    store.publish(survey)
    store.submit(survey, {"q": 1})
    store.submit(survey, {"q": 0})  # a crowd of two
    store.release()
    old = bytes([3]) + b"old" + (1).to_bytes(4, "big") + (0).to_bytes(8, "big") + bytes([1, 1])
    with store.engine.begin() as conn:  # back to the schema before 0007
        conn.execute(text("ALTER TABLE reports DROP COLUMN arm"))
        conn.execute(text("ALTER TABLE reports DROP COLUMN grp"))
        conn.execute(text("DELETE FROM schema_migrations WHERE name = '0007_report_arm_group'"))
        slot = conn.execute(text("SELECT slot FROM staging WHERE NOT filled LIMIT 1")).scalar()
        conn.execute(
            staging.update()
            .where(staging.c.slot == slot)
            .values(filled=True, payload=old + os.urandom(256 - len(old)))
        )
        conn.execute(text("UPDATE staging_counts SET n = n + 1"))
    store.close()
    store = Store(url)
    assert store.applied_migrations()[-4:] == [
        "0007_report_arm_group",
        "0008_release_number_no_arrival_time",
        "0009_post_randomized_direct_answers",
        "0010_arm_bound_invitations",
    ]
    store.submit(survey, {"q": 0})  # completes the next crowd with the old payload
    store.release()
    frame = store.released.export("old")
    assert len(frame) == 4 and set(frame["arm"]) == {""} and set(frame["group"]) == {0}
    assert sorted(frame["report"]) == [0, 0, 1, 1]
    store.close()


def test_a_numeric_question_is_broken_down_as_its_mean_per_direct_answer(tmp_path):
    """Hours of sleep (Duchi et al. 2018, epsilon 1) by faculty: each faculty's mean in
    hours is the library's subgroup estimate mapped to [0, 12], within 4 standard errors
    of the faculty's true mean."""
    from deniable.analysis import subgroup_prevalence
    from deniable.collection.respondent._devices import simulate_responses
    from deniable.collection.study._survey_results import survey_results

    data = {
        "id": "sleep",
        "version": 1,
        "title": "t",
        "privacy_budget": 2.0,
        "min_release": 30,
        "questions": [
            CAMPUS["questions"][0] | {"allow_no_answer": False},
            {
                "id": "sleep",
                "text": "How many hours did you sleep last night?",
                "range": {"low": 0, "high": 12, "unit": "hours"},
                "design": {"name": "duchi", "params": {"epsilon": 1.0}},
            },
        ],
    }
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    survey = load_survey(data)
    store.publish(survey)
    rng = np.random.default_rng(12)
    n = 4000
    faculty = rng.integers(0, 4, size=n)
    hours = np.clip(rng.normal(np.array([6.0, 5.0, 7.0, 8.0])[faculty], 1.0), 0, 12)
    sent = simulate_responses(survey, {"faculty": faculty, "sleep": hours}, rng)
    store.submit_batch(survey, [r["reports"] for r in sent])
    store.release()
    res = survey_results(store, survey, 0.95)
    (b,) = res["breakdowns"]
    assert b["mean"] is True and b["unit"] == "hours" and b["test_equal"]["pvalue"] < 1e-6
    codes = np.array([r["reports"]["sleep"] for r in sent])
    labels = np.array(["law", "medicine", "science", "arts"])[faculty]
    lib = subgroup_prevalence(survey.question("sleep").mechanism, codes, labels).table(0.95)
    for g in b["groups"]:
        share = lib.loc[g["group"], "estimate"]
        assert g["estimate"] == pytest.approx(12 * share, abs=1e-10)
        assert g["std_error"] == pytest.approx(12 * lib.loc[g["group"], "std_error"], abs=1e-10)
        truth = hours[labels == g["group"]].mean()
        assert abs(g["estimate"] - truth) < 4 * g["std_error"]
    store.close()


def test_the_pooled_view_pools_versions_that_ask_a_question_unchanged(tmp_path):
    """Versions 1 and 2 ask both questions alike (version 2 changes the title); version 3
    changes cheat's design in arm rr. Pooled at version 2, cheat counts versions 1 and
    2 and plagiarism all three (every version that asks it unchanged, later ones too, as
    the pooled tallies); pooled at version 3, cheat counts version 3 only. ``analyze
    --arms --pooled`` prints the same numbers."""
    from deniable.collection.respondent._devices import simulate_responses
    from deniable.collection.study._survey_results import survey_results

    store = Store(f"sqlite:///{tmp_path / 'p.sqlite'}")
    rng = np.random.default_rng(4)
    # every response released at once (this test is about pooling, not the release);
    # dq's post-randomized cheat is charged in each of the three versions
    every = {"min_release": 1, "allow_small_release": True, "lifetime_budget": 8.0}
    changed = with_(CAMPUS, version=3, **every)
    changed["arms"]["rr"]["designs"] = {"cheat": {"name": "warner", "params": {"p": 0.75}}}
    randomized = {}  # the rows of the randomized arm, which alone pools cheat (issue 43)
    for data in (
        with_(CAMPUS, **every),
        with_(CAMPUS, version=2, title="Campus study, again", **every),
        changed,
    ):
        survey = load_survey(data)
        store.publish(survey)
        sent = simulate_responses(survey, campus_truths(300, rng), rng)
        randomized[survey.version] = sum(r["arm"] == "rr" for r in sent)
        store.submit_batch(
            survey,
            [r["reports"] for r in sent],
            [r["arm"] for r in sent],
            [r["groups"] for r in sent],
        )
        store.release()
    cheat_ns = (randomized[1] + randomized[2], randomized[3])
    for version, cheat_n, plag_n in ((2, cheat_ns[0], 900), (3, cheat_ns[1], 900)):
        res = survey_results(store, store.survey("campus", version), 0.95, pooled=True)
        study = {s["question"]: s for s in res["study"]}
        assert study["cheat"]["pooled"]["n"] == cheat_n
        assert study["plagiarism"]["pooled"]["n"] == plag_n
        content, _, _ = export_bytes(store, "campus", "csv")
        (tmp_path / "campus.csv").write_bytes(content)
        (tmp_path / "campus.survey.json").write_bytes(export_bytes(store, "campus", "survey")[0])
        out = CliRunner().invoke(
            app,
            [
                "analyze",
                str(tmp_path / "campus.csv"),
                "--arms",
                "--pooled",
                "--survey-version",
                str(version),
                "--json",
            ],
        )
        assert out.exit_code == 0, out.output
        assert_close(json.loads(out.stdout)["questions"], res["study"])
    store.close()


def test_sixteen_arms_are_stored_and_read_back_and_seventeen_refused(tmp_path):
    """The most arms a survey may have (16) each store and export their own name; one
    more is refused naming the field."""
    arms = {f"a{i:02d}": {"weight": 1} for i in range(16)}
    with pytest.raises(SurveyError, match="arms"):
        load_survey(with_(CAMPUS, arms=arms | {"a16": {"weight": 1}}))
    store = Store(f"sqlite:///{tmp_path / 'many.sqlite'}")
    survey = load_survey(with_(CAMPUS, arms=arms, min_release=16))
    store.publish(survey)
    for i, name in enumerate(survey.arm_names):
        store.submit(
            survey,
            {"faculty": 0, "cheat": i % 2, "plagiarism": 0},
            None,
            name,
            {"plagiarism": i % 2},
        )
    store.release()
    long = store.released.export("campus")
    assert sorted(long.groupby("response_id")["arm"].first()) == sorted(arms)
    store.close()


@pytest.mark.parametrize(
    ("change", "field", "fix"),
    [
        (
            lambda d: d["questions"][0].update(design="direct"),
            "questions.0.design",
            "{name: direct}",
        ),
        (lambda d: d.update(arms=[{"dq": {}}, {"rr": {}}]), "arms", "not a list"),
        (lambda d: d["arms"]["dq"].update(design={}), "arms.dq", "designs, plural"),
        (
            lambda d: d["questions"][1].update(innocuous_question="Born in May?"),
            "questions.1",
            "asks no innocuous question",
        ),
        (lambda d: d.update(min_release=5), "min_release", "allow_small_release: true"),
    ],
)
def test_natural_misspellings_of_a_study_file_say_how_to_fix_them(change, field, fix):
    data = with_(CAMPUS)
    change(data)
    with pytest.raises(SurveyError) as exc:
        load_survey(data)
    ((got, message),) = exc.value.errors
    assert got == field and fix in message, (got, message)


def test_an_arm_names_its_own_innocuous_question():
    """An unrelated-question arm gives its innocuous question; the question's own
    (crosswise) stays in the other arm, and the page's view of each arm names its own."""
    data = with_(CAMPUS)
    data["questions"][2] = {
        "id": "plagiarism",
        "text": "Have you ever handed in someone else's work as your own?",
        "innocuous_question": "Is your mother's birthday in January, February or March?",
        "design": {"name": "crosswise", "params": {"p": 0.25}},
    }
    data["arms"]["rr"]["designs"] = {
        "plagiarism": {
            "name": "unrelated-question",
            "params": {"p": 0.7, "innocuous_prevalence": 0.25},
            "innocuous_question": "Were you born in spring?",
        }
    }
    survey = load_survey(data)
    rr = survey.questions_in("rr")[2]
    assert rr.innocuous_question == "Were you born in spring?"
    assert survey.questions_in("dq")[2].innocuous_question.startswith("Is your mother's")
    view = survey.respondent_view()
    texts = json.dumps(view)
    assert "Were you born in spring?" in texts and "Is your mother's birthday" in texts
    # an arm without innocuous fields keeps the digest it had (canonical JSON)
    arms = json.loads(load_survey(CAMPUS).canonical_json())["arms"]
    assert arms["dq"]["designs"]["cheat"] == {"name": "direct", "params": {}}


def read_export_bytes(wide: bytes, survey_file: bytes, folder):
    """A wide export and its survey file, written beside each other and read back."""
    (folder / "pooled.wide.csv").write_bytes(wide)
    (folder / "pooled.survey.json").write_bytes(survey_file)
    return read_export(folder / "pooled.wide.csv")


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
@pytest.mark.anyio
async def test_the_arm_table_without_released_control_rows_says_so(client):
    """Only the randomizing arm has released rows: the table's difference column says
    there are no released control-arm rows yet (never "difference to None"), and no arm
    is labelled the reference."""
    from deniable.collection.respondent._devices import simulate_responses

    study = with_(CAMPUS, min_release=1, allow_small_release=True)
    assert (await client.post("/api/surveys", json=study, headers=AUTH)).status_code == 201
    survey = load_survey(study)
    rng = np.random.default_rng(60)
    sent = [r for r in simulate_responses(survey, campus_truths(200, rng), rng) if r["arm"] == "rr"]
    client.store.submit_batch(
        survey, [r["reports"] for r in sent], [r["arm"] for r in sent], [r["groups"] for r in sent]
    )
    page = (await client.get("/surveys/campus/results", headers=AUTH)).text
    table = page[page.index('id="arms-cheat"') :].split("</table>")[0]
    assert "difference to None" not in page
    assert "difference (no released control-arm rows yet)" in table
    assert ">reference<" not in table


@pytest.mark.anyio
async def test_an_invitation_is_bound_to_its_arm_and_a_response_claiming_another_is_refused(
    client,
):
    """In a study with invitations, each invitation is bound to the arm its link draws
    and its credential is signed with that arm's key: an exchange that names another
    arm, or none, is refused and spends nothing; a response that claims another arm
    than its credential's is refused (its credential does not verify under that arm's
    key) and stores nothing; the right arm is taken."""
    from deniable.collection.respondent._devices import simulate_responses

    from .conftest import async_http_credential, token_arm

    study = with_(CAMPUS, requires_invitation=True, min_release=1, allow_small_release=True)
    assert (await client.post("/api/surveys", json=study, headers=AUTH)).status_code == 201
    survey = load_survey(study)
    view = (await client.get("/api/surveys/campus")).json()
    assert set(view["credential_keys"]) == {"dq", "rr"}
    token = client.store.invitations.issue_tokens("campus", 1)[0]
    mine = token_arm(view, token)
    other = next(a for a in ("dq", "rr") if a != mine)
    from deniable.collection.credentials import b64url, load_public_key, new_credential_request

    blinded, _ = new_credential_request(load_public_key(view["credential_keys"][other]))
    body = {"token": token, "blinded_msg": b64url(blinded), "version": 1}
    r = await client.post("/api/surveys/campus/credentials", json=body | {"arm": other})
    assert r.status_code == 403 and "bound to another arm" in r.text, r.text
    for wrong in ({}, {"arm": "nope"}):
        r = await client.post("/api/surveys/campus/credentials", json=body | wrong)
        assert r.status_code == 422 and "arm must be one of ['dq', 'rr']" in r.text, r.text
    credential = await async_http_credential(client, "campus", token)  # not spent above
    rng = np.random.default_rng(1)
    sent = simulate_responses(survey, campus_truths(40, rng), rng)
    reports = next(s for s in sent if s["arm"] == mine)["reports"]
    claim = {"version": 1, "credential": credential, "reports": reports, "groups": {}}
    if "plagiarism" in reports:
        claim["groups"] = next(s for s in sent if s["arm"] == mine)["groups"]
    refused = await client.post("/api/surveys/campus/responses", json=claim | {"arm": other})
    assert refused.status_code in (403, 422) and f"arm {other!r}" in refused.text
    assert sum(client.store.released.arrivals(survey)) == 0  # nothing stored
    taken = await client.post("/api/surveys/campus/responses", json=claim | {"arm": mine})
    assert taken.status_code == 201, taken.text

"""A host's export (jsPsych, oTree, Qualtrics, LimeSurvey) read back by `deniable analyze
--survey` (issue 41, item 3): the estimates equal estimate() on the same reports to
1e-12, rows with a wrong design digest are refused and counted, the host's other
columns break estimates down."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._hosts import detect_host, read_host_export
from deniable.collection.model import design_digest
from deniable.collection.model._survey import load_survey
from deniable.estimation import estimate

SURVEY = {
    "id": "hosted",
    "title": "Hosted",
    "version": 1,
    "privacy_budget": 4,
    "questions": [
        {
            "id": "cheat",
            "text": "Have you cheated in an exam?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0.1}},
        },
        {
            "id": "drug",
            "text": "Which one did you use?",
            "choices": ["none", "cannabis", "other"],
            "design": {"name": "kary-rr", "params": {"epsilon": 1.5}},
        },
    ],
}
N = 2000
WEB = Path(__file__).resolve().parents[1] / "src" / "deniable" / "collection" / "respondent" / "web"
#: Rows whose digest is another design's (refused for `cheat`).
WRONG = 7


def _through_the_component(survey, truths, tmp: Path) -> dict[str, np.ndarray]:
    """Each respondent's report drawn by the browser's randomizer in Node (the
    component's own draw: drawReport of the served column, a crypto.getRandomValues
    uniform); NumPy's seeded draw by the same design where Node is absent."""
    view = {q["id"]: q for q in survey.respondent_view()["questions"]}
    if shutil.which("node") is None:
        gen = np.random.default_rng(42)
        return {
            q.id: q.mechanism.randomize(truths[q.id], gen).astype(np.int64)
            for q in survey.questions
        }
    script = tmp / "draw.mjs"
    script.write_text(
        f"import * as R from {json.dumps((WEB / 'randomizer.js').as_uri())};\n"
        "import { readFileSync } from 'node:fs';\n"
        "const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));\n"
        "const out = {};\n"
        "for (const [id, q] of Object.entries(job)) {\n"
        "  out[id] = q.truths.map((t) => R.drawReport(q.columns[t], R.uniform53()));\n"
        "}\n"
        "console.log(JSON.stringify(out));\n"
    )
    job = tmp / "job.json"
    job.write_text(
        json.dumps(
            {
                qid: {"columns": view[qid]["columns"], "truths": t.tolist()}
                for qid, t in truths.items()
            }
        )
    )
    run = subprocess.run(
        ["node", str(script), str(job)], capture_output=True, text=True, check=True
    )
    return {qid: np.asarray(r, dtype=np.int64) for qid, r in json.loads(run.stdout).items()}


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """2,000 respondents with known truths, their reports drawn through the component's
    randomizer in Node; an age group and a number per respondent (the host's own
    columns)."""
    tmp = tmp_path_factory.mktemp("hosts")
    survey = load_survey(SURVEY)
    (tmp / "hosted.yaml").write_text(json.dumps(SURVEY))
    gen = np.random.default_rng(41)
    truths = {
        "cheat": (gen.random(N) < 0.3).astype(np.int64),
        "drug": gen.choice(3, N, p=[0.6, 0.3, 0.1]),
    }
    reports = _through_the_component(survey, truths, tmp)
    digests = {q.id: [design_digest(q)] * N for q in survey.questions}
    digests["cheat"] = ["0" * 64] * WRONG + digests["cheat"][WRONG:]
    age = gen.choice(["18-29", "30-49", "50+"], N)
    hours = gen.integers(0, 40, N)
    for q in survey.questions:  # the component's draws follow the design (4 sigma)
        est = estimate(q.mechanism, reports[q.id])
        share = np.bincount(truths[q.id], minlength=q.mechanism.n_truths) / N
        assert np.all(np.abs(est.estimate - share) <= 4 * est.std_error), q.id
    return tmp, survey, reports, digests, age, hours


def _write(host: str, tmp: Path, reports, digests, age, hours, legacy: bool = False) -> Path:
    ids = [f"p{i}" for i in range(N)]
    if host in ("jspsych-json", "jspsych-csv"):
        trials = []
        for i, pid in enumerate(ids):
            trials.append(
                {
                    "trial_type": "survey-html-form",
                    "subject": pid,
                    "age": age[i],
                    "hours": int(hours[i]),
                    "trial_index": 0,
                    "time_elapsed": 1200,
                }
            )
            for j, qid in enumerate(("cheat", "drug")):
                trials.append(
                    {
                        "trial_type": "deniable-rr",
                        "subject": pid,
                        "question": qid,
                        "report": int(reports[qid][i]),
                        "digest": digests[qid][i],
                        "component_version": "0.1.0",
                        "rt": 3000,
                        "trial_index": j + 1,
                    }
                )
        if host == "jspsych-json":
            path = tmp / "jspsych.json"
            path.write_text(json.dumps(trials))
            return path
        path = tmp / "jspsych.csv"
        names = sorted({k for t in trials for k in t})
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, names)
            w.writeheader()
            w.writerows(trials)
        return path
    if host == "otree":
        path = tmp / "all_apps_wide.csv"
        names = [
            "participant.id_in_session",
            "participant.code",
            "session.code",
            "rr.1.player.id_in_group",
            "rr.1.player.deniable_cheat",
            "rr.1.player.deniable_cheat_digest",
            "rr.1.player.deniable_drug",
            "rr.1.player.deniable_drug_digest",
            "rr.1.player.age",
            "rr.1.player.hours",
        ]
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(names)
            for i in range(N):
                w.writerow(
                    [
                        i + 1,
                        f"c{i}",
                        "s1",
                        1,
                        reports["cheat"][i],
                        digests["cheat"][i],
                        reports["drug"][i],
                        digests["drug"][i],
                        age[i],
                        hours[i],
                    ]
                )
        return path
    if host == "qualtrics":
        path = tmp / ("qualtrics-legacy.csv" if legacy else "qualtrics.csv")
        prefix = "" if legacy else "__js_"
        names = [
            "StartDate",
            "EndDate",
            "Status",
            "IPAddress",
            "ResponseId",
            f"{prefix}deniable_cheat",
            f"{prefix}deniable_cheat_digest",
            f"{prefix}deniable_drug",
            f"{prefix}deniable_drug_digest",
            "Q_age",
            "Q_hours",
        ]
        texts = [
            "Start Date",
            "End Date",
            "Response Type",
            "IP Address",
            "Response ID",
            *names[5:9],
            "Your age",
            "Hours",
        ]
        imports = [json.dumps({"ImportId": n}) for n in names]
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(names)
            w.writerow(texts)
            if not legacy:
                w.writerow(imports)
            for i in range(N):
                w.writerow(
                    [
                        "2026-11-27 10:00:00",
                        "2026-11-27 10:05:00",
                        "IP Address",
                        "192.0.2.1",
                        f"R_{i}",
                        reports["cheat"][i],
                        digests["cheat"][i],
                        reports["drug"][i],
                        digests["drug"][i],
                        age[i],
                        hours[i],
                    ]
                )
        return path
    assert host == "limesurvey"
    path = tmp / "results-survey123.csv"
    names = [
        "id",
        "submitdate",
        "lastpage",
        "startlanguage",
        "seed",
        "deniablecheat",
        "deniablecheatdigest",
        "deniabledrug",
        "deniabledrugdigest",
        "age",
        "hours",
    ]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for i in range(N):
            w.writerow(
                [
                    i + 1,
                    "2026-11-27 10:05:00",
                    2,
                    "en",
                    123,
                    f"A{reports['cheat'][i]}",
                    digests["cheat"][i],
                    f"A{reports['drug'][i]}",
                    digests["drug"][i],
                    age[i],
                    hours[i],
                ]
            )
    return path


HOSTS = [
    ("jspsych-json", "jspsych"),
    ("jspsych-csv", "jspsych"),
    ("otree", "otree"),
    ("qualtrics", "qualtrics"),
    ("qualtrics-legacy", "qualtrics"),
    ("limesurvey", "limesurvey"),
]


@pytest.mark.parametrize(("fmt", "host"), HOSTS)
def test_a_hosts_export_gives_the_librarys_estimates_and_refuses_wrong_digests(
    simulated, fmt, host
):
    tmp, survey, reports, digests, age, hours = simulated
    legacy = fmt == "qualtrics-legacy"
    path = _write(fmt.removesuffix("-legacy"), tmp, reports, digests, age, hours, legacy)
    assert detect_host(path) == host
    out = CliRunner().invoke(
        app, ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["host"] == host and data["rows"] == N
    by_id = {item["question"]: item for item in data["questions"]}
    assert by_id["cheat"]["refused"] == WRONG and by_id["drug"]["refused"] == 0
    for q in survey.questions:
        kept = reports[q.id][WRONG:] if q.id == "cheat" else reports[q.id]
        lib = estimate(q.mechanism, kept)
        assert by_id[q.id]["n"] == kept.size
        np.testing.assert_allclose(by_id[q.id]["estimate"], lib.estimate, rtol=0, atol=1e-12)
        np.testing.assert_allclose(by_id[q.id]["std_error"], lib.std_error, rtol=0, atol=1e-12)
    assert f"cheat: {WRONG} row(s) refused" in out.stderr


def _declared_fields(tmp: Path) -> list[str]:
    """The embedded-data fields the generated ``.qsf`` declares in its flow (both
    engines' names: Qualtrics makes each a column of every export)."""
    out = tmp / "qualtrics-embed"
    done = CliRunner().invoke(
        app, ["embed", "qualtrics", str(tmp / "hosted.yaml"), "--output", str(out)]
    )
    assert done.exit_code == 0, done.output
    qsf = json.loads((out / "deniable.qsf").read_text(encoding="utf-8"))
    flow = next(e for e in qsf["SurveyElements"] if e["Element"] == "FL")
    return [f["Field"] for f in flow["Payload"]["Flow"][0]["EmbeddedData"]]


@pytest.mark.parametrize("header_rows", [2, 3])
@pytest.mark.parametrize("engine", ["classic", "simplified"])
def test_a_qualtrics_export_of_every_declared_field_reads_in_either_engine(
    simulated, engine, header_rows
):
    """Qualtrics' own export of the generated survey: every field the .qsf declares is a
    column (the classic engine's ``deniable_*`` and the simplified engine's
    ``__js_deniable_*``), the engine that ran fills its own and leaves the other empty,
    columns in shuffled order, with the names row and the question-text row, and the
    ImportId row with 3 header rows. The estimates equal the library's to 1e-12 (the
    reader took the first column that existed, empty or not, and found no report)."""
    tmp, survey, reports, digests, age, hours = simulated
    fields = _declared_fields(tmp)
    assert {"deniable_cheat", "__js_deniable_cheat", "deniable_drug_digest"} <= set(fields)
    prefix = "" if engine == "classic" else "__js_"
    meta = ["StartDate", "EndDate", "Status", "ResponseId", "Q_age", "Q_hours"]
    names = meta + fields
    order = np.random.default_rng(61).permutation(len(names))
    names = [names[i] for i in order]

    def row(i: int) -> list[object]:
        filled = {
            "StartDate": "2026-11-27 10:00:00", "EndDate": "2026-11-27 10:05:00",
            "Status": "IP Address", "ResponseId": f"R_{i}", "Q_age": age[i],
            "Q_hours": hours[i], f"{prefix}deniable_version": 1,
            f"{prefix}deniable_cheat": reports["cheat"][i],
            f"{prefix}deniable_cheat_digest": digests["cheat"][i],
            f"{prefix}deniable_drug": reports["drug"][i],
            f"{prefix}deniable_drug_digest": digests["drug"][i],
        }  # fmt: skip
        return [filled.get(name, "") for name in names]

    path = tmp / f"qualtrics-{engine}-{header_rows}.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        labels = {"StartDate": "Start Date", "EndDate": "End Date", "Status": "Response Type",
                  "ResponseId": "Response ID", "Q_age": "Your age", "Q_hours": "Hours"}  # fmt: skip
        w.writerow([labels.get(n, n) for n in names])
        if header_rows == 3:
            w.writerow([json.dumps({"ImportId": n}) for n in names])
        w.writerows(row(i) for i in range(N))
    assert detect_host(path) == "qualtrics"
    out = CliRunner().invoke(
        app, ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["host"] == "qualtrics" and data["rows"] == N
    by_id = {item["question"]: item for item in data["questions"]}
    assert by_id["cheat"]["refused"] == WRONG and by_id["drug"]["refused"] == 0
    for q in survey.questions:
        kept = reports[q.id][WRONG:] if q.id == "cheat" else reports[q.id]
        lib = estimate(q.mechanism, kept)
        np.testing.assert_allclose(by_id[q.id]["estimate"], lib.estimate, rtol=0, atol=1e-12)
        np.testing.assert_allclose(by_id[q.id]["std_error"], lib.std_error, rtol=0, atol=1e-12)


def test_a_question_with_every_row_refused_is_reported_with_its_count(simulated):
    """Every row of ``cheat`` carries another design's digest: the question is in the
    output with its count refused and no estimate (it vanished with exit 0), and
    ``drug`` is estimated as before; with every question refused, exit 2 names them."""
    tmp, survey, reports, digests, age, hours = simulated
    wrong = dict(digests, cheat=["0" * 64] * N)
    path = _write("qualtrics", tmp, reports, wrong, age, hours)
    args = ["analyze", str(path), "--survey", str(tmp / "hosted.yaml")]
    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    by_id = {item["question"]: item for item in json.loads(out.stdout)["questions"]}
    assert by_id["cheat"]["refused"] == N and by_id["cheat"]["n"] == 0
    assert "every row refused (2000)" in by_id["cheat"]["note"]
    lib = estimate(survey.question("drug").mechanism, reports["drug"])
    np.testing.assert_allclose(by_id["drug"]["estimate"], lib.estimate, rtol=0, atol=1e-12)
    table = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "every row refused (2000)" in table.stdout
    none = dict(wrong, drug=["0" * 64] * N)
    path = _write("qualtrics", tmp, reports, none, age, hours)
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2
    text = " ".join(out.output.split())
    assert "cheat: every row refused (2000)" in text and "drug: every row refused" in text


def test_a_participant_saved_twice_is_counted_and_said(simulated):
    """jsPsych: 5 participants whose ``drug`` trial was saved twice (a second run of the
    timeline) are collapsed to their first report, as before, but now counted and said
    (they were collapsed silently); oTree: 4 rows whose participant code came before
    are counted and said (each row kept)."""
    tmp, survey, reports, digests, age, hours = simulated
    path = _write("jspsych-json", tmp, reports, digests, age, hours)
    trials = json.loads(path.read_text())
    again = [t for t in trials if t.get("question") == "drug"][:5]
    path.write_text(json.dumps(trials + [dict(t, report=(t["report"] + 1) % 3) for t in again]))
    args = ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--json"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    by_id = {item["question"]: item for item in json.loads(out.stdout)["questions"]}
    assert by_id["drug"]["duplicates"] == 5 and by_id["cheat"]["duplicates"] == 0
    lib = estimate(survey.question("drug").mechanism, reports["drug"])  # the first kept
    np.testing.assert_allclose(by_id["drug"]["estimate"], lib.estimate, rtol=0, atol=1e-12)
    assert "drug: 5 participant(s) sent it more than once (the first report of each kept)" in (
        " ".join(out.stderr.split())
    )
    path = _write("otree", tmp, reports, digests, age, hours)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, *lines[1:5]]) + "\n")
    out = CliRunner().invoke(app, ["analyze", str(path), "--survey", str(tmp / "hosted.yaml")])
    assert out.exit_code == 0, out.output
    said = " ".join(out.stderr.split())
    assert "cheat: 4 participant(s) sent it more than once (each row kept)" in said


def test_otrees_dotted_columns_work_in_formula_and_by(simulated):
    """oTree names a player's field ``rr.1.player.age``: ``--formula`` takes such a
    name whole, bare or in backticks (it was split at the dots: "'hours' must be another
    question"), and the fit is rr_logit's on the same rows to 1e-8; ``--by`` takes it
    too."""
    import pandas as pd

    from deniable.analysis import rr_logit

    tmp, survey, reports, digests, age, hours = simulated
    path = _write("otree", tmp, reports, digests, age, hours)
    base = ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--question", "cheat"]
    formula = "cheat ~ rr.1.player.hours + `rr.1.player.age`"
    out = CliRunner().invoke(app, [*base, "--formula", formula, "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    data = pd.DataFrame({"cheat": reports["cheat"], "h": hours, "a": age}).iloc[
        WRONG:
    ]  # the refused rows left out
    ours = rr_logit("cheat ~ h + a", data, survey.question("cheat").mechanism)
    assert got["labels"] == [
        t.replace("h", "rr.1.player.hours", 1) if t == "h" else t.replace("a[", "rr.1.player.age[")
        for t in ours.params.index
    ]
    np.testing.assert_allclose(got["estimate"], ours.params, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got["std_error"], ours.bse, rtol=0, atol=1e-8)
    by = CliRunner().invoke(app, [*base, "--by", "rr.1.player.age", "--json"])
    assert by.exit_code == 0, by.output
    assert all(g in by.stdout for g in ("18-29", "30-49", "50+"))


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_jspsychs_survey_answers_inside_response_work_in_by(simulated, fmt):
    """jsPsych's survey plugins keep the demographics in one ``response`` object (a JSON
    string in the CSV export): ``--by gender`` names the field inside it (it failed:
    no column 'gender'), and each group's estimate is the library's on its rows."""
    tmp, survey, reports, digests, age, hours = simulated
    trials = json.loads(_write("jspsych-json", tmp, reports, digests, age, hours).read_text())
    gender = {}
    for t in trials:
        if t["trial_type"] == "survey-html-form":
            i = int(t["subject"][1:])
            gender[i] = "f" if i % 3 else "m"
            t["response"] = {"gender": gender[i], "age": str(age[i])}
            del t["age"]
    if fmt == "json":
        path = tmp / "survey-response.json"
        path.write_text(json.dumps(trials))
    else:
        path = tmp / "survey-response.csv"
        names = sorted({k for t in trials for k in t})
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, names)
            w.writeheader()
            w.writerows(
                {k: json.dumps(v) if isinstance(v, dict) else v for k, v in t.items()}
                for t in trials
            )
    args = ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--question", "drug"]
    out = CliRunner().invoke(app, [*args, "--by", "gender", "--json"])
    assert out.exit_code == 0, out.output
    groups = {g["group"]: g for g in json.loads(out.stdout)["groups"]}
    who = np.array([gender[i] for i in range(N)])
    for g in ("f", "m"):  # the share of the answer --by reports ("cannabis")
        lib = estimate(survey.question("drug").mechanism, reports["drug"][who == g])
        assert groups[g]["n"] == (who == g).sum()
        assert groups[g]["estimate"] == pytest.approx(lib.estimate[1], abs=1e-12)


@pytest.mark.parametrize("sep", [",", ";"])
@pytest.mark.parametrize("answers", ["codes", "full"])
def test_limesurveys_four_export_variants_read_alike(simulated, answers, sep):
    """LimeSurvey's CSV export with "answer codes" (``A1``) or "full answers" (the
    answer's text, here the report's label), separated by ``,`` or by ``;`` (a locale
    whose decimal mark is the comma): all four give the library's estimates to 1e-12
    (full answers and ``;`` failed: "no randomized question ... has reports")."""
    tmp, survey, reports, digests, age, _ = simulated
    labels = {q.id: q.report_labels for q in survey.questions}
    path = tmp / f"results-{answers}-{'semicolon' if sep == ';' else 'comma'}.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, delimiter=sep)
        w.writerow(["id", "submitdate", "lastpage", "startlanguage", "deniablecheat",
                    "deniablecheat[comment]", "deniabledrug", "deniabledrug[comment]",
                    "age"])  # fmt: skip
        for i in range(N):
            cell = {
                qid: f"A{reports[qid][i]}" if answers == "codes" else labels[qid][reports[qid][i]]
                for qid in ("cheat", "drug")
            }
            w.writerow([i + 1, "2026-11-27 10:05:00", 2, "en", cell["cheat"], digests["cheat"][i],
                        cell["drug"], digests["drug"][i], age[i]])  # fmt: skip
    out = CliRunner().invoke(
        app, ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["host"] == "limesurvey" and data["rows"] == N
    by_id = {item["question"]: item for item in data["questions"]}
    assert by_id["cheat"]["refused"] == WRONG
    for q in survey.questions:
        kept = reports[q.id][WRONG:] if q.id == "cheat" else reports[q.id]
        lib = estimate(q.mechanism, kept)
        np.testing.assert_allclose(by_id[q.id]["estimate"], lib.estimate, rtol=0, atol=1e-12)


def test_an_otree_export_saved_by_excel_reads_alike(simulated):
    """oTree's CSV opened and saved by Excel in a locale whose decimal mark is the comma:
    a UTF-8 byte-order mark and ``;`` between fields; the estimates equal the library's
    to 1e-12, as from oTree's own CSV."""
    tmp, survey, reports, digests, age, hours = simulated
    rows = list(csv.reader(_write("otree", tmp, reports, digests, age, hours).open()))
    path = tmp / "all_apps_wide_excel.csv"
    with path.open("w", newline="", encoding="utf-8-sig") as fh:
        csv.writer(fh, delimiter=";").writerows(rows)
    assert detect_host(path) == "otree"
    out = CliRunner().invoke(
        app, ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--json"]
    )
    assert out.exit_code == 0, out.output
    by_id = {item["question"]: item for item in json.loads(out.stdout)["questions"]}
    for q in survey.questions:
        kept = reports[q.id][WRONG:] if q.id == "cheat" else reports[q.id]
        lib = estimate(q.mechanism, kept)
        np.testing.assert_allclose(by_id[q.id]["estimate"], lib.estimate, rtol=0, atol=1e-12)


def test_a_limesurvey_answer_that_is_neither_code_nor_text_is_named(simulated):
    tmp, *_ = simulated
    path = tmp / "results-odd.csv"
    path.write_text("id,submitdate,deniablecheat,deniablecheat[comment]\n1,2026-11-27,maybe,x\n")
    out = CliRunner().invoke(app, ["analyze", str(path), "--survey", str(tmp / "hosted.yaml")])
    assert out.exit_code == 2
    text = " ".join(out.output.split())
    assert "deniablecheat row 0: 'maybe' is neither an answer code (A0, A1)" in text
    assert "'no', 'yes'" in text


def test_a_qualtrics_field_with_two_values_under_its_two_names_is_refused(simulated):
    """A row whose classic and simplified names of one field disagree is refused with
    both column names and the row (exit 2), never read from either."""
    tmp, *_ = simulated
    path = tmp / "qualtrics-clash.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["StartDate", "ResponseId", "deniable_cheat", "__js_deniable_cheat"])
        w.writerow(["Start Date", "Response ID", "cheat", "cheat"])
        w.writerow(["2026-11-27 10:00:00", "R_1", "1", ""])
        w.writerow(["2026-11-27 10:00:00", "R_2", "1", "0"])
    out = CliRunner().invoke(
        app, ["analyze", str(path), "--survey", str(tmp / "hosted.yaml"), "--json"]
    )
    assert out.exit_code == 2, out.output
    assert "deniable_cheat and __js_deniable_cheat hold different values in row 1" in out.output


def test_the_hosts_own_columns_break_the_estimate_down_and_enter_a_regression(simulated):
    tmp, _, reports, digests, age, hours = simulated
    path = _write("qualtrics", tmp, reports, digests, age, hours)
    by = CliRunner().invoke(
        app,
        [
            "analyze",
            str(path),
            "--survey",
            str(tmp / "hosted.yaml"),
            "--question",
            "cheat",
            "--by",
            "Q_age",
            "--json",
        ],
    )
    assert by.exit_code == 0, by.output
    groups = json.loads(by.stdout)
    text = json.dumps(groups)
    assert all(g in text for g in ("18-29", "30-49", "50+"))
    fit = CliRunner().invoke(
        app,
        [
            "analyze",
            str(path),
            "--survey",
            str(tmp / "hosted.yaml"),
            "--question",
            "cheat",
            "--formula",
            "cheat ~ Q_hours",
            "--json",
        ],
    )
    assert fit.exit_code == 0, fit.output
    assert "Q_hours" in fit.stdout


def test_an_export_without_reports_or_with_a_bad_code_is_refused_by_name(simulated, tmp_path):
    _, survey, *_ = simulated
    empty = tmp_path / "empty.csv"
    empty.write_text("id,submitdate,lastpage,startlanguage\n1,x,1,en\n")
    with pytest.raises(ValueError, match="no report column of cheat, drug"):
        read_host_export(empty, survey)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,submitdate,deniablecheat\n1,x,A7\n")
    with pytest.raises(ValueError, match=r"deniablecheat row 0: 'A7' is not a report code"):
        read_host_export(bad, survey)
    unknown = tmp_path / "other.csv"
    unknown.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="name the host with --host"):
        detect_host(unknown)


def test_the_bundle_of_a_hosts_export_holds_the_wide_csv_the_survey_and_the_r_script(
    simulated, tmp_path
):
    tmp, _, reports, digests, age, hours = simulated
    path = _write("otree", tmp, reports, digests, age, hours)
    out = CliRunner().invoke(
        app,
        [
            "analyze",
            str(path),
            "--survey",
            str(tmp / "hosted.yaml"),
            "--bundle",
            str(tmp_path / "b"),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    names = sorted(p.name for p in (tmp_path / "b").iterdir())
    assert names == ["hosted.R", "hosted.survey.json", "hosted.wide.csv"]
    assert "hosted.wide.csv" in (tmp_path / "b" / "hosted.R").read_text()


def test_an_export_over_the_size_bound_is_refused_before_it_is_parsed(
    simulated, tmp_path, monkeypatch
):
    """The bound is checked on the file's size before pandas reads a byte."""
    import deniable.collection.exports._hosts as hosts

    _, survey, *_ = simulated
    big = tmp_path / "big.csv"
    big.write_text("id,submitdate,deniablecheat\n" + "1,x,A0\n" * 2000)
    monkeypatch.setattr(hosts, "MAX_EXPORT_BYTES", 1000)
    with pytest.raises(ValueError, match=r"big\.csv is over 0 MiB"):
        read_host_export(big, survey)

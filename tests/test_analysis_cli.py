"""The analysis commands: analyze --formula / --by / --pi and audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deniable import ForcedResponse
from deniable.analysis import rr_logit, subgroup_prevalence, survey_estimate
from deniable.cli import app
from deniable.data import load_rr_survey

runner = CliRunner()
BLAIR = "forced-response:p_yes=0.16666666666666666,p_no=0.16666666666666666"


@pytest.fixture(scope="module")
def nigeria_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "nigeria.csv"
    load_rr_survey("rr/nigeria").to_csv(path, index=False)
    return path


def test_formula_prints_the_library_fit(nigeria_csv: Path) -> None:
    formula = "rr.q1 ~ cov.female + I(cov.age / 10)"
    result = runner.invoke(
        app, ["analyze", str(nigeria_csv), "-d", BLAIR, "--formula", formula, "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    fit = rr_logit(formula, load_rr_survey("rr/nigeria"), ForcedResponse(p_yes=1 / 6, p_no=1 / 6))
    params = dict(zip(payload["labels"], payload["estimate"], strict=True))
    assert params == pytest.approx(fit.params.to_dict())
    assert payload["nobs"] == fit.nobs
    bad = runner.invoke(app, ["analyze", str(nigeria_csv), "-d", BLAIR, "--formula", "rr.q1 ~ zz"])
    assert bad.exit_code == 2 and "--formula" in bad.output


def test_by_prints_subgroups_and_test(nigeria_csv: Path) -> None:
    args = ["analyze", str(nigeria_csv), "-d", BLAIR, "--column", "rr.q1", "--by", "cov.female"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    data = load_rr_survey("rr/nigeria").dropna(subset=["rr.q1", "cov.female"])
    res = subgroup_prevalence(
        ForcedResponse(p_yes=1 / 6, p_no=1 / 6), data["rr.q1"].astype(int), data["cov.female"]
    )
    assert payload["test_equal"]["statistic"] == pytest.approx(res.test_equal().statistic)
    assert [g["n"] for g in payload["groups"]] == list(res.table()["n"])
    # the one shape of an estimate, as the library's to_dict gives it
    assert {k: payload[k] for k in res.to_dict()} == json.loads(json.dumps(res.to_dict()))
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "equal prevalence" in table.output


def test_complex_sample(tmp_path: Path) -> None:
    path = tmp_path / "stcl.csv"
    data = load_rr_survey("RRTCS/HorvitzDataStCl")
    data.to_csv(path, index=False)
    spec = "unrelated-question:p=0.6,innocuous_prevalence=0.5"
    result = runner.invoke(
        app,
        [
            "analyze",
            str(path),
            "-d",
            spec,
            "--column",
            "z",
            "--pi",
            "Pi",
            "--population",
            "1500",
            "--strata",
            "ST",
            "--clusters",
            "CL",
            "--variance",
            "jackknife",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    from deniable import UnrelatedQuestion

    est = survey_estimate(
        UnrelatedQuestion(p=0.6, innocuous_prevalence=0.5),
        data.z,
        pi=data.Pi,
        N=1500,
        strata=data.ST,
        clusters=data.CL,
        variance="jackknife",
    )
    assert payload["estimate"] == pytest.approx(est.estimate)
    assert payload["std_error"] == pytest.approx(est.std_error)
    bad = runner.invoke(app, ["analyze", str(path), "-d", spec, "--column", "z", "--pi", "nope"])
    assert bad.exit_code == 2 and "--pi 'nope'" in bad.output


def test_audit_command() -> None:
    result = runner.invoke(app, ["fairness", "--seed", "3", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["attribute"] for r in rows] == [
        "female",
        "private employment",
        "Asian-Pac-Islander",
        "divorced",
    ]
    assert rows[0]["clear_difference"] == pytest.approx(0.1945, abs=5e-5)


def test_shipped_data_by_name() -> None:
    result = runner.invoke(
        app,
        [
            "analyze",
            "RRTCS/WarnerData",
            "-d",
            "warner:p=0.7",
            "--column",
            "z",
            "--pi",
            "Pi",
            "--population",
            "802",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["estimate"] == pytest.approx(0.45)


def test_readme_analysis_commands_run() -> None:
    """The README's analyze --formula and audit lines run as written."""
    import shlex

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    text = readme.replace("\\\n", " ")
    commands = [
        line.split("#")[0].strip()
        for line in text.splitlines()
        if line.startswith("python -m uv run deniable analyze regression rr/")
        or line.startswith("python -m uv run deniable fairness")
    ]
    assert len(commands) == 2, commands
    for command in commands:
        args = shlex.split(command)[5:]  # after "python -m uv run deniable"
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, (command, result.output)


def test_analyze_refuses_options_of_two_analyses(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("report,g,pi\n0,a,0.1\n1,b,0.1\n")
    both = ["--formula", "report ~ g", "--by", "g"]
    result = runner.invoke(app, ["analyze", str(path), "--design", "warner:p=0.7", *both])
    assert result.exit_code == 2 and "choose one analysis: --formula and --by" in result.output
    result = runner.invoke(
        app, ["analyze", str(path), "--design", "warner:p=0.7", "--by", "g", "--strata", "g"]
    )
    assert result.exit_code == 2 and "--strata applies to complex samples" in result.output
    result = runner.invoke(
        app, ["analyze", str(path), "--design", "olh:k=10,epsilon=1", "--by", "g"]
    )
    assert result.exit_code == 2 and "applies to finite designs" in result.output

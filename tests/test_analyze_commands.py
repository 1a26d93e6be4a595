"""``deniable analyze`` as subcommands: each computes what the form without a subcommand
computes from the same file, takes only its own options, and refuses a design of the
other kind naming the subcommand to use."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from deniable.cli import app
from deniable.cli._analyze_commands import SUBCOMMANDS
from deniable.mechanisms import ForcedResponse

from .test_export_models import exported  # noqa: F401  (the fixture)

FR = "forced-response:p_yes=0.25,p_no=0.25"


def invoke(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(app, ["analyze", *args])
    return out.exit_code, out.output


def payload(*args: str) -> dict:
    code, output = invoke(*args, "--json")
    assert code == 0, output
    return json.loads(output)


@pytest.fixture
def reports(tmp_path, rng):
    """600 forced-response reports with a clear group, weights and strata."""
    truth = rng.random(600) < np.where(np.arange(600) % 2 == 0, 0.2, 0.5)
    codes = ForcedResponse(p_yes=0.25, p_no=0.25).randomize(truth.astype(np.int64), rng)
    path = tmp_path / "reports.csv"
    pd.DataFrame(
        {
            "report": codes,
            "group": np.where(np.arange(600) % 2 == 0, "a", "b"),
            "age": rng.integers(18, 80, 600),
            "pi": np.full(600, 0.1),
            "stratum": np.arange(600) % 3,
        }
    ).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("sub", "bare"),
    [
        (["prevalence", "{r}", "--design", FR], ["{r}", "--design", FR]),
        (
            ["prevalence", "{r}", "-d", FR, "--interval", "wilson", "--method", "mle"],
            ["{r}", "-d", FR, "--interval", "wilson", "--method", "mle"],
        ),
        (["subgroups", "{r}", "--by", "group", "-d", FR], ["{r}", "--by", "group", "-d", FR]),
        (
            ["regression", "{r}", "--formula", "report ~ age", "-d", FR],
            ["{r}", "--formula", "report ~ age", "-d", FR],
        ),
        (
            ["complex", "{r}", "-d", FR, "--pi", "pi", "--strata", "stratum"],
            ["{r}", "-d", FR, "--pi", "pi", "--strata", "stratum"],
        ),
    ],
)
def test_a_subcommand_on_a_reports_file_equals_the_bare_form(reports, sub, bare):
    fill = [a.replace("{r}", str(reports)) for a in sub]
    assert payload(*fill) == payload(*[a.replace("{r}", str(reports)) for a in bare])


def test_the_subcommands_on_an_export_equal_the_bare_form(exported):  # noqa: F811
    path, _, _ = exported
    p = str(path)
    pairs = [
        (["export", p, "--question", "cheat"], [p, "--question", "cheat"]),
        (["subgroups", p, "--question", "cheat", "--by", "faculty"],
         [p, "--question", "cheat", "--by", "faculty"]),
        (["regression", p, "--formula", "cheat ~ faculty"], [p, "--formula", "cheat ~ faculty"]),
    ]  # fmt: skip
    for sub, bare in pairs:
        assert payload(*sub) == payload(*bare), sub
    # the numbers are real: the export holds about 2,000 reports of cheating
    assert payload("export", p, "--question", "cheat")["n"] > 1_900


def test_an_oracle_is_read_by_oracle_and_a_finite_design_by_the_rest(tmp_path, reports):
    path = tmp_path / "oue.csv"
    spec = "oue:k=64,epsilon=2"
    simulate = ["simulate", "adult", "--column", "native-country", "--design", spec]
    done = CliRunner().invoke(app, [*simulate, "-o", str(path), "--seed", "5"])
    assert done.exit_code == 0, done.output
    found = payload("oracle", str(path), "-d", spec, "--postprocess", "norm-sub")
    assert found == payload(str(path), "-d", spec, "--postprocess", "norm-sub")
    assert found["heavy_hitters"][0]["value"] == "United-States"
    code, said = invoke("prevalence", str(path), "-d", spec)
    assert code == 2 and "oue is a frequency oracle" in said and "analyze oracle" in said
    code, said = invoke("oracle", str(reports), "-d", FR)
    assert code == 2 and "finite design" in said and "analyze prevalence" in said


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["prevalence", "{r}", "-d", FR, "--by", "group"], "No such option: --by"),
        (["prevalence", "{r}", "-d", FR, "--question", "q"], "No such option: --question"),
        (["waves", "{r}", "--formula", "x ~ y"], "No such option: --formula"),
        (["prevalence", "{r}"], "Missing option '--design'"),
        (["complex", "{r}", "-d", FR], "give --pi COLUMN"),
        (["export", "{r}"], "give --question QID"),
        (["subgroups", "{r}", "--by", "g", "-d", FR, "--question", "q"], "give one of them"),
    ],
)
def test_a_subcommand_takes_its_own_options_only(reports, args, message):
    code, said = invoke(*[a.replace("{r}", str(reports)) for a in args])
    assert code == 2 and message in " ".join(said.split())


def test_every_subcommand_is_listed_and_the_bare_form_is_not():
    code, said = invoke("--help")
    assert code == 0
    listed = [line.split()[0] for line in said.split("Commands:")[1].strip().splitlines()]
    assert [name for name in listed if name in SUBCOMMANDS] == list(SUBCOMMANDS)
    assert "auto" not in listed and len(listed) == len(SUBCOMMANDS)
    group = typer.main.get_command(app).commands["analyze"]  # type: ignore[attr-defined]
    assert set(group.commands) == {*SUBCOMMANDS, "auto"}

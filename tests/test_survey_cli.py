"""The survey's whole life from the command line, against a real `deniable serve`
process on SQLite: publish (YAML), invite, status, close, reopen, revoke, export in every
format, and `deniable analyze --question` on each export giving the server's estimates."""

from __future__ import annotations

import copy
import csv
import json
import os
import subprocess
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner, Result

from deniable.cli import app
from deniable.collection.credentials import b64url, load_public_key, new_credential_request
from deniable.collection.respondent._client import parse_survey_url

from .conftest import ANALYST, AUTH, SURVEY, http_credential
from .test_server_process import DEANIABLE, Server


def cli(*args: str, cwd: Path, base: str, check: bool = True) -> Result:
    """The command in process (the server is a real process; each ``deniable`` start
    would cost seconds of imports)."""
    env = {"DENIABLE_ANALYST_TOKEN": ANALYST, "DENIABLE_SERVER": base, "COLUMNS": "200"}
    here = os.getcwd()
    os.chdir(cwd)
    try:
        out = CliRunner().invoke(app, list(args), env=env)
    finally:
        os.chdir(here)
    if check:
        assert out.exit_code == 0, out.output
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    s = Server(f"sqlite:///{tmp / 'db.sqlite'}", tmp)
    s.start()
    yield s
    s.kill()


def test_the_whole_life_from_the_command_line(server, tmp_path):
    base = server.base
    survey = copy.deepcopy(SURVEY) | {
        "id": "life",
        "requires_invitation": True,
        "min_release": 5,
        "allow_small_release": True,
    }
    (tmp_path / "life.yaml").write_text(yaml.safe_dump(survey))
    out = cli("survey", "publish", "life.yaml", "--json", cwd=tmp_path, base=base)
    assert json.loads(out.stdout)["created"] is True
    assert (
        "already published" in cli("survey", "publish", "life.yaml", cwd=tmp_path, base=base).stdout
    )

    cli("survey", "invite", "life", "--count", "13", "--output", "inv.csv", cwd=tmp_path, base=base)
    with (tmp_path / "inv.csv").open() as fh:
        links = [row["link"] for row in csv.DictReader(fh)]
    assert len(links) == 13 and all(f"{base}/s/life#token=" in link for link in links)
    tokens = [parse_survey_url(link).token for link in links]

    rng = np.random.default_rng(20261123)
    with httpx.Client(base_url=base, timeout=30) as http:
        for token in tokens[:10]:
            body = {
                "version": 1,
                "credential": http_credential(http, "life", token),
                "reports": {"drugs": int(rng.integers(2)), "status": int(rng.integers(3))},
            }
            assert http.post("/api/surveys/life/responses", json=body).status_code == 201
        status = json.loads(
            cli("survey", "status", "life", "--json", cwd=tmp_path, base=base).stdout
        )
        assert status["responses"] == 10 and status["closed"] is False
        assert status["invitations"] == {
            "issued": 13,
            "used": 10,
            "unused": 3,
            "revoked": 0,
            "named": 0,
            "anonymous": 13,
        }
        held = {
            "version": 1,
            "credential": http_credential(http, "life", tokens[11]),
            "reports": {"drugs": 0, "status": 1},
        }

        cli("survey", "close", "life", cwd=tmp_path, base=base)
        r = http.post("/api/surveys/life/responses", json=held)
        assert r.status_code == 409 and r.json()["error"]["code"] == "survey_closed"
        # after closing: a clear error, nothing stored, the invitation not spent
        key = load_public_key(http.get("/api/surveys/life").json()["credential_key"])
        blinded = b64url(new_credential_request(key)[0])
        r = http.post(
            "/api/surveys/life/credentials", json={"token": tokens[10], "blinded_msg": blinded}
        )
        assert r.status_code == 409 and "closed" in r.json()["error"]["message"]
        text = cli("survey", "status", "life", cwd=tmp_path, base=base).stdout
        assert "closed" in text and "10 responses" in text
        cli("survey", "reopen", "life", cwd=tmp_path, base=base)
        body = {
            "version": 1,
            "credential": http_credential(http, "life", tokens[10]),
            "reports": {"drugs": 1, "status": 2},
        }
        assert http.post("/api/surveys/life/responses", json=body).status_code == 201
        assert http.post("/api/surveys/life/responses", json=held).status_code == 201
        served = http.get("/api/surveys/life/results", headers=AUTH).json()

    revoked = json.loads(cli("survey", "revoke", "life", "--json", cwd=tmp_path, base=base).stdout)
    assert revoked["revoked"] == 1
    audit = json.loads(cli("survey", "audit", "life", "--json", cwd=tmp_path, base=base).stdout)
    # dated by the hour only, so in no order within it; the close released the 10 that
    # waited (no key: one cell of at least min_release 5); reading results released
    # nothing; a scheduled release comes only at an hour's boundary, should one pass
    actions = sorted((e["actor"], e["action"]) for e in audit if e["actor"] != "server")
    assert actions == sorted(
        [
            ("cli", "publish"),
            ("cli", "invite"),
            ("cli", "release"),
            ("cli", "close"),
            ("cli", "reopen"),
            ("cli", "revoke"),
        ]
    )
    assert all(e["at"] % 3600 == 0 for e in audit)
    assert "release" in cli("survey", "audit", "life", cwd=tmp_path, base=base).stdout

    for fmt in ("csv", "wide", "parquet", "sav", "dta"):
        out = cli("survey", "export", "life", "--format", fmt, "--json", cwd=tmp_path, base=base)
        files = json.loads(out.stdout)
        assert Path(tmp_path / files["survey_file"]).exists()
        for question in served["questions"]:
            got = cli(
                "analyze",
                files["file"],
                "--question",
                question["id"],
                "--json",
                cwd=tmp_path,
                base=base,
            )
            payload = json.loads(got.stdout)
            assert payload["n"] == 10, fmt  # two crowds of 5 released; 2 wait
            assert payload["estimate"] == pytest.approx(question["estimate"], abs=1e-12), fmt
            assert payload["std_error"] == pytest.approx(question["std_error"], abs=1e-12), fmt


@pytest.mark.slow
def test_errors_are_clear(server, tmp_path):
    base = server.base
    out = cli("survey", "status", "nosuch", cwd=tmp_path, base=base, check=False)
    assert out.exit_code == 2 and "404" in out.stderr and "no published survey" in out.stderr
    bad = copy.deepcopy(SURVEY) | {"id": "bad", "privacy_budget": 0.5}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    out = cli("survey", "publish", "bad.yaml", cwd=tmp_path, base=base, check=False)
    assert out.exit_code == 2 and "privacy_budget" in out.stderr
    out = cli("survey", "export", "nosuch", "--format", "xml", cwd=tmp_path, base=base, check=False)
    assert out.exit_code == 2 and "--format must be one of" in out.stderr
    env = {k: v for k, v in os.environ.items() if k != "DENIABLE_ANALYST_TOKEN"}
    out = subprocess.run(
        [DEANIABLE, "survey", "status", "x", "--server", base],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "DENIABLE_ANALYST_TOKEN" in out.stderr
    version = subprocess.run([DEANIABLE, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("deniable ")


def test_respond_in_the_terminal_takes_numbers_and_tells_the_whole_truth(server, tmp_path):
    """The terminal client is a device like the page: it shows the description, the
    consent text (and that a response cannot be withdrawn), the crosswise innocuous
    question, which answer a report proves, and takes a number in range (7.5 hours)."""
    survey = {
        "format": 1,
        "id": "sleep",
        "version": 1,
        "title": "Sleep and habits",
        "description": "A short survey on sleep.",
        "consent": "Voluntary. Contact: team@example.org",
        "privacy_budget": 10.0,
        "no_lifetime_budget": True,  # drugs' "yes" report proves "yes"
        "questions": [
            {
                "id": "hours",
                "text": "How many hours did you sleep?",
                "range": {"low": 0, "high": 12, "unit": "hours"},
                "design": {"name": "duchi", "params": {"epsilon": 1.0}},
            },
            {
                "id": "drugs",
                "text": "Have you used an illegal drug?",
                "design": {"name": "forced-response", "params": {"p_yes": 0.0, "p_no": 0.01}},
                "allow_infinite_epsilon": True,
                "sensitive": ["no"],
            },
            {
                "id": "cheat",
                "text": "Have you cheated in an exam?",
                "innocuous_question": "Is your mother's birthday in January or February?",
                "design": {"name": "crosswise", "params": {"p": 0.17}},
            },
        ],
    }
    (tmp_path / "sleep.yaml").write_text(yaml.safe_dump(survey))
    cli("survey", "publish", "sleep.yaml", cwd=tmp_path, base=server.base)
    checked = cli("survey", "check", "sleep.yaml", "--json", cwd=tmp_path, base=server.base)
    drugs = json.loads(checked.stdout)["questions"][1]
    assert drugs["max_odds_factor"] == {"no": pytest.approx(100.0), "yes": None}
    assert any("seen for certain" in line for line in drugs["disclosure"])
    env = {"DENIABLE_SERVER": server.base, "COLUMNS": "200"}
    out = CliRunner().invoke(
        app, ["respond", f"{server.base}/s/sleep", "--yes"], input="12.5\n7.5\nno\nyes\n", env=env
    )
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    for shown in (
        "A short survey on sleep.",
        "Contact: team@example.org",
        "cannot be withdrawn",
        "mother's birthday in January",
        "choosing this can be seen for certain",
        "Please type a number from 0 to 12",
        "Stored.",
    ):
        assert shown in text, shown
    with httpx.Client(base_url=server.base, timeout=30, headers=AUTH) as http:
        assert http.get("/api/surveys/sleep/status").json()["responses"] == 1


@pytest.mark.slow  # a server process (module fixture)
def test_what_waits_is_said_by_export_and_analyze_and_an_export_knows_its_survey(server, tmp_path):
    """The README's walk: publish, invite 3, one response, close, export, analyze. The
    one response never reaches a crowd of min_release (30): export and analyze say it
    was withheld at the close, and why, instead of a bare "n = 0". The export names its
    survey in a column, and analyzed with another survey's file it is refused naming
    both."""
    base = server.base
    survey = copy.deepcopy(SURVEY) | {"id": "walk", "requires_invitation": True}
    (tmp_path / "walk.yaml").write_text(yaml.safe_dump(survey))
    cli("survey", "publish", "walk.yaml", cwd=tmp_path, base=base)
    cli("survey", "invite", "walk", "--count", "3", "-o", "inv.csv", cwd=tmp_path, base=base)
    with (tmp_path / "inv.csv").open() as fh:
        token = parse_survey_url(next(csv.DictReader(fh))["link"]).token
    with httpx.Client(base_url=base, timeout=30) as http:
        body = {"version": 1, "credential": http_credential(http, "walk", token),
                "reports": {"drugs": 1, "status": 0}}  # fmt: skip
        assert http.post("/api/surveys/walk/responses", json=body).status_code == 201
    cli("survey", "close", "walk", cwd=tmp_path, base=base)
    out = cli("survey", "export", "walk", "--format", "wide", cwd=tmp_path, base=base).stdout
    said = "1 response was withheld at the close, not exported: fewer than min_release = 30"
    assert said in " ".join(out.split())
    analysed = cli("analyze", "walk.wide.csv", "--question", "drugs", cwd=tmp_path, base=base,
                   check=False)  # fmt: skip
    assert said in " ".join(analysed.output.split())
    rows = list(csv.DictReader((tmp_path / "walk.wide.csv").open()))
    assert rows == [] or rows[0]["survey"] == "walk"
    header = (tmp_path / "walk.wide.csv").read_text().splitlines()[0].split(",")
    assert header[0] == "survey"
    # the export beside another survey's file: refused, naming both
    other = json.loads((tmp_path / "walk.survey.json").read_text()) | {"survey": "campus"}
    for version in other["versions"]:
        version["id"] = "campus"
    (tmp_path / "moved.wide.csv").write_text(
        "survey,response_id,version,release,drugs,status\nwalk,abc,1,1,1,0\n"
    )
    (tmp_path / "moved.survey.json").write_text(json.dumps(other))
    refused = cli("analyze", "moved.wide.csv", "--question", "drugs", cwd=tmp_path, base=base,
                  check=False)  # fmt: skip
    assert refused.exit_code == 2
    assert "export of survey 'walk', but its survey file describes survey 'campus'" in " ".join(
        refused.output.split()
    )

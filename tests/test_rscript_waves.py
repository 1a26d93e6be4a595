"""The study bundle's R script for a panel (issue 59): every wave, the change from each
wave to the next per arm and pooled, each composed channel as the forced-response
design it is, base R where RRreg and GLMMRR are absent; run in R (Debian's
r-base-core), its numbers equal the dashboard's to 1e-8."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._export import wide_frame
from deniable.collection.exports._rscript import glmmrr_row, r_script, rrreg_call
from deniable.collection.model._survey import load_survey
from deniable.collection.respondent._devices import simulate_responses
from deniable.collection.server._live import serve_in_thread
from deniable.collection.store._storage import Store
from deniable.mechanisms import ForcedResponse, TwoLayerDesign, Warner

from .conftest import ANALYST

RSCRIPT = shutil.which("Rscript")
SIZES = (600, 480, 380)  # respondents per wave: attrition


def study(version: int) -> dict:
    """A 3-wave panel with arms: a key asked directly (region), a yes/no panel question
    randomized in one arm and asked directly (post-randomized) in the other, and a
    3-choice panel question randomized in both."""
    return {
        "format": 1,
        "id": "panel",
        "version": version,
        "title": "Panel study",
        "privacy_budget": 6,
        "lifetime_budget": 30,
        "requires_invitation": False,
        "min_release": 5,
        "allow_small_release": True,
        "arms": {"rr": {"weight": 1}, "dq": {"weight": 1, "designs": {"q": {"name": "direct"}}}},
        "questions": [
            {
                "id": "region",
                "text": "Where do you live?",
                "choices": ["north", "centre", "south"],
                "design": {"name": "direct"},
            },
            {
                "id": "q",
                "text": "Did you use it in the last month?",
                "design": {"name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0.2}},
                "panel": {"permanent": {"name": "warner", "params": {"p": 0.9}}},
            },
            {
                "id": "brand",
                "text": "Which one did you use most?",
                "choices": ["a", "b", "c"],
                "design": {"name": "kary-rr", "params": {"epsilon": 2.0}},
                "panel": {"permanent": {"name": "kary-rr", "params": {"epsilon": 3.0}}},
            },
        ],
    }


def _bundle(tmp_path):
    """The panel's three waves stored and released (prevalence and attrition differ by
    region), and its bundle written by the CLI; the store, the folder and the
    dashboard's results."""
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    rng = np.random.default_rng(59)
    for version, n in enumerate(SIZES, start=1):
        survey = load_survey(study(version))
        store.publish(survey)
        region = rng.choice(
            3, n, p=[[0.5, 0.3, 0.2], [0.4, 0.3, 0.3], [0.55, 0.45, 0.0]][version - 1]
        )
        truths = {
            "region": region,
            "q": (rng.random(n) < np.array([0.1, 0.3, 0.5])[region] + 0.05 * version).astype(
                np.int64
            ),
            "brand": rng.choice(3, n, p=[0.5, 0.3, 0.2]),
        }
        sent = simulate_responses(survey, truths, rng)
        store.submit_batch(
            survey,
            [b["reports"] for b in sent],
            [b["arm"] for b in sent],
            [b["groups"] for b in sent],
        )
        store.release()
    env = {"DENIABLE_ANALYST_TOKEN": ANALYST, "COLUMNS": "200"}
    with serve_in_thread(store, ANALYST) as base:
        out = CliRunner().invoke(
            app,
            ["survey", "export", "panel", "--format", "bundle", "--output",
             str(tmp_path / "bundle"), "--server", base, "--json"],
            env=env,
        )  # fmt: skip
        import httpx

        results = httpx.get(
            f"{base}/api/surveys/panel/results", headers={"Authorization": f"Bearer {ANALYST}"}
        ).json()
    assert out.exit_code == 0, out.output
    return store, tmp_path / "bundle", results


def test_a_composed_yes_no_channel_is_the_forced_response_design_it_is():
    """Warner 0.9 under forced response (0.205, 0.305)-like channels: GLMMRR's Forced
    row and RRreg's FR call reproduce the composed Pr(yes | truth)."""
    two = TwoLayerDesign(Warner(p=0.9), ForcedResponse(p_yes=0.2, p_no=0.2))
    model, p1, p2 = glmmrr_row(two)
    assert model == "Forced"
    yes = two.matrix[1]
    assert (1 - p1) * p2 == pytest.approx(yes[0]) and p1 == pytest.approx(yes[1] - yes[0])
    call = rrreg_call(two, "q", "x")
    p_yes, p_no = (float(v) for v in call.split("p = c(")[1].rstrip(")").split(", "))
    assert p_yes == pytest.approx(yes[0]) and 1 - p_no == pytest.approx(yes[1])
    assert "GLMMRR has no model" not in r_script(load_survey(study(1)), "panel.wide.csv")


def test_the_panel_script_covers_every_wave_and_loads_no_package_it_does_not_need():
    versions = [load_survey(study(v)) for v in (1, 2, 3)]
    script = r_script(versions, "panel.wide.csv")
    for v in (1, 2, 3):
        assert f"d <- d_all[d_all$version == {v}, ]" in script
    assert "# wave 1 to wave 2" in script and "# wave 2 to wave 3" in script
    assert 'write.csv(change, "panel.change.csv"' in script
    assert "library(" not in script.replace("library(RRreg)) else", "").replace(
        "library(GLMMRR)) else", ""
    )
    # a survey with no randomized yes/no question asks for neither package
    kary = study(1)
    kary["questions"] = [kary["questions"][0], kary["questions"][2]]
    kary.pop("arms")
    assert "requireNamespace" not in r_script(load_survey(kary), "k.csv")


@pytest.mark.slow  # about 10 s: three waves stored, the bundle written, R run
@pytest.mark.skipif(
    RSCRIPT is None, reason="needs Rscript (Debian's r-base-core; .ci/run installs it)"
)
def test_r_reproduces_the_dashboards_waves_and_changes_in_base_r(tmp_path):
    """Without RRreg and GLMMRR the script runs (saying what it skipped), and its
    change table equals the dashboard's to 1e-8: every pair of waves, question, arm
    and answer (first, second, their SEs, the change, its SE and interval, the share
    left out, the cells); its per-wave moment estimates equal Q f of the export."""
    store, folder, results = _bundle(tmp_path)
    env = {"R_LIBS_USER": str(tmp_path / "no-packages"), "PATH": "/usr/bin:/bin"}
    has = subprocess.run(
        [RSCRIPT, "-e", "cat(requireNamespace('RRreg', quietly = TRUE))"],
        capture_output=True, text=True, env=env,
    ).stdout  # fmt: skip
    out = subprocess.run([RSCRIPT, "panel.R"], cwd=folder, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    if has == "FALSE":
        assert "RRreg is not installed: its fits are skipped" in out.stdout
    ours = [
        (c["question"], c["first"], c["second"], row)
        for c in results["wave_change"]
        for row in c["rows"]
    ]
    assert {(q, a, b) for q, a, b, _ in ours} == {
        (q, v, v + 1) for q in ("q", "brand") for v in (1, 2)
    }
    r = pd.read_csv(folder / "panel.change.csv", keep_default_na=False)
    assert len(r) == len(ours)
    for q, first, second, row in ours:
        match = r[
            (r["question"] == q) & (r["first_wave"] == first) & (r["second_wave"] == second)
            & (r["arm"] == row["arm"]) & (r["answer"] == row["answer"])
        ]  # fmt: skip
        assert len(match) == 1, (q, first, row["arm"], row["answer"])
        got = match.iloc[0]
        for key in ("first", "first_std_error", "second", "second_std_error", "difference",
                    "std_error", "low", "high"):  # fmt: skip
            assert got[key] == pytest.approx(row[key], abs=1e-8), (q, first, row["arm"], key)
        assert [got["n_first"], got["n_second"]] == row["n"]
        assert [got["left_out_first"], got["left_out_second"]] == pytest.approx(
            row["left_out"], abs=1e-12
        )
        assert got["cells"] == row["cells"]
    # wave 3 has no one from the south: the change 2 -> 3 leaves wave 2's south out
    assert all(row["left_out"][0] > 0.2 and row["cells"] == 2 for q, a, _, row in ours if a == 2)
    # each wave's moment estimate per arm: Q f of the released reports
    estimates = pd.read_csv(folder / "panel.estimates.csv", keep_default_na=False)
    frame = pd.read_csv(folder / "panel.wide.csv", keep_default_na=False)
    checked = 0
    for version in (1, 2, 3):
        survey = store.survey("panel", version)
        for arm, variant in zip(survey.arm_names, survey.variants("brand"), strict=True):
            codes = frame[(frame["version"] == version) & (frame["arm"] == arm)]["brand"]
            f = np.bincount(codes.astype(int), minlength=3) / len(codes)
            mine = estimates[
                (estimates["version"] == version) & (estimates["question"] == "brand")
                & (estimates["arm"] == arm)
            ]  # fmt: skip
            assert mine["estimate"].to_numpy() == pytest.approx(
                variant.mechanism.inverse @ f, abs=1e-10
            )
            checked += 1
    assert checked == 6
    store.close()


def test_the_bundle_of_a_panel_writes_the_script_of_every_wave(tmp_path):
    store, folder, _ = _bundle(tmp_path)
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["panel.R", "panel.survey.json", "panel.waves.csv", "panel.wide.csv"]
    script = (folder / "panel.R").read_text()
    assert script == r_script(store.versions("panel"), "panel.wide.csv")
    assert json.loads((folder / "panel.survey.json").read_text())["versions"]
    store.close()


@pytest.mark.skipif(
    RSCRIPT is None, reason="needs Rscript (Debian's r-base-core; .ci/run installs it)"
)
def test_a_wave_with_no_released_rows_yet_runs_and_says_so(tmp_path):
    """The hard end: wave 2 published, nothing of it released (fewer than its crowd).
    The script still runs in base R: each of wave 2's arms says "no released rows", no
    change is computed (none can be), and wave 1's estimates are written."""
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    rng = np.random.default_rng(7)
    first = load_survey(study(1))
    store.publish(first)
    truths = {"region": rng.integers(0, 3, 200), "q": rng.integers(0, 2, 200),
              "brand": rng.integers(0, 3, 200)}  # fmt: skip
    sent = simulate_responses(first, truths, rng)
    store.submit_batch(first, [b["reports"] for b in sent], [b["arm"] for b in sent])
    store.release()
    second = load_survey(study(2))
    store.publish(second)
    folder = tmp_path / "bundle"
    folder.mkdir()
    frame = wide_frame(store, "panel")
    frame.to_csv(folder / "panel.wide.csv", index=False)
    script = r_script(store.versions("panel"), "panel.wide.csv")
    (folder / "panel.R").write_text(script)
    out = subprocess.run([RSCRIPT, "panel.R"], cwd=folder, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "q, rr: no released rows" in out.stdout and "brand, dq: no released rows" in out.stdout
    assert "waves: no question has released reports in two consecutive waves" in out.stdout
    written = pd.read_csv(folder / "panel.estimates.csv", keep_default_na=False)
    assert set(written["version"]) == {1} and not (folder / "panel.change.csv").exists()
    store.close()

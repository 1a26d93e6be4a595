"""The `deniable` command, the shipped data, and the real surveys against R's formulas."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from deniable import Crosswise, ForcedResponse, UnrelatedQuestion, estimate
from deniable.cli import app
from deniable.data import load_adult, load_rr_survey, real_survey_items

runner = CliRunner()


def test_adult_population_is_complete():
    people = load_adult()
    assert len(people) == 48_842
    assert set(people["income"]) == {"<=50K", ">50K"}
    assert (people["marital-status"] == "Divorced").sum() == 6_633


def test_simulate_then_analyze_round_trip(tmp_path):
    out = tmp_path / "reports.parquet"
    result = runner.invoke(
        app,
        [
            "simulate",
            "adult",
            "--column",
            "income",
            "--yes-value",
            ">50K",
            "--design",
            "forced-response:p_yes=0.25,p_no=0.25",
            "--output",
            str(out),
            "--seed",
            "3",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    truth = payload["true_rate"]["yes"]
    assert payload["n"] == 48_842
    result = runner.invoke(
        app,
        [
            "analyze",
            str(out),
            "--design",
            "forced-response:p_yes=0.25,p_no=0.25",
            "--interval",
            "wilson",
            "--interval",
            "beta",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    analysis = json.loads(result.output)
    est, se = analysis["estimate"][1], analysis["std_error"][1]
    assert abs(est - truth) <= 4 * se  # 4-sigma, exact SE from the design
    assert [ci["method"] for ci in analysis["intervals"]] == ["wilson", "beta"]
    assert analysis["interval"] == analysis["intervals"][0]


def test_simulate_kary_and_csv_population(tmp_path):
    pop = tmp_path / "pop.csv"
    pd.DataFrame({"colour": ["red", "green", "blue"] * 100}).to_csv(pop, index=False)
    out = tmp_path / "r.csv"
    result = runner.invoke(
        app,
        [
            "simulate",
            str(pop),
            "--column",
            "colour",
            "--design",
            "kary-rr:k=3,epsilon=1",
            "--output",
            str(out),
            "--seed",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "true rate" in result.output
    result = runner.invoke(app, ["analyze", str(out), "--design", "kary-rr:k=3,epsilon=1"])
    assert result.exit_code == 0 and "feldman_cousins" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "missing.csv", "--design", "warner:p=0.7"], "file not found"),
        (["plan", "--design", "warner:p=1.3"], "p must be a probability in [0, 1]"),
        (["plan", "--design", "coin"], "unknown design"),
        (["plan", "--design", "warner:p=0.7", "--margin", "2"], "margin"),
    ],
)
def test_bad_input_is_a_clear_error(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_analyze_rejects_bad_report_codes(tmp_path):
    path = tmp_path / "r.csv"
    pd.DataFrame({"report": [0, 1, 5]}).to_csv(path, index=False)
    result = runner.invoke(app, ["analyze", str(path), "--design", "warner:p=0.7"])
    assert result.exit_code == 2 and "report codes 0..1" in result.output


def test_plan_prints_sample_sizes_and_saves_plot(tmp_path):
    png = tmp_path / "margin.png"
    result = runner.invoke(
        app,
        [
            "plan",
            "--design",
            "forced-response:p_yes=0.25,p_no=0.25",
            "--margin",
            "0.01",
            "--confidence-level",
            "0.9",
            "--plot",
            str(png),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["sample_size"]["chebyshev"] == 100_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_demo_runs_on_real_data_and_covers_the_truth():
    result = runner.invoke(app, ["demo", "--seed", "11", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    adult = payload["adult"]
    assert {r["question"] for r in adult} >= {"Is your income over $50K?", "Are you divorced?"}
    # 9 intervals at 95%: all covering is the typical outcome; allow at most 2 misses
    # (Pr(>= 3 misses) = 0.008 if they were independent)
    assert sum(not r["covered"] for r in adult) <= 2
    assert any(r["survey"] == "rr/nigeria" for r in payload["real_surveys"])


# --- real surveys: our estimates against the formulas the R packages implement ----------


def test_nigeria_forced_response_matches_rr_and_rreg():
    # RRreg::RRuni(model = "FR", p = c(1/6, 1/6)) and rr's forced-known design:
    # pi = (mean(z) - 1/6) / (2/3), SE = sqrt(lam (1 - lam) / n) / (2/3)
    z = load_rr_survey("rr/nigeria")["rr.q1"].dropna().to_numpy()
    lam = z.mean()
    result = estimate(ForcedResponse(p_yes=1 / 6, p_no=1 / 6), z.astype(int))
    assert result.n == 2435
    assert result.estimate[1] == pytest.approx((lam - 1 / 6) / (2 / 3), rel=1e-12)
    assert result.estimate[1] == pytest.approx(0.261910, abs=5e-7)
    assert result.std_error[1] == pytest.approx(
        np.sqrt(lam * (1 - lam) / len(z)) / (2 / 3), rel=1e-12
    )


def test_horvitz_real_survey_matches_rrtcs_revised_values():
    # RRTCS::Horvitz: r_i = (z_i - (1 - p) alpha) / p and the estimate is mean(r_i) under SRSWOR
    data = load_rr_survey("RRTCS/HorvitzDataRealSurvey")
    items = {i.survey.split(":")[1]: i for i in real_survey_items() if "Horvitz" in i.survey}
    assert len(items) == 6
    for column, item in items.items():
        design = item.design
        assert isinstance(design, UnrelatedQuestion)
        r = (data[column] - 0.5 * design.innocuous_prevalence) / 0.5
        assert estimate(design, item.reports).estimate[1] == pytest.approx(r.mean(), rel=1e-12)


def test_plagiarism_crosswise_matches_the_crosswise_estimator():
    # Yu, Tian & Tang (2008): pi = (lam + p - 1) / (2p - 1)
    plag = load_rr_survey("GLMMRR/Plagiarism")
    rows = plag[(plag["question"] == 3) & (plag["RR"] == 1)]["response"]
    lam = rows.mean()
    result = estimate(Crosswise(p=0.25), rows.to_numpy().astype(int))
    assert result.estimate[1] == pytest.approx((lam + 0.25 - 1) / (2 * 0.25 - 1), rel=1e-12)


def test_mturk_items_have_known_truth():
    items = [i for i in real_survey_items() if i.survey.startswith("GLMMRR/MTURK")]
    assert len(items) == 7
    assert all(0 < i.true_prevalence < 0.1 for i in items)
    forced = next(i for i in items if isinstance(i.design, ForcedResponse))
    assert forced.design.p_yes == pytest.approx(1 / 6) and forced.design.p_no == pytest.approx(
        1 / 12
    )


@pytest.mark.parametrize("method", ["mle", "bayes"])
def test_analyze_with_other_estimators(tmp_path, method):
    path = tmp_path / "r.csv"
    pd.DataFrame({"report": [0] * 90 + [1] * 10}).to_csv(path, index=False)
    result = runner.invoke(
        app, ["analyze", str(path), "--design", "warner:p=0.7", "--method", method, "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["estimator"] == method
    assert 0.0 <= payload["estimate"][1] <= 1.0  # both stay on the simplex


@pytest.mark.parametrize(
    "spec",
    [
        "olh:k=64,epsilon=2",
        "oue:k=64,epsilon=2",
        "hadamard:k=64,epsilon=2",
        "rappor:n_bloom_bits=64,h=2,n_cohorts=16",
    ],
)
def test_oracles_simulate_analyze_and_find_the_heavy_hitters(tmp_path, spec):
    out = tmp_path / ("reports.parquet" if spec.startswith("rappor") else "reports.csv")
    result = runner.invoke(
        app,
        [
            "simulate",
            "adult",
            "--column",
            "native-country",
            "--design",
            spec,
            "-o",
            str(out),
            "--seed",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / (out.name + ".labels.txt")).exists()
    result = runner.invoke(app, ["analyze", str(out), "--design", spec, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    hitters = {row["value"]: row for row in payload["heavy_hitters"]}
    # the one shape of an estimate: the values detected, their estimates and intervals
    assert payload["result"] == "HeavyHitters" and payload["labels"] == list(hitters)
    assert payload["estimate"] == [hitters[v]["estimate"] for v in payload["labels"]]
    # the respondents' true share of the United States (UCI Adult, known truth) lies in
    # its interval at level 1 - alpha = 0.95
    countries = load_adult()["native-country"].dropna().astype(str).str.strip()
    truth = float((countries == "United-States").mean())
    us = hitters["United-States"]
    assert us["low"] <= truth <= us["high"]
    assert payload["design"]["epsilon"] <= 2.0 + 1e-12 or spec.startswith("rappor")


@pytest.mark.parametrize("method", ["projection", "norm-sub", "empirical-bayes", "mle"])
def test_oracle_analysis_post_processes_into_a_distribution(tmp_path, method):
    out = tmp_path / "reports.csv"
    spec = "oue:k=64,epsilon=2"
    simulate = ["simulate", "adult", "--column", "native-country", "--design", spec]
    result = runner.invoke(app, [*simulate, "-o", str(out), "--seed", "5"])
    assert result.exit_code == 0, result.output
    analyze = ["analyze", str(out), "--design", spec, "--postprocess", method]
    result = runner.invoke(app, [*analyze, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    freq = np.array(payload["distribution"]["frequencies"])
    assert payload["distribution"]["method"] == method
    assert freq.size == 64 and freq.min() >= 0 and freq.sum() == pytest.approx(1.0)
    labels = (tmp_path / "reports.csv.labels.txt").read_text().splitlines()
    for row in payload["heavy_hitters"]:
        assert row[method] == pytest.approx(freq[labels.index(row["value"])])
    # the table names the post-processing in a column
    result = runner.invoke(app, analyze)
    assert result.exit_code == 0 and method in result.output


def test_post_processing_is_only_for_frequency_oracles(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("report\n0\n1\n")
    result = runner.invoke(
        app, ["analyze", str(path), "--design", "warner:p=0.7", "--postprocess", "mle"]
    )
    assert result.exit_code != 0 and "frequency oracles" in result.output
    result = runner.invoke(
        app, ["analyze", str(path), "--design", "olh:k=10,epsilon=1", "--postprocess", "median"]
    )
    assert result.exit_code != 0 and "must be one of projection, norm-sub" in result.output


def test_oracle_reports_that_are_malformed_are_rejected(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b,y\n1,2,9\n")
    result = runner.invoke(app, ["analyze", str(path), "--design", "olh:k=10,epsilon=1"])
    assert result.exit_code != 0 and "buckets 0..3" in result.output
    path.write_text("report\nzz\n")
    result = runner.invoke(app, ["analyze", str(path), "--design", "oue:k=10,epsilon=1"])
    assert result.exit_code != 0 and "hexadecimal" in result.output
    result = runner.invoke(app, ["analyze", str(path), "--design", "olh:k=10,epsilon=-1"])
    assert result.exit_code != 0 and "epsilon must be in (0, 30]" in result.output


@pytest.mark.slow  # 4-7 s: the command's start in a process of its own
def test_the_command_says_a_deniable_warning_in_one_line(tmp_path):
    """A command prints deniable's warnings as ``warning: ...`` on stderr, without
    Python's source file and line (the demo showed ``.../_demo.py:74:
    EstimateOutsideWarning: ...`` and the source line). In a process of its own: the
    test runner records warnings instead of showing them."""
    import subprocess
    import sys

    reports = tmp_path / "three.csv"
    reports.write_text("report\n1\n0\n1\n")
    code = "from deniable._entry import main; main()"
    args = ["analyze", str(reports), "--design", "warner:p=0.8"]
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", code, *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "warning: an estimate from 3 reports: fewer than 30" in said
    assert "FewReportsWarning" not in said and ".py:" not in said

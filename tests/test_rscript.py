"""``deniable survey export ID --format bundle``: the wide CSV, the survey file and an R
script that fits what RRreg and GLMMRR can. The script is parsed by R where ``Rscript``
is installed, and run, its numbers compared with the library's, where RRreg and GLMMRR
are too (CRAN packages: not in Debian, and CRAN is not reachable from CI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._rscript import glmmrr_row, r_script
from deniable.collection.model._survey import load_survey
from deniable.collection.respondent._devices import simulate_responses
from deniable.collection.server._live import serve_in_thread
from deniable.collection.store._storage import Store
from deniable.estimation import estimate
from deniable.mechanisms import Crosswise, ForcedResponse, KaryRR, Warner
from deniable.mechanisms._binary import Mangat
from deniable.mechanisms._direct import Direct

from .conftest import ANALYST
from .test_arms import CAMPUS, campus_truths, with_

RSCRIPT = shutil.which("Rscript")


def _has_r_packages() -> bool:
    if RSCRIPT is None:
        return False
    code = "quit(status = !all(sapply(c('RRreg', 'GLMMRR'), requireNamespace, quietly = TRUE)))"
    return subprocess.run([RSCRIPT, "-e", code], capture_output=True).returncode == 0


def test_designs_map_to_glmmrr_parameters():
    """GLMMRR's c + d * pi (getRRparameters) must equal each design's Pr(yes report)."""
    cases = [
        Direct(k=2),
        Warner(p=0.7),
        ForcedResponse(p_yes=0.2, p_no=0.1),
        Mangat(p=0.3),
        Crosswise(p=0.25),
    ]
    for d in cases:
        row = glmmrr_row(d)
        assert row is not None
        model, p1, p2 = row
        c, slope = {
            "DQ": (0.0, 1.0),
            "Warner": (1 - p1, 2 * p1 - 1),
            "Forced": ((1 - p1) * p2, p1),
            "Crosswise": (1 - p1, 2 * p1 - 1),
        }[model]
        yes = d.matrix[1]  # Pr(report "yes" | truth no), Pr(... | truth yes)
        assert yes[0] == pytest.approx(c) and yes[1] - yes[0] == pytest.approx(slope)
    assert glmmrr_row(Warner(p=0.3)) is None and glmmrr_row(KaryRR(k=3, epsilon=1.0)) is None


def _bundle(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    survey = load_survey(with_(CAMPUS, min_release=30))
    store.publish(survey)
    rng = np.random.default_rng(8)
    sent = simulate_responses(survey, campus_truths(1500, rng), rng)
    store.submit_batch(
        survey, [r["reports"] for r in sent], [r["arm"] for r in sent], [r["groups"] for r in sent]
    )
    store.release()
    env = {"DENIABLE_ANALYST_TOKEN": ANALYST, "COLUMNS": "200"}
    with serve_in_thread(store, ANALYST) as base:
        out = CliRunner().invoke(
            app,
            [
                "survey",
                "export",
                "campus",
                "--format",
                "bundle",
                "--output",
                str(tmp_path / "bundle"),
                "--server",
                base,
                "--json",
            ],
            env=env,
        )
    assert out.exit_code == 0, out.output
    files = json.loads(out.stdout)["files"]
    assert [os.path.basename(f) for f in files] == [
        "campus.wide.csv",
        "campus.survey.json",
        "campus.R",
    ]
    return store, tmp_path / "bundle"


def test_the_bundle_holds_the_csv_the_survey_and_an_r_script(tmp_path):
    store, folder = _bundle(tmp_path)
    script = (folder / "campus.R").read_text()
    assert script == r_script(store.survey("campus"), "campus.wide.csv")
    assert 'RRglm(cheat ~ 1, link = "RRlink.logit"' in script
    assert 'x <- subset(rows_cheat, arm == "rr"); if (has_rrreg && nrow(x) > 0) ' in script
    assert 'RRuni(cheat, data = x, model = "FR", p = c(0.25, 0.25))' in script
    assert "library(" not in script.replace("library(RRreg)) else", "").replace(
        "library(GLMMRR)) else", ""
    )  # loaded only where installed
    assert "R has no model for the extended crosswise model's test of fit" in script
    assert 'model = "Crosswise", p = c(0.75)' in script
    store.close()


@pytest.mark.skipif(RSCRIPT is None, reason="needs Rscript (Debian's r-base-core)")
def test_r_parses_the_script(tmp_path):
    store, folder = _bundle(tmp_path)
    out = subprocess.run(
        [RSCRIPT, "-e", "invisible(parse(file = 'campus.R')); cat('parsed')"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stdout == "parsed", out.stderr
    store.close()


@pytest.mark.slow
@pytest.mark.skipif(
    not _has_r_packages(),
    reason="needs Rscript with the CRAN packages RRreg and GLMMRR (not in Debian; CRAN is "
    "not reachable from CI)",
)
def test_r_runs_the_script_and_agrees_with_the_library(tmp_path):
    """GLMMRR's intercept-only RRglm is the pooled maximum likelihood: it equals the
    library's pooled ``mle`` over the arms' designs."""
    store, folder = _bundle(tmp_path)
    out = subprocess.run([RSCRIPT, "campus.R"], cwd=folder, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    pooled = dict(re.findall(r"(\w+), pooled prevalence \(GLMMRR\): ([0-9.e-]+)", out.stdout))
    frame = store.released.export("campus")
    wide = frame.pivot(index="response_id", columns="question_id", values="report")
    arms = frame.groupby("response_id")["arm"].first()
    survey = store.survey("campus")  # the dq arm's answers are post-randomized
    designs = dict(
        zip(survey.arm_names, [v.mechanism for v in survey.variants("cheat")], strict=True)
    )
    ours = estimate(designs, wide["cheat"].to_numpy(np.int64), method="mle", groups=arms.to_numpy())
    assert float(pooled["cheat"]) == pytest.approx(ours.estimate[1], abs=1e-5)
    # GLMMRR's regression of cheat on faculty, printed to 4 decimals, against ours (with
    # GLMMRR's standard errors: the expected information)
    from deniable.collection.exports._export import read_export
    from deniable.collection.study._by_arm import regression

    table, versions = read_export(folder / "campus.wide.csv")
    fit = regression(table, versions[-1], "cheat", ["faculty"], information="expected")
    coefficients = {c["term"]: c for c in fit["coefficients"]}
    block = out.stdout.split("cheat ~ faculty")[1].split("Signif. codes")[0]
    for label in ("medicine", "science", "arts"):
        estimate_r, se_r = re.search(rf"faculty{label}\s+(\S+)\s+(\S+)", block).groups()
        ours_term = coefficients[f"faculty[T.{label}]"]
        assert float(estimate_r) == pytest.approx(ours_term["coef"], abs=1e-4)
        assert float(se_r) == pytest.approx(ours_term["std_error"], abs=1e-3)
    store.close()

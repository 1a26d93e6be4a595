"""`compare_designs` and `deniable plan --compare`: every binary design calibrated to
one epsilon (or one disclosure promise) exactly, with the n of `sample_size` for it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.mechanisms import DESIGNS, design_from_spec
from deniable.planning import compare_designs, disclosure_risk, sample_size

BINARY = {"warner", "forced-response", "crosswise", "kuk", "unrelated-question", "mangat",
          "triangular"}  # fmt: skip


def test_the_families_are_every_binary_design_of_the_registry():
    registry = {name for name, build in DESIGNS.items() if name not in ("kary-rr", "direct")}
    assert {r.family for r in compare_designs(epsilon=1.0)} == BINARY == registry


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_each_design_meets_the_epsilon_and_the_one_channel_needs_one_n(epsilon):
    rows = compare_designs(epsilon=epsilon, margin=0.02, confidence_level=0.9)
    met = [r for r in rows if r.design is not None]
    assert {r.family for r in met} == BINARY - {"mangat", "triangular"}
    for r in met:
        assert r.design.epsilon == pytest.approx(epsilon, abs=1e-9)
        assert r.n == sample_size(r.design, 0.02, 0.9)
        assert r.n_to_collect == r.n + 29
    # one channel: Pr(yes | yes) = e^eps / (1 + e^eps) for each
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    for r in met:
        column = r.design.matrix[:, 1]
        assert max(column) == pytest.approx(p, abs=1e-9)
    assert len({r.n for r in met}) == 1
    for r in rows[len(met) :]:
        assert r.epsilon == math.inf and r.n is None and "one-sided" in r.note


def test_at_one_promise_the_one_sided_designs_join_and_need_fewer():
    rows = compare_designs(promise=0.75, prior=0.5, margin=0.05, min_release=10, cells=3)
    assert [r.family for r in rows[:2]] == ["mangat", "triangular"]
    for r in rows:
        assert r.design is not None
        risk = disclosure_risk(r.design, 0.5)
        assert np.nanmax(risk.posterior_yes) == pytest.approx(0.75, abs=1e-9)
        assert r.n_to_collect == r.n + 3 * 9
    assert rows[0].n < rows[-1].n  # a one-sided design is cheaper at the same promise


def test_bad_targets_are_refused_by_name():
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        compare_designs()
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        compare_designs(epsilon=1.0, promise=0.8)
    with pytest.raises(ValueError, match="promise must be a belief"):
        compare_designs(promise=0.3, prior=0.5)
    with pytest.raises(ValueError, match="epsilon must be a positive"):
        compare_designs(epsilon=math.inf)
    with pytest.raises(ValueError, match="cells"):
        compare_designs(epsilon=1.0, cells=0)


def test_plan_compare_lists_every_design_and_its_best_n_is_plans_n():
    """The issue's must-hold: three epsilons, every binary design with its n, and the n
    of the best equal to the single-design `plan` for it."""
    runner = CliRunner()
    done = runner.invoke(app, ["plan", "--compare", "--epsilon", "0.5", "--epsilon", "1",
                               "--epsilon", "2", "--margin", "0.03", "--json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    tables = json.loads(done.stdout)
    assert [t["epsilon"] for t in tables] == [0.5, 1.0, 2.0]
    for t in tables:
        assert {row["family"] for row in t["designs"]} == BINARY
        best = t["designs"][0]
        assert math.isclose(design_from_spec(best["design"]).epsilon, t["epsilon"], abs_tol=1e-9)
        single = runner.invoke(app, ["plan", "--design", best["design"], "--margin", "0.03",
                                     "--json"])  # fmt: skip
        assert single.exit_code == 0, single.output
        assert json.loads(single.stdout)["sample_size"]["normal"] == best["n"]
    text = runner.invoke(app, ["plan", "--compare", "--epsilon", "1"])
    assert text.exit_code == 0 and "mangat: one-sided" in " ".join(text.output.split())


def test_plan_compare_refuses_what_does_not_go_together():
    runner = CliRunner()
    for args, words in [
        (["--compare"], "--epsilon (one or more) or --promise"),
        (["--compare", "--epsilon", "1", "--promise", "0.8"], "not both"),
        (["--compare", "--epsilon", "1", "--design", "warner:p=0.7"], "leave out --design"),
        (["--epsilon", "1", "--design", "warner:p=0.7"], "go with --compare"),
        ([], "give --design SPEC"),
        (["--compare", "--promise", "0.4", "--prior", "0.5"], "promise must be a belief"),
    ]:
        done = runner.invoke(app, ["plan", *args])
        assert done.exit_code == 2, (args, done.output)
        assert words in " ".join(done.output.split()), (args, done.output)

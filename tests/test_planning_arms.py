"""Planning a validation study and an extended crosswise study, checked by simulating
the studies (seeded; tolerances are 3 Monte Carlo standard errors)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from deniable.cli import app
from deniable.mechanisms import Crosswise, ForcedResponse, KaryRR
from deniable.planning import arm_comparison_power, arm_comparison_size, ecwm_size

REPS = 4_000
COINS = ForcedResponse(p_yes=0.25, p_no=0.25)


def simulated_power(design, n_rr, n_dq, p_dq, p_rr, alpha, rng) -> float:
    """Share of simulated studies whose one-sided Wald test (plug-in standard errors,
    as an analyst computes it) rejects pi_rr <= pi_direct."""
    c, d = design.yes_line
    lam = c + d * p_rr
    yes_rr = rng.binomial(n_rr, lam, size=REPS) / n_rr
    yes_dq = rng.binomial(n_dq, p_dq, size=REPS) / n_dq
    est_rr = (yes_rr - c) / d
    var = yes_rr * (1 - yes_rr) / (n_rr * d * d) + yes_dq * (1 - yes_dq) / n_dq
    z = (est_rr - yes_dq) / np.sqrt(var)
    return float(np.mean(z > stats.norm.ppf(1 - alpha)))


@pytest.mark.parametrize(
    ("design", "p_dq", "p_rr", "ratio"),
    [(COINS, 0.10, 0.15, 1.0), (Crosswise(p=0.25), 0.20, 0.26, 0.5)],
)
def test_the_planned_arms_reach_the_power_asked_for(design, p_dq, p_rr, ratio, rng):
    sizes = arm_comparison_size(design, p_dq, p_rr, alpha=0.05, power=0.8, ratio=ratio)
    assert sizes.power >= 0.8 and sizes.direct == math.ceil(ratio * sizes.rr)
    if ratio == 1:  # the smallest equal arms: one fewer each falls short
        assert arm_comparison_power(design, sizes.rr - 1, sizes.rr - 1, p_dq, p_rr) < 0.8
    simulated = simulated_power(design, sizes.rr, sizes.direct, p_dq, p_rr, 0.05, rng)
    assert abs(simulated - sizes.power) < 3 * math.sqrt(0.8 * 0.2 / REPS)


def test_the_test_keeps_its_level_at_the_null(rng):
    """pi_rr = pi_direct = 0.1 at the sizes planned for 0.15: rejections at 5%."""
    sizes = arm_comparison_size(COINS, 0.10, 0.15)
    simulated = simulated_power(COINS, sizes.rr, sizes.direct, 0.10, 0.10, 0.05, rng)
    assert abs(simulated - 0.05) < 3 * math.sqrt(0.05 * 0.95 / REPS)


def test_the_extended_crosswise_size_reaches_its_margin(rng):
    """Two groups with p and 1 - p, half the sample each, pi = 0.5 (the worst case): the
    pooled estimate is within the margin in 95% of simulated studies."""
    p, margin = 0.25, 0.05
    n = ecwm_size(p, margin, 0.95)
    assert n % 2 == 0
    half = n // 2
    pi = 0.5
    same_1 = rng.binomial(half, p * pi + (1 - p) * (1 - pi), size=REPS) / half
    same_2 = rng.binomial(half, (1 - p) * pi + p * (1 - pi), size=REPS) / half
    est = ((same_1 + p - 1) / (2 * p - 1) + (same_2 - p) / (1 - 2 * p)) / 2
    within = float(np.mean(np.abs(est - pi) <= margin))
    assert abs(within - 0.95) < 3 * math.sqrt(0.95 * 0.05 / REPS)


def test_bad_plans_are_refused():
    with pytest.raises(ValueError, match="p_rr must exceed p_direct"):
        arm_comparison_size(COINS, 0.2, 0.2)
    with pytest.raises(ValueError, match="power must be in"):
        arm_comparison_size(COINS, 0.1, 0.2, power=1.2)
    with pytest.raises(ValueError, match="not binary"):
        arm_comparison_size(KaryRR(k=3, epsilon=1.0), 0.1, 0.2)


def test_deniable_plan_prints_arm_sizes_and_the_ecwm_size():
    out = CliRunner().invoke(
        app,
        [
            "plan",
            "--design",
            "forced-response:p_yes=0.25,p_no=0.25",
            "--direct-prevalence",
            "0.1",
            "--rr-prevalence",
            "0.2",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    arms = json.loads(out.stdout)["arms"]
    expected = arm_comparison_size(COINS, 0.1, 0.2)
    assert (arms["rr"], arms["direct"]) == (expected.rr, expected.direct)
    out = CliRunner().invoke(app, ["plan", "--design", "crosswise:p=0.25", "--ecwm", "--json"])
    assert json.loads(out.stdout)["ecwm"] == {"total": 1538, "per_group": 769}
    bad = CliRunner().invoke(app, ["plan", "--design", "warner:p=0.7", "--ecwm"])
    assert bad.exit_code != 0 and "--ecwm needs a crosswise design" in bad.output

"""Differences between arms (deniable.analysis._comparison): the arithmetic, the one JSON
shape, and the coverage of the Wald interval of a difference over simulated studies."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable import ForcedResponse, Warner, estimate
from deniable.analysis import ArmDifferences, arm_differences

CONTROL = Warner(p=0.8)
TREATED = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)


def _arms(rng: np.random.Generator, n: int, pi_control: float, pi_treated: float):
    control = CONTROL.randomize(rng.random(n) < pi_control, rng)
    treated = TREATED.randomize(rng.random(n) < pi_treated, rng)
    return {"control": estimate(CONTROL, control), "treated": estimate(TREATED, treated)}


def test_the_difference_is_the_two_estimates_and_their_errors():
    arms = _arms(np.random.default_rng(1), 800, 0.2, 0.3)
    diff = arm_differences(arms, "control")
    assert isinstance(diff, ArmDifferences) and diff.labels == ["treated"]
    d = arms["treated"].estimate[1] - arms["control"].estimate[1]
    se = math.hypot(arms["treated"].std_error[1], arms["control"].std_error[1])
    assert diff.estimate[0] == pytest.approx(d, abs=1e-15)
    assert diff.std_error[0] == pytest.approx(se, abs=1e-15)
    (row,) = diff.rows(0.9)
    ci = diff.confidence_interval(0.9)
    assert row == {
        "arm": "treated",
        "difference": d,
        "std_error": se,
        "low": float(ci.low[0]),
        "high": float(ci.high[0]),
        "pvalue": pytest.approx(0.5 * math.erfc(d / se / math.sqrt(2)), abs=1e-12),
    }
    payload = diff.to_dict(0.9)
    assert payload["result"] == "ArmDifferences" and payload["reference"] == "control"
    assert payload["interval"]["low"] == [row["low"]]
    with pytest.raises(ValueError, match="normal"):
        diff.confidence_interval(0.95, "wilson")
    with pytest.raises(KeyError):
        arm_differences(arms, "nosuch")


@pytest.mark.parametrize(("pi_control", "pi_treated"), [(0.0, 0.0), (0.05, 0.15), (0.5, 0.5)])
def test_the_interval_of_a_difference_covers(pi_control, pi_treated):
    """1,000 studies of 2 x 1,000: the 95% Wald interval covers the true difference at
    least 0.95 - 4 sqrt(0.95 0.05 / 1000) = 0.922 (the exact binomial SE of coverage),
    at the boundary (both arms at 0) too."""
    rng = np.random.default_rng(7)
    truth = pi_treated - pi_control
    covered = 0
    for _ in range(1000):
        diff = arm_differences(_arms(rng, 1000, pi_control, pi_treated), "control")
        ci = diff.confidence_interval(0.95)
        covered += ci.low[0] <= truth <= ci.high[0]
    assert covered / 1000 >= 0.95 - 4 * math.sqrt(0.95 * 0.05 / 1000)

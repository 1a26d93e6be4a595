"""No bias from the release rule: arm comparisons over simulated studies whose true
method effect is 0 (bench/release_bias.py runs 1,000; this runs 150). Tolerances are
Monte Carlo bounds: 3 MC SEs for the mean difference and the sample-ratio test's size,
and the 95% interval's coverage no lower than 0.95 less 3 binomial MC SEs."""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "release_bias.py"


def _bench():
    spec = importlib.util.spec_from_file_location("release_bias", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_arm_differences_are_unbiased_and_cover_over_simulated_studies():
    studies = 150
    result = _bench().simulate(studies, 58)
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / studies)
    for key, c in result["comparisons"].items():
        assert abs(c["mean"]) < 3 * c["mc_se"], (key, c)
        assert c["coverage"] >= floor, (key, c)
    size = 3 * math.sqrt(0.05 * 0.95 / studies)
    assert abs(result["srt_arrivals"] - 0.05) <= size
    assert abs(result["srt_released"] - 0.05) <= size
    for (_, (a, sa)), (_, (b, sb)) in itertools.combinations(result["shares"].items(), 2):
        assert abs(a - b) <= 3 * math.hypot(sa, sb)

"""Subgroups and fairness audits: exact values on clear data, coverage by simulation.

Coverage checks run many simulated surveys with a fixed seed and accept when the
observed coverage lies within 4 binomial standard deviations of the nominal level
(false-failure rate about 6e-5 per check).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable import ForcedResponse, KaryRR, Warner
from deniable.analysis import adult_parity_audit, statistical_parity, subgroup_prevalence
from deniable.data import load_adult

COINS = ForcedResponse(p_yes=0.25, p_no=0.25)


def _coverage_bound(reps: int, level: float = 0.95) -> float:
    return 4 * math.sqrt(level * (1 - level) / reps)


def test_subgroup_estimates_are_the_core_estimates_per_group() -> None:
    rng = np.random.default_rng(3)
    n = 30_000
    groups = rng.choice(np.array(["a", "b", "c"]), n)
    truth = rng.random(n) < np.select([groups == "a", groups == "b"], [0.1, 0.2], 0.35)
    reports = COINS.randomize(truth, rng)
    res = subgroup_prevalence(COINS, reports, groups)
    table = res.table()
    assert list(table.index) == ["a", "b", "c"]
    for g in ("a", "b", "c"):
        lam = reports[groups == g].mean()
        assert table.loc[g, "estimate"] == pytest.approx(2 * lam - 0.5)
        assert table.loc[g, "std_error"] == pytest.approx(
            math.sqrt(4 * lam * (1 - lam) / (groups == g).sum())
        )
    # an estimate-like result whose entries are the groups: the base's vocabulary
    assert res.labels == ["a", "b", "c"] and res.n == n
    np.testing.assert_allclose(res.estimate, table["estimate"].to_numpy(), atol=0)
    np.testing.assert_allclose(res.std_error, table["std_error"].to_numpy(), atol=0)
    shape = res.to_dict()
    assert shape["result"] == "SubgroupResult" and shape["interval"]["method"] == "feldman_cousins"
    assert shape["interval"]["low"] == table["low"].tolist()
    assert res.to_frame()["high"].tolist() == table["high"].tolist()
    diff = res.difference("c", "a")
    assert diff.estimate == pytest.approx(table.loc["c", "estimate"] - table.loc["a", "estimate"])
    assert abs(diff.estimate - 0.25) < 4 * diff.std_error
    ratio = res.ratio("c", "a")
    low, high = ratio.confidence_interval()
    assert low < ratio.estimate < high
    test = res.test_equal()
    assert test.df == 2 and test.pvalue < 1e-10
    with pytest.raises(ValueError, match="unknown group"):
        res.difference("a", "z")


def test_equal_prevalence_test_has_its_size() -> None:
    rng = np.random.default_rng(8)
    reps, n = 2000, 3000
    design = KaryRR(k=3, epsilon=1.0)
    rejections = 0
    for _ in range(reps):
        groups = rng.integers(0, 3, n)
        truth = rng.choice(3, n, p=[0.5, 0.3, 0.2])
        reports = design.randomize(truth, rng)
        rejections += subgroup_prevalence(design, reports, groups).test_equal().pvalue < 0.05
    assert abs(rejections / reps - 0.05) < _coverage_bound(reps, 0.05)


@pytest.mark.slow
def test_group_difference_intervals_cover() -> None:
    rng = np.random.default_rng(21)
    reps, n = 2000, 4000
    hits = 0
    for _ in range(reps):
        groups = (rng.random(n) < 0.4).astype(int)
        truth = rng.random(n) < np.where(groups == 1, 0.3, 0.15)
        reports = COINS.randomize(truth, rng)
        low, high = (
            subgroup_prevalence(COINS, reports, groups).difference(1, 0).confidence_interval()
        )
        hits += low <= 0.15 <= high
    assert abs(hits / reps - 0.95) < _coverage_bound(reps)


def test_clear_parity_is_the_plain_difference() -> None:
    adult = load_adult()
    rich = (adult["income"] == ">50K").to_numpy()
    female = (adult["sex"] == "Female").to_numpy()
    res = statistical_parity(rich, female)
    expected = rich[~female].mean() - rich[female].mean()
    assert res.difference == pytest.approx(expected, abs=1e-12)
    assert res.total_variation == pytest.approx(abs(expected), abs=1e-12)
    # the delta-method SE of a difference of two independent-ish proportions
    p0, p1 = rich[~female].mean(), rich[female].mean()
    se = math.sqrt(p0 * (1 - p0) / (~female).sum() + p1 * (1 - p1) / female.sum())
    assert res.std_error == pytest.approx(se, rel=1e-9)
    # k groups, m outcomes: TV distance of the outcome distributions
    race = adult["race"].astype("category").cat.codes.to_numpy()
    edu = adult["education"].astype("category").cat.codes.to_numpy()
    tv = statistical_parity(edu, race)
    cond = np.array(
        [np.bincount(edu[race == g], minlength=edu.max() + 1) / (race == g).sum() for g in range(5)]
    )
    expected_tv = max(0.5 * np.abs(cond[a] - cond[b]).sum() for a in range(5) for b in range(5))
    assert tv.total_variation == pytest.approx(expected_tv, abs=1e-12)
    lo, hi = tv.total_variation_interval(n_boot=400)
    assert lo <= tv.total_variation <= hi
    with pytest.raises(ValueError, match="total_variation"):
        _ = tv.difference


def test_private_parity_intervals_cover() -> None:
    """Group collected by Warner at epsilon = 1: the interval covers the clear value."""
    rng = np.random.default_rng(4)
    design = Warner(p=math.e / (1 + math.e))
    reps, n = 1500, 5000
    hits = 0
    truth_diff = 0.3 - 0.1
    for _ in range(reps):
        member = rng.random(n) < 0.3
        outcome = rng.random(n) < np.where(member, 0.1, 0.3)
        reports = design.randomize(member, rng)
        low, high = statistical_parity(outcome, reports, group_design=design).confidence_interval()
        hits += low <= truth_diff <= high
    assert abs(hits / reps - 0.95) < _coverage_bound(reps)


def test_both_private() -> None:
    rng = np.random.default_rng(9)
    n = 200_000
    member = rng.random(n) < 0.4
    outcome = rng.random(n) < np.where(member, 0.2, 0.5)
    gd, od = Warner(p=0.8), ForcedResponse(p_yes=0.2, p_no=0.2)
    res = statistical_parity(
        od.randomize(outcome, rng), gd.randomize(member, rng), outcome_design=od, group_design=gd
    )
    assert abs(res.difference - 0.3) < 4 * res.std_error


def test_parity_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="one shape"):
        statistical_parity([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match=r"codes in 0\.\.1"):
        statistical_parity([0, 1, 2], [0, 1, 1], outcome_design=COINS)
    with pytest.raises(TypeError, match="integer or bool"):
        statistical_parity([0.5, 1.0], [0, 1])


def test_adult_audit_recovers_clear_parity() -> None:
    table = adult_parity_audit(1.0, rng=np.random.default_rng(1))
    assert list(table.index) == ["female", "private employment", "Asian-Pac-Islander", "divorced"]
    z = (table.private_difference - table.clear_difference).abs() / table.private_std_error
    assert (z < 4).all(), z
    assert table.loc["female", "clear_difference"] == pytest.approx(0.1945, abs=5e-5)

"""Private ratings (Bayesian ranking) and power, checked exactly and by simulation.

Tolerances are 4-sigma bounds: binomial for coverage and rejection rates, the exact
posterior standard deviation for posterior means.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deniable import ForcedResponse, KaryRR
from deniable.analysis import (
    power_coefficient,
    power_difference,
    rank_items,
    sample_size_coefficient,
    sample_size_difference,
    subgroup_prevalence,
)
from deniable.analysis._ratings import plain_score
from deniable.data import load_rr_survey
from deniable.estimation import EstimateResult


def test_no_randomization_gives_the_plain_formula() -> None:
    rng = np.random.default_rng(0)
    items = rng.choice(np.array(["x", "y", "z", "w"]), 500)
    ratings = rng.integers(0, 5, 500)
    prior = np.array([2.0, 1.0, 1.0, 1.0, 3.0])
    utility = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    res = rank_items(items, ratings, k=5, prior=prior, utility=utility)
    for item in ("x", "y", "z", "w"):
        counts = np.bincount(ratings[items == item], minlength=5)
        expected = np.sum((counts + prior) * utility) / np.sum(counts + prior)
        assert res.table.loc[item, "score"] == pytest.approx(expected, abs=1e-12)
        assert expected == pytest.approx(plain_score(counts, prior, utility))
        assert res.table.loc[item, "low"] < expected < res.table.loc[item, "high"]
    assert list(res.table["rank"]) == [1, 2, 3, 4]
    assert res.table["score"].is_monotonic_decreasing


def test_ghost_ratings_pull_sparse_items_to_the_prior() -> None:
    # one perfect rating does not beat many good ones
    items = ["one"] + ["many"] * 200
    ratings = [4] + [3] * 150 + [4] * 50
    res = rank_items(items, ratings, k=5, prior=[2, 2, 2, 2, 2])
    assert res.table.index[0] == "many"
    by_lower = rank_items(items, ratings, k=5, prior=[1, 1, 1, 1, 1], rank_by="lower")
    assert by_lower.table.index[0] == "many"


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_randomized_ratings_credible_intervals_cover() -> None:
    """Items drawn from the prior: Bayesian intervals cover at the nominal rate."""
    rng = np.random.default_rng(12)
    n_items, per_item = 400, 300
    probs = rng.dirichlet(np.ones(5), n_items)
    items = np.repeat(np.arange(n_items), per_item)
    u = rng.random(items.size)
    truth = (u[:, None] > np.cumsum(probs[items], axis=1)[:, :-1]).sum(axis=1)
    design = KaryRR(k=5, epsilon=2.0)
    res = rank_items(items, design.randomize(truth, rng), design, draws=1500, rng=rng)
    true_score = probs @ np.arange(1, 6)
    tab = res.table.sort_index()
    hits = (tab.low.to_numpy() <= true_score) & (true_score <= tab.high.to_numpy())
    assert abs(hits.mean() - 0.95) < 4 * math.sqrt(0.95 * 0.05 / n_items)
    assert res.posterior is not None and res.posterior.shape == (n_items, 1500, 5)
    assert tab.prob_best.sum() == pytest.approx(1.0)


def test_a_ranking_is_an_estimate_result() -> None:
    # the shared vocabulary: estimate, std_error, labels, intervals at any level, to_dict
    rng = np.random.default_rng(3)
    items = rng.choice(np.array(["x", "y", "z"]), 600)
    design = KaryRR(k=4, epsilon=1.5)
    for res in (
        rank_items(items, rng.integers(0, 4, 600), k=4, confidence_level=0.9),
        rank_items(
            items,
            design.randomize(rng.integers(0, 4, 600), rng),
            design,
            draws=400,
            confidence_level=0.9,
        ),
    ):
        assert isinstance(res, EstimateResult)
        assert res.labels == [str(i) for i in res.table.index]
        np.testing.assert_array_equal(res.estimate, res.table["score"].to_numpy())
        ci = res.confidence_interval(0.9)
        np.testing.assert_allclose(ci.low, res.table["low"].to_numpy())
        np.testing.assert_allclose(ci.high, res.table["high"].to_numpy())
        wide = res.confidence_interval(0.99)
        assert np.all(wide.low <= ci.low) and np.all(ci.high <= wide.high)
        assert np.all(res.std_error > 0) and res.utility_draws.shape[0] == 3
        out = res.to_dict(0.9)
        assert out["interval"]["method"] == "credible" and out["labels"] == res.labels
        with pytest.raises(ValueError, match="credible"):
            res.confidence_interval(0.9, "wald")


def test_rank_items_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="utility must hold 5"):
        rank_items([1, 2], [0, 4], k=5, utility=[1, 2])
    with pytest.raises(ValueError, match="pseudocounts > 0"):
        rank_items([1, 2], [0, 4], k=5, prior=[0, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="codes in"):
        rank_items([1, 2], [0, 7], KaryRR(k=5, epsilon=1.0))
    with pytest.raises(ValueError, match="rank_by"):
        rank_items([1], [0], k=2, rank_by="median")


def test_difference_power_formula_matches_simulation() -> None:
    coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    formula = power_difference(coins, 1500, 1500, 0.10, 0.18).power
    rng = np.random.default_rng(31)
    reps = 2000
    rejections = 0
    groups = np.repeat([0, 1], 1500)
    for _ in range(reps):
        truth = rng.random(3000) < np.where(groups == 1, 0.18, 0.10)
        res = subgroup_prevalence(coins, coins.randomize(truth, rng), groups)
        rejections += res.test_equal().pvalue < 0.05
    assert abs(rejections / reps - formula) < 4 * math.sqrt(formula * (1 - formula) / reps)
    n = sample_size_difference(coins, 0.10, 0.18, power=0.8)
    assert power_difference(coins, n, n, 0.10, 0.18).power >= 0.8
    assert power_difference(coins, n - 1, n - 1, 0.10, 0.18).power < 0.8


@pytest.mark.slow
def test_coefficient_power_formula_matches_simulation() -> None:
    data = load_rr_survey("rr/nigeria").dropna()
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    args = ("~ cov.asset.index + cov.female", data, design, [-0.5, 0.08, -0.5], "cov.female")
    formula = power_coefficient(*args, 1000).power
    sim = power_coefficient(
        *args, 1000, method="simulation", reps=1500, rng=np.random.default_rng(2)
    )
    assert abs(sim.power - formula) < 4 * math.sqrt(formula * (1 - formula) / 1500)
    with pytest.raises(ValueError, match="term"):
        power_coefficient(*args[:4], "cov.age", 1000)
    assert isinstance(data, pd.DataFrame)


def test_sample_size_for_a_coefficient_is_the_smallest_with_the_power() -> None:
    """sample_size_coefficient inverts power_coefficient's formula exactly: the power is
    reached at n and not at n - 1; a zero coefficient and a power of 1 are refused."""
    data = load_rr_survey("rr/nigeria").dropna()
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    args = ("~ cov.asset.index + cov.female", data, design, [-0.5, 0.08, -0.5], "cov.female")
    for target in (0.5, 0.8, 0.9):
        n = sample_size_coefficient(*args, power=target)
        assert power_coefficient(*args, n).power >= target
        assert power_coefficient(*args, n - 1).power < target
    with pytest.raises(ValueError, match="no survey size"):
        sample_size_coefficient(*args[:3], [-0.5, 0.08, 0.0], "cov.female")
    with pytest.raises(ValueError, match="power"):
        sample_size_coefficient(*args, power=1.0)

"""The list and endorsement experiments compared (Blair, Lyall & Imai 2014), against
R's ``list::comp.listEndorse`` (9.2.6, sourced) on tests/data/list_endorse.csv.

R's reference, ``set.seed(1); comp.listEndorse(E, y, treat, n.draws = 10000, method =
m)`` with ``E`` the three endorsement columns: the correlations are exact; the p-value
and the interval's bounds are bootstrap quantities, held to R's within 4 combined Monte
Carlo standard deviations. R's upper bound is its draws' 0.475 quantile (its fault,
module text): ours have R's value at that quantile, and ours is the 0.975 quantile."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from deniable.analysis import list_endorsement_comparison
from deniable.list_experiment._endorsement import _bootstrap, _inputs, _weighted_pearson

DATA = Path(__file__).parent / "data" / "list_endorse.csv"
#: method -> (cor.treat, cor.control, p.value, ci[1], ci[2]) printed by R (10 digits).
R = {
    "pearson": (0.2208327450, 0.0394274601, 0.0150, 0.0174014783, 0.1767894094),
    "kendall": (0.1563549082, 0.0359522292, 0.0313, -0.0052770499, 0.1180009357),
}
B = 10_000


def four_sigma(q: float) -> float:
    """4 SDs of the difference of two independent shares of ``B`` draws at ``q``."""
    return 4 * math.sqrt(2 * q * (1 - q) / B)


@pytest.mark.parametrize("method", ["pearson", "kendall"])
def test_it_agrees_with_r(method: str) -> None:
    data = pd.read_csv(DATA)
    endorsement = data[["e1", "e2", "e3"]]
    out = list_endorsement_comparison(endorsement, data.y, data.treat, method=method, rng=3)
    treated, control, p, low, high_r = R[method]
    assert out.correlation_treated == pytest.approx(treated, abs=1e-9)
    assert out.correlation_control == pytest.approx(control, abs=1e-9)
    assert out.difference == pytest.approx(treated - control, abs=1e-9)
    assert abs(out.p_value - p) <= four_sigma(p)
    boot = _bootstrap(*_inputs(endorsement, data.y, data.treat), method, B,
                      np.random.default_rng(3))  # fmt: skip
    assert out.interval.low == pytest.approx(np.quantile(boot, 0.025), abs=1e-12)
    assert out.interval.high == pytest.approx(np.quantile(boot, 0.975), abs=1e-12)
    # R's bounds sit at its draws' 0.025 and 0.475 quantiles: where they fall in ours
    assert abs(np.mean(boot <= low) - 0.025) <= four_sigma(0.025)
    assert abs(np.mean(boot <= high_r) - 0.475) <= four_sigma(0.475)
    assert out.draws == B and out.alternative == "greater"


def test_the_two_sided_p_value_doubles_the_smaller_tail() -> None:
    data = pd.read_csv(DATA)
    args = (data[["e1", "e2", "e3"]], data.y, data.treat)
    one = list_endorsement_comparison(*args, rng=4, draws=2000)
    two = list_endorsement_comparison(*args, rng=4, draws=2000, alternative="two-sided")
    assert two.p_value == pytest.approx(2 * min(one.p_value, 1 - one.p_value), abs=1e-12)
    assert two.interval == one.interval


def test_weighted_pearson_is_pearson_on_the_resample() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=40), rng.normal(size=40)
    w = rng.multinomial(40, np.full(40, 1 / 40), size=7).astype(float)
    got = _weighted_pearson(x, y, w)
    for row, r in zip(w, got, strict=True):
        i = np.repeat(np.arange(40), row.astype(int))
        assert r == pytest.approx(np.corrcoef(x[i], y[i])[0, 1], abs=1e-12)


def test_skipped_questions_are_left_out_of_the_mean() -> None:
    """R's ``mean(x, na.omit = T)`` drops a respondent who skipped one question; here
    the mean is over the answered ones, and a respondent who answered none is dropped."""
    data = pd.read_csv(DATA)
    e = data[["e1", "e2", "e3"]].to_numpy(dtype=float)
    e[0, 1] = np.nan
    e[1, :] = np.nan
    mean, counts, _ = _inputs(e, data.y, data.treat)
    assert counts.size == len(data) - 1
    assert mean[0] == pytest.approx((e[0, 0] + e[0, 2]) / 2)
    assert mean[1] == pytest.approx(e[2].mean())


@pytest.mark.slow  # 3.3 s (the fast loop's budget): 300 surveys x 500 resamples
def test_the_interval_covers_the_true_difference() -> None:
    """300 simulated studies of 400, both groups' true correlation 0.3 with a normal
    pair (so the difference is 0): the percentile interval covers 0 in a share within
    4 binomial SDs of 0.95."""
    rng = np.random.default_rng(6)
    surveys, n, covered = 300, 400, 0
    cov = [[1, 0.3], [0.3, 1]]
    for s in range(surveys):
        x, y = rng.multivariate_normal([0, 0], cov, size=n).T
        t = rng.integers(0, 2, n)
        out = list_endorsement_comparison(x, y, t, draws=500, rng=s)
        covered += out.interval.low <= 0 <= out.interval.high
    sd = math.sqrt(0.95 * 0.05 / surveys)
    assert abs(covered / surveys - 0.95) <= 4 * sd


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "spearman"}, "method must be 'pearson' or 'kendall'"),
        ({"alternative": "less"}, "alternative must be"),
        ({"draws": 10}, "draws must be an integer in 100"),
        ({"draws": 10**9}, "draws must be an integer in 100"),
        ({"confidence_level": 1.3}, r"confidence_level must be a probability in \(0, 1\)"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict, match: str) -> None:
    data = pd.read_csv(DATA)
    with pytest.raises(ValueError, match=match):
        list_endorsement_comparison(data.e1, data.y, data.treat, **kwargs)


def test_bad_data_are_refused() -> None:
    data = pd.read_csv(DATA)
    with pytest.raises(ValueError, match="one row per respondent"):
        list_endorsement_comparison(data.e1[:-1], data.y, data.treat)
    with pytest.raises(ValueError, match="treat must be 0"):
        list_endorsement_comparison(data.e1, data.y, data.treat * 2)
    with pytest.raises(ValueError, match="the treated group needs at least 3"):
        list_endorsement_comparison(data.e1[:4], data.y[:4], [0, 0, 0, 1])
    with pytest.raises(ValueError, match="vector or a"):
        list_endorsement_comparison(np.zeros((3, 2, 2)), [1, 2, 3], [0, 1, 1])


def test_weighted_kendall_is_tau_b_on_the_resample() -> None:
    """With ties within x and y (answers on a 5-point scale), against SciPy's tau-b on
    the resample written out, and against the one-at-a-time path."""
    from deniable.list_experiment._endorsement import _kendall_each, _weighted_kendall

    rng = np.random.default_rng(7)
    x, y = rng.integers(1, 6, 60).astype(float), rng.integers(0, 4, 60).astype(float)
    w = rng.multinomial(60, np.full(60, 1 / 60), size=9).astype(float)
    got = _weighted_kendall(x, y, w)
    assert got == pytest.approx(_kendall_each(x, y, w), abs=1e-12)
    for row, tau in zip(w, got, strict=True):
        i = np.repeat(np.arange(60), row.astype(int))
        assert tau == pytest.approx(stats.kendalltau(x[i], y[i]).statistic, abs=1e-12)


def test_large_groups_take_the_one_at_a_time_path_with_the_same_draws(monkeypatch) -> None:
    """Groups over ``KENDALL_ROWS`` (whose n x n sign matrix would be too big) take one
    resample at a time: the same resamples give the same taus; and blocks shrink so a
    block's counts stay under ``BLOCK_CELLS`` (here 10 resamples of 4,000 rows)."""
    from deniable.list_experiment import _endorsement

    rng = np.random.default_rng(8)
    n = 4000
    t = rng.integers(0, 2, n)
    e, y = rng.integers(1, 6, n).astype(float), rng.integers(0, 4, n) + t
    vectorised = _bootstrap(*_inputs(e, y, t), "kendall", 30, np.random.default_rng(1))
    monkeypatch.setattr(_endorsement, "KENDALL_ROWS", 100)
    monkeypatch.setattr(_endorsement, "BLOCK_CELLS", 40_000)
    each = _bootstrap(*_inputs(e, y, t), "kendall", 30, np.random.default_rng(1))
    assert each == pytest.approx(vectorised, abs=1e-12)


def test_a_constant_group_is_refused_by_name() -> None:
    data = pd.read_csv(DATA)
    flat = data.e1.where(data.treat == 0, 3)
    with pytest.raises(ValueError, match="endorsement is constant in the treated group"):
        list_endorsement_comparison(flat, data.y, data.treat)

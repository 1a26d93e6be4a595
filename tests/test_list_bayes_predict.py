"""Predictions from the Bayesian list-experiment regression (R's
``predict.ictregBayes``): each draw's prevalence averaged over any rows, and the
difference between two sets of rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

from deniable.analysis import list_bayes
from deniable.list_experiment._draws import batch_se

from .conftest import Z4
from .test_list_bayes import importance_sample, posterior, weighted_mean

DATA = Path(__file__).parent / "data"
FORMULA = "y ~ male + college + age + south"


@pytest.fixture(scope="module")
def race() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_race.csv")


@pytest.fixture(scope="module")
def fit(race: pd.DataFrame):
    return list_bayes(FORMULA, race, treat="treat", items=3, draws=800, burn_in=400, rng=2)


def rows(data: pd.DataFrame) -> np.ndarray:
    """The formula's covariate rows, written out (intercept first)."""
    cols = ["male", "college", "age", "south"]
    x = data.dropna(subset=cols)[cols].to_numpy(dtype=float)
    return np.column_stack([np.ones(len(x)), x])


def test_on_the_fitted_rows_it_is_the_fits_prevalence(fit) -> None:
    table = fit.predicted_prevalence()
    assert list(table.index) == [1]
    assert list(table.columns) == ["mean", "sd", "low", "high"]
    assert table["mean"].iloc[0] == pytest.approx(fit.prevalence.iloc[0], abs=1e-12)
    assert table["sd"].iloc[0] == pytest.approx(fit.prevalence_sd.iloc[0], abs=1e-12)


def test_new_rows_and_a_difference_are_each_draws_average(fit, race) -> None:
    """Computed again from the draws with the rows written out: the South's prevalence,
    and the South against the same people moved out of it."""
    south, north = race.assign(south=1), race.assign(south=0)
    delta = fit.draws[[c for c in fit.draws.columns if c.startswith("sensitive.")]]
    each_s = special.expit(delta.to_numpy() @ rows(south).T).mean(axis=1)
    each_n = special.expit(delta.to_numpy() @ rows(north).T).mean(axis=1)
    table = fit.predicted_prevalence(south)
    assert table["mean"].iloc[0] == pytest.approx(each_s.mean(), abs=1e-12)
    assert table["sd"].iloc[0] == pytest.approx(each_s.std(ddof=1), abs=1e-12)
    gap = fit.predicted_prevalence(south, versus=north, confidence_level=0.9)
    diff = each_s - each_n
    assert gap["mean"].iloc[0] == pytest.approx(diff.mean(), abs=1e-12)
    assert gap["low"].iloc[0] == pytest.approx(np.quantile(diff, 0.05), abs=1e-12)
    assert gap["high"].iloc[0] == pytest.approx(np.quantile(diff, 0.95), abs=1e-12)
    # R's newdata.diff averages newdata twice: its difference is 0 whatever the rows;
    # ours is 0 only for the same rows
    same = fit.predicted_prevalence(south, versus=south)
    assert same["mean"].iloc[0] == 0 and same["sd"].iloc[0] == 0
    assert gap["low"].iloc[0] > 0  # the South's prevalence is higher on these data


@pytest.mark.parametrize("condition", ["none", "level"])
def test_several_items_predict_each_item(condition: str) -> None:
    multi = pd.read_csv(DATA / "list_multi.csv")
    fit = list_bayes(
        FORMULA,
        multi,
        treat="treat",
        items=3,
        draws=200,
        burn_in=200,
        rng=4,
        multi_condition=condition,
    )
    table = fit.predicted_prevalence()
    assert list(table.index) == ["affirm", "race"]
    assert table["mean"].to_numpy() == pytest.approx(fit.prevalence.to_numpy(), abs=1e-12)
    assert table["sd"].to_numpy() == pytest.approx(fit.prevalence_sd.to_numpy(), abs=1e-12)
    young = fit.predicted_prevalence(multi.assign(age=2.0))
    assert np.all((young["low"] > 0) & (young["high"] < 1) & (young["low"] < young["high"]))


def test_malformed_predictions_are_refused(fit, race) -> None:
    with pytest.raises(ValueError, match="versus needs data"):
        fit.predicted_prevalence(versus=race)
    with pytest.raises(ValueError, match="covariates"):
        fit.predicted_prevalence(race.drop(columns="south"))
    with pytest.raises(ValueError, match="confidence_level must be a probability in"):
        fit.predicted_prevalence(race, confidence_level=1.3)


@pytest.mark.slow  # about 20 s: 10,000 draws and 16,000 importance draws
def test_the_south_gap_equals_importance_sampling(
    race, draws: int = 10_000, importance: int = 16_000
) -> None:
    """The posterior mean of the South-against-the-rest gap within 4 combined Monte
    Carlo SEs of self-normalised importance sampling (R's priors; a t with 4 degrees of
    freedom at the mode, 1.5 times its Laplace covariance), whose SE is
    ``sqrt(sum w^2 (g - m)^2)``; ours is the batch-means SE of the gap's draws."""
    fit = list_bayes(FORMULA, race, treat="treat", items=3, draws=draws, rng=5)
    south, north = rows(race.assign(south=1)), rows(race.assign(south=0))
    gap = fit.predicted_prevalence(race.assign(south=1), versus=race.assign(south=0))
    delta = fit.draws.to_numpy()[:, :5]
    draws = special.expit(delta @ south.T).mean(1) - special.expit(delta @ north.T).mean(1)
    ours_se = float(batch_se(draws[:, None])[0])

    log_post, mode, cov = posterior(race, "full", None)
    xs, w = importance_sample(log_post, mode, 1.5 * cov, seed=12, draws=importance)
    g = special.expit(xs[:, :5] @ south.T).mean(1) - special.expit(xs[:, :5] @ north.T).mean(1)
    mean, is_se, effective = weighted_mean(w, g)
    assert effective > importance / 100
    assert abs(gap["mean"].iloc[0] - mean) < Z4 * np.hypot(ours_se, is_se)

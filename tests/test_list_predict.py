"""Average predicted prevalence of a list-experiment fit over new rows, and the
difference between two sets of rows: against R's ``predict.ictreg``'s documented
examples (Imai 2011, Figure 1)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import list_least_squares, list_regression

from .conftest import Z4

DATA = Path(__file__).parent / "data"
FORMULA = "y ~ south + age + male + college"


def same_4_digits(ours: float, r: float) -> bool:
    """Within half a unit of R's fourth significant digit."""
    return abs(ours - r) <= 0.5 * 10 ** (math.floor(math.log10(abs(r))) - 3)


@pytest.fixture(scope="module")
def race() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_race.csv")


# predict(<fit>, newdata = race.south, newdata.diff = race.nonsouth, se.fit = TRUE,
# avg = TRUE) on ictreg(y ~ south + age + male + college, data = race, J = 3) with
# race.south / race.nonsouth the data with south set to 1 / 0; list 9.2.6 sourced into
# R 4.2 with its EM's stop at 1e-13 and nls's tolerance at 1e-12 (as in
# tests/test_list_experiment.py). (estimate, SE) for the South, the rest, the difference.
R_PREDICT = {
    "ml": [(0.3182168326300, 0.07895470935360), (0.1064379220264, 0.02407265486348),
           (0.2117789106035, 0.07974015418454)],
    "nls": [(0.24121151405454, 0.09811688298668), (0.03741518503982, 0.03795850861169),
            (0.20379632901472, 0.10195430205042)],
    "lm": [(0.2257946122329, 0.103836202273), (0.0238194940884, 0.05458335594583)],
}  # fmt: skip


@pytest.mark.parametrize("method", sorted(R_PREDICT))
def test_average_predictions_equal_predict_ictreg(method: str, race: pd.DataFrame) -> None:
    if method == "ml":
        fit = list_regression(FORMULA, race, treat="treat", items=3)
    else:
        fit = list_least_squares(FORMULA, race, treat="treat", items=3, method=method)  # type: ignore[arg-type]
    south, rest = race.assign(south=1), race.assign(south=0)
    got = [fit.predicted_prevalence(south), fit.predicted_prevalence(rest)]
    if method != "lm":  # R refuses the difference for "lm"; ours gives it
        got.append(fit.predicted_prevalence(south, versus=rest))
    for ours, (estimate, se) in zip(got, R_PREDICT[method], strict=False):
        assert same_4_digits(ours.estimate, estimate), (method, ours.estimate, estimate)
        assert same_4_digits(ours.std_error, se), (method, ours.std_error, se)
    # over the fitted rows it is the fit's own prevalence (R: 0.1553367, SE 0.02721795)
    if method == "ml":
        own = fit.predicted_prevalence()
        assert same_4_digits(own.estimate, 0.1553366991257)
        assert same_4_digits(own.std_error, 0.02721795126856)


def test_no_covariate_fits_on_each_region_equal_predict_ictreg(race: pd.DataFrame) -> None:
    """``ictreg(y ~ 1)`` on the South's and on the other respondents, ``predict(...,
    avg = TRUE)``: 0.3160 (0.07949) and 0.1103 (0.02457)."""
    for region, (estimate, se) in ((1, (0.3160233943614, 0.07948753999596)),
                                   (0, (0.1102562183441, 0.02456658998897))):  # fmt: skip
        fit = list_regression("y ~ 1", race[race.south == region], treat="treat", items=3)
        got = fit.predicted_prevalence(pd.DataFrame(index=range(3)))
        assert same_4_digits(got.estimate, estimate) and same_4_digits(got.std_error, se)


@pytest.mark.slow  # 12 s: 300 fits
def test_the_difference_in_prevalence_covers_the_truth() -> None:
    """300 simulated surveys (2,000 respondents, prevalence 0.45 in the South and 0.15
    elsewhere): the estimated difference's 95% interval covers the truth of the sample
    in a share whose distance from 0.95 is within 4 binomial SEs."""
    rng = np.random.default_rng(9)
    reps, hits = 300, 0
    for _ in range(reps):
        n = 2000
        t, south = rng.integers(0, 2, n), rng.integers(0, 2, n)
        x = rng.normal(size=n)
        p = 1 / (1 + np.exp(-(-1.7 + 1.5 * south + 0.3 * x)))
        z = rng.random(n) < p
        data = pd.DataFrame({"y": rng.binomial(3, 0.5, n) + t * z, "south": south, "x": x,
                             "treat": t})  # fmt: skip
        fit = list_regression("y ~ south + x", data, treat="treat", items=3)
        gap = fit.predicted_prevalence(data.assign(south=1), versus=data.assign(south=0))
        truth = float(np.mean(1 / (1 + np.exp(-(-0.2 + 0.3 * x)))
                              - 1 / (1 + np.exp(-(-1.7 + 0.3 * x)))))  # fmt: skip
        ci = gap.confidence_interval()
        hits += ci.low <= truth <= ci.high
    assert abs(hits / reps - 0.95) < Z4 * math.sqrt(0.95 * 0.05 / reps)


def test_prediction_needs_the_covariates(race: pd.DataFrame) -> None:
    fit = list_regression(FORMULA, race, treat="treat", items=3)
    with pytest.raises(ValueError, match="data must hold the formula's covariates"):
        fit.predicted_prevalence(race.drop(columns="south"))
    with pytest.raises(ValueError, match="versus needs data"):
        fit.predicted_prevalence(versus=race)


def test_a_differences_interval_is_plain_and_may_fall_below_zero(race: pd.DataFrame) -> None:
    """A difference of prevalences may be negative: its interval is Wald's, plain,
    symmetric about the estimate (it used to be taken on the logit scale of an average,
    which clamped a negative estimate to 1e-12 and returned [0, 1])."""
    fit = list_regression(FORMULA, race, treat="treat", items=3)
    gap = fit.predicted_prevalence(race.assign(south=0), versus=race.assign(south=1))
    assert gap.difference and gap.labels == ["difference"] and gap.estimate < 0
    ci = gap.confidence_interval()
    half = 1.959963984540054 * gap.std_error
    assert ci.low == pytest.approx(gap.estimate - half) and ci.high == pytest.approx(
        gap.estimate + half
    )
    assert not fit.predicted_prevalence(race).difference

"""The revealed social desirability bias (Blair & Imai 2012): the list experiment's
predicted prevalence minus a direct question's, against R's ``predict.ictreg(direct.glm
= ...)`` on its documented ``mis`` example, and by simulation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import (
    ListRegressionResult,
    list_least_squares,
    list_regression,
    rr_logit,
    social_desirability_bias,
)
from deniable.mechanisms import Direct

from .conftest import Z4

DATA = Path(__file__).parent / "data"
COVARIATES = "age + college + male + south"
DRAWS = 400_000
R_RUNS, R_DRAWS = 40, 10_000


def same_4_digits(ours: float, r: float) -> bool:
    """Within half a unit of R's fourth significant digit."""
    return abs(ours - r) <= 0.5 * 10 ** (math.floor(math.log10(abs(r))) - 3)


@pytest.fixture(scope="module")
def mis() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_mis.csv")


# R 4.2, list 9.2.6 sourced, the documented example of predict.ictreg: fit.list <-
# ictreg(y ~ age + college + male + south, J = 4, data = subset(mis, list.data == 1),
# method = "ml"); fit.sens <- glm(sensitive ~ age + college + male + south, data =
# subset(mis, sens.data == 1), family = binomial("logit")); predict(fit.list,
# direct.glm = fit.sens, se.fit = TRUE), run 40 times (seeds 101..140).
R_LIST_SENSITIVE = [-6.0702007724115754, 1.073298127905443, -3.131232549941167,
                    4.058209242474424, 2.630477347312138]  # fmt: skip
R_LIST_COV = [
    [8.61082472063051, -1.50380948667935, 2.63916167116582, -3.82684090896164, -3.31554161518779],
    [-1.50380948667935, 0.300229403637276, -0.654356335041513, 0.658786839702317,
     0.602890846472314],
    [2.63916167116582, -0.654356335041513, 3.15773362866764, -2.17659215912175, -1.58738768610623],
    [-3.82684090896164, 0.658786839702317, -2.17659215912175, 3.09441222675481, 1.48503682747286],
    [-3.31554161518779, 0.602890846472314, -1.58738768610623, 1.48503682747286, 3.37737578826955],
]  # fmt: skip
R_GLM = ([-0.922060466754556, -0.048152356128636, 0.583308290036052, -0.012687409829361,
          0.661767396909717],
         [0.54237326701, 0.08833824038, 0.31528204561, 0.29068183252, 0.33554311496])  # fmt: skip
# list, direct, difference: the 40 runs' mean estimates and SEs, and their SDs
R_MEAN = ([0.41601872297, 0.35622979068, 0.05978893228],
          [0.06209438132, 0.03128893739, 0.06964622140])  # fmt: skip
R_SD = ([0.000563276, 0.000359934, 0.000637008], [0.000512194, 0.000286918, 0.000530719])


def r_list_fit(mis: pd.DataFrame) -> ListRegressionResult:
    """Our fit of the list sample with R's sensitive coefficients and their covariance
    put in (R's EM stops 1e-3 short of the maximum: intercept -6.0702 against ours
    -6.0712); the control model's entries, which the prediction must not touch, NaN."""
    fit = list_regression(f"y ~ {COVARIATES}", mis[mis["list.data"] == 1], treat="treat",
                          items=4)  # fmt: skip
    params = fit.params.copy()
    params.iloc[:5], params.iloc[5:] = R_LIST_SENSITIVE, np.nan
    cov = np.full(fit.covariance.shape, np.nan)
    cov[:5, :5] = R_LIST_COV
    return ListRegressionResult(
        params=params, covariance=cov, llf=math.nan, prevalence=math.nan,
        prevalence_se=math.nan, n=fit.n, items=4, constrained=True, converged=True,
        spec=fit.spec, fitted=fit.fitted,
    )  # fmt: skip


def direct_fit(mis: pd.DataFrame):
    return rr_logit(f"sensitive ~ {COVARIATES}", mis[mis["sens.data"] == 1], Direct())


def test_the_direct_logit_is_rs_glm(mis) -> None:
    """``rr_logit`` with the Direct design is logistic regression: R's ``glm`` to 4
    significant digits, coefficients and SEs."""
    fit = direct_fit(mis)
    for ours, r in zip(
        [*fit.params.iloc[:5], *fit.bse.iloc[:5]], [*R_GLM[0], *R_GLM[1]], strict=True
    ):
        assert same_4_digits(float(ours), r), (ours, r)


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
def test_simulation_equals_predict_ictreg_direct_glm(mis) -> None:
    """From R's estimates, our simulation's estimates and SEs for the list, the direct
    question and the difference lie within 4 combined Monte Carlo SDs of R's 40 runs
    (R's SD over its runs at 10,000 draws, ours scaled to 400,000)."""
    got = social_desirability_bias(r_list_fit(mis), direct_fit(mis), method="simulation",
                                   draws=DRAWS, rng=2)  # fmt: skip
    for column, (means, sds) in (("estimate", (R_MEAN[0], R_SD[0])),
                                 ("std_error", (R_MEAN[1], R_SD[1]))):  # fmt: skip
        for i in range(3):
            tol = Z4 * math.hypot(sds[i] / math.sqrt(R_RUNS), sds[i] * math.sqrt(R_DRAWS / DRAWS))
            assert abs(got[column].iloc[i] - means[i]) <= tol, (column, i)
    # independent samples: the difference's variance is the sum of the two
    assert got.std_error.iloc[2] == pytest.approx(math.hypot(*got.std_error.iloc[:2]), rel=3e-3)


def test_the_delta_method_is_the_plug_in(mis) -> None:
    """The delta method's estimates are the averages at the estimates, its SEs the
    gradients' quadratic forms, the difference's SE the root of the sum of squares; the
    direct question's equals ``rr_logit``'s own predicted prevalence."""
    list_fit, direct = r_list_fit(mis), direct_fit(mis)
    got = social_desirability_bias(list_fit, direct)
    x = list_fit.fitted
    g = 1 / (1 + np.exp(-(x @ np.array(R_LIST_SENSITIVE))))
    grad = (g * (1 - g)) @ x / len(g)
    assert got.estimate.iloc[0] == pytest.approx(g.mean(), rel=1e-12)
    assert got.std_error.iloc[0] == pytest.approx(math.sqrt(grad @ np.array(R_LIST_COV) @ grad))
    own = direct.predicted_prevalence()
    assert got.estimate.iloc[1] == pytest.approx(own.estimate, rel=1e-12)
    assert got.std_error.iloc[1] == pytest.approx(own.std_error, rel=1e-12)
    assert got.estimate.iloc[2] == pytest.approx(got.estimate.iloc[0] - got.estimate.iloc[1])
    assert got.std_error.iloc[2] == pytest.approx(math.hypot(*got.std_error.iloc[:2]))
    ci = got.loc["difference"]
    assert ci.upper - ci.estimate == pytest.approx(1.959963984540054 * ci.std_error)


@pytest.mark.slow  # 200 surveys, 2 fits each: 7 s
def test_the_bias_interval_covers_the_truth() -> None:
    """200 simulated studies (2,000 on the list, 1,000 asked directly; a third of the
    "yes" answers hidden on the direct question): the difference's 95% interval covers
    the true gap of the two samples' mean probabilities in a share within 4 binomial
    SEs of 0.95."""
    rng = np.random.default_rng(21)
    reps, hits = 200, 0
    for _ in range(reps):
        x = rng.normal(size=2000)
        t = rng.integers(0, 2, 2000)
        p = 1 / (1 + np.exp(0.8 - 0.6 * x))
        z = rng.random(2000) < p
        lists = pd.DataFrame({"y": rng.binomial(3, 0.5, 2000) + t * z, "x": x, "treat": t})
        x2 = rng.normal(size=1000)
        p2 = 1 / (1 + np.exp(0.8 - 0.6 * x2))
        said = rng.random(1000) < p2 * 2 / 3
        direct = pd.DataFrame({"said": said.astype(int), "x": x2})
        got = social_desirability_bias(
            list_regression("y ~ x", lists, treat="treat", items=3),
            rr_logit("said ~ x", direct, Direct()),
        )
        truth = p.mean() - (p2 * 2 / 3).mean()
        hits += got.lower.iloc[2] <= truth <= got.upper.iloc[2]
    assert abs(hits / reps - 0.95) <= Z4 * math.sqrt(0.95 * 0.05 / reps)


def test_a_linear_list_fit_and_new_rows(mis) -> None:
    """A least-squares list fit predicts linearly (its interval plain); new rows for
    either fit are averaged over."""
    lists = mis[mis["list.data"] == 1]
    fit = list_least_squares(f"y ~ {COVARIATES}", lists, treat="treat", items=4, method="lm")
    got = social_desirability_bias(fit, direct_fit(mis))
    assert got.estimate.iloc[0] == pytest.approx(fit.prevalence, rel=1e-12)
    assert got.std_error.iloc[0] == pytest.approx(fit.prevalence_se, rel=1e-12)
    south = social_desirability_bias(
        fit, direct_fit(mis), data=lists.assign(south=1), direct_data=mis.assign(south=1)
    )
    assert south.estimate.iloc[0] == pytest.approx(
        fit.predicted_prevalence(lists.assign(south=1)).estimate, rel=1e-12
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"method": "bootstrap"}, "method must be 'delta' or 'simulation'"),
        ({"draws": 0}, "draws must be in 2..10,000,000"),
        ({"confidence_level": 0.0}, r"confidence_level must be a probability in \(0, 1\)"),
        ({"data": pd.DataFrame({"age": [3.0]})}, "data must hold the formula's covariates"),
    ],
)
def test_bad_arguments_are_named(mis, change, message) -> None:
    with pytest.raises(ValueError, match=message):
        social_desirability_bias(r_list_fit(mis), direct_fit(mis), **change)


def test_fits_of_the_wrong_kind_are_named(mis) -> None:
    direct = direct_fit(mis)
    with pytest.raises(ValueError, match="list_fit must be a list_regression"):
        social_desirability_bias(direct, direct)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="direct_fit must be an rr_logit result"):
        social_desirability_bias(r_list_fit(mis), r_list_fit(mis))  # type: ignore[arg-type]

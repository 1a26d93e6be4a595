"""Predictions from the joint list model (Imai, Park & Greene 2015, Figure 2): the
outcome with the sensitive answer set to 0 and to 1, and the prevalence, against R's
``predict.ictreg.joint`` on its documented examples, by quadrature, and by simulation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import JointListResult, list_joint_regression
from deniable.list_experiment._item_count_ml import list_frame
from deniable.list_experiment._prediction import simulated_averages

from .conftest import Z4
from .test_list_joint import APPROVAL, LOYAL

DATA = Path(__file__).parent / "data"
#: Our simulations take as many draws as R's 40 runs of 10,000 together.
DRAWS = 400_000
R_RUNS, R_DRAWS = 40, 10_000


@pytest.fixture(scope="module")
def mexico() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_mexico.csv")


@pytest.fixture(scope="module")
def reference() -> dict:
    # R 4.2 with list 9.2.6 sourced: ictreg.joint's two documented examples as written
    # (Table 4, logistic, the loyal voters; Table 5, linear, everyone), then
    # predict.ictreg.joint as documented (se.fit, avg, sensitive.value = "both",
    # sensitive.diff, predict.sensitive), 40 times with seeds 101..140. The file keeps
    # R's estimates, the blocks of its covariance the predictions use, and the 40
    # runs' means and standard deviations.
    return json.loads((DATA / "list_joint_predict.json").read_text())


def r_fit(mexico: pd.DataFrame, name: str, ref: dict) -> JointListResult:
    """A joint fit holding R's estimate and covariance blocks; everything the
    predictions must not touch (the control model, the blocks between models) is NaN."""
    formula, rows = (LOYAL, mexico[mexico["mex.loyal"] == 1]) if name == "loyal" else (
        APPROVAL, mexico)  # fmt: skip
    frame, y, t, j = list_frame(formula, rows, "mex.t", 3)
    k = frame.X.shape[1]
    sens, out = np.array(ref["par_treat"]), np.array(ref["par_outcome"])
    params = np.concatenate([np.full(k, np.nan), sens, out])
    cov = np.full((params.size, params.size), np.nan)
    cov[k : 2 * k, k : 2 * k] = ref["vcov_sensitive"]
    cov[2 * k :, 2 * k :] = ref["vcov_outcome"]
    names = [f"control.{s}" for s in frame.terms] + [f"sensitive.{s}" for s in frame.terms]
    names += [f"outcome.{s}" for s in frame.terms] + ["outcome.z"]
    return JointListResult(
        params=pd.Series(params, index=names), covariance=cov, llf=math.nan,
        prevalence=math.nan, n=len(y), items=j,
        outcome="logistic" if name == "loyal" else "linear", constrained=True,
        information="outer_product", converged=True, spec=frame.spec,
        fitted=(frame.X, y, t.astype(float)),
    )  # fmt: skip


def tolerance(ref: dict, key: str, index: int) -> float:
    """4 combined Monte Carlo SDs: R's, of the mean of its 40 runs, and ours, from DRAWS
    draws (a simulated statistic's SD falls as one over the root of the draws)."""
    sd = ref["sd40"][key][index]
    return Z4 * math.hypot(sd / math.sqrt(R_RUNS), sd * math.sqrt(R_DRAWS / DRAWS))


@pytest.mark.slow  # 3-4 s a case (the fast loop's budget): 10^5 simulated draws
@pytest.mark.parametrize("name", ["loyal", "approval"])
def test_simulation_equals_predict_ictreg_joint(mexico, reference, name: str) -> None:
    """Our simulation from R's estimate and covariance equals R's within Monte Carlo
    error: both averages' estimates, SEs and lower bounds, the difference's estimate,
    and the sensitive item's simulated prevalence."""
    ref = reference[name]
    fit = r_fit(mexico, name, ref)
    ours = fit.predicted_outcome(method="simulation", draws=DRAWS, rng=3)
    for i in range(3):
        assert abs(ours.estimate.iloc[i] - ref["mean40"]["fit"][i]) <= tolerance(ref, "fit", i)
    for i in range(2):  # the difference's spread: the next test
        assert abs(ours.std_error.iloc[i] - ref["mean40"]["se"][i]) <= tolerance(ref, "se", i)
        assert abs(ours.lower.iloc[i] - ref["mean40"]["lower"][i]) <= tolerance(ref, "lower", i)
    sens = fit._blocks[0]
    prevalence = simulated_averages(
        [fit.fitted[0]], fit.params.to_numpy()[sens], fit.covariance[sens, sens],
        False, DRAWS, np.random.default_rng(4),
    )[0].mean()  # fmt: skip
    assert abs(prevalence - ref["mean40"]["fitsens"][0]) <= tolerance(ref, "fitsens", 0)


# The difference's SE: R's (from independent draws), ours (shared draws), as printed.
R_DIFFERENCE_SE = {"loyal": (0.0935, 0.1093), "approval": (0.3842, 0.4673)}


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
@pytest.mark.parametrize("name", ["loyal", "approval"])
def test_r_draws_the_two_answers_apart_so_its_difference_se_is_wrong(
    mexico, reference, name: str
) -> None:
    """R draws the coefficients afresh for each value of the answer: its difference's SE
    is the root of the two SEs' squares (within Monte Carlo error), as if the two
    averages were independent. They share the outcome model and are negatively
    correlated here, so R's SE is too small: 0.0935 against 0.1093 for the effect of
    vote selling on turnout, 0.3842 against 0.4673 on approval (there exactly the SE of
    ``outcome.z``, the difference being that coefficient)."""
    ref = reference[name]
    fit = r_fit(mexico, name, ref)
    se0, se1, se_diff = ref["mean40"]["se"]
    assert abs(se_diff - math.hypot(se0, se1)) <= tolerance(ref, "se", 2) + tolerance(ref, "se", 1)
    ours = fit.predicted_outcome(method="simulation", draws=DRAWS, rng=5).std_error.iloc[2]
    assert ours > se_diff + tolerance(ref, "se", 2)
    if name == "approval":  # linear: the simulation's limit is the delta method's SE
        delta = fit.predicted_outcome().std_error.iloc[2]
        assert abs(ours - delta) <= Z4 * delta / math.sqrt(2 * (DRAWS - 1))
        assert delta == pytest.approx(math.sqrt(fit.cov_params().loc["outcome.z", "outcome.z"]))
    assert (round(se_diff, 4), round(ours, 4)) == R_DIFFERENCE_SE[name]


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_the_linear_delta_method_is_the_simulations_limit(mexico, reference) -> None:
    """For a linear outcome the average prediction is linear in the coefficients: the
    delta method's estimates and SEs are exactly what the simulation estimates, so they
    equal R's 40 runs within R's Monte Carlo error (the difference's SE against our
    simulation, which shares the draws)."""
    ref = reference["approval"]
    fit = r_fit(mexico, "approval", ref)
    delta = fit.predicted_outcome()
    for i in range(3):
        sd = ref["sd40"]["fit"][i] / math.sqrt(R_RUNS)
        assert abs(delta.estimate.iloc[i] - ref["mean40"]["fit"][i]) <= Z4 * sd
    for i in range(2):
        sd = ref["sd40"]["se"][i] / math.sqrt(R_RUNS)
        assert abs(delta.std_error.iloc[i] - ref["mean40"]["se"][i]) <= Z4 * sd
    sim = fit.predicted_outcome(method="simulation", draws=DRAWS, rng=6)
    # the SD of a simulated SD from D normal draws is SE / sqrt(2 (D - 1))
    assert abs(sim.std_error.iloc[2] - delta.std_error.iloc[2]) <= Z4 * delta.std_error.iloc[
        2
    ] / math.sqrt(2 * (DRAWS - 1))
    # the Wald interval is plain for a linear outcome
    assert delta.upper.iloc[0] - delta.estimate.iloc[0] == pytest.approx(
        1.959964 * delta.std_error.iloc[0], rel=1e-6
    )


@pytest.mark.slow  # 2 s (the fast loop's budget)
def test_the_logistic_simulation_converges_to_its_quadrature(mexico, reference) -> None:
    """The simulation's limit, ``mean_i E[g(x_i' theta)]`` with ``x_i' theta`` normal,
    is one-dimensional per row: Gauss-Hermite quadrature (60 nodes) gives it to 1e-12.
    Our simulated estimates lie within 4 Monte Carlo SEs of it; the delta method's
    plug-in lies further off by the curvature for z = 1, where the SE is largest."""
    ref = reference["loyal"]
    fit = r_fit(mexico, "loyal", ref)
    out = fit._blocks[1]
    beta, cov = fit.params.to_numpy()[out], fit.covariance[out, out]
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    sim = fit.predicted_outcome(method="simulation", draws=DRAWS, rng=7)
    delta = fit.predicted_outcome()
    for z in (0, 1):
        x = np.column_stack([fit.fitted[0], np.full(fit.n, float(z))])
        mu, sd = x @ beta, np.sqrt(np.einsum("ij,jk,ik->i", x, cov, x))
        exact = float((1 / (1 + np.exp(-(mu[:, None] + sd[:, None] * nodes))) @ weights).mean())
        mc_se = sim.std_error.iloc[z] / math.sqrt(DRAWS)
        assert abs(sim.estimate.iloc[z] - exact) <= Z4 * mc_se
        if z == 1:
            assert abs(delta.estimate.iloc[z] - exact) > Z4 * mc_se


def test_predictions_cover_the_truth_of_a_simulated_survey() -> None:
    """One survey of 20,000 simulated respondents (seed fixed): the delta method's
    estimates of the turnout with z = 0, z = 1 and their difference lie within 4 SEs of
    the averages under the true coefficients, and the prevalence within 4 SEs of the
    true mean probability."""
    rng = np.random.default_rng(11)
    n = 20_000
    t, x = rng.integers(0, 2, n), rng.normal(size=n)
    z = rng.random(n) < 1 / (1 + np.exp(0.5 - 0.8 * x))
    v = rng.random(n) < 1 / (1 + np.exp(-(0.4 + 0.3 * x - 1.0 * z)))
    data = pd.DataFrame({"y": rng.binomial(3, 0.4, n) + t * z, "x": x, "treat": t,
                         "v": v.astype(int)})  # fmt: skip
    fit = list_joint_regression("y ~ x", data, treat="treat", items=3, outcome="v")
    got = fit.predicted_outcome()
    truth0 = float(np.mean(1 / (1 + np.exp(-(0.4 + 0.3 * x)))))
    truth1 = float(np.mean(1 / (1 + np.exp(-(-0.6 + 0.3 * x)))))
    for i, truth in enumerate((truth0, truth1, truth1 - truth0)):
        assert abs(got.estimate.iloc[i] - truth) <= Z4 * got.std_error.iloc[i]
        assert got.lower.iloc[i] < got.estimate.iloc[i] < got.upper.iloc[i]
    prevalence = fit.predicted_prevalence()
    assert prevalence.estimate == pytest.approx(fit.prevalence, rel=1e-12)
    true_prevalence = float(np.mean(1 / (1 + np.exp(0.5 - 0.8 * x))))
    assert abs(prevalence.estimate - true_prevalence) <= Z4 * prevalence.std_error
    # over new rows: everyone with x = 0 against everyone with x = 1
    gap = fit.predicted_prevalence(data.assign(x=1.0), versus=data.assign(x=0.0))
    truth_gap = 1 / (1 + math.exp(0.5 - 0.8)) - 1 / (1 + math.exp(0.5))
    assert gap.difference and abs(gap.estimate - truth_gap) <= Z4 * gap.std_error


def test_unconstrained_predictions_use_each_rows_control_count() -> None:
    """Unconstrained, the outcome model holds ``Y(0)``: on the fitted rows it is ``y``
    with z = 0 and ``y - treat`` with z = 1 (R's choice); new rows are refused."""
    rng = np.random.default_rng(12)
    n = 3000
    t, x = rng.integers(0, 2, n), rng.normal(size=n)
    z = rng.random(n) < 0.4
    v = rng.random(n) < 0.5
    data = pd.DataFrame({"y": rng.binomial(3, 0.4, n) + t * z, "x": x, "treat": t,
                         "v": v.astype(int)})  # fmt: skip
    fit = list_joint_regression(
        "y ~ x", data, treat="treat", items=3, outcome="v", constrained=False
    )
    got = fit.predicted_outcome()
    b = fit.params[[name for name in fit.params.index if name.startswith("outcome.")]]
    y = data["y"].to_numpy(float)
    eta1 = b.iloc[0] + b.iloc[1] * x + b.iloc[2] * (y - t) + b.iloc[3]
    assert got.estimate.iloc[1] == pytest.approx(np.mean(1 / (1 + np.exp(-eta1))), rel=1e-12)
    with pytest.raises(ValueError, match="known on the fitted rows only"):
        fit.predicted_outcome(data)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "bootstrap"}, "method must be 'delta' or 'simulation'"),
        ({"draws": 1}, "draws must be in 2..10,000,000"),
        ({"draws": 10**9}, "draws must be in 2..10,000,000"),
        ({"draws": True}, "draws must be an int"),
        ({"draws": 2.5}, "draws must be an int"),
        ({"confidence_level": 1.5}, r"confidence_level must be a probability in \(0, 1\)"),
    ],
)
def test_bad_prediction_arguments_are_named(mexico, reference, kwargs, message) -> None:
    fit = r_fit(mexico, "approval", reference["approval"])
    with pytest.raises(ValueError, match=message):
        fit.predicted_outcome(**kwargs)


def test_new_rows_must_hold_the_covariates(mexico, reference) -> None:
    fit = r_fit(mexico, "approval", reference["approval"])
    with pytest.raises(ValueError, match="data must hold the formula's covariates"):
        fit.predicted_outcome(mexico.drop(columns="mex.male"))
    with pytest.raises(ValueError, match="versus needs data"):
        fit.predicted_prevalence(versus=mexico)
    # the fitted rows again, given as data: the same predictions
    assert np.allclose(fit.predicted_outcome(mexico), fit.predicted_outcome(), rtol=1e-12)

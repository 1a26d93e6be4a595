"""rr_linear: linear regression on a randomized yes/no predictor (RRreg's RRlin)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deniable import ForcedResponse, MatrixDesign, Warner
from deniable.analysis import StochasticLieDetector, rr_linear

FR = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
TRUE = {"Intercept": 1.0, "r": 2.0, "z": 0.5, "sigma": 1.5, "pi": 0.3}


def sample(rng, n, design=FR):
    x = rng.random(n) < TRUE["pi"]
    z = rng.normal(size=n)
    y = TRUE["Intercept"] + TRUE["r"] * x + TRUE["z"] * z + TRUE["sigma"] * rng.normal(size=n)
    return pd.DataFrame({"y": y, "r": design.randomize(x.astype(int), rng), "z": z})


def test_direct_questioning_is_least_squares():
    """With the identity design the mixture has one component: the MLE is OLS, sigma^2
    is RSS / n and pi the share of yes."""
    rng = np.random.default_rng(5)
    direct = MatrixDesign([[1.0, 0.0], [0.0, 1.0]])
    frame = sample(rng, 3000, direct)
    fit = rr_linear("y ~ r + z", frame, direct, "r")
    X = np.column_stack([np.ones(len(frame)), frame.r, frame.z])
    b, rss, *_ = np.linalg.lstsq(X, frame.y, rcond=None)
    np.testing.assert_allclose(fit.params.iloc[:3], b, atol=1e-6)
    assert fit.params["sigma"] == pytest.approx(math.sqrt(rss[0] / len(frame)), rel=1e-6)
    assert fit.params["pi"] == pytest.approx(frame.r.mean(), abs=1e-6)


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
def test_unbiased_with_covering_wald_intervals():
    """200 simulated surveys of n = 1,500 under forced response: each parameter's mean
    estimate is within 4 standard errors (of the mean over surveys) of the truth, and the
    95% Wald interval of the randomized predictor's effect covers in 95% of surveys
    within 4 binomial standard errors."""
    rng = np.random.default_rng(20261123)
    reps = 200
    fits = [rr_linear("y ~ r + z", sample(rng, 1500), FR, "r") for _ in range(reps)]
    params = pd.DataFrame([f.params for f in fits])
    for name, value in TRUE.items():
        spread = params[name].std(ddof=1) / math.sqrt(reps)
        assert abs(params[name].mean() - value) < 4 * spread, name
    covered = [
        f.conf_int().loc["r"].iloc[0] <= TRUE["r"] <= f.conf_int().loc["r"].iloc[1] for f in fits
    ]
    assert abs(np.mean(covered) - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps)
    assert all(f.converged for f in fits)
    assert "randomized predictors" in fits[0].summary()


def test_bad_input_names_the_field():
    rng = np.random.default_rng(0)
    frame = sample(rng, 200)
    with pytest.raises(ValueError, match="must be a term"):
        rr_linear("y ~ z", frame, FR, "r")
    with pytest.raises(ValueError, match="report codes 0 and 1"):
        rr_linear("y ~ z + r", frame.assign(r=frame.r + 1), FR, "r")
    with pytest.raises(ValueError, match="not in data"):
        rr_linear("y ~ z", frame, FR, "nope")
    with pytest.raises(ValueError, match="rr_predictor must name"):
        rr_linear("y ~ r + z", frame, FR)
    with pytest.raises(ValueError, match="given by the keys"):
        rr_linear("y ~ r + z", frame, {"r": FR}, "r")
    many = {f"r{i}": FR for i in range(7)}
    with pytest.raises(ValueError, match=r"1\.\.6 randomized predictors"):
        rr_linear("y ~ r + z", frame, many)


TWO = {"Intercept": 1.0, "a": 2.0, "b": -1.5, "z": 0.5, "sigma": 1.5}
# joint prevalence of (a, b): cells 0:0, 0:1, 1:0, 1:1 (correlated predictors)
CELLS = np.array([0.4, 0.2, 0.1, 0.3])
DESIGNS = {"a": Warner(p=0.8), "b": ForcedResponse(p_yes=0.15, p_no=0.1)}


def sample_two(rng, n):
    cell = rng.choice(4, n, p=CELLS)
    a, b = cell // 2, cell % 2
    z = rng.normal(size=n)
    y = TWO["Intercept"] + TWO["a"] * a + TWO["b"] * b + TWO["z"] * z
    y = y + TWO["sigma"] * rng.normal(size=n)
    return pd.DataFrame(
        {
            "y": y,
            "a": DESIGNS["a"].randomize(a, rng),
            "b": DESIGNS["b"].randomize(b, rng),
            "z": z,
        }
    )


@pytest.mark.slow  # over 5 s on 2 cores
def test_two_randomized_predictors_unbiased_and_covered():
    """RRlin's case of several randomized predictors (a Warner and a forced-response one,
    correlated through their joint prevalence): over 150 simulated surveys of n = 2,000
    every coefficient, sigma and each cell of the joint prevalence has its mean estimate
    within 4 standard errors (of the mean) of the truth, and the 95% Wald intervals of
    both randomized effects cover in 95% of surveys within 4 binomial standard errors.
    With identity designs the fit is least squares."""
    rng = np.random.default_rng(20261124)
    reps = 150
    fits = [rr_linear("y ~ a + b + z", sample_two(rng, 2000), DESIGNS) for _ in range(reps)]
    params = pd.DataFrame([f.params for f in fits])
    truth = {
        **TWO,
        **{f"pi[{c}]": v for c, v in zip(["0:0", "0:1", "1:0", "1:1"], CELLS, strict=True)},
    }
    for name, value in truth.items():
        spread = params[name].std(ddof=1) / math.sqrt(reps)
        assert abs(params[name].mean() - value) < 4 * spread, name
    for name in ("a", "b"):
        covered = [
            f.conf_int().loc[name].iloc[0] <= TWO[name] <= f.conf_int().loc[name].iloc[1]
            for f in fits
        ]
        assert abs(np.mean(covered) - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps), name
    assert all(f.converged for f in fits)
    assert all(
        abs(f.params[[f"pi[{c}]" for c in ("0:0", "0:1", "1:0", "1:1")]].sum() - 1) < 1e-12
        for f in fits
    )
    direct = MatrixDesign([[1.0, 0.0], [0.0, 1.0]])
    frame = sample_two(rng, 1000)
    fit = rr_linear("y ~ a + b + z", frame, {"a": direct, "b": direct})
    X = np.column_stack([np.ones(len(frame)), frame.a, frame.b, frame.z])
    coef, *_ = np.linalg.lstsq(X, frame.y, rcond=None)
    np.testing.assert_allclose(fit.params.iloc[:4], coef, atol=1e-6)


SLD = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])


def sld_sample(rng, n, t=0.7):
    """TRUE's model with the predictor reported by the SLD in two groups (honesty t)."""
    x = (rng.random(n) < TRUE["pi"]).astype(int)
    z = rng.normal(size=n)
    y = TRUE["Intercept"] + TRUE["r"] * x + TRUE["z"] * z + TRUE["sigma"] * rng.normal(size=n)
    groups = np.where(rng.random(n) < 0.5, 1, 2)
    reports = SLD.simulate(x, groups - 1, [t], rng)
    return pd.DataFrame({"y": y, "r": reports, "z": z, "g": groups})


def test_joint_channel_gradient_is_the_numerical_one():
    """The exact gradient of the joint likelihood, the SLD's honesty t included, agrees
    with central differences (step 1e-6: error O(h^2) on a smooth function)."""
    from deniable.analysis._linear import _objective

    frame = sld_sample(np.random.default_rng(3), 400)
    fit = rr_linear("y ~ r + z", frame, {"r": SLD}, group="g")
    model = fit.profile.objective.keywords["model"]
    x = fit.profile.x_hat + np.random.default_rng(4).normal(0, 0.05, fit.profile.x_hat.size)
    _, grad = _objective(x, model)
    h = 1e-6
    numeric = [
        (_objective(x + h * e, model)[0] - _objective(x - h * e, model)[0]) / (2 * h)
        for e in np.eye(x.size)
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-4)


@pytest.mark.slow  # about 3 s: over the fast loop's 180-s budget
def test_joint_channel_fit_is_unbiased_and_calibrated():
    """100 surveys of 2,000 with the SLD in two groups (t = 0.7, estimated jointly):
    the slope, pi and t average within 4 standard errors of the mean of the truth, and
    the mean squared SE is within 4 sigma of the estimates' variance (a variance of 100
    draws has relative SE sqrt(2 / 99) = 0.14)."""
    rng = np.random.default_rng(8)
    fits = [
        rr_linear("y ~ r + z", sld_sample(rng, 2000), {"r": SLD}, group="g") for _ in range(100)
    ]
    assert all(f.converged for f in fits)
    for term, truth in (("r", TRUE["r"]), ("pi", TRUE["pi"]), ("t", 0.7)):
        est = np.array([f.params[term] for f in fits])
        se2 = np.array([f.bse[term] ** 2 for f in fits])
        assert abs(est.mean() - truth) < 4 * est.std(ddof=1) / 10, term
        assert abs(se2.mean() / est.var(ddof=1) - 1) < 4 * math.sqrt(2 / 99), term


def test_plug_in_holds_the_channel_fit_of_the_reports_alone():
    from deniable.analysis import estimate_channel

    frame = sld_sample(np.random.default_rng(5), 1500)
    plug = rr_linear("y ~ r + z", frame, {"r": SLD}, group="g", channel_fit="plug_in")
    joint = rr_linear("y ~ r + z", frame, {"r": SLD}, group="g")
    first = estimate_channel(SLD, frame.r.to_numpy(), frame.g.to_numpy())
    assert plug.channel_parameters["t"] == pytest.approx(first.params["t"], abs=1e-6)
    assert "t" not in plug.params and "t" in joint.params
    # the joint maximum is at least the plug-in one (which fixes t)
    assert joint.llf >= plug.llf - 1e-9
    low, high = joint.confidence_interval(method="profile")
    assert low["t"] < joint.params["t"] < high["t"]


def test_group_models_name_their_errors():
    frame = sld_sample(np.random.default_rng(6), 300)
    with pytest.raises(ValueError, match="group is required"):
        rr_linear("y ~ r + z", frame, {"r": SLD})
    with pytest.raises(ValueError, match="group 'nope' is not in data"):
        rr_linear("y ~ r + z", frame, {"r": SLD}, group="nope")
    with pytest.raises(ValueError, match="group value 3 is not a randomization group"):
        rr_linear("y ~ r + z", frame.assign(g=3), {"r": SLD}, group="g")
    with pytest.raises(ValueError, match="channel_fit must be 'joint' or 'plug_in'"):
        rr_linear("y ~ r + z", frame, {"r": SLD}, group="g", channel_fit="em")


def test_the_summary_names_the_group_model():
    frame = sld_sample(np.random.default_rng(9), 500)
    text = rr_linear("y ~ r + z", frame, {"r": SLD}, group="g").summary()
    assert "StochasticLieDetector(p=[0.166667, 0.833333], group_labels=[1, 2])" in text


def test_known_designs_by_group_reduce_to_one_design():
    """A KnownChannel with the same design in both groups has the same likelihood as
    that design alone: the fits agree to the optimiser's tolerance. With different
    designs by group the fit still recovers the slope within 4 SEs."""
    from deniable.analysis import KnownChannel

    rng = np.random.default_rng(12)
    frame = sample(rng, 2000).assign(g=np.where(rng.random(2000) < 0.5, 1, 2))
    plain = rr_linear("y ~ r + z", frame, FR, "r")
    by_group = rr_linear("y ~ r + z", frame, {"r": KnownChannel({1: FR, 2: FR})}, group="g")
    np.testing.assert_allclose(by_group.params, plain.params, rtol=1e-5, atol=1e-6)
    assert by_group.llf == pytest.approx(plain.llf, abs=1e-6)
    x = rng.random(4000) < TRUE["pi"]
    z = rng.normal(size=4000)
    y = TRUE["Intercept"] + TRUE["r"] * x + TRUE["z"] * z + TRUE["sigma"] * rng.normal(size=4000)
    g = np.where(rng.random(4000) < 0.5, 1, 2)
    warner = Warner(p=0.8)
    r = np.where(g == 1, FR.randomize(x.astype(int), rng), warner.randomize(x.astype(int), rng))
    frame = pd.DataFrame({"y": y, "r": r, "z": z, "g": g})
    fit = rr_linear("y ~ r + z", frame, {"r": KnownChannel({1: FR, 2: warner})}, group="g")
    assert abs(fit.params["r"] - TRUE["r"]) < 4 * fit.bse["r"]


def test_joint_channel_fit_at_the_bound_of_honesty():
    """Every carrier honest (t = 1, the upper bound of t; this seed's estimate lands on
    it): the joint fit converges (the projected gradient vanishes), t has no standard
    error (NaN: the likelihood stops at the bound), and the other parameters have
    finite ones from the information with t held there; the slope is within 4 SEs of
    the truth."""
    frame = sld_sample(np.random.default_rng(13), 3000, t=1.0)
    fit = rr_linear("y ~ r + z", frame, {"r": SLD}, group="g")
    assert fit.converged
    assert fit.params["t"] == 1.0
    assert np.isnan(fit.bse["t"])
    others = fit.bse.drop("t")
    assert np.isfinite(others).all() and (others > 0).all()
    assert abs(fit.params["r"] - TRUE["r"]) < 4 * fit.bse["r"]

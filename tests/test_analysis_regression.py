"""Regression with randomized answers: rr_logit, rr_predictor and the multi-group channels.

Deterministic quantities (estimates, standard errors, log-likelihoods) are checked
against an independent fit of the same likelihood written out here (scipy's BFGS from
another start, Hessian by second differences of the log-likelihood), and against the
closed-form solutions of the saturated models. Statistical properties are checked by
simulation with fixed seeds; each tolerance is a 4-sigma bound from the exact
sampling variance (false-failure rate about 6e-5 per check).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy.special import expit

from deniable import ForcedResponse, MatrixDesign, Warner
from deniable.analysis import (
    CheatingDetection,
    StochasticLieDetector,
    UnknownInnocuous,
    closed_form,
    estimate_channel,
    rr_logit,
    rr_predictor,
)
from deniable.data import load_rr_survey

NIGERIA_FORMULA = (
    "rr.q1 ~ cov.asset.index + cov.married + I(cov.age/10) + I((cov.age/10)**2)"
    " + cov.education + cov.female"
)
BLAIR = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)  # Blair, Imai & Zhou (2015): p = 2/3


@pytest.fixture(scope="module")
def nigeria() -> pd.DataFrame:
    return load_rr_survey("rr/nigeria")


@pytest.fixture(scope="module")
def minarets_rr() -> pd.DataFrame:
    m = load_rr_survey("RRreg/minarets")
    return m[m.condition > 0].reset_index(drop=True)


def _numeric_hessian(f, x, h=1e-4):  # type: ignore[no-untyped-def]
    k = x.size
    H = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            e_i, e_j = np.eye(k)[i] * h, np.eye(k)[j] * h
            H[i, j] = (
                f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)
            ) / (4 * h * h)
    return H


def test_nigeria_rrreg_model_matches_an_independent_fit(nigeria: pd.DataFrame) -> None:
    fit = rr_logit(NIGERIA_FORMULA, nigeria, BLAIR)
    assert fit.converged and fit.nobs == 2423  # rows complete on the used columns
    used = nigeria.dropna(
        subset=["rr.q1", "cov.asset.index", "cov.married", "cov.age", "cov.education", "cov.female"]
    )
    age = used["cov.age"].to_numpy() / 10
    X = np.column_stack(
        [
            np.ones(len(used)),
            used["cov.asset.index"],
            used["cov.married"],
            age,
            age**2,
            used["cov.education"],
            used["cov.female"],
        ]
    )
    y = used["rr.q1"].to_numpy()

    # Pr(yes | x) = 1/6 + (2/3) sigmoid(x b)  (forced-known design of rr::rrreg)
    def ll(b: np.ndarray) -> float:
        lam = 1 / 6 + 2 / 3 * expit(X @ b)
        return float(np.sum(y * np.log(lam) + (1 - y) * np.log(1 - lam)))

    def grad(b: np.ndarray) -> np.ndarray:
        s = expit(X @ b)
        lam = 1 / 6 + 2 / 3 * s
        return X.T @ ((y / lam - (1 - y) / (1 - lam)) * 2 / 3 * s * (1 - s))

    ref = optimize.minimize(
        lambda b: -ll(b), np.zeros(7), jac=lambda b: -grad(b), method="BFGS", options={"gtol": 1e-9}
    )
    np.testing.assert_allclose(fit.params.to_numpy(), ref.x, atol=2e-4)
    assert fit.llf == pytest.approx(ll(ref.x), abs=1e-6)
    assert fit.llf == pytest.approx(ll(fit.params.to_numpy()), rel=1e-12)
    cov = np.linalg.inv(-_numeric_hessian(ll, fit.params.to_numpy()))
    np.testing.assert_allclose(fit.bse.to_numpy(), np.sqrt(np.diag(cov)), rtol=1e-4)
    assert list(fit.params.index) == [
        "Intercept",
        "cov.asset.index",
        "cov.married",
        "I(cov.age / 10)",
        "I((cov.age / 10) ** 2)",
        "cov.education",
        "cov.female",
    ]
    ci = fit.conf_int()
    assert (ci["low"] < fit.params).all() and (fit.params < ci["high"]).all()
    assert "cov.female" in fit.summary()
    # R writes the power with ^; the same model either way
    again = rr_logit(NIGERIA_FORMULA.replace("**2", "^2"), nigeria, BLAIR)
    np.testing.assert_allclose(again.params.to_numpy(), fit.params.to_numpy())


def test_direct_questioning_is_ordinary_logistic_regression(nigeria: pd.DataFrame) -> None:
    from sklearn.linear_model import LogisticRegression

    data = nigeria.dropna(subset=["cov.asset.index", "cov.female", "civic"]).copy()
    data["civic"] = data["civic"].astype(int)
    direct = MatrixDesign(np.eye(2))
    fit = rr_logit("civic ~ cov.asset.index + cov.female", data, direct)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(
        data[["cov.asset.index", "cov.female"]], data["civic"]
    )
    np.testing.assert_allclose(fit.params.iloc[0], ref.intercept_[0], atol=1e-5)
    np.testing.assert_allclose(fit.params.iloc[1:].to_numpy(), ref.coef_[0], atol=1e-5)


def test_tests_predictions_and_lr(nigeria: pd.DataFrame) -> None:
    full = rr_logit(NIGERIA_FORMULA, nigeria, BLAIR)
    reduced = full.drop_terms(["cov.education", "cov.married"])
    lr = full.lr_test(reduced)
    wald = full.wald_test(["cov.education", "cov.married"])
    assert lr.df == wald.df == 2
    # asymptotically equivalent tests: close on 2,423 rows
    assert abs(lr.statistic - wald.statistic) < 0.25
    single = full.wald_test("cov.female")
    assert single.statistic == pytest.approx(full.tvalues["cov.female"] ** 2)
    # intercept-only: the predicted prevalence is the (interior) moment estimate
    null = rr_logit("rr.q1 ~ 1", nigeria, BLAIR)
    lam = nigeria["rr.q1"].dropna().mean()
    pred = null.predicted_prevalence()
    assert pred.estimate == pytest.approx((lam - 1 / 6) / (2 / 3), abs=1e-9)
    n = nigeria["rr.q1"].notna().sum()
    assert pred.std_error == pytest.approx(np.sqrt(lam * (1 - lam) / n) / (2 / 3), rel=1e-6)
    low, high = pred.confidence_interval()
    assert 0 < low < pred.estimate < high < 1
    # predictions for new rows use the same formula
    rows = nigeria.dropna().head(5)
    np.testing.assert_allclose(full.predict(rows), full.predict()[:5])
    with pytest.raises(ValueError, match="allowed"):
        full.wald_test("cov.unknown")


def test_bad_input_names_the_field(nigeria: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match=r"report codes 0\.\.1"):
        rr_logit("cov.age ~ cov.female", nigeria, BLAIR)
    with pytest.raises(ValueError, match="Columns of data"):
        rr_logit("rr.q1 ~ cov.nothing", nigeria, BLAIR)
    with pytest.raises(ValueError, match="response ~ terms"):
        rr_logit("rr.q1", nigeria, BLAIR)
    with pytest.raises(TypeError, match="DataFrame"):
        rr_logit("rr.q1 ~ 1", nigeria.to_dict(), BLAIR)  # type: ignore[arg-type]
    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    with pytest.raises(ValueError, match="group is required"):
        rr_logit("rr.q1 ~ 1", nigeria, sld)
    with pytest.raises(ValueError, match=r"p\[0\] must be a probability"):
        StochasticLieDetector([1.3, 0.2])


def test_saturated_channels_reach_their_closed_form(minarets_rr: pd.DataFrame) -> None:
    shares = minarets_rr.groupby("condition")["rrt"].mean().to_numpy()
    for channel in (
        StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2]),
        UnknownInnocuous([2 / 12, 10 / 12], group_labels=[1, 2]),
    ):
        est = estimate_channel(
            channel, minarets_rr.rrt.to_numpy(), minarets_rr.condition.to_numpy()
        )
        np.testing.assert_allclose(est.params.to_numpy(), closed_form(channel, shares), atol=1e-6)
        with pytest.raises(ValueError, match="saturated"):
            est.goodness_of_fit()
    # SLD by hand: lam1 - lam2 = (1 - pi)(p2 - p1)
    pi = 1 - (shares[0] - shares[1]) / (10 / 12 - 2 / 12)
    t = (shares[0] - (1 - pi) * (10 / 12)) / pi
    sld = estimate_channel(
        StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2]),
        minarets_rr.rrt.to_numpy(),
        minarets_rr.condition.to_numpy(),
    )
    assert sld.params["pi"] == pytest.approx(pi, abs=1e-7)
    assert sld.params["t"] == pytest.approx(t, abs=1e-7)


def test_cheating_detection_keeps_its_classes_a_distribution(minarets_rr: pd.DataFrame) -> None:
    """Read as a cheating-detection survey, the minaret shares put the closed form outside
    the model (pi + gamma = 1.13 > 1); the estimate stays on the boundary pi + gamma = 1,
    and it matches the closed form where that lies inside (simulated survey)."""
    cdm = CheatingDetection([2 / 12, 10 / 12], group_labels=[1, 2])
    shares = minarets_rr.groupby("condition")["rrt"].mean().to_numpy()
    outside = closed_form(cdm, shares)
    assert outside.sum() > 1.1
    est = estimate_channel(cdm, minarets_rr.rrt.to_numpy(), minarets_rr.condition.to_numpy())
    assert est.params.sum() == pytest.approx(1.0, abs=1e-7)
    rng = np.random.default_rng(17)
    n = 50_000
    groups = rng.integers(0, 2, n)
    u = rng.random(n)
    honest_carrier, cheater = u < 0.2, (u >= 0.2) & (u < 0.3)
    forced_yes = rng.random(n) < np.where(groups == 0, 2 / 12, 10 / 12)
    reports = np.where(cheater, 0, np.where(honest_carrier | forced_yes, 1, 0))
    inside = estimate_channel(cdm, reports, groups + 1)
    lam = [reports[groups == g].mean() for g in (0, 1)]
    np.testing.assert_allclose(inside.params, closed_form(cdm, lam), atol=1e-6)
    for name, value in (("pi", 0.2), ("gamma", 0.1)):
        assert abs(inside.params[name] - value) < 4 * inside.bse[name]


def test_sld_regression_agrees_with_the_prevalence_fit(minarets_rr: pd.DataFrame) -> None:
    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    null = rr_logit("rrt ~ 1", minarets_rr, sld, group="condition")
    est = estimate_channel(sld, minarets_rr.rrt.to_numpy(), minarets_rr.condition.to_numpy())
    pred = null.predicted_prevalence()
    assert pred.estimate == pytest.approx(est.params["pi"], abs=1e-7)
    assert pred.std_error == pytest.approx(est.bse["pi"], rel=1e-5)  # delta method
    assert null.params["t"] == pytest.approx(est.params["t"], abs=1e-7)
    assert null.llf == pytest.approx(est.llf, abs=1e-7)
    full = rr_logit("rrt ~ leftRight.c + age.c", minarets_rr, sld, group="condition")
    assert full.converged and list(full.params.index) == ["Intercept", "leftRight.c", "age.c", "t"]
    assert full.lr_test(null).df == 2


def _simulated_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({"x1": rng.standard_normal(n), "x2": (rng.random(n) < 0.5).astype(float)})


@pytest.mark.slow
def test_wald_intervals_cover_the_true_coefficients() -> None:
    rng = np.random.default_rng(2024)
    beta = np.array([-0.5, 1.0, -0.5])
    reps, n = 800, 2000
    hits = np.zeros(3)
    for _ in range(reps):
        df = _simulated_frame(rng, n)
        X = np.column_stack([np.ones(n), df.x1, df.x2])
        truth = rng.random(n) < expit(X @ beta)
        df["r"] = BLAIR.randomize(truth, rng).astype(float)
        fit = rr_logit("r ~ x1 + x2", df, BLAIR)
        ci = fit.conf_int(0.95)
        hits += (ci["low"].to_numpy() <= beta) & (beta <= ci["high"].to_numpy())
    coverage = hits / reps
    bound = 4 * np.sqrt(0.95 * 0.05 / reps)  # 4 sigma of a binomial share
    assert np.all(np.abs(coverage - 0.95) < bound), coverage


def test_sld_recovers_prevalence_and_honesty() -> None:
    rng = np.random.default_rng(11)
    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    n = 40_000
    groups = rng.integers(0, 2, n)
    truth = rng.random(n) < 0.3
    reports = sld.simulate(truth, groups, [0.8], rng)
    est = estimate_channel(sld, reports, groups + 1)
    for name, value in (("pi", 0.3), ("t", 0.8)):
        assert abs(est.params[name] - value) < 4 * est.bse[name]


def test_rr_predictor_recovers_the_joint_model() -> None:
    rng = np.random.default_rng(5)
    n = 30_000
    df = _simulated_frame(rng, n)
    X = np.column_stack([np.ones(n), df.x1, df.x2])
    beta, gamma, delta = np.array([-0.3, 0.8, 0.4]), np.array([-1.0, 0.5, -0.6]), 1.2
    z = rng.random(n) < expit(X @ beta)
    df["y"] = (rng.random(n) < expit(X @ gamma + delta * z)).astype(float)
    design = Warner(p=0.8)
    df["r"] = design.randomize(z, rng).astype(float)
    fit = rr_predictor("y ~ x1 + x2 + r", df, design, rr_item="r")
    assert fit.converged
    truth = np.concatenate([gamma, [delta], beta])
    dev = np.abs(fit.params.to_numpy() - truth) / fit.bse.to_numpy()
    assert np.all(dev < 4), dict(zip(fit.params.index, dev, strict=True))
    with pytest.raises(ValueError, match="rr_item"):
        rr_predictor("y ~ x1", df, design, rr_item="r")


def test_frequency_weights_equal_repeated_rows(nigeria: pd.DataFrame) -> None:
    data = nigeria.dropna(subset=["rr.q1", "cov.female", "cov.asset.index"]).copy()
    data["w"] = 2.0
    weighted = rr_logit("rr.q1 ~ cov.female + cov.asset.index", data, BLAIR, weights="w")
    doubled = rr_logit("rr.q1 ~ cov.female + cov.asset.index", pd.concat([data, data]), BLAIR)
    np.testing.assert_allclose(weighted.params, doubled.params, rtol=1e-8)
    np.testing.assert_allclose(weighted.bse, doubled.bse, rtol=1e-8)
    assert weighted.llf == pytest.approx(doubled.llf)
    data.loc[data.index[0], "w"] = -1.0
    with pytest.raises(ValueError, match="weights must be finite and >= 0"):
        rr_logit("rr.q1 ~ cov.female", data, BLAIR, weights="w")


def test_channel_estimates_start_from_a_grid_and_keep_the_best(minarets_rr: pd.DataFrame) -> None:
    """Joint fits of pi and unknown channel parameters start from the default and a
    3-point grid over pi and each parameter; llf is the best start's, and a profile of
    the log-likelihood over a fine grid of pi finds nothing higher."""
    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    reports, groups = minarets_rr.rrt.to_numpy(), minarets_rr.condition.to_numpy()
    est = estimate_channel(sld, reports, groups)
    assert est.start_llf.size == 1 + 3**2
    assert est.llf == pytest.approx(np.nanmax(est.start_llf), abs=1e-12)
    # brute force: the log-likelihood on a 201 x 201 grid of (pi, t) never beats llf
    c = np.array([[np.sum((groups == g) & (reports == r)) for r in (0, 1)] for g in (1, 2)])
    best = -np.inf
    for pi in np.linspace(0, 1, 201):
        for t in np.linspace(0, 1, 201):
            A, B, _, _ = sld.coefficients(np.array([t]))
            lam = A + B * pi
            with np.errstate(divide="ignore", invalid="ignore"):
                ll = float(np.where(c > 0, c * np.log(lam), 0.0).sum())
            best = max(best, ll)
    assert est.llf >= best - 1e-9


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_expected_information_standard_errors(nigeria: pd.DataFrame) -> None:
    """information="expected" (GLMMRR's default): for an intercept-only model the MLE
    matches the report share, where expected and observed information coincide; with
    covariates both are consistent: over 400 simulated data sets (seeded) the variance of
    the slope estimate matches the mean expected-information variance within the
    4-sigma band of a sample variance, 4 sqrt(2 / 399) relative."""
    null_obs = rr_logit("rr.q1 ~ 1", nigeria, BLAIR)
    null_exp = rr_logit("rr.q1 ~ 1", nigeria, BLAIR, information="expected")
    np.testing.assert_allclose(null_exp.bse, null_obs.bse, rtol=1e-8)
    # the summary says which information its standard errors come from
    assert "Std. errors: expected (Fisher) information" in null_exp.summary()
    assert "Std. errors: observed information" in null_obs.summary()
    with pytest.raises(ValueError, match="information must be one of"):
        rr_logit("rr.q1 ~ 1", nigeria, BLAIR, information="fisher")
    rng = np.random.default_rng(20261123)
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    n, reps, beta = 1500, 400, np.array([-1.0, 0.8])
    slopes, variances = [], []
    for _ in range(reps):
        x = rng.normal(size=n)
        truth = rng.random(n) < expit(beta[0] + beta[1] * x)
        frame = pd.DataFrame({"y": design.randomize(truth.astype(int), rng), "x": x})
        fit = rr_logit("y ~ x", frame, design, information="expected")
        slopes.append(fit.params["x"])
        variances.append(fit.bse["x"] ** 2)
    ratio = np.var(slopes, ddof=1) / np.mean(variances)
    assert abs(ratio - 1) < 4 * np.sqrt(2 / (reps - 1))


def test_designs_varying_by_respondent_on_ethbe() -> None:
    """GLMMRR/ETHBE mixes direct questioning, forced response, unrelated question and
    crosswise by respondent (Hoeglinger, Jann & Diekmann 2016). With each row's own
    design (designs_by_row, forced p2 read as unconditional, as the data README
    explains), the intercept-only rr_logit is the pooled maximum-likelihood
    prevalence: no prevalence on a fine grid has a higher pooled log-likelihood, and
    the estimate lies within 4 SE of the direct-questioning rows' share plus whatever
    the randomized rows add (it is between the per-design estimates)."""
    from deniable.analysis import designs_by_row, glmmrr_design

    ethbe = load_rr_survey("GLMMRR/ETHBE")
    assert len(ethbe) == 21_405
    rows = ethbe[(ethbe["Question"] == "copied")].dropna(subset=["RR_response"])
    keys, designs = designs_by_row(rows, forced="unconditional")
    frame = rows.assign(design=keys, y=rows["RR_response"].astype(int))
    fit = rr_logit("y ~ 1", frame, designs, group="design")
    pooled = float(expit(fit.params["Intercept"]))
    grid = np.linspace(0.0005, 0.9995, 2000)
    ll = np.zeros_like(grid)
    for key, design in designs.items():
        y = frame.loc[frame["design"] == key, "y"].to_numpy()
        lam_yes = design.matrix[1, 0] + (design.matrix[1, 1] - design.matrix[1, 0]) * grid
        ll += (y == 1).sum() * np.log(lam_yes) + (y == 0).sum() * np.log(1 - lam_yes)
    assert fit.llf >= ll.max() - 1e-9
    assert abs(pooled - grid[ll.argmax()]) <= grid[1] - grid[0]
    per_design = [
        float(expit(rr_logit("y ~ 1", frame[frame["design"] == k], d).params["Intercept"]))
        for k, d in designs.items()
        if (frame["design"] == k).sum() >= 100
    ]
    assert min(per_design) <= pooled <= max(per_design)
    # GLMMRR's parameterisations: Pr(yes) = c + d pi
    forced = glmmrr_design("Forced", 2 / 3, 0.5)
    assert forced.matrix[1].tolist() == pytest.approx([1 / 6, 1 / 6 + 2 / 3])
    assert glmmrr_design("Triangular", 0.25).matrix[1].tolist() == [0.25, 1.0]
    with pytest.raises(ValueError, match="model must be one of"):
        glmmrr_design("Mangat", 0.5)


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_goodness_of_fit_is_calibrated_and_has_power() -> None:
    """gof() (GLMMRR's RRglmGOF): under a correct model (a 6-level covariate, forced
    response, n = 2,000) the 5%-level Pearson, deviance and Hosmer-Lemeshow tests reject
    in 5% of 300 simulated surveys within 4 binomial standard errors; fitting a straight
    line to a U-shaped truth, they reject in at least 80% of 50."""
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    rng = np.random.default_rng(20261123)
    n, reps = 2000, 300

    def survey(logit_of_x) -> pd.DataFrame:
        x = rng.integers(0, 6, n).astype(float)
        truth = rng.random(n) < expit(logit_of_x(x))
        return pd.DataFrame({"y": design.randomize(truth.astype(int), rng), "x": x})

    rejected = {"pearson": 0, "deviance": 0, "hosmer_lemeshow": 0}
    for _ in range(reps):
        tests = rr_logit("y ~ x", survey(lambda x: -1.0 + 0.3 * x), design).gof()
        assert tests["pearson"].df == 6 - 2 and tests["hosmer_lemeshow"].df == 8
        for name in rejected:
            rejected[name] += tests[name].pvalue < 0.05
    band = 4 * np.sqrt(0.05 * 0.95 / reps)
    for name, count in rejected.items():
        assert abs(count / reps - 0.05) <= band, (name, count)
    power = {name: 0 for name in rejected}
    for _ in range(50):
        tests = rr_logit("y ~ x", survey(lambda x: -1.5 + 0.6 * (x - 2.5) ** 2), design).gof()
        for name in power:
            power[name] += tests[name].pvalue < 0.05
    assert all(count >= 40 for count in power.values()), power
    with pytest.raises(ValueError, match="groups must be"):
        rr_logit("y ~ x", survey(lambda x: 0 * x), design).gof(groups=2)

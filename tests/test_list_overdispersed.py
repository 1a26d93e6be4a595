"""The list experiment with an overdispersed (beta-binomial) control count (Imai 2011;
R's ``ictreg(overdispersed = TRUE)``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from deniable.analysis import list_regression
from deniable.list_experiment._overdispersed import (
    _Overdispersed,
    _Unconstrained,
    log_beta_binomial,
)

from .conftest import Z4, numeric_gradient

DATA = Path(__file__).parent / "data"

# ictreg(<formula>, data, treat = "treat", J = 3, method = "ml", overdispersed = TRUE,
#        constrained = TRUE, maxIter = 100000), list 9.2.6 sourced into R 4.2 with its EM
# stop at 1e-13 and gamlss.dist's dBB (not in Debian) as VGAM::dbetabinom(x, bd, mu,
# rho = sigma / (1 + sigma)), its parametrisation: (log-likelihood, sensitive, control,
# logit rho) with the SEs.
R_OVERDISPERSED = {
    "race": (
        "y ~ south + age + male + college", -1443.72432552933,
        [-5.5184456097256, 1.6972115599278, 0.6335547573351, 0.7924806380026,
         -0.3338220980343, 1.18292380965278, -0.29322324934201, 0.03590336015317,
         -0.24336833449481, -0.51824451748786, -3.848652129178],
        [1.0165734019708, 0.5618382751194, 0.1618514067122, 0.4926873897537,
         0.4744790730636, 0.14572208923633, 0.09837116866136, 0.02804328025883,
         0.08309066562841, 0.08491359325044, 0.8966345460228],
    ),
    "affirm": (
        "y ~ age + college + male + south", -1433.44908378689,
        [-1.36673850770937, 0.30355243685495, -0.33678539871804, 0.07827101650673,
         1.32148202894820, 1.38332786718288, 0.02994710434531, -0.67033919967204,
         -0.35846496699588, -0.25367397553067, -3.468772957444],
        [0.5724286154152, 0.1049806921208, 0.3473639334683, 0.3613108126192,
         0.5506598259404, 0.16198222572697, 0.02934494853762, 0.09885641931294,
         0.09529006540258, 0.11332996268629, 0.7157157727021],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(R_OVERDISPERSED))
def test_the_overdispersed_model_equals_ictreg(name: str) -> None:
    """Every coefficient and SE within 1e-5 relative, the log-likelihood to 1e-8."""
    formula, llf, coef, se = R_OVERDISPERSED[name]
    data = pd.read_csv(DATA / f"list_{name}.csv")
    fit = list_regression(formula, data, treat="treat", items=3, overdispersed=True)
    assert fit.converged and fit.llf == pytest.approx(llf, abs=1e-8)
    assert np.allclose(fit.params, coef, rtol=1e-5) and np.allclose(fit.bse, se, rtol=1e-5)
    assert fit.params.index[-1] == "control.overdispersion"


@pytest.mark.parametrize("rho", [1e-6, 0.05, 0.6])
def test_the_beta_binomial_is_a_distribution_with_its_exact_derivatives(rho: float) -> None:
    """Over J = 5 it sums to 1, equals scipy's betabinom, has the mean J mu and the
    variance J mu (1 - mu) (1 + (J - 1) rho); its derivatives in eta and logit rho are
    central differences of it (1e-6 relative), and near the binomial the eta derivative
    is the binomial's score ``y - J mu``."""
    j, eta, theta = 5, np.array([0.4]), float(special.logit(rho))
    y = np.arange(j + 1, dtype=float)
    log_pmf, d_eta, d_theta = log_beta_binomial(y, j, np.repeat(eta, j + 1), theta)
    pmf = np.exp(log_pmf)
    mu = float(special.expit(eta[0]))
    a, b = mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho
    # near the binomial (rho = 1e-6) the shapes are near 10^6, and the difference of two
    # log-beta functions of that size keeps about 1e-9 of relative precision
    tol = 1e-8 if rho < 1e-3 else 1e-10
    assert np.allclose(pmf, stats.betabinom.pmf(y, j, a, b), rtol=tol)
    assert pmf.sum() == pytest.approx(1.0, abs=tol)
    assert pmf @ y == pytest.approx(j * mu, rel=tol)
    var = pmf @ (y - j * mu) ** 2
    assert var == pytest.approx(j * mu * (1 - mu) * (1 + (j - 1) * rho), rel=max(tol, 1e-8))
    if rho < 1e-3:  # central differences lose the digits here: the binomial's score
        assert np.allclose(d_eta, y - j * mu, rtol=1e-4, atol=1e-4)
        return
    for c in range(j + 1):
        num_eta = numeric_gradient(
            lambda e, c=c: log_beta_binomial(y[c : c + 1], j, e, theta)[0][0], eta
        )
        num_theta = numeric_gradient(
            lambda th, c=c: log_beta_binomial(y[c : c + 1], j, eta, float(th[0]))[0][0],
            np.array([theta]),
        )
        assert d_eta[c] == pytest.approx(num_eta[0], rel=1e-6, abs=1e-9)
        assert d_theta[c] == pytest.approx(num_theta[0], rel=1e-6, abs=1e-9)


def test_the_overdispersed_score_is_the_gradient() -> None:
    rng = np.random.default_rng(5)
    n, j = 300, 3
    t = rng.integers(0, 2, n).astype(bool)
    x = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = (rng.binomial(j, 0.4, n) + t * (rng.random(n) < 0.4)).astype(float)
    lik = _Overdispersed(y, t, x, j)
    theta = np.array([-0.3, 0.5, 0.2, -0.4, -1.5])
    _, score = lik.value_and_score(theta)
    numeric = numeric_gradient(lambda th: lik.value_and_score(th)[0], theta)
    assert np.allclose(score, numeric, rtol=1e-5, atol=1e-4)


def test_the_overdispersed_model_recovers_rho_and_the_prevalence() -> None:
    """8,000 respondents whose control counts are beta-binomial with rho = 0.3: logit rho,
    every coefficient and the prevalence within 4 SEs of the truth; the binomial model's
    prevalence SE is the smaller one, too small (it ignores the extra spread)."""
    rng = np.random.default_rng(17)
    n, j, rho = 8000, 4, 0.3
    t = rng.integers(0, 2, n)
    x = rng.normal(size=n)
    mu = special.expit(0.2 - 0.5 * x)
    p = rng.beta(mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho)
    z = rng.random(n) < special.expit(-0.8 + 0.6 * x)
    data = pd.DataFrame({"y": rng.binomial(j, p) + t * z, "x": x, "treat": t})
    fit = list_regression("y ~ x", data, treat="treat", items=j, overdispersed=True)
    truth = {"sensitive.Intercept": -0.8, "sensitive.x": 0.6, "control.Intercept": 0.2,
             "control.x": -0.5, "control.overdispersion": math.log(rho / (1 - rho))}  # fmt: skip
    for name, value in truth.items():
        assert abs(fit.params[name] - value) < Z4 * fit.bse[name], name
    share = float(special.expit(-0.8 + 0.6 * x).mean())
    assert abs(fit.prevalence - share) < Z4 * fit.prevalence_se
    plain = list_regression("y ~ x", data, treat="treat", items=j)
    assert plain.prevalence_se < fit.prevalence_se


def test_a_fit_that_reaches_the_binomial_stays_finite() -> None:
    """Binomial control counts (no overdispersion): the fit's logit rho runs towards the
    boundary, held at -THETA_BOUND at most, with every coefficient finite and the
    prevalence the binomial model's within 1e-4."""
    from deniable.list_experiment._overdispersed import THETA_BOUND

    rng = np.random.default_rng(23)
    n = 3000
    t = rng.integers(0, 2, n)
    data = pd.DataFrame({"y": rng.binomial(3, 0.4, n) + t * (rng.random(n) < 0.3), "treat": t})
    fit = list_regression("y ~ 1", data, treat="treat", items=3, overdispersed=True)
    plain = list_regression("y ~ 1", data, treat="treat", items=3)
    assert np.isfinite(fit.params).all()
    assert fit.params["control.overdispersion"] >= -THETA_BOUND
    assert abs(fit.prevalence - plain.prevalence) < 1e-4


def test_overdispersion_is_one_extension_at_a_time(tmp_path) -> None:
    data = pd.read_csv(DATA / "list_race.csv")
    for kwargs in ({"ceiling": True}, {"error": "topcode"}):
        with pytest.raises(ValueError, match="overdispersion one at a time"):
            list_regression("y ~ age", data, treat="treat", items=3, overdispersed=True, **kwargs)


def unconstrained_data(seed: int, n: int, rhos: tuple[float, float]) -> pd.DataFrame:
    """Control counts beta-binomial given the sensitive answer: ``mu_z = g(psi_z' x)``
    with ``psi0 = (0.2, -0.5)``, ``psi1 = (0.6, 0.3)`` and ``rho_z`` from ``rhos`` (0: the
    binomial); ``Z ~ Bernoulli(g(-0.8 + 0.6 x))``; J = 4."""
    rng = np.random.default_rng(seed)
    t, x = rng.integers(0, 2, n), rng.normal(size=n)
    z = rng.random(n) < special.expit(-0.8 + 0.6 * x)
    mu = np.where(z, special.expit(0.6 + 0.3 * x), special.expit(0.2 - 0.5 * x))
    rho = np.where(z, rhos[1], rhos[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(
            rho > 0,
            rng.beta(
                mu * (1 - rho) / np.where(rho > 0, rho, 1),
                (1 - mu) * (1 - rho) / np.where(rho > 0, rho, 1),
            ),
            mu,
        )
    return pd.DataFrame({"y": rng.binomial(4, p) + t * z, "x": x, "treat": t})  # fmt: skip


def test_the_unconstrained_score_is_the_gradient() -> None:
    """Both models' parts, at a point away from the maximum; and with ``rho_1`` held,
    the score of the free entries only."""
    data = unconstrained_data(3, 500, (0.2, 0.4))
    y, t = data["y"].to_numpy(float), data["treat"].to_numpy() == 1
    x = np.column_stack([np.ones(len(data)), data["x"]])
    theta = np.array([-0.5, 0.4, 0.1, -0.3, 0.5, 0.2, -1.2, -0.7])
    for fixed, free in (({}, theta), ({1: -0.7}, theta[:7])):
        lik = _Unconstrained(y, t, x, 4, fixed)
        _, score = lik.value_and_score(free)
        numeric = numeric_gradient(lambda th, lik=lik: lik.value_and_score(th)[0], free)
        assert np.allclose(score, numeric, rtol=1e-5, atol=1e-4)


def test_the_unconstrained_overdispersed_model_recovers_both_rhos() -> None:
    """12,000 respondents with rho 0.2 given Z = 0 and 0.4 given Z = 1: every
    coefficient within 4 SEs of the truth, the two overdispersions named."""
    data = unconstrained_data(5, 12_000, (0.2, 0.4))
    fit = list_regression("y ~ x", data, treat="treat", items=4, overdispersed=True,
                          constrained=False)  # fmt: skip
    truth = {"sensitive.Intercept": -0.8, "sensitive.x": 0.6, "control.psi0.Intercept": 0.2,
             "control.psi0.x": -0.5, "control.psi1.Intercept": 0.6, "control.psi1.x": 0.3,
             "control.psi0.overdispersion": special.logit(0.2),
             "control.psi1.overdispersion": special.logit(0.4)}  # fmt: skip
    assert list(fit.params.index) == list(truth)
    for name, value in truth.items():
        assert abs(fit.params[name] - value) < Z4 * fit.bse[name], name
    assert fit.converged and not fit.constrained


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_an_unconstrained_rho_at_the_boundary_is_held_and_said() -> None:
    """Binomial control counts given Z = 1: on this sample the maximum is at rho_1 = 0
    (the log-likelihood falls as rho_1 leaves 0); it is held at -THETA_BOUND with a NaN
    SE and a warning, the others finite and within 4 SEs of the truth. On another
    sample of the same law the maximum is inside (rho_1 = 0.024): no warning, every SE
    finite."""
    import warnings

    from deniable.list_experiment._overdispersed import BOUNDARY_LOGIT, THETA_BOUND

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inside = list_regression("y ~ x", unconstrained_data(6, 8_000, (0.3, 0.0)),
                                 treat="treat", items=4, overdispersed=True,
                                 constrained=False)  # fmt: skip
    assert inside.params["control.psi1.overdispersion"] > BOUNDARY_LOGIT
    assert np.isfinite(inside.bse).all() and inside.converged
    data = unconstrained_data(7, 8_000, (0.3, 0.0))
    with pytest.warns(UserWarning, match=r"given Z = \[1\] is at its boundary"):
        fit = list_regression("y ~ x", data, treat="treat", items=4, overdispersed=True,
                              constrained=False)  # fmt: skip
    assert fit.params["control.psi1.overdispersion"] == -THETA_BOUND
    assert math.isnan(fit.bse["control.psi1.overdispersion"])
    rest = fit.bse.drop("control.psi1.overdispersion")
    assert np.isfinite(rest).all()
    assert abs(fit.params["control.psi0.overdispersion"] - special.logit(0.3)) < Z4 * rest[
        "control.psi0.overdispersion"]  # fmt: skip
    assert abs(fit.params["sensitive.x"] - 0.6) < Z4 * rest["sensitive.x"]
    assert fit.converged


def test_the_boundary_slope_is_the_derivative_in_rho_at_0() -> None:
    """``boundary_slope`` against the log-likelihood's difference quotients in ``rho_z``
    from 0 (the binomial, held) to ``h`` (the beta-binomial), extrapolated over ``h`` and
    ``h / 2`` to remove the O(h) term: agreement to 1e-4 relative, for each ``z``."""
    data = unconstrained_data(4, 600, (0.2, 0.1))
    y, t = data["y"].to_numpy(float), data["treat"].to_numpy() == 1
    x = np.column_stack([np.ones(len(data)), data["x"]])
    theta = np.array([-0.5, 0.4, 0.1, -0.3, 0.5, 0.2, -1.2, -1.7])
    k = 2
    for z in (0, 1):
        held = _Unconstrained(y, t, x, 4, {z: -30.0})
        free = np.delete(theta, 3 * k + z)
        at_zero = held.value_and_score(free)[0]
        whole = _Unconstrained(y, t, x, 4)

        def quotient(h: float, whole=whole, z=z, at_zero=at_zero) -> float:
            point = theta.copy()
            point[3 * k + z] = special.logit(h)
            return (whole.value_and_score(point)[0] - at_zero) / h

        extrapolated = 2 * quotient(5e-4) - quotient(1e-3)
        assert held.boundary_slope(free, z) == pytest.approx(extrapolated, rel=1e-4)


# ictreg(y ~ x, data = unconstrained_data(5, 3000, (0.2, 0.4)), treat = "treat", J = 4,
#        method = "ml", overdispersed = TRUE, constrained = FALSE, maxIter = 100000),
# list 9.2.6 sourced into R 4.2 with its EM stop at 1e-13, dBB as VGAM::dbetabinom (as
# R_OVERDISPERSED) and its MLEfit$par and se.mle returned whole (R's ictreg slices them
# wrongly for this model: docs/analysis.md); 90 s. In our order: sensitive, psi0, psi1,
# logit rho0, logit rho1.
R_UNCONSTRAINED = (
    -4897.8148849636,
    [-0.683774342979, 0.470576660730, 0.130298517813, -0.511641113462, 0.718924336155,
     0.292757210368, -1.252311696389, -0.792725624395],
    [0.186863481375, 0.104053631370, 0.054191710002, 0.056581890049, 0.148981721431,
     0.092911412145, 0.089142206194, 0.187951121069],
)  # fmt: skip


def test_the_unconstrained_overdispersed_model_equals_ictreg() -> None:
    """Every coefficient and SE within 1e-5 relative of R's (run to a 1e-13 stop), the
    log-likelihood to 1e-8."""
    llf, coef, se = R_UNCONSTRAINED
    fit = list_regression("y ~ x", unconstrained_data(5, 3000, (0.2, 0.4)), treat="treat",
                          items=4, overdispersed=True, constrained=False)  # fmt: skip
    assert fit.converged and fit.llf == pytest.approx(llf, abs=1e-8)
    assert np.allclose(fit.params, coef, rtol=1e-5) and np.allclose(fit.bse, se, rtol=1e-5)


@pytest.mark.parametrize(("name", "held"), [("race", 1), ("affirm", 0)])
def test_rs_data_put_one_unconstrained_rho_on_the_boundary(name: str, held: int) -> None:
    """Where R's EM runs for over ten minutes: on the race data rho_1 is held at 0, on
    the affirm data rho_0; the fit converges with the other's SE finite."""
    formula = R_OVERDISPERSED[name][0]
    data = pd.read_csv(DATA / f"list_{name}.csv")
    with pytest.warns(UserWarning, match=rf"given Z = \[{held}\] is at its boundary"):
        fit = list_regression(formula, data, treat="treat", items=3, overdispersed=True,
                              constrained=False)  # fmt: skip
    assert fit.converged
    assert math.isnan(fit.bse[f"control.psi{held}.overdispersion"])
    assert np.isfinite(fit.bse.drop(f"control.psi{held}.overdispersion")).all()

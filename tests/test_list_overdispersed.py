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
from deniable.analysis._list._overdispersed import _Overdispersed, log_beta_binomial

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
    from deniable.analysis._list._overdispersed import THETA_BOUND

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
    for kwargs in ({"constrained": False}, {"ceiling": True}, {"error": "topcode"}):
        with pytest.raises(ValueError, match="overdispersion need constrained=True"):
            list_regression("y ~ age", data, treat="treat", items=3, overdispersed=True, **kwargs)

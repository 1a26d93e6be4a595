"""The list experiment with several sensitive items (Blair & Imai 2012), against R's
``list::ictreg`` and by simulation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import list_regression_multi
from deniable.list_experiment._multi_item import _MultiLikelihood

from .conftest import Z4, numeric_gradient

DATA = Path(__file__).parent / "data"
FORMULA = "y ~ male + college + age + south + south:age"


def same_4_digits(ours: float, r: float) -> bool:
    """Within half a unit of R's fourth significant digit."""
    return abs(ours - r) <= 0.5 * 10 ** (math.floor(math.log10(abs(r))) - 3)


@pytest.fixture(scope="module")
def multi() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_multi.csv")


# ictreg(y ~ male + college + age + south + south:age, treat = "treat", J = 3,
#        data = multi, method = "ml", multi.condition = <condition>, maxIter = 200000),
# list 9.2.6 sourced into R 4.2 with treat a factor (control, then affirm, then race)
# and its EM's stop, a rise of the log-likelihood below 1e-8, set to 1e-13: at 1e-8 R
# stops short of the maximum by 1e-7 ("none") and its coefficients differ from the
# maximum's by up to 1.5e-4 relative (affirm's south under "level": 5.65986 against
# 5.66072). Each block: (coefficients, standard errors) in the formula's order, the
# control items first.
R_MULTI = {
    "none": (
        -2233.626601,
        [1.29713226903, -0.31437321233, -0.54157713520, 0.01408795511, -0.54939339637,
         0.06663756030,
         -1.41815354597, 0.09101609732, -0.57592178387, 0.36563595438, 2.92695659474,
         -0.37240618575,
         -6.6007134306, 1.1471360955, -0.1905774948, 0.8168782625, 4.3561486200,
         -0.5817970531],
        [0.14732229049, 0.07829556555, 0.07707360169, 0.02870556390, 0.26833436930,
         0.05750947612,
         0.6340805636, 0.3628768435, 0.3431189258, 0.1211763864, 1.3962752158,
         0.2704630170,
         1.2834794487, 0.5066081002, 0.4669914700, 0.2060209362, 1.6667778324,
         0.3177015566],
    ),
    # Blair & Imai (2012), Table 3: the documented example
    "level": (
        -2223.394301,
        [1.38932450694, -0.32551066190, -0.53345545609, 0.00594033267, -0.68537921475,
         0.09279167377,
         -5.2704302653, 0.5377478292, -0.5522961336, 0.5790527704, 5.6607156150,
         -0.8334995356, 0.9915043877,
         -7.5754450836, 1.2000726282, -0.2588625820, 0.8519000216, 4.7510272315,
         -0.6433841851, 0.2665886902],
        [0.14273602077, 0.07622830502, 0.07410379205, 0.02841153906, 0.29649234101,
         0.06080168222,
         1.2676294872, 0.4346729136, 0.3990823971, 0.1474269043, 2.4286142498,
         0.4177930055, 0.2638647346,
         1.5385836086, 0.5694061084, 0.4958587592, 0.2197325646, 1.8495181200,
         0.3473107718, 0.2523485577],
    ),
}  # fmt: skip


@pytest.mark.parametrize("condition", sorted(R_MULTI))
def test_the_multiple_item_model_equals_ictreg(condition: str, multi: pd.DataFrame) -> None:
    """Every coefficient and standard error to 4 significant digits, the log-likelihood
    to 1e-5 (R printed to 10 digits)."""
    llf, coef, se = R_MULTI[condition]
    fit = list_regression_multi(FORMULA, multi, treat="treat", items=3, condition=condition)
    assert fit.converged and fit.llf == pytest.approx(llf, abs=1e-5)
    assert list(fit.prevalence.index) == ["affirm", "race"]
    assert all(same_4_digits(a, b) for a, b in zip(fit.params, coef, strict=True)), list(fit.params)
    assert all(same_4_digits(a, b) for a, b in zip(fit.bse, se, strict=True)), list(fit.bse)
    assert "sensitive.race.south:age" in fit.params.index


def test_indicators_fit_where_ictreg_stops(multi: pd.DataFrame) -> None:
    """``multi.condition = "indicators"`` stops in R (``object 'se.treat' not found``, a
    name R never assigns on that path). Ours fits, and shows what R would have met: no
    race respondent with a control count of 0 says yes, so that indicator runs to the
    boundary (below -20, its SE vast) while the other coefficients stay finite; the fit
    is at least the "level" model's (it nests it), and each item's prevalence stays
    within 2 SE of the "level" one."""
    level = list_regression_multi(FORMULA, multi, treat="treat", items=3, condition="level")
    ind = list_regression_multi(FORMULA, multi, treat="treat", items=3, condition="indicators")
    assert ind.llf >= level.llf - 1e-6
    assert ind.params["sensitive.race.y0=0"] < -20 and ind.bse["sensitive.race.y0=0"] > 1e3
    finite = ind.bse.drop("sensitive.race.y0=0")
    assert np.isfinite(finite).all() and finite.max() < 5
    diff = (ind.prevalence - level.prevalence).abs()
    assert (diff < 2 * level.prevalence_se).all()


@pytest.mark.parametrize("condition", ["none", "level", "indicators"])
def test_the_score_is_the_gradient_of_the_log_likelihood(condition: str) -> None:
    """Central differences (step 1e-6) of the log-likelihood against the analytic score
    at a random point, within 1e-5 relative."""
    rng = np.random.default_rng(7)
    n, j = 400, 3
    arm = rng.integers(0, 3, n)
    x = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = rng.binomial(j, 0.4, n) + (arm > 0) * (rng.random(n) < 0.4)
    lik = _MultiLikelihood(y.astype(float), arm, x, j, 2, condition)  # type: ignore[arg-type]
    theta = rng.normal(scale=0.5, size=lik.size)
    _, score = lik.value_and_score(theta)
    numeric = numeric_gradient(lambda th: lik.value_and_score(th)[0], theta)
    assert np.allclose(score, numeric, rtol=1e-5, atol=1e-4)


def test_the_model_recovers_simulated_items_within_4_se() -> None:
    """Two sensitive items of prevalence 0.25 and 0.6 whose answers depend on a
    covariate and (level model) on the control count: each item's prevalence estimate
    within 4 of its SE of the truth of the sample, and each coefficient within 4 SE."""
    rng = np.random.default_rng(11)
    n, j = 6000, 3
    arm = rng.integers(0, 3, n)
    x = rng.normal(size=n)
    y0 = rng.binomial(j, 1 / (1 + np.exp(-(0.2 - 0.5 * x))))
    truth = {1: (-1.6, 0.8, 0.3), 2: (0.0, -0.7, 0.2)}
    z = np.zeros(n, dtype=bool)
    share = {}
    for m, (b0, b1, a) in truth.items():
        p = 1 / (1 + np.exp(-(b0 + b1 * x + a * y0)))
        z |= (arm == m) & (rng.random(n) < p)
        share[m] = float(p.mean())
    data = pd.DataFrame({"y": y0 + z, "x": x, "treat": arm})
    fit = list_regression_multi("y ~ x", data, treat="treat", items=j, condition="level")
    assert fit.converged
    for m, (b0, b1, a) in truth.items():
        names = [f"sensitive.{m}.{s}" for s in ("Intercept", "x", "y0")]
        want = pd.Series([b0, b1, a], index=names)
        assert ((fit.params[want.index] - want).abs() < Z4 * fit.bse[want.index]).all()
        assert abs(fit.prevalence[m] - share[m]) < Z4 * fit.prevalence_se[m]
    control = fit.params[["control.Intercept", "control.x"]].to_numpy()
    assert (np.abs(control - [0.2, -0.5]) < Z4 * fit.bse[["control.Intercept", "control.x"]]).all()


@pytest.mark.parametrize(
    "column, values, match",
    [
        ("treat", [0, 1, 2.5, 0, 1, 2], "treat must hold 0 .* row 2 holds 2.5"),
        ("treat", ["a", "b", "a", "b", "a", "b"], "treat must hold 'control'"),
        ("treat", [0, 0, 0, 0, 0, 0], r"1\.\.50 treated lists .* got 0"),
        ("treat", [0, 0, *range(1, 5)], "each list needs at least 2 reports; treat = 1 has 1"),
        ("treat", [0, 0, 0, 1, 1, 2], "each list needs at least 2 reports; treat = 2 has 1"),
        ("y", [0, 4, 1, 2, 3, 4], r"counts\[1\] = 4.0 is not a count of 0\.\.3"),
    ],
)
def test_malformed_multiple_item_data_are_refused(column, values, match) -> None:
    data = pd.DataFrame({"y": [0, 1, 1, 2, 3, 4], "treat": [0, 0, 1, 1, 2, 2], "x": range(6)})
    data[column] = values
    with pytest.raises(ValueError, match=match):
        list_regression_multi("y ~ x", data, treat="treat", items=3)


def test_an_unknown_condition_and_a_missing_column_are_named(multi: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="condition must be 'none', 'level' or 'indicators'"):
        list_regression_multi(FORMULA, multi, treat="treat", items=3, condition="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="treat must name a column"):
        list_regression_multi(FORMULA, multi, treat="arm", items=3)


def test_more_lists_than_allowed_are_refused_before_any_fit() -> None:
    """51 treated lists (one over ``MAX_LISTS``) is refused by name; the posterior takes
    the same checks (a list of one report)."""
    from deniable.analysis import list_bayes

    n = 2 * 52
    data = pd.DataFrame({"y": [0, 1] * 52, "treat": np.repeat(np.arange(52), 2), "x": range(n)})
    with pytest.raises(ValueError, match=r"1\.\.50 treated lists beside the control, got 51"):
        list_regression_multi("y ~ x", data, treat="treat", items=3)
    small = pd.DataFrame({"y": [0, 1, 1, 2, 3], "treat": [0, 0, 1, 1, 2], "x": range(5)})
    with pytest.raises(ValueError, match="treat = 2 has 1"):
        list_bayes("y ~ x", small, treat="treat", items=3, multi_condition="none")

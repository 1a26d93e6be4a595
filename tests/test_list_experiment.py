"""The list experiment: agreement with R's ``list`` 9.2.6 on its own data, and the
estimators' statistics under simulation.

Reference values come from R 4.2.2 running the package's sources (``R/ictreg.R``,
``R/ict.test.R``, ``R/combinedListDirect.R``; dependencies from Debian: r-cran-vgam,
-magic, -mass, -quadprog, -corpcor, -mvtnorm, -sandwich, -arm; ``gamlss.dist`` is not
packaged and is used only by the beta-binomial model, not called here). The data are in
``tests/data`` (see its README). For ``method = "ml"``, R's EM stops once an iteration
raises the log-likelihood by less than 1e-8, which leaves coefficients up to 4e-4 from
the maximum and the unconstrained model's ``psi1`` standard errors off by 0.15%; the
reference values below are R's own code with that tolerance set to 1e-13 (same
log-likelihood to 1e-6), as docs/analysis.md explains.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from deniable.analysis import (
    list_combined,
    list_design_effect_test,
    list_difference_in_means,
    list_regression,
)
from deniable.analysis._list._design_effect import chi_bar_squared_weights

DATA = Path(__file__).parent / "data"


def same_4_digits(ours: float, r: float) -> bool:
    """Within half a unit of R's fourth significant digit."""
    return abs(ours - r) <= 0.5 * 10 ** (math.floor(math.log10(abs(r))) - 3)


@pytest.fixture(scope="module")
def race() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_race.csv")


@pytest.fixture(scope="module")
def affirm() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_affirm.csv")


@pytest.fixture(scope="module")
def combined() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_combined.csv")


def test_difference_in_means_equals_ictreg_lm(race: pd.DataFrame) -> None:
    # ictreg(y ~ 1, data = race, treat = "treat", J = 3, method = "lm")
    est = list_difference_in_means(race.y, race.treat, items=3, variance="hc3")
    assert same_4_digits(est.estimate, 0.06779744025)
    assert same_4_digits(est.std_error, 0.04961912056)
    neyman = list_difference_in_means(race.y, race.treat, items=3)
    assert neyman.estimate == est.estimate and neyman.std_error < est.std_error


def test_combined_list_and_direct_equals_combinedlistdirect(combined: pd.DataFrame) -> None:
    # combinedListDirect(list1N ~ list1treat [+ gender + ideology + education + race],
    #   data = subset(na.omit(combinedListExps), directsfirst == 1), ...)
    plain = list_combined(combined.list1N, combined.list1treat, combined.direct1, items=4)
    x = pd.get_dummies(combined[["gender", "ideology", "education", "race"]], drop_first=True)
    adjusted = list_combined(
        combined.list1N,
        combined.list1treat,
        combined.direct1,
        items=4,
        covariates=x.to_numpy(float),
    )
    plain_ref = [0.66561842105, 0.04840343151, 0.656, 0.02126575804, 0.74773909564,
                 0.08441010011, 1.05396151985, 0.09452733799, 0.56809710260, 0.06626650660,
                 0.04243974719, 0.11842337173]  # fmt: skip
    adjusted_ref = [0.66457357908, 0.04732327191, 0.656, 0.02126575804, 0.73621744158,
                    0.08204347426, 1.05817729700, 0.09223538606, 0.52820522561, 0.04366577709,
                    0.03896286164, 0.26241451057]  # fmt: skip
    for res, ref in ((plain, plain_ref), (adjusted, adjusted_ref)):
        ours = [
            res.combined.estimate, res.combined.std_error, res.direct.estimate,
            res.direct.std_error, res.conventional.estimate, res.conventional.std_error,
            *res.placebo_direct_yes[:3], *res.placebo_direct_share[:3],
        ]  # fmt: skip
        assert all(same_4_digits(a, b) for a, b in zip(ours, ref, strict=True)), (ours, ref)
        assert res.placebo_direct_yes[3] == 328 and res.placebo_direct_share[3] == 500


def test_design_effect_test_equals_ict_test(race: pd.DataFrame, affirm: pd.DataFrame) -> None:
    # set.seed(1); ict.test(affirm$y, affirm$treat, J = 3, gms = TRUE)  (and race; gms = FALSE)
    a = list_design_effect_test(affirm.y, affirm.treat, items=3, selection="list_package")
    r = list_design_effect_test(race.y, race.treat, items=3, selection="list_package")
    assert same_4_digits(a.pvalue, 0.7881128368) and same_4_digits(r.pvalue, 0.04431108587)
    r_all = list_design_effect_test(race.y, race.treat, items=3, selection=None)
    assert same_4_digits(r_all.pvalue, 0.1538589175)
    assert list_design_effect_test(affirm.y, affirm.treat, items=3, selection=None).pvalue == 1.0
    # R's table of proportions (printed to 4 decimals)
    race_table = [[-0.0169, 0.0101, 0.0200, 0.0545], [0.0304, 0.2140, 0.3569, 0.3309]]
    race_se = [[0.0084, 0.0243, 0.0281, 0.0091], [0.0069, 0.0174, 0.0263, 0.0220]]
    assert np.array_equal(np.round(r.proportions, 4), race_table)
    assert np.array_equal(np.round(r.std_errors, 4), race_se)
    # the method's own moment selection keeps the three "yes" inequalities R drops two of
    assert same_4_digits(list_design_effect_test(race.y, race.treat, items=3).pvalue, 0.1538589175)
    # the ceiling: treated reporting J + 1 are seen to say "yes"
    assert r.revealed_yes == pytest.approx(34 / 624) and r.revealed_no == pytest.approx(19 / 624)


# list_regression against R's ictreg(method = "ml", overdispersed = FALSE) run to convergence
ML_CASES = {
    "race constrained": (
        "race", "y ~ south + age + male + college", True, -1444.394172,
        [-5.50815906316, 1.67553272865, 0.63584732258, 0.84636748137, -0.31532907927,
         1.19139522698, -0.29202683087, 0.03322366886, -0.25059403592, -0.51641053035],
        [1.02107253734, 0.55853175986, 0.16333551201, 0.49373458213, 0.47359641219,
         0.14368461056, 0.09692362430, 0.02767636498, 0.08194184863, 0.08368228699],
    ),
    "race unconstrained": (
        "race", "y ~ south + age + male + college", False, -1441.019765,
        [-6.22590472873, 1.37926717145, 0.65501722958, 1.36550286205, -0.18217458687,
         1.15623391771, -0.29867895406, 0.03142645977, -0.21774339335, -0.48813851215,
         3.77971222565, -0.26984281427, -0.12817453852, -1.68811260471, -0.95363898649],
        [1.04567339265, 0.81959915479, 0.20729771670, 0.61204494620, 0.56861906141,
         0.15647014020, 0.10683718174, 0.03173437059, 0.08580936998, 0.08664529189,
         2.15478376872, 0.58982760542, 0.15712128863, 1.62986954091, 0.71437437556],
    ),
    "affirm": (
        "affirm", "y ~ age + college + male + south", True, -1434.54203,
        [-1.29849061236, 0.29526146284, -0.34316242090, 0.03959954556, 1.17678569354,
         1.38795104984, 0.02779689624, -0.67058290838, -0.35283020880, -0.23445105571],
        [0.55634740934, 0.10118515959, 0.33579583822, 0.34630798431, 0.48002635185,
         0.15867532330, 0.02844533617, 0.09624760965, 0.09239570126, 0.10760473363],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(ML_CASES))
def test_ml_regression_equals_ictreg(case: str, race: pd.DataFrame, affirm: pd.DataFrame) -> None:
    name, formula, constrained, llf, coef, se = ML_CASES[case]
    data = {"race": race, "affirm": affirm}[name]
    fit = list_regression(formula, data, treat="treat", items=3, constrained=constrained)
    assert fit.converged and fit.llf == pytest.approx(llf, abs=1e-6)
    assert all(same_4_digits(a, b) for a, b in zip(fit.params, coef, strict=True)), list(fit.params)
    assert all(same_4_digits(a, b) for a, b in zip(fit.bse, se, strict=True)), list(fit.bse)
    # Imai (2011, Table 1, columns 5-6) prints the constrained race fit to 3 decimals
    if case == "race constrained":
        assert list(np.round(fit.params[:5], 3)) == [-5.508, 1.676, 0.636, 0.846, -0.315]


def _simulate(rng: np.random.Generator, n: int, prevalence: float, p_control: float, j: int):
    t = rng.random(n) < 0.5
    z = rng.random(n) < prevalence
    y0 = rng.binomial(j, p_control, n)
    return y0 + (t & z), t.astype(int), z


@pytest.mark.parametrize("prevalence", [0.0, 0.05, 0.5, 1.0])
def test_difference_in_means_is_unbiased_and_its_interval_covers(prevalence: float) -> None:
    rng = np.random.default_rng(20261127)
    j, p_c, n, surveys = 4, 0.4, 400, 2000
    cover, ests = 0, []
    for _ in range(surveys):
        y, t, _ = _simulate(rng, n, prevalence, p_c, j)
        est = list_difference_in_means(y, t, items=j)
        ests.append(est.estimate)
        lo, hi = est.confidence_interval(0.95)
        cover += lo <= prevalence <= hi
    # exact variance of one estimate given the groups' sizes is ~ (v1 + v0) / (n / 2)
    v0 = j * p_c * (1 - p_c)
    sd_one = math.sqrt((2 * v0 + prevalence * (1 - prevalence)) / (n / 2))
    assert abs(np.mean(ests) - prevalence) < 4 * sd_one / math.sqrt(surveys)
    # the Wald interval's coverage: 0.95 within 4 binomial SEs over the surveys
    assert abs(cover / surveys - 0.95) < 4 * math.sqrt(0.95 * 0.05 / surveys)


def test_design_effect_test_holds_its_size_and_finds_a_design_effect() -> None:
    rng = np.random.default_rng(7)
    j, n, surveys = 3, 1000, 400
    null_reject = effect_reject = 0
    for _ in range(surveys):
        y, t, z = _simulate(rng, n, 0.3, 0.5, j)
        null_reject += list_design_effect_test(y, t, items=j).pvalue < 0.05
        # a design effect: beside the sensitive item, half the treated "no" respondents
        # deny one control item they hold (a contrast effect)
        y_eff = y - ((t == 1) & ~z & (y > 0) & (rng.random(n) < 0.5))
        effect_reject += list_design_effect_test(y_eff, t, items=j).pvalue < 0.05
    # Bonferroni at the least favourable null is conservative: size at most 0.05
    assert null_reject / surveys <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / surveys)
    assert effect_reject / surveys > 0.5


@pytest.mark.parametrize(("rho", "m"), [(-0.6, 3), (0.0, 3), (0.45, 3), (0.5, 4), (-0.3, 5)])
def test_chi_bar_squared_weights_are_the_projections_law(rho: float, m: int) -> None:
    lag = np.abs(np.subtract.outer(np.arange(m), np.arange(m)))
    cov = rho**lag  # AR(1): positive definite
    w = chi_bar_squared_weights(cov)
    # closed forms are exact to 3 dimensions; Genz's algorithm above (1e-7 asked)
    assert w.sum() == pytest.approx(1.0, abs=1e-12 if m <= 3 else 1e-5)
    assert chi_bar_squared_weights(cov[:2, :2])[2] == pytest.approx(math.acos(rho) / (2 * math.pi))
    # Monte Carlo: the number of active constraints of the projection of N(0, cov)
    from scipy.optimize import nnls

    rng = np.random.default_rng(3)
    draws = rng.multivariate_normal(np.zeros(m), cov, size=20_000)
    root = np.linalg.cholesky(np.linalg.inv(cov)).T
    active = np.array([(nnls(root, root @ d)[0] <= 1e-12).sum() for d in draws])
    freq = np.bincount(active, minlength=m + 1) / len(draws)
    assert np.all(np.abs(freq - w) < 4 * np.sqrt(w * (1 - w) / len(draws)) + 1e-9)


def test_ml_regression_recovers_a_simulated_model() -> None:
    rng = np.random.default_rng(11)
    n, j = 3000, 3
    x = rng.normal(size=n)
    z = rng.random(n) < 1 / (1 + np.exp(-(-1.0 + 0.8 * x)))
    y0 = rng.binomial(j, 1 / (1 + np.exp(-(0.2 - 0.5 * x))))
    t = rng.random(n) < 0.5
    data = pd.DataFrame({"y": y0 + (t & z), "x": x, "treat": t.astype(int)})
    fit = list_regression("y ~ x", data, treat="treat", items=j)
    truth = np.array([-1.0, 0.8, 0.2, -0.5])
    assert np.all(np.abs(fit.params.to_numpy() - truth) < 4 * fit.bse.to_numpy())
    dim = list_difference_in_means(data.y, data.treat, items=j)
    assert abs(fit.prevalence - dim.estimate) < 2 * dim.std_error
    assert fit.prevalence_se < dim.std_error  # the model's information is larger


@pytest.mark.parametrize(
    ("counts", "treated", "items", "match"),
    [
        ([0, 1, 4, 2], [1, 0, 0, 1], 3, r"counts\[2\] = 4.0 is not a count of 0\.\.3 \(control"),
        ([0, 1, 1.5, 2], [1, 0, 0, 1], 3, r"counts\[2\]"),
        ([0, 1, 1, 2], [1, 0, 2, 1], 3, "treated must hold 0"),
        ([0, 1, 1, 2], [1, 0, 0, 1], 10**9, "items .* must lie in 1..50"),
        ([0, 1, 1, 2], [1, 0, 0, 1], 0, "items"),
        ([0, 1, 1, 2], [1, 1, 1, 0], 3, "each group needs at least 2"),
        ([0, 1, 1], [1, 0, 0, 1], 3, "one length"),
    ],
)
def test_malformed_reports_are_refused(counts, treated, items, match) -> None:
    with pytest.raises(ValueError, match=match):
        list_difference_in_means(counts, treated, items=items)


def test_the_one_moment_case_is_a_one_sided_normal_test() -> None:
    # one moment left: the chi-bar-squared law is the one-sided normal test
    rng = np.random.default_rng(5)
    y, t, _ = _simulate(rng, 600, 0.2, 0.3, 1)
    res = list_design_effect_test(y, t, items=1, selection=None)
    p_yes = stats.norm.cdf(res.proportions[0, 0] / res.std_errors[0, 0])
    assert res.pvalue_yes == pytest.approx(p_yes)

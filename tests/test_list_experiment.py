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
from deniable.list_experiment._design_effect import chi_bar_squared_weights

from .conftest import Z4

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


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
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


@pytest.mark.parametrize("j", [1, 2, 3, 5])
def test_the_liar_model_is_a_distribution_and_its_score_is_the_gradient(j: int) -> None:
    """For a row of covariates, the treated counts 0..J+1 have probabilities that add
    to 1 under the ceiling and floor liar model (J = 1 included, where a count of 1 can
    be a floor liar's truth or a ceiling liar's lie), and the analytic score of the log
    posterior equals its central differences."""
    from deniable.list_experiment._liars import LiarLikelihood, liar_prior_scales

    rng = np.random.default_rng(j)
    n = j + 2
    x = np.column_stack([np.ones(n), np.full(n, rng.normal())])
    y = np.arange(n, dtype=np.float64)
    scales = liar_prior_scales(["Intercept", "x"])
    theta = rng.normal(size=8)
    treated = LiarLikelihood(y, np.ones(n, bool), x, j, x, x, (scales, scales))
    plain = LiarLikelihood(y, np.ones(n, bool), x, j, x, x, (None, None))
    rows = [plain.value_and_score(theta)[0]]
    for k in range(n):  # each count alone: its log-probability
        one = LiarLikelihood(y[k : k + 1], np.ones(1, bool), x[k : k + 1], j, x[k : k + 1],
                             x[k : k + 1], (None, None))  # fmt: skip
        rows.append(one.value_and_score(theta)[0])
    assert math.fsum(np.exp(rows[1:])) == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(rows[1:]) == pytest.approx(rows[0], abs=1e-10)
    both = np.concatenate([y, np.minimum(y, j), y])  # control counts at most J
    mixed = LiarLikelihood(
        both, np.repeat([True, False, True], n), np.tile(x, (3, 1)), j, np.tile(x, (3, 1)),
        np.tile(x, (3, 1)), (scales, scales),
    )  # fmt: skip
    for lik in (treated, mixed):
        _, score = lik.value_and_score(theta)
        h, at = 1e-6, lik.value_and_score
        numeric = [(at(theta + h * e)[0] - at(theta - h * e)[0]) / (2 * h) for e in np.eye(8)]
        np.testing.assert_allclose(score, numeric, rtol=1e-6, atol=1e-6)


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_the_ceiling_model_recovers_a_population_of_ceiling_liars() -> None:
    """20,000 respondents, J = 3, control items held with probability 0.7 (34% hold all
    three), prevalence 0.3, and 60% of those whose truthful count would be 4 answer 3.
    The model without liars misses the prevalence by more than 4 standard errors; the
    ceiling model is within 4 of the truth, and so is its liars' share."""
    rng = np.random.default_rng(2012)
    n, j = 20_000, 3
    t = rng.random(n) < 0.5
    z = rng.random(n) < 0.3
    y0 = rng.binomial(j, 0.7, n)
    lie = t & z & (y0 == j) & (rng.random(n) < 0.6)
    data = pd.DataFrame({"y": y0 + (t & z) - lie, "treat": t.astype(int)})
    naive = list_regression("y ~ 1", data, treat="treat", items=j)
    assert abs(naive.prevalence - 0.3) > Z4 * naive.prevalence_se, naive.prevalence
    fit = list_regression("y ~ 1", data, treat="treat", items=j, ceiling=True)
    assert fit.converged and abs(fit.prevalence - 0.3) < Z4 * fit.prevalence_se
    share = fit.params["ceiling.Intercept"]
    assert abs(share - math.log(0.6 / 0.4)) < Z4 * fit.bse["ceiling.Intercept"]
    with pytest.raises(ValueError, match="constrained=True"):
        list_regression("y ~ 1", data, treat="treat", items=j, constrained=False, floor=True)
    with pytest.raises(ValueError, match="liar_prior"):
        list_regression("y ~ 1", data, treat="treat", items=j, floor=True, liar_prior="flat")


@pytest.mark.slow
def test_a_liars_share_at_its_boundary_is_held_there_and_the_interval_covers() -> None:
    """Issue 65: 200 surveys of bench/list_liars.py's setting with ceiling liars (0.3)
    and none at the floor, so that the floor share's maximum is at 0 in many: there it
    is held (NaN standard errors and a warning) instead of running off with a standard
    error of 10^5 and converged=True; no finite standard error above 100; the 95%
    interval covers 0.3 within 4 binomial standard errors of 0.95 (bench/list_liars.py
    runs 1,000 a setting: 0.955 with both kinds of liars)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "list_liars", Path(__file__).resolve().parents[1] / "bench" / "list_liars.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    surveys = 200
    result = bench.run(surveys, 2_000, 0.3, 0.0, seed=65)
    assert result["held"] >= 20, result  # the boundary is met, and handled
    assert result["largest_finite_se"] <= 100, result
    assert result["coverage"] >= 0.95 - Z4 * math.sqrt(0.95 * 0.05 / surveys), result
    assert abs(result["mean"] - 0.3) <= Z4 * result["sd"] / math.sqrt(surveys), result


def test_a_floor_share_at_zero_gives_nan_standard_errors_and_a_warning() -> None:
    """One survey whose floor liars' maximum is at 0 (seeded: the first such among
    the seeds 0-2 of this setting): the floor block is held, its standard errors NaN,
    with a warning; the rest finite and the fit converged."""
    rng = np.random.default_rng(2)
    n, j = 2_000, 3
    t = rng.random(n) < 0.5
    z = rng.random(n) < 0.3
    y0 = rng.binomial(j, 0.5, n)
    ceiling = t & z & (y0 == j) & (rng.random(n) < 0.3)
    data = pd.DataFrame({"y": y0 + (t & z) - ceiling, "treat": t.astype(int)})
    with pytest.warns(UserWarning, match="floor liars' share is at its boundary"):
        fit = list_regression("y ~ 1", data, treat="treat", items=j, ceiling=True, floor=True)
    assert fit.converged and math.isnan(fit.bse["floor.Intercept"])
    assert fit.params["floor.Intercept"] == -30.0
    others = fit.bse.drop("floor.Intercept")
    assert np.all(np.isfinite(others)) and others.max() < 100


# ictreg's documented ceiling and floor examples (Blair & Imai 2012, Table 7, columns 3-8:
# affirm, J = 3, liars modelled on age + college + male + south, ceiling.fit and
# floor.fit "bayesglm"), R's EM run 3,000 iterations (its own stopping rule halts it early:
# the log-likelihood it watches carries another prior than the M-step's; 40,000 give the
# same digits). Rows: sensitive, control, floor, ceiling coefficients; nan where R's
# variance is negative. R's llik is the log-likelihood plus log Cauchy(b0; 2.5) - log
# Cauchy(b0; 10) for each liar intercept b0 (its information and its llik take scale 2.5).
LIAR_CASES = {
    "ceiling": (
        ("ceiling",), -1434.1836755,
        [-1.29179905147, 0.29440728989, -0.34427758186, 0.03848226814, 1.17544452834,
         1.38740531596, 0.02786179006, -0.67049456031, -0.35272284599, -0.23422365592,
         -3.51723266735, -0.72845042989, -0.10276973842, -0.11234877508, -0.17132508105],
        [0.55643505064, 0.10116096210, 0.33589037064, 0.34637555316, 0.47994113578,
         0.15869558623, 0.02844636083, 0.09625290285, 0.09239938327, 0.10758863041,
         math.nan, math.nan, 1.72675654859, 1.73076198417, 1.67887503546],
    ),
    "floor": (
        ("floor",), -1432.24944615,
        [-1.51721681496, 0.35126559703, -0.36987148426, 0.10155198901, 1.14200232544,
         1.40636654894, 0.02300484563, -0.66787123168, -0.35821275441, -0.22821039941,
         -6.10974880090, 0.88549192917, -0.47823354318, 0.28707624324, -1.64722059430],
        [0.58232213148, 0.10974912633, 0.34171196137, 0.35593201191, 0.49307728878,
         0.15824522735, 0.02845715410, 0.09616382772, 0.09243133625, 0.10802261084,
         math.nan, math.nan, 0.84648093395, 1.31259366376, 2.14330114486],
    ),
    "both": (
        ("floor", "ceiling"), -1431.90833333,
        [-1.51064722853, 0.35041295779, -0.37097564404, 0.10043232675, 1.14060994555,
         1.40583709749, 0.02306937434, -0.66778393593, -0.35810729356, -0.22798564543,
         -6.11083851646, 0.88562333094, -0.47836722275, 0.28709344685, -1.64578779409,
         -3.56888077701, -0.72220552012, -0.10440740986, -0.10953899297, -0.16816570668],
        [0.58240600492, 0.10971953442, 0.34180458941, 0.35598939564, 0.49293548686,
         0.15826983700, 0.02845867193, 0.09616945189, 0.09243492658, 0.10800398401,
         math.nan, math.nan, 0.84275152021, 1.31201942989, 2.14308102056,
         math.nan, math.nan, 1.72639365151, 1.73135966796, 1.68280097558],
    ),
}  # fmt: skip


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
@pytest.mark.parametrize("case", sorted(LIAR_CASES))
def test_liar_models_equal_ictregs_documented_examples(case: str, affirm: pd.DataFrame) -> None:
    """``liar_prior="list_package"`` (bayesglm's fixed point, R's information) gives R's
    coefficients to 4 significant digits and its standard errors within 2e-4 relative
    (R's come from differences of the log-likelihood with step 1e-3: the floor's college
    SE is 0.846481 there, 0.846417 exactly); the log-likelihood is R's. ``"cauchy"``, the
    posterior mode, has a larger log posterior than R's estimate and a zero score."""
    from scipy import stats as st

    liars, llik, coef, se = LIAR_CASES[case]
    rhs = "~ age + college + male + south"
    options = {name: rhs for name in liars}
    formula = "y ~ age + college + male + south"
    fit = list_regression(formula, affirm, treat="treat", items=3, liar_prior="list_package",
                          **options)  # fmt: skip
    assert fit.converged
    assert all(same_4_digits(a, b) for a, b in zip(fit.params, coef, strict=True)), list(fit.params)
    np.testing.assert_allclose(fit.bse, se, rtol=2e-4)  # nan where R's is
    mismatch = sum(
        st.cauchy.logpdf(fit.params[f"{name}.Intercept"], scale=2.5)
        - st.cauchy.logpdf(fit.params[f"{name}.Intercept"], scale=10)
        for name in liars
    )
    assert fit.llf + mismatch == pytest.approx(llik, abs=1e-5)
    mode = list_regression(formula, affirm, treat="treat", items=3, liar_prior="cauchy", **options)
    assert mode.converged and np.all(np.isfinite(mode.bse))

    def log_posterior(params: pd.Series) -> float:
        prior = sum(
            st.cauchy.logpdf(v, scale=10 if k.endswith("Intercept") else 2.5)
            for k, v in params.items()
            if k.startswith(("floor.", "ceiling."))
        )
        return float(prior)

    assert mode.llf + log_posterior(mode.params) > fit.llf + log_posterior(fit.params)


# ictreg's documented least-squares examples on the race data (Imai 2011, Table 1,
# columns 1-4): "lm" as R gives it; "nls" with R's nls tolerance set to 1e-12 (its
# default 1e-5 stops early: the control step's sum of squares 38.34766044232 there,
# 38.34766043879 at the minimum, the sensitive intercept -7.0843 against -7.0837).
LS_CASES = {
    "lm": (
        [-0.4342989836558, 0.2019751181445, 0.0730938236893, 0.1802288991114, 0.1144615847549,
         2.4060641954122, -0.1802073264148, 0.0204734383722, -0.2017671052589, -0.3940769297005],
        [0.1603255620678, 0.1175962452479, 0.0305081044987, 0.0984640373476, 0.0977527074243,
         0.1051137627870, 0.0744967496110, 0.0199801871051, 0.0652181453776, 0.0640567596816],
    ),
    "nls": (
        [-7.0836693793978, 2.4897057055380, 0.2609594930467, 3.0962729224786, 0.6122670476210,
         1.3881130130892, -0.2765302440228, 0.0330647773331, -0.3322204379284, -0.6617426462792],
        [3.6682576585195, 1.2681247810122, 0.3146571221983, 2.8279162718084, 1.0294983982351,
         0.1868327217414, 0.1161733152539, 0.0350307967642, 0.1070147952234, 0.1131420588134],
    ),
}  # fmt: skip


@pytest.mark.parametrize("method", sorted(LS_CASES))
def test_least_squares_equal_ictregs_documented_examples(method: str, race: pd.DataFrame) -> None:
    from deniable.analysis import list_least_squares

    coef, se = LS_CASES[method]
    fit = list_least_squares(
        "y ~ south + age + male + college", race, treat="treat", items=3, method=method
    )
    assert fit.converged and math.isnan(fit.llf)
    assert all(same_4_digits(a, b) for a, b in zip(fit.params, coef, strict=True)), list(fit.params)
    assert all(same_4_digits(a, b) for a, b in zip(fit.bse, se, strict=True)), list(fit.bse)
    with pytest.raises(ValueError, match="method must be 'lm' or 'nls'"):
        list_least_squares("y ~ south", race, treat="treat", items=3, method="ml")  # type: ignore[arg-type]


def test_least_squares_recover_a_simulated_model() -> None:
    """20,000 respondents, J = 4, a logistic sensitive model and control items on one
    covariate: two-step NLS finds every coefficient within 4 of its standard errors, and
    both fits' prevalence is within 4 standard errors of the population's."""
    from deniable.analysis import list_least_squares

    rng = np.random.default_rng(2011)
    n, j = 20_000, 4
    x = rng.normal(size=n)
    t = rng.random(n) < 0.5
    g = 1 / (1 + np.exp(-(-0.8 + 0.9 * x)))
    h = 1 / (1 + np.exp(-(0.3 - 0.5 * x)))
    z = rng.random(n) < g
    data = pd.DataFrame({"y": rng.binomial(j, h) + (t & z), "x": x, "treat": t.astype(int)})
    nls = list_least_squares("y ~ x", data, treat="treat", items=j, method="nls")
    truth = np.array([-0.8, 0.9, 0.3, -0.5])
    assert np.all(np.abs(nls.params.to_numpy() - truth) < Z4 * nls.bse.to_numpy()), nls.params
    for fit in (nls, list_least_squares("y ~ x", data, treat="treat", items=j)):
        assert abs(fit.prevalence - g.mean()) < Z4 * fit.prevalence_se


# ictreg(y ~ age + college + male + south, treat = "treat", J = 3, data = race,
# method = "ml", error = "topcode"). (The documented example spells it "topcoded", which
# R does not know: it silently fits the model without error; we refuse it by name.)
TOPCODE_COEF = [-5.7847100801591, 0.6748199813479, -0.3656654169941, 0.8891054896104,
                1.7640112314072, 1.1936127983446, 0.0321321018176, -0.5143668736952,
                -0.2495638166827, -0.2943551636325]  # fmt: skip
TOPCODE_SE = [1.2721075815801, 0.1965746623670, 0.5100783700863, 0.5315380505123,
              0.6282785892781, 0.1446081655665, 0.0279966336349, 0.0837902499007,
              0.0821965988222, 0.0973944470690]  # fmt: skip


def test_the_top_coding_error_model_equals_ictreg(race: pd.DataFrame) -> None:
    fit = list_regression(
        "y ~ age + college + male + south", race, treat="treat", items=3, error="topcode"
    )
    assert fit.converged and fit.llf == pytest.approx(-1444.312, abs=5e-4)
    assert all(same_4_digits(a, b) for a, b in zip(fit.params[:10], TOPCODE_COEF, strict=True))
    assert all(same_4_digits(a, b) for a, b in zip(fit.bse[:10], TOPCODE_SE, strict=True))
    assert same_4_digits(1 / (1 + math.exp(-fit.params["error.log_odds"])), 0.002369102)
    with pytest.raises(ValueError, match="error must be 'none', 'topcode' or 'uniform'"):
        list_regression("y ~ age", race, treat="treat", items=3, error="topcoded")  # type: ignore[arg-type]


def test_the_top_coding_model_recovers_a_population_of_top_coders() -> None:
    """20,000 respondents, J = 3, prevalence 0.2, and 8% who answer the list's largest
    count whatever their items: the model without error misses the prevalence by more
    than 4 standard errors; the top-coding model is within 4 of it and of the 8%. Its
    score is the gradient of its log-likelihood (central differences)."""
    from deniable.list_experiment._response_error import ResponseErrorLikelihood

    rng = np.random.default_rng(2018)
    n, j = 20_000, 3
    t = rng.random(n) < 0.5
    z = rng.random(n) < 0.2
    y = rng.binomial(j, 0.4, n) + (t & z)
    top = rng.random(n) < 0.08
    y = np.where(top, np.where(t, j + 1, j), y)
    data = pd.DataFrame({"y": y, "treat": t.astype(int)})
    naive = list_regression("y ~ 1", data, treat="treat", items=j)
    assert abs(naive.prevalence - 0.2) > Z4 * naive.prevalence_se, naive.prevalence
    fit = list_regression("y ~ 1", data, treat="treat", items=j, error="topcode")
    assert abs(fit.prevalence - 0.2) < Z4 * fit.prevalence_se
    log_odds = fit.params["error.log_odds"]
    assert abs(log_odds - math.log(0.08 / 0.92)) < Z4 * fit.bse["error.log_odds"]
    lik = ResponseErrorLikelihood(y.astype(float), t, np.ones((n, 1)), j, "topcode")
    theta = fit.params.to_numpy() + 0.1
    h, at = 1e-6, lik.value_and_score
    numeric = [(at(theta + h * e)[0] - at(theta - h * e)[0]) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(at(theta)[1], numeric, rtol=1e-6)


# ictreg(y ~ age + college + male + south, treat = "treat", J = 3, data = affirm,
# method = "ml", error = "uniform"): llik -1429.32, p0 at 0 (2.7e-13; R's CI NaN), p1
# 0.07866516. (On the race data R's own fit stops: its Hessian is singular.)
UNIFORM_COEF = [-1.8861159226089, 0.4411562340675, -0.5165556404556, 0.1873794168225,
                1.6363438758621, 1.3934493841661, 0.0401513827154, -0.6929981872936,
                -0.3757207229744, -0.2751010092511]  # fmt: skip
UNIFORM_SE = [0.7496246668808, 0.1537004918032, 0.4097260658755, 0.4420824191727,
              0.7667566529086, 0.1625791364352, 0.0301303865837, 0.1003847251604,
              0.0971744837213, 0.1166450390719]  # fmt: skip


def test_the_uniform_error_model_equals_ictreg(affirm: pd.DataFrame) -> None:
    fit = list_regression(
        "y ~ age + college + male + south", affirm, treat="treat", items=3, error="uniform"
    )
    assert fit.converged and fit.llf == pytest.approx(-1429.32, abs=5e-3)
    assert all(same_4_digits(a, b) for a, b in zip(fit.params[:10], UNIFORM_COEF, strict=True))
    assert all(same_4_digits(a, b) for a, b in zip(fit.bse[:10], UNIFORM_SE, strict=True))
    share = 1 / (1 + np.exp(-fit.params[["error.log_odds_control", "error.log_odds_treated"]]))
    assert share.iloc[0] < 1e-9 and same_4_digits(share.iloc[1], 0.07866516)


def test_the_hausman_test_equals_ict_hausman_test(race: pd.DataFrame, affirm: pd.DataFrame) -> None:
    """R's ict.hausman.test(ml, nls) on the race and affirm data (`y ~ south + age + male
    + college`, both fits run to convergence as above): race -7.38074805327 (negative:
    refused, or p = 0.689077081264 with abs = TRUE), affirm 1.34329773519, p =
    0.999346161925, 10 degrees of freedom."""
    from deniable.analysis import list_hausman_test, list_least_squares

    formula = "y ~ south + age + male + college"
    for data, statistic, pvalue in ((race, -7.38074805327, 0.689077081264),
                                    (affirm, 1.34329773519, 0.999346161925)):  # fmt: skip
        ml = list_regression(formula, data, treat="treat", items=3)
        nls = list_least_squares(formula, data, treat="treat", items=3, method="nls")
        test = list_hausman_test(ml, nls, absolute=True)
        assert same_4_digits(test.statistic, statistic) and test.df == 10
        assert same_4_digits(test.pvalue, pvalue)
    race_ml = list_regression(formula, race, treat="treat", items=3)
    race_nls = list_least_squares(formula, race, treat="treat", items=3, method="nls")
    with pytest.raises(ValueError, match="negative"):
        list_hausman_test(race_ml, race_nls)
    with pytest.raises(ValueError, match="same formula"):
        list_hausman_test(ml, list_least_squares("y ~ south", affirm, treat="treat", items=3))


@pytest.mark.slow
def test_the_hausman_test_holds_its_size_under_the_model() -> None:
    """200 surveys of 2,000 drawn from the constrained model (J = 3, prevalence 0.3):
    the test at 5% rejects at most 0.05 + 4 binomial standard errors of them."""
    from deniable.analysis import list_hausman_test, list_least_squares

    rng = np.random.default_rng(1978)
    rejected = 0
    for _ in range(200):
        y, t, _ = _simulate(rng, 2000, 0.3, 0.5, 3)
        data = pd.DataFrame({"y": y, "treat": t})
        ml = list_regression("y ~ 1", data, treat="treat", items=3)
        nls = list_least_squares("y ~ 1", data, treat="treat", items=3, method="nls")
        rejected += list_hausman_test(ml, nls, absolute=True).pvalue < 0.05
    assert rejected / 200 <= 0.05 + Z4 * math.sqrt(0.05 * 0.95 / 200), rejected

"""Agreement with RRreg and GLMMRR for the models of issue 17 (four significant digits).

Reference values come from R 4.2.2 (Debian's r-base-core, r-cran-lme4) running RRreg
0.7.5 and GLMMRR 0.6.0, installed from their published sources with ``R CMD INSTALL``;
the R calls are written beside each value. Where a package's default tolerances stop
short of the maximum, the reference is the same package code run to convergence, and a
test pins the default fit's lower log-likelihood.

Where R differs on purpose (documented in docs/analysis.md):
* GLMMRR's Laplace approximation (lme4's) scales each cluster's integral by the penalised
  IRLS weights, not by the integrand's own curvature (``curvature="expected"`` gives
  lme4's); with many quadrature nodes both give the same likelihood.
* RRcor's standard errors are a bootstrap: they agree within its Monte Carlo error.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable import ForcedResponse, UnrelatedQuestion, Warner
from deniable.analysis import designs_by_row, rr_correlation, rr_linear, rr_logit, rr_mixed_logit
from deniable.data import load_rr_survey
from deniable.mechanisms import Kuk

SIG4 = 5e-4  # four significant digits
DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def plagiarism() -> dict:
    """GLMMRR's Plagiarism data with each row's design (crosswise or direct)."""
    data = load_rr_survey("GLMMRR/Plagiarism")
    keys, designs = designs_by_row(data, p1="RRp1", p2="RRp2")
    return {"frame": data.assign(design=keys), "designs": designs}


# RRglm(response ~ Gender + RR + pp + age, link = "RRlink.logit", RRmodel = RRmodel,
#       p1 = RRp1, p2 = RRp2, data = Plagiarism, etastart = rep(0.01, nrow(Plagiarism)),
#       control = glm.control(epsilon = 1e-14, maxit = 200))     # 16 IRLS steps
GLM_COEF = [0.834955629876, -0.044124109095, 1.332361846132, 2.389938865980, -0.263068366332]
GLM_SE = [3.072796647742, 0.519154727851, 0.522675667513, 1.084413041665, 0.132662848167]
GLM_LLIK = -400.44459539683
GLM_LLIK_DEFAULT = -400.444595972  # the help example's call (glm's epsilon 1e-8, 8 steps)
# RRglmGOF(RRglmOutput = <the fit above>): Pearson, deviance (112 patterns, 107 df),
# Hosmer-Lemeshow (10 groups, 8 df)
GOF = {"pearson": 93.8192936609, "deviance": 90.3753393836, "hosmer_lemeshow": 9.73004026589}
GOF_DF = {"pearson": 107, "deviance": 107, "hosmer_lemeshow": 8}


def test_rrglm_plagiarism_expected_information_and_gof(plagiarism: dict) -> None:
    fit = rr_logit(
        "response ~ Gender + RR + pp + age",
        plagiarism["frame"],
        plagiarism["designs"],
        group="design",
        information="expected",
    )
    assert fit.nobs == 802
    np.testing.assert_allclose(fit.params, GLM_COEF, rtol=SIG4)
    np.testing.assert_allclose(fit.bse, GLM_SE, rtol=SIG4)
    assert fit.llf == pytest.approx(GLM_LLIK, abs=1e-8)
    assert fit.llf >= GLM_LLIK_DEFAULT
    tests = fit.gof()
    for name, value in GOF.items():
        assert tests[name].statistic == pytest.approx(value, rel=SIG4), name
        assert tests[name].df == GOF_DF[name]
    # the p-value RRglmGOF printed for its Hosmer-Lemeshow test at the help example
    assert tests["hosmer_lemeshow"].pvalue == pytest.approx(0.284440003252, rel=1e-2)


RRGLMER = "response ~ Gender + RR + pp + (1 | age)"
# RRglmer(response ~ Gender + RR + pp + (1|age), link = "RRlink.logit", RRmodel = RRmodel,
#         p1 = RRp1, p2 = RRp2, data = Plagiarism, na.action = "na.omit",
#         etastart = rep(0.01, nrow(Plagiarism)), nAGQ = 1,
#         control = glmerControl(optimizer = "bobyqa", tolPwrss = 1e-10,
#                                optCtrl = list(rhobeg = 0.02, rhoend = 1e-10, maxfun = 1e5)))
# fixef, sqrt(diag(vcov)), the age intercept's SD, logLik
LAPLACE = (
    [-4.965335849954, 0.103375851256, 1.349562133555, 2.153828989724, 0.36985732063],
    [1.007497354086, 0.520585933017, 0.511969047577, 0.926266110469],
    -403.12682316939,
)
# the same with nAGQ = 25
AGQ25 = (
    [-4.976906309889, 0.107294841588, 1.323312002225, 2.163932188845, 0.369633949081],
    [1.017892086592, 0.525706156720, 0.518581431507, 0.927003916738],
    -403.13405600508,
)


@pytest.mark.parametrize(
    ("nodes", "curvature", "reference"), [(1, "expected", LAPLACE), (25, "observed", AGQ25)]
)
def test_rrglmer_plagiarism(plagiarism: dict, nodes: int, curvature: str, reference) -> None:
    coef, se, llik = reference
    fit = rr_mixed_logit(
        RRGLMER,
        plagiarism["frame"],
        plagiarism["designs"],
        group="design",
        quadrature=nodes,
        curvature=curvature,
    )
    assert fit.nobs == 802 and fit.converged
    np.testing.assert_allclose(fit.params, coef, rtol=SIG4)
    np.testing.assert_allclose(fit.bse.iloc[:4], se, rtol=SIG4)
    assert fit.llf == pytest.approx(llik, abs=1e-5)


def test_rrglmer_laplace_differs_only_by_its_scale(plagiarism: dict) -> None:
    """lme4's Laplace approximation scales by the IRLS weights (d mu/d eta)^2 / (mu (1 -
    mu)), which for GLMMRR's randomized-response link are not the integrand's curvature.
    Our Laplace (one node) uses the curvature; the two approximations differ by 1e-3 in
    log-likelihood here, and with 25 nodes either scale gives the same likelihood (so
    the difference is the approximation, not the model)."""
    frame, designs = plagiarism["frame"], plagiarism["designs"]
    ours = rr_mixed_logit(RRGLMER, frame, designs, group="design", quadrature=1)
    assert abs(ours.llf - LAPLACE[2]) > 5e-4
    both = [
        rr_mixed_logit(RRGLMER, frame, designs, group="design", quadrature=25, curvature=c)
        for c in ("observed", "expected")
    ]
    assert both[0].llf == pytest.approx(both[1].llf, abs=1e-7)
    assert both[0].llf == pytest.approx(AGQ25[2], abs=1e-5)
    with pytest.raises(ValueError, match="curvature must be"):
        rr_mixed_logit(RRGLMER, frame, designs, group="design", curvature="fisher")


# set.seed(3); RRlin(depvar ~ response + FR + nonRR, data = dat, models = c("Warner", "FR"),
#                    p.list = list(.3, c(.1, .15)), fit.n = 3)
# run to convergence: RRlin's own code with factr = 0, pgtol = 0 added to its optim
# control; standard errors from numDeriv::hessian of RRreg:::RRlin.ll at the optimum
# (RRlin's optim hessian agrees to 3 digits)
RRLIN_COEF = [-1.54837761254, 3.59753617103, -2.50365163832, 0.80431445012]
RRLIN_SIGMA = 6.97520852136
RRLIN_PI = [0.214038351140, 0.318105101100, 0.193453045736, 0.274403502023]
RRLIN_SE = [2.0368215677897, 1.6393885328460, 0.9846279993943, 0.3535729927844, 0.2982421904532]
RRLIN_PI_SE = [0.0439551758908, 0.0531631882811, 0.0431065381747]
RRLIN_LLIK = -2381.64559006
RRLIN_LLIK_DEFAULT = -2381.6456431749  # the help example's call, default tolerances
RRLIN_FR_DEFAULT = -2.508914527535  # its FR coefficient: 0.2% away from the maximum's


def test_rrlin_two_randomized_predictors() -> None:
    """The RRlin help example: a Warner and a forced-response predictor (RRreg's FR with
    p = (0.1, 0.15): forced "no" with 0.1, forced "yes" with 0.15) and a direct one."""
    data = pd.read_csv(DATA / "RRreg_RRlin_example.csv")
    designs = {"response": Warner(p=0.3), "FR": ForcedResponse(p_yes=0.15, p_no=0.1)}
    fit = rr_linear("depvar ~ response + FR + nonRR", data, designs)
    assert fit.nobs == 500 and fit.converged
    np.testing.assert_allclose(fit.params.iloc[:4], RRLIN_COEF, rtol=SIG4)
    assert fit.params["sigma"] == pytest.approx(RRLIN_SIGMA, rel=SIG4)
    cells = ["pi[0:0]", "pi[0:1]", "pi[1:0]", "pi[1:1]"]
    np.testing.assert_allclose(fit.params[cells], RRLIN_PI, rtol=SIG4)
    np.testing.assert_allclose(fit.bse.iloc[:5], RRLIN_SE, rtol=SIG4)
    np.testing.assert_allclose(fit.bse[cells[:3]], RRLIN_PI_SE, rtol=SIG4)
    assert fit.llf == pytest.approx(RRLIN_LLIK, abs=1e-6)
    # RRlin's default L-BFGS-B tolerance (factr 1e7) stops short: a lower likelihood,
    # and an FR coefficient off in the third digit
    assert fit.llf > RRLIN_LLIK_DEFAULT + 1e-5
    assert abs(fit.params["FR"] / RRLIN_FR_DEFAULT - 1) > 1e-3


# RRcor(x = gData[, c("response", "cov", "UQTresp")], models = c("Kuk", "d", "UQTknown"),
#       p.list = list(c(.3, .7), c(.8, .5)))                          # $r
RRCOR_R = {
    "response ~ cov": 0.247349118972,
    "response ~ UQTresp": 0.480820262527,
    "cov ~ UQTresp": 0.225984798009,
}
# set.seed(1); the same with bs.n = 2000, bs.type = "se.n"            # $rSE.n
RRCOR_SE = {
    "response ~ cov": 0.0882756181891,
    "response ~ UQTresp": 0.1106126084739,
    "cov ~ UQTresp": 0.0388346761687,
}


def test_rrcor_kuk_and_unrelated_question() -> None:
    """The RRcor help example. The correlations agree to four digits. The standard
    errors are nonparametric bootstraps of 2,000 replicates on each side: each
    estimate's standard deviation is about se / sqrt(2 B), so the two agree within 4
    sigma of a difference of two, 4 sqrt(2) se / sqrt(2 B) = 4 se / sqrt(B)."""
    data = pd.read_csv(DATA / "RRreg_RRcor_example.csv")
    designs = {
        "response": Kuk(p_carrier=0.3, p_noncarrier=0.7),
        "UQTresp": UnrelatedQuestion(p=0.8, innocuous_prevalence=0.5),
    }
    B = 2000
    result = rr_correlation(data, ["response", "cov", "UQTresp"], designs, bootstrap=B, rng=1)
    for pair, value in RRCOR_R.items():
        assert result.estimate[pair] == pytest.approx(value, rel=SIG4), pair
        se = RRCOR_SE[pair]
        assert abs(result.std_error[pair] - se) < 4 * se / math.sqrt(B), pair


# RRTCS 0.0.4 (with sampling and samplingVarEst from their sources), each device's help
# example: Estimation and sqrt(Variance) of
#   Devore(z, 0.7, Pi, "total", 0.95); SinghJoarder(z, 0.6, Pi, "mean", 0.95, 802);
#   MangatSingh(z, 0.7, 0.55, Pi, "mean", 0.95, 802);
#   MangatSinghSingh(z, 0.6, 0.5, Pi, "total", 0.95);
#   SoberanisCruz(z, 0.7, 0.5, Pi, "total", 0.90);
#   HorvitzUB(I, J, 0.6, 0.7, Pi, "mean", 0.95, 802);
#   MangatSinghSinghUB(I, J, 0.6, 0.8, Pi, "mean", 0.95, 802)
RRTCS_DEVICES = {
    "Devore": (696.923745334, 19.1232805189),
    "SinghJoarder": (0.33422459893, 0.085360285317),
    "MangatSingh": (0.500456226811, 0.040621602102),
    "MangatSinghSingh": (1206.5, 356.238355655),
    "SoberanisCruz": (196.428571429, 50.72797327),
    "HorvitzUB": (0.12131691408, 0.0871153810795),
    "MangatSinghSinghUB": (0.656, 0.0232071051186),
}


@pytest.mark.parametrize("name", sorted(RRTCS_DEVICES))
def test_rrtcs_named_devices_run_in_r(name: str) -> None:
    from deniable.analysis import _rrtcs_devices as d
    from deniable.analysis import survey_estimate

    cases = {
        "Devore": (d.devore(0.7), {"kind": "total"}),
        "SinghJoarder": (d.singh_joarder(0.6), {"N": 802}),
        "MangatSingh": (d.mangat_singh(0.7, 0.55), {"N": 802}),
        "MangatSinghSingh": (d.mangat_singh_singh(0.6, 0.5), {"kind": "total"}),
        "SoberanisCruz": (d.soberanis_cruz(0.7, 0.5), {"kind": "total"}),
        "HorvitzUB": (d.unknown_innocuous_two_replies(0.6, 0.7), {"N": 802}),
        "MangatSinghSinghUB": (d.unknown_innocuous_two_replies(0.6, 0.8), {"N": 802}),
    }
    revision, options = cases[name]
    data = load_rr_survey(f"RRTCS/{name}Data")
    z = d.two_reply_codes(data.I, data.J) if name.endswith("UB") else data.z
    est = survey_estimate(revision, z, pi=data.Pi, **options)  # type: ignore[arg-type]
    assert est.estimate == pytest.approx(RRTCS_DEVICES[name][0], rel=SIG4)
    assert est.std_error == pytest.approx(RRTCS_DEVICES[name][1], rel=SIG4)


# ResamplingVariance(<fit>, Pi, type, 1, ...): RRTCS's jackknife (option 1), a delete-one
# (cluster) jackknife in each stratum with the factor 1 - mean(pi_h), summed (over N^2
# for a mean, N = round(sum(1/pi)) unless given)
RRTCS_JACKKNIFE = {
    # EichhornHayre(z, 1.111111, 0.5414886, Pi, "mean", 0.95); str = ST
    "strata": ("EichhornHayreData", {"strata": "ST"}, 2189520.54119),
    # SoberanisCruz(z, 0.7, 0.5, Pi, "total", 0.90); clu = CL
    "clusters": ("SoberanisCruzData", {"clusters": "CL"}, 3203.54457573),
    # Horvitz(z, 0.6, 0.5, Pi, "mean", 0.95, 1500); N = 1500, str = ST, clu = CL
    "strata and clusters": (
        "HorvitzDataStCl",
        {"strata": "ST", "clusters": "CL"},
        0.00188547479457,
    ),
}


@pytest.mark.parametrize("case", sorted(RRTCS_JACKKNIFE))
def test_rrtcs_jackknife_with_fpc(case: str) -> None:
    """With strata the correction is each stratum's own (a correction by the whole
    sample's mean(pi) gives 2189482.03 on the first case, 1.8e-5 off)."""
    from deniable.analysis import soberanis_cruz, survey_estimate
    from deniable.analysis._complex import eichhorn_hayre

    file, design, variance = RRTCS_JACKKNIFE[case]
    data = load_rr_survey(f"RRTCS/{file}")
    revision, options = {
        "EichhornHayreData": (eichhorn_hayre(1.111111, 0.5414886), {}),
        "SoberanisCruzData": (soberanis_cruz(0.7, 0.5), {"kind": "total"}),
        "HorvitzDataStCl": (UnrelatedQuestion(p=0.6, innocuous_prevalence=0.5), {"N": 1500}),
    }[file]
    columns = {key: data[column] for key, column in design.items()}
    est = survey_estimate(
        revision,  # type: ignore[arg-type]
        data.z,
        pi=data.Pi,
        variance="jackknife",
        fpc=True,
        **options,  # type: ignore[arg-type]
        **columns,
    )
    assert est.std_error**2 == pytest.approx(variance, rel=SIG4)


def test_rrglm_ethbe_designs_varying_by_respondent() -> None:
    """RRglm(RR_response ~ 1, link = "RRlink.logit", RRmodel = RRmodel, p1 = p1, p2 = p2,
    data = ETHBE[ETHBE$Question == "copied" & !is.na(ETHBE$RR_response), ],
    control = glm.control(epsilon = 1e-14, maxit = 200)): 4,281 rows mixing direct
    questioning, unrelated question, forced response and crosswise. With GLMMRR's
    reading of the forced design's p2 (designs_by_row's default) the fit is R's; the
    data's own description (forced="unconditional", the data README) fits better."""
    ethbe = load_rr_survey("GLMMRR/ETHBE")
    rows = ethbe[ethbe["Question"] == "copied"].dropna(subset=["RR_response"])
    fits = {}
    for forced in ("share", "unconditional"):
        keys, designs = designs_by_row(rows, forced=forced)
        frame = rows.assign(design=keys, y=rows["RR_response"].astype(int))
        fits[forced] = rr_logit("y ~ 1", frame, designs, group="design", information="expected")
    fit = fits["share"]
    assert fit.nobs == 4281
    assert fit.params["Intercept"] == pytest.approx(-0.89748109602, rel=SIG4)
    assert fit.bse["Intercept"] == pytest.approx(0.0462883718979, rel=SIG4)
    assert fit.llf == pytest.approx(-2688.635429238, abs=1e-6)
    assert fits["unconditional"].llf > fit.llf + 40  # -2646.85

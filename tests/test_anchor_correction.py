"""The crosswise model's zero-prevalence anchor correction against R's cWise (GitHub,
commit a27f64f) on its own data, and its statistics under simulation.

cWise depends on tidyverse (only dplyr and tibble are used; Debian: r-cran-dplyr,
r-cran-tibble), rlang (r-cran-rlang) and mvtnorm (r-cran-mvtnorm); the reference runs
sourced ``R/bc.est.R`` and ``R/cmreg.R`` into R 4.2.2 with those Debian packages. The
data are cWise's ``cmdata`` and ``cmdata2`` (tests/data/README.md). What cWise gets
wrong is in docs/analysis.md; the R calls are beside each value.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import anchor_correction, anchor_regression

DATA = Path(__file__).parent / "data"


def same_digits(ours: float, r: float, digits: int = 4) -> bool:
    """Within half a unit of R's ``digits``-th significant digit."""
    return abs(ours - r) <= 0.5 * 10 ** (math.floor(math.log10(abs(r))) - digits + 1)


@pytest.fixture(scope="module")
def cmdata() -> pd.DataFrame:
    return pd.read_csv(DATA / "cwise_cmdata.csv")


@pytest.fixture(scope="module")
def cmdata2() -> pd.DataFrame:
    return pd.read_csv(DATA / "cwise_cmdata2.csv")


@pytest.mark.parametrize(
    ("weighted", "ref"),
    [  # bc.est(Y=Y, A=A, [weight=weight,] p=0.15, p.prime=0.15, data=cmdata), unrounded
        (False, (0.195, 0.014446241302, 0.105360443623, 0.772857142857,
                 0.020805970393, 0.064865225597, 0.139434312218)),
        (True, (0.192129528471, 0.014415749516, 0.109695290859, 0.788795175458,
                0.024956497602, 0.059553618004, 0.150312621609)),
    ],
)  # fmt: skip
def test_bias_corrected_estimate_equals_bc_est(cmdata: pd.DataFrame, weighted: bool, ref) -> None:
    naive, naive_se, corrected, attentive, boot_sd, boot_low, boot_high = ref
    res = anchor_correction(
        cmdata.Y, cmdata.A, p=0.15, p_anchor=0.15,
        weights=cmdata.weight if weighted else None, bootstrap=20_000, rng=2026,
    )  # fmt: skip
    assert same_digits(res.naive, naive) and same_digits(res.naive_std_error, naive_se)
    assert same_digits(res.estimate, corrected) and same_digits(res.attentive, attentive)
    # cWise bootstraps 200 times (set.seed(123456)): compare within Monte Carlo error.
    # The SD of a bootstrap SD from B draws is about sd / sqrt(2 (B - 1)); a 2.5% quantile's
    # is sqrt(q (1 - q) / B) / f(x_q), with f the normal density of the bootstrap law.
    assert res.bootstrap is not None
    sd, low, high = res.bootstrap
    tol_sd = 4 * math.hypot(sd / math.sqrt(2 * 199), sd / math.sqrt(2 * 19_999))
    assert abs(sd - boot_sd) < tol_sd
    dens = math.exp(-(1.96**2) / 2) / math.sqrt(2 * math.pi) / sd
    tol_q = (
        4 * math.sqrt(0.025 * 0.975) / dens * math.hypot(1 / math.sqrt(200), 1 / math.sqrt(20_000))
    )
    assert abs(low - boot_low) < tol_q and abs(high - boot_high) < tol_q


def test_regression_equals_cmreg_with_a_factor(cmdata2: pd.DataFrame) -> None:
    # cWise's cmreg stops with "undefined columns selected" on a factor (it indexes the
    # data by the model matrix's width); with the factor written as 0/1 columns
    # (ag2, ag3) it runs: cmreg(Y ~ female + ag2 + ag3 + A, p = 0.1, p.prime = 0.15),
    # optim's reltol set to 1e-14 (its default stops 5e-4 short in one coefficient).
    data = cmdata2.assign(agegrp=pd.cut(cmdata2.age, [0, 25, 35, 100]).astype(str))
    fit = anchor_regression("Y ~ female + C(agegrp)", data, anchor="A", p=0.1, p_anchor=0.15)
    coef = [-0.76913209540, 0.29776368582, 0.05441196473, 0.38734847191,
            1.79530802306, -0.08191626496, -0.11225765983, 0.89131767995]  # fmt: skip
    se = [0.1805497847, 0.1427061990, 0.1866428876, 0.2248490605,
          0.4885926190, 0.4210724791, 0.5101512538, 1.1023815872]  # fmt: skip
    assert fit.converged and fit.llf == pytest.approx(-2353.524333, abs=1e-6)
    assert all(same_digits(a, b) for a, b in zip(fit.params, coef, strict=True)), list(fit.params)
    assert all(same_digits(a, b) for a, b in zip(fit.bse, se, strict=True)), list(fit.bse)


def test_regression_reaches_the_maximum_cmreg_stops_short_of(cmdata2: pd.DataFrame) -> None:
    # The README's example, cmreg(Y ~ female + age + A, p = 0.1, p.prime = 0.15): R's
    # BFGS on finite differences stops at log-likelihood -2352.29525472 (coefficients
    # -1.65085, 0.28162, 0.032642, 0.13868, -0.20437, 0.059457); evaluated by cWise's
    # own log.L in R, ours is -2352.29521255, and R's optim restarted from R's estimate
    # with ndeps = 1e-6 reaches ours to 6 digits. Standard errors agree to 3 digits
    # (R's Hessian is a finite difference with step 1e-3).
    fit = anchor_regression("Y ~ female + age", cmdata2, anchor="A", p=0.1, p_anchor=0.15)
    polished = [
        -1.6520300416,
        0.2813500666,
        0.0326859074,
        0.1468812666,
        -0.2058981768,
        0.0591981817,
    ]
    cwise_se = [
        0.42681118062,
        0.14267305031,
        0.01332295316,
        1.13470799244,
        0.41193379097,
        0.03935858503,
    ]
    assert fit.llf == pytest.approx(-2352.29521255, abs=1e-7) and fit.llf > -2352.29525472
    assert all(same_digits(a, b, 6) for a, b in zip(fit.params, polished, strict=True))
    assert all(same_digits(a, b, 3) for a, b in zip(fit.bse, cwise_se, strict=True))


def _survey(rng: np.random.Generator, n: int, pi: float, gamma: float, p: float, pa: float):
    attentive = rng.random(n) < gamma
    carrier = rng.random(n) < pi
    same = np.where(attentive, (rng.random(n) < p) == carrier, rng.random(n) < 0.5)
    anchor = np.where(attentive, rng.random(n) >= pa, rng.random(n) < 0.5)
    return same.astype(int), anchor.astype(int)


@pytest.mark.parametrize("pi", [0.0, 0.05, 0.5, 0.95])
def test_the_correction_is_consistent_and_its_standard_error_is_the_joint_one(pi: float) -> None:
    # each respondent answers both questions, so inattention makes the reports dependent:
    # Cov(Y, A) = gamma (1 - gamma) (f - 1/2) (g - 1/2) with f, g the attentive "same" rates
    rng = np.random.default_rng(int(pi * 100) + 1)
    n, surveys, gamma, p, pa = 2000, 3000, 0.6, 0.1, 0.1
    res = [
        anchor_correction(*_survey(rng, n, pi, gamma, p, pa), p=p, p_anchor=pa)
        for _ in range(surveys)
    ]
    est = np.array([r.estimate for r in res])
    se = np.array([r.std_error for r in res])
    se_ind = np.array([r.std_error_independent for r in res])
    sd = est.std(ddof=1)
    # unbiased to O(1/n): the mean within 4 Monte Carlo SEs
    assert abs(est.mean() - pi) < 4 * sd / math.sqrt(surveys)
    # the empirical SD of an SD over R surveys has relative SE about 1 / sqrt(2 (R - 1))
    band = 4 / math.sqrt(2 * (surveys - 1))
    assert abs(se.mean() / sd - 1) < band
    f, g = (2 * p - 1) * pi + 1 - p, 1 - pa
    if abs((f - 0.5) * (g - 0.5)) > 0.1:  # strong dependence: the independent SE is wrong
        assert abs(se_ind.mean() / sd - 1) > band


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p": 1.3, "p_anchor": 0.15}, "p must"),
        ({"p": 0.15, "p_anchor": 0.5}, "p_anchor"),
        ({"p": 0.15, "p_anchor": 0.15, "bootstrap": 10**9}, "bootstrap must be at most"),
        ({"p": 0.15, "p_anchor": 0.15, "weights": [1, 1, 0, 1]}, "weights must be positive"),
    ],
)
def test_bad_input_is_refused(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        anchor_correction([1, 0, 1, 1], [1, 1, 1, 0], **kwargs)
    with pytest.raises(ValueError, match="reports must be"):
        anchor_correction([1, 0, 2, 1], [1, 1, 1, 0], p=0.15, p_anchor=0.15)
    with pytest.raises(ValueError, match="shows no attentive respondent"):
        anchor_correction([1, 0, 1, 1], [0, 0, 1, 0], p=0.15, p_anchor=0.15)

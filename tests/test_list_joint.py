"""The list experiment's sensitive answer as an explanatory variable (Imai, Park &
Greene 2015): against R's ``list::ictreg.joint`` and by simulation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import list_joint_regression
from deniable.list_experiment._item_count_ml import list_frame
from deniable.list_experiment._joint import _Joint

from .conftest import Z4, numeric_gradient

DATA = Path(__file__).parent / "data"
LOYAL = (
    "mex.y.all ~ mex.male + mex.age + mex.age2 + mex.education + mex.interest + "
    "mex.married + mex.wealth + mex.urban + mex.havepropoganda + mex.concurrent"
)
APPROVAL = (
    "mex.y.all ~ mex.male + mex.age + mex.age2 + mex.education + mex.interest + "
    "mex.married + mex.urban + mex.cleanelections + mex.cleanelectionsmiss + "
    "mex.havepropoganda + mex.wealth + mex.northregion + mex.centralregion + mex.metro + "
    "mex.pidpriw2 + mex.pidpanw2 + mex.pidprdw2"
)


def same_4_digits(ours: float, r: float) -> bool:
    """Within half a unit of R's fourth significant digit."""
    return abs(ours - r) <= 0.5 * 10 ** (math.floor(math.log10(abs(r))) - 3)


@pytest.fixture(scope="module")
def mexico() -> pd.DataFrame:
    return pd.read_csv(DATA / "list_mexico.csv")


# ictreg.joint's two documented examples (Imai, Park & Greene 2015, Tables 4 and 5),
# list 9.2.6 sourced into R 4.2, set.seed(1), maxIter = 200000 and its EM's stop (a
# rise below 1e-4) set to 1e-12: at 1e-4 the logistic fit stops 0.0014 short (the
# effect -2.0390 against -2.0279). Control, sensitive, outcome coefficients (the
# effect, "zrep", last), then sigma for the linear outcome.
# Table 4: the effect of vote selling on turnout among loyal voters (log-likelihood
# -661.430819626911); R's standard errors: its scores' outer product.
PAR_A = [
    -1.66741188482137,
    0.27355219019023,
    0.14978780283342,
    -0.01276955690987,
    0.05584933807708,
    0.37131769363434,
    0.18737482247544,
    0.04162572642172,
    -0.12142152121837,
    0.11313058182586,
    0.2453397960152,
    0.12054178984133,
    -2.63182903760224,
    -1.02562429699003,
    0.11957649030221,
    -0.28830882531741,
    -0.19096933385053,
    -1.45516257280256,
    -0.35789044025819,
    5.0058479595897,
    6.95748128763817,
    -2.74362230288512,
    -0.02334417166502,
    -0.44054909203856,
    0.37197280317516,
    -0.03200926678529,
    -0.0515750524583,
    -0.0376034824285,
    0.08151604030279,
    -0.05533605269223,
    1.10317853923314,
    1.61082310064713,
    0.49156369537824,
    -2.02786743457422,
]
SE_A = [
    0.6912130185147,
    0.15962214591988,
    0.27503350959886,
    0.02803371382825,
    0.04639793037754,
    0.09215461261398,
    0.16252795858132,
    0.06354647392086,
    0.17091051982936,
    0.20275294442369,
    0.16756088515275,
    4.55848254025155,
    0.95180137427478,
    1.55921681238106,
    0.15288633555457,
    0.25432796697812,
    0.58709667075922,
    0.86236340257689,
    0.31319135327628,
    2.99243990928739,
    3.44036753540473,
    1.28320322205629,
    1.38583034779592,
    0.34929607593269,
    0.55904822981611,
    0.05628100973277,
    0.08777511954738,
    0.17411117756528,
    0.34588383491308,
    0.11475359421577,
    0.4310069818331,
    0.65711788265017,
    0.35229771809254,
    0.65786058513008,
]
PAR_B = [
    -1.3521071820091053,
    0.071326025771253,
    0.0319033353178609,
    -0.0002798528579061,
    0.0684010312835113,
    0.2482103350175273,
    0.0723082572604943,
    -0.0281691592398047,
    -0.0175320463771385,
    -0.1642420901454417,
    0.294666405765828,
    -0.0078620675636585,
    0.2864022664923606,
    0.3693405864108197,
    0.2440092531627722,
    0.0723914942004483,
    0.189391528320163,
    0.2509068948085362,
    0.421374861128386,
    -0.2368022750449127,
    -1.3647145709543451,
    0.1089784664994088,
    -0.2877778125437147,
    0.0551193520714671,
    0.1005161569142888,
    1.835648934016884,
    0.753375258045366,
    0.1268139999045795,
    2.4667069527543717,
    0.2128033024087251,
    -0.6360228105100263,
    -2.9458097284662412,
    0.2385594042623675,
    0.7619760015427165,
    0.0778361728596594,
    -0.7074188470912207,
    9.239737913075095,
    -0.0417863901755553,
    -0.0553362877506362,
    0.013897952930097,
    0.0656185597071599,
    -0.0264104577180863,
    0.3171034104046306,
    -0.6940597953772296,
    -1.0523813330014866,
    -2.033940230533078,
    -0.4906802988414597,
    -0.0752307535748366,
    0.733290270473952,
    0.2426180413438061,
    -0.2423442326013257,
    2.085976504075285,
    -0.2211676570105908,
    -1.3177806677734014,
    0.7196120122814109,
    2.2782818355020393,
]
# Table 5: the effect on candidate approval, linear (log-likelihood -3463.19037310814)


def test_the_logistic_outcome_model_equals_ictreg_joint_from_its_estimate(mexico) -> None:
    """Started from R's estimate rounded to 3 decimals, the maximisation returns to it:
    all 34 coefficients to 4 significant digits, the log-likelihood to 1e-6."""
    loyal = mexico[mexico["mex.loyal"] == 1]
    fit = list_joint_regression(
        LOYAL, loyal, treat="mex.t", items=3, outcome="mex.votecard",
        start=np.round(PAR_A, 3),
    )  # fmt: skip
    assert fit.converged and fit.llf == pytest.approx(-661.430819626911, abs=1e-6)
    assert all(same_4_digits(a, b) for a, b in zip(fit.params, PAR_A, strict=True))
    assert fit.params.index[-1] == "outcome.z" and fit.n == 372


def test_ictreg_joints_standard_errors_carry_a_sign_error(mexico) -> None:
    """R's scores' outer product is ours, but for the rows whose answer the count
    reveals (treated counts 0 and J + 1) with outcome 0: there R's outcome score is
    ``1 - P(v | z)``, which is ``+g`` where the score is ``-g``. With that sign flipped
    ours gives R's standard errors to 1e-9 relative; as it is, they differ by up to
    10%."""
    loyal = mexico[mexico["mex.loyal"] == 1]
    frame, y, t, j = list_frame(LOYAL, loyal, "mex.t", 3)
    v = loyal.loc[frame.rows, "mex.votecard"].to_numpy(dtype=float)
    model = _Joint(y, t, frame.X, v, j, "logistic", True)
    rows = model.scores(np.array(PAR_A))[1]
    c, s, f = model.widths
    revealed = t & ((y == 0) | (y == j + 1)) & (v == 0)
    as_r = rows.copy()
    as_r[revealed, c + s : c + s + f] *= -1
    se_r = np.sqrt(np.diag(np.linalg.inv(as_r.T @ as_r)))
    assert np.allclose(se_r, SE_A, rtol=1e-9)
    ours = np.sqrt(np.diag(np.linalg.inv(rows.T @ rows)))
    assert 0.05 < np.max(np.abs(ours / np.array(SE_A) - 1)) < 0.15


def test_the_loyal_sample_likelihood_rises_past_ictreg_joints_maximum(mexico) -> None:
    """From our default start the fit climbs to a log-likelihood of -659.96, 1.47 above
    R's, where the sensitive model separates (a coefficient beyond 30 in size) and the
    information is singular: R's estimate is a local maximum, not the maximum."""
    loyal = mexico[mexico["mex.loyal"] == 1]
    fit = list_joint_regression(LOYAL, loyal, treat="mex.t", items=3, outcome="mex.votecard")
    assert fit.llf > -661.430819626911 + 1.0
    sensitive = fit.params[[n for n in fit.params.index if n.startswith("sensitive.")]]
    assert sensitive.abs().max() > 30


def test_ictreg_joints_linear_fit_is_not_the_maximum(mexico) -> None:
    """At R's estimate of Table 5 the score vanishes (below 0.01) in every coefficient
    but sigma, where it is -19.000 in log sigma: R's EM takes sigma from the weighted
    residuals divided by n - 19, the outcome model's 19 coefficients, not by n. The
    maximum lies 0.399 higher."""
    frame, y, t, j = list_frame(APPROVAL, mexico, "mex.t", 3)
    v = mexico.loc[frame.rows, "mex.epnapprove"].to_numpy(dtype=float)
    model = _Joint(y, t, frame.X, v, j, "linear", True)
    theta = np.array(PAR_B)
    theta[-1] = math.log(theta[-1])
    ll, score = model.value_and_score(theta)
    assert ll == pytest.approx(-3463.19037310814, abs=1e-6)
    assert np.abs(score[:-1]).max() < 0.01 and score[-1] == pytest.approx(-19.0, abs=1e-3)
    fit = list_joint_regression(
        APPROVAL, mexico, treat="mex.t", items=3, outcome="mex.epnapprove",
        outcome_model="linear", start=PAR_B,
    )  # fmt: skip
    assert fit.converged and fit.llf - ll == pytest.approx(0.399, abs=0.001)
    assert fit.params["sigma"] < PAR_B[-1]


@pytest.mark.parametrize("outcome_model", ["logistic", "linear"])
@pytest.mark.parametrize("constrained", [True, False])
def test_the_joint_score_is_the_gradient(outcome_model: str, constrained: bool) -> None:
    """Central differences (step 1e-6) of the log-likelihood against the analytic score
    at a random point, within 1e-5 relative."""
    rng = np.random.default_rng(3)
    n, j = 300, 3
    t = rng.integers(0, 2, n).astype(bool)
    x = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = (rng.binomial(j, 0.4, n) + t * (rng.random(n) < 0.4)).astype(float)
    v = rng.normal(size=n) if outcome_model == "linear" else (rng.random(n) < 0.5).astype(float)
    model = _Joint(y, t, x, v, j, outcome_model, constrained)
    theta = rng.normal(scale=0.3, size=model.size)
    _, score = model.value_and_score(theta)
    numeric = numeric_gradient(lambda th: model.value_and_score(th)[0], theta)
    assert np.allclose(score, numeric, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("outcome_model", ["logistic", "linear"])
def test_the_joint_model_recovers_the_effect_within_4_se(outcome_model: str) -> None:
    """6,000 simulated respondents: the sensitive answer's effect on the outcome
    (-1.0), and every other coefficient, within 4 observed-information SEs."""
    rng = np.random.default_rng(21)
    n, j = 6000, 3
    t = rng.integers(0, 2, n)
    x = rng.normal(size=n)
    z = rng.random(n) < 1 / (1 + np.exp(-(-0.3 + 0.9 * x)))
    y0 = rng.binomial(j, 1 / (1 + np.exp(-(0.2 - 0.4 * x))))
    mean = 0.5 + 0.3 * x - 1.0 * z
    v = (
        rng.normal(mean, 1.5)
        if outcome_model == "linear"
        else rng.random(n) < 1 / (1 + np.exp(-mean))
    )
    data = pd.DataFrame({"y": y0 + t * z, "x": x, "treat": t, "v": v.astype(float)})
    fit = list_joint_regression(
        "y ~ x", data, treat="treat", items=j, outcome="v", outcome_model=outcome_model
    )
    truth = {
        "control.Intercept": 0.2, "control.x": -0.4, "sensitive.Intercept": -0.3,
        "sensitive.x": 0.9, "outcome.Intercept": 0.5, "outcome.x": 0.3, "outcome.z": -1.0,
    }  # fmt: skip
    if outcome_model == "linear":
        truth["sigma"] = 1.5
    for name, value in truth.items():
        assert abs(fit.params[name] - value) < Z4 * fit.bse[name], (name, fit.params[name])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"outcome": "nope"}, "outcome must name a column"),
        ({"outcome": "v", "outcome_model": "probit"}, "outcome_model must be 'logistic'"),
        ({"outcome": "v", "information": "hessian"}, "information must be 'observed'"),
        ({"outcome": "w"}, "outcome 'w' must be 0 or 1 on every row; row 2 is not"),
        ({"outcome": "v", "start": [0.0, 1.0]}, "start must hold 7 finite numbers, got 2"),
        ({"outcome": "v", "outcome_model": "linear", "start": [0.0] * 8},
         "sigma, must be > 0"),
    ],
)  # fmt: skip
def test_malformed_joint_arguments_are_refused(kwargs, match) -> None:
    data = pd.DataFrame(
        {"y": [0, 1, 2, 3, 1, 2], "treat": [0, 1, 0, 1, 0, 1], "x": [0.1, 0.5, 0.2, 0.3, 0.9, 0.4],
         "v": [0, 1, 1, 0, 1, 0], "w": [0, 1, 2, 0, 1, 0]}
    )  # fmt: skip
    with pytest.raises(ValueError, match=match):
        list_joint_regression("y ~ x", data, treat="treat", items=3, **kwargs)

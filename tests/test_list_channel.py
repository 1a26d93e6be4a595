"""The list experiment's maximum likelihood through a known channel (the server's
post-randomization of the count): the identity channel gives the plain fit, the score
is the log-likelihood's gradient, a simulated study's coefficients are recovered within
4 standard errors, and what does not take the channel refuses it by name."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import list_regression
from deniable.list_experiment._item_count_ml import _Likelihood, _through
from deniable.mechanisms import Direct, GeometricCount

from .conftest import Z4, numeric_gradient

J = 3
TRUTH = {"sensitive.Intercept": -1.0, "sensitive.x": 0.5, "control.Intercept": 0.2,
         "control.x": -0.3}  # fmt: skip


def simulate(n: int, seed: int, ceiling: float = 0.0, floor: float = 0.0) -> pd.DataFrame:
    """Imai's (2011) constrained model with one covariate; the count as sent (``y``) and
    as stored through the geometric channel at ln 9 (``r``). With Blair & Imai's (2012)
    liars: of the treated with the sensitive item, a share ``ceiling`` of those with
    every control item report J, and a share ``floor`` of those with none report 0."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    t = rng.integers(0, 2, n)
    z = rng.random(n) < 1 / (1 + np.exp(-(TRUTH["sensitive.Intercept"] + 0.5 * x)))
    c = rng.binomial(J, 1 / (1 + np.exp(-(TRUTH["control.Intercept"] - 0.3 * x))))
    y = c + t * z
    if ceiling or floor:
        u = rng.random(n)
        y = np.where((t == 1) & z & (c == J) & (u < ceiling), J, y)
        y = np.where((t == 1) & z & (c == 0) & (u < floor), 0, y)
    r = GeometricCount(k=J + 2, epsilon=math.log(9)).randomize(y, rng)
    return pd.DataFrame({"y": y, "r": r, "t": t, "x": x})


def test_the_identity_channel_gives_the_plain_fit():
    data = simulate(3000, 1)
    plain = list_regression("y ~ x", data, treat="t", items=J)
    through = list_regression("y ~ x", data, treat="t", items=J, channel=Direct(k=J + 2))
    assert np.allclose(plain.params, through.params, atol=1e-10)
    assert np.allclose(plain.bse, through.bse, atol=1e-8)


@pytest.mark.parametrize("constrained", [True, False])
def test_the_score_is_the_gradient_of_the_channel_log_likelihood(constrained):
    data = simulate(400, 2)
    X = np.column_stack([np.ones(len(data)), data["x"]])
    base = _Likelihood(data["r"].to_numpy(float), data["t"].to_numpy(bool), X, J, constrained)
    lik = _through(base, GeometricCount(k=J + 2, epsilon=1.0), refused=False)
    theta = np.random.default_rng(3).normal(scale=0.3, size=4 if constrained else 6)
    _, score = lik.value_and_score(theta)
    numeric = numeric_gradient(lambda th: lik.value_and_score(th)[0], theta)
    assert np.allclose(score, numeric, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_a_channelled_study_is_recovered_within_four_standard_errors():
    """20,000 respondents, counts stored through the channel: every coefficient within
    4 of its observed-information SE of the truth, and the SEs larger than the fit of
    the counts as sent (the channel's cost)."""
    data = simulate(20_000, 4)
    fit = list_regression(
        "r ~ x", data, treat="t", items=J, channel=GeometricCount(k=J + 2, epsilon=math.log(9))
    )
    plain = list_regression("y ~ x", data, treat="t", items=J)
    assert fit.converged
    for name, value in TRUTH.items():
        assert abs(fit.params[name] - value) < Z4 * fit.bse[name], name
        assert fit.bse[name] > plain.bse[name]


def test_what_does_not_take_the_channel_refuses_it_by_name():
    data = simulate(500, 5)
    channel = GeometricCount(k=J + 2, epsilon=math.log(9))
    for extra in ({"error": "topcode"}, {"overdispersed": True}):
        with pytest.raises(ValueError, match="channel: an error model and overdispersion"):
            list_regression("r ~ x", data, treat="t", items=J, channel=channel, **extra)
    with pytest.raises(ValueError, match="liar_prior='list_package'"):
        list_regression("r ~ x", data, treat="t", items=J, channel=channel, ceiling=True,
                        liar_prior="list_package")  # fmt: skip
    with pytest.raises(ValueError, match="channel must be a 5 x 5 matrix"):
        list_regression("r ~ x", data, treat="t", items=J, channel=Direct(k=3))


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_the_liars_take_the_channel():
    """The ceiling and floor liars through the channel: the identity channel gives the
    plain liar fit (also with the Cauchy prior), and the score is the log posterior's
    gradient."""
    from deniable.list_experiment._liars import LiarLikelihood

    data = simulate(3000, 6, 0.4, 0.3)
    for prior in (None, "cauchy"):
        plain = list_regression("y ~ x", data, treat="t", items=J, ceiling=True, floor=True,
                                liar_prior=prior)  # fmt: skip
        same = list_regression("y ~ x", data, treat="t", items=J, ceiling=True, floor=True,
                               liar_prior=prior, channel=Direct(k=J + 2))  # fmt: skip
        assert np.allclose(plain.params, same.params, atol=1e-7), prior
        assert np.allclose(plain.bse, same.bse, rtol=1e-5), prior
        assert same.llf == pytest.approx(plain.llf, abs=1e-8)
    X = np.column_stack([np.ones(len(data)), data["x"]])
    one = np.ones((len(data), 1))
    lik = LiarLikelihood(data["r"].to_numpy(float), data["t"].to_numpy(bool), X, J, one, one,
                         (np.array([10.0]), np.array([10.0])))  # fmt: skip
    theta = np.random.default_rng(7).normal(scale=0.3, size=lik.size)
    from deniable.list_experiment._channel import ChannelLikelihood

    at = [LiarLikelihood(np.full(len(data), float(c)), lik.t, X, J, one, one, lik.scales)
          for c in range(J + 2)]  # fmt: skip
    matrix = GeometricCount(k=J + 2, epsilon=1.0).matrix
    through = ChannelLikelihood(lambda th, c: at[c].rows(th), lik.y, matrix, lik.log_prior)
    _, score = through.value_and_score(theta)
    numeric = numeric_gradient(lambda th: through.value_and_score(th)[0], theta)
    assert np.allclose(score, numeric, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_liars_stored_through_the_channel_are_recovered():
    """30,000 respondents with 40% ceiling and 30% floor liars stored through the
    channel at ln 9: every coefficient within 4 observed-information SEs of the truth
    (logit 0.4 and logit 0.3 for the liars)."""
    data = simulate(30_000, 8, 0.4, 0.3)
    fit = list_regression("r ~ x", data, treat="t", items=J, ceiling=True, floor=True,
                          channel=GeometricCount(k=J + 2, epsilon=math.log(9)))  # fmt: skip
    assert fit.converged
    liars = {"floor.Intercept": math.log(0.3 / 0.7), "ceiling.Intercept": math.log(0.4 / 0.6)}
    truth = TRUTH | liars
    for name, value in truth.items():
        assert abs(fit.params[name] - value) < Z4 * fit.bse[name], (name, fit.params[name])


def _design_effect_data(n: int, rng: np.random.Generator, deflate: float = 0.0):
    """Counts as sent and through the channel at ln 9: control items Binomial(3, 0.5),
    the sensitive item Bernoulli(0.3); ``deflate``: the share of treated "no" respondents
    who report one control item fewer (a design effect, Blair & Imai 2012). Also the true
    respondent-type shares ``pi(Y(0) = j, Z = z)``, shape (2, J + 1)."""
    t = rng.integers(0, 2, n).astype(bool)
    z = rng.random(n) < 0.3
    c = rng.binomial(J, 0.5, n)
    y = c + (t & z)
    y -= t & ~z & (c > 0) & (rng.random(n) < deflate)
    r = GeometricCount(k=J + 2, epsilon=math.log(9)).randomize(y, rng)
    binom = np.array([math.comb(J, j) for j in range(J + 1)]) / 2**J
    return y, r, t, np.vstack([0.3 * binom, 0.7 * binom])


def test_the_design_effect_test_takes_the_channel():
    """The identity channel gives the plain test exactly; through the geometric channel,
    over 300 simulated studies without a design effect, each respondent type's share is
    unbiased (mean within 4 Monte Carlo SEs of the truth), its reported SE matches the
    spread of the estimates (ratio within 4 of the SD's own SEs, 1/sqrt(2(R - 1))), and
    the test rejects at 5% no more than 5% + 4 binomial SEs; with a design effect (40% of
    the treated "no" respondents deflate their count), it rejects in every one of 20
    studies of 5,000."""
    from deniable.analysis import list_design_effect_test

    rng = np.random.default_rng(58)
    y, r, t, _ = _design_effect_data(2000, rng)
    plain = list_design_effect_test(y, t, items=J)
    same = list_design_effect_test(y, t, items=J, channel=Direct(k=J + 2))
    assert same.pvalue == pytest.approx(plain.pvalue, abs=1e-12)
    assert np.allclose(same.proportions, plain.proportions, atol=1e-12)
    assert np.allclose(same.std_errors, plain.std_errors, atol=1e-12)
    assert (same.revealed_yes, same.revealed_no) == pytest.approx(
        (plain.revealed_yes, plain.revealed_no), abs=1e-12
    )
    channel = GeometricCount(k=J + 2, epsilon=math.log(9))
    reps = 300
    props, ses, rejected = [], [], 0
    for _ in range(reps):
        y, r, t, truth = _design_effect_data(2000, rng)
        res = list_design_effect_test(r, t, items=J, channel=channel)
        props.append(res.proportions)
        ses.append(res.std_errors)
        rejected += res.pvalue < 0.05
    props_a, ses_a = np.array(props), np.array(ses)
    spread = props_a.std(axis=0, ddof=1)
    assert np.all(np.abs(props_a.mean(axis=0) - truth) < Z4 * spread / math.sqrt(reps))
    ratio = ses_a.mean(axis=0) / spread
    assert np.all(np.abs(ratio - 1) < Z4 / math.sqrt(2 * (reps - 1))), ratio
    assert rejected / reps <= 0.05 + Z4 * math.sqrt(0.05 * 0.95 / reps)
    for _ in range(20):
        _, r, t, _ = _design_effect_data(5000, rng, deflate=0.4)
        assert list_design_effect_test(r, t, items=J, channel=channel).pvalue < 0.05


def test_the_design_effect_test_refuses_a_channel_it_cannot_take():
    _, r, t, _ = _design_effect_data(500, np.random.default_rng(1))
    channel = GeometricCount(k=J + 2, epsilon=math.log(9))
    from deniable.analysis import list_design_effect_test

    with pytest.raises(ValueError, match="list_package"):
        list_design_effect_test(r, t, items=J, channel=channel, selection="list_package")
    with pytest.raises(ValueError, match="channel must be a 5 x 5 matrix"):
        list_design_effect_test(r, t, items=J, channel=Direct(k=3))


def test_the_list_models_without_a_channel_refuse_it_by_name():
    """Every list model that does not take a channel yet refuses one, naming itself,
    before it reads the data."""
    from deniable import analysis

    data = simulate(200, 9)
    channel = GeometricCount(k=J + 2, epsilon=math.log(9))
    calls = {
        "list_least_squares": lambda: analysis.list_least_squares(
            "r ~ x", data, treat="t", items=J, channel=channel
        ),
        "list_robust": lambda: analysis.list_robust(
            "r ~ x", data, treat="t", items=J, channel=channel
        ),
        "list_bayes": lambda: analysis.list_bayes(
            "r ~ x", data, treat="t", items=J, channel=channel
        ),
        "list_combined": lambda: analysis.list_combined(
            data["r"], data["t"], data["t"], items=J, channel=channel
        ),
        "list_regression_multi": lambda: analysis.list_regression_multi(
            "r ~ x", data, treat="t", items=J, channel=channel
        ),
        "list_joint_regression": lambda: analysis.list_joint_regression(
            "r ~ x", data, treat="t", items=J, outcome="x", channel=channel
        ),
        "list_bayes_hierarchical": lambda: analysis.list_bayes_hierarchical(
            "r ~ x", data, treat="t", items=J, group="t", channel=channel
        ),
        "list_endorsement_comparison": lambda: analysis.list_endorsement_comparison(
            data["t"], data["r"], data["t"], channel=channel
        ),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=f"channel: {name} does not take"):
            call()


@pytest.mark.parametrize("channel", [None, GeometricCount(k=J + 2, epsilon=math.log(9))])
@pytest.mark.parametrize("constrained", [True, False])
def test_the_fit_over_distinct_rows_is_the_fit_over_every_row(channel, constrained):
    """Rows that repeat (a binary covariate) are fitted once with their number as a
    weight: the value, score and information are the same sums, so the fit is the one
    over every row to the optimiser's precision; a continuous covariate keeps every row."""
    from deniable.list_experiment._item_count_ml import _fit, _start

    data = simulate(2000, 6)
    data["x"] = (data["x"] > 0).astype(float)
    counts = data["y" if channel is None else "r"].to_numpy(float)
    X = np.column_stack([np.ones(len(data)), data["x"]])
    base = _Likelihood(counts, data["t"].to_numpy(bool), X, J, constrained)
    distinct = base.collapsed()
    assert distinct is not base and len(distinct.y) <= 2 * 2 * (J + 2)
    assert distinct.weights is not None and distinct.weights.sum() == len(data)
    fits = []
    for lik in (base, distinct):
        lik = lik if channel is None else _through(lik, channel, refused=False)
        theta = np.random.default_rng(7).normal(scale=0.3, size=4 if constrained else 6)
        value, score = lik.value_and_score(theta)
        fits.append((value, score, _fit(lik, _start(base), 50)))
    (v0, s0, (t0, ll0, _, c0)), (v1, s1, (t1, ll1, _, c1)) = fits
    assert v1 == pytest.approx(v0, rel=1e-12) and np.allclose(s1, s0, rtol=1e-10, atol=1e-9)
    assert np.allclose(t1, t0, atol=1e-7) and ll1 == pytest.approx(ll0, rel=1e-12)
    assert np.allclose(c1, c0, rtol=1e-5)
    continuous = _Likelihood(counts, data["t"].to_numpy(bool),
                             np.column_stack([np.ones(len(data)), simulate(2000, 6)["x"]]), J,
                             constrained)  # fmt: skip
    assert continuous.collapsed() is continuous

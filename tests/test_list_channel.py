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
from deniable.analysis._list._item_count_ml import _ChannelLikelihood, _Likelihood
from deniable.mechanisms import Direct, GeometricCount

from .conftest import Z4, numeric_gradient

J = 3
TRUTH = {"sensitive.Intercept": -1.0, "sensitive.x": 0.5, "control.Intercept": 0.2,
         "control.x": -0.3}  # fmt: skip


def simulate(n: int, seed: int) -> pd.DataFrame:
    """Imai's (2011) constrained model with one covariate; the count as sent (``y``) and
    as stored through the geometric channel at ln 9 (``r``)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    t = rng.integers(0, 2, n)
    z = rng.random(n) < 1 / (1 + np.exp(-(TRUTH["sensitive.Intercept"] + 0.5 * x)))
    c = rng.binomial(J, 1 / (1 + np.exp(-(TRUTH["control.Intercept"] - 0.3 * x))))
    y = c + t * z
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
    lik = _ChannelLikelihood(base, GeometricCount(k=J + 2, epsilon=1.0).matrix)
    theta = np.random.default_rng(3).normal(scale=0.3, size=4 if constrained else 6)
    _, score = lik.value_and_score(theta)
    numeric = numeric_gradient(lambda th: lik.value_and_score(th)[0], theta)
    assert np.allclose(score, numeric, rtol=1e-5, atol=1e-5)


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
    for extra in ({"ceiling": True}, {"error": "topcode"}, {"overdispersed": True}):
        with pytest.raises(ValueError, match="channel: only the standard design"):
            list_regression("r ~ x", data, treat="t", items=J, channel=channel, **extra)
    with pytest.raises(ValueError, match="channel must be a 5 x 5 matrix"):
        list_regression("r ~ x", data, treat="t", items=J, channel=Direct(k=3))

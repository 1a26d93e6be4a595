"""Bayesian logistic regression of a randomized answer (rr's rrreg.bayes): the
convergence diagnostics, the refusal to summarise unconverged chains, agreement with
maximum likelihood on a large sample under a weak prior, and simulation-based
calibration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

from deniable import ForcedResponse
from deniable.analysis import rr_logit
from deniable.analysis._bayes_logit import (
    NotConvergedError,
    effective_sample_size,
    rr_logit_bayes,
    split_rhat,
)

FR = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)


def survey(rng, n, beta):
    x = rng.standard_normal(n)
    truth = rng.random(n) < expit(beta[0] + beta[1] * x)
    return pd.DataFrame({"r": FR.randomize(truth, rng), "x": x})


def test_split_rhat_and_effective_sample_size():
    """Independent normal draws: R-hat within 1 + 4 of its sampling SDs of 1 and the
    ESS near the number of draws; chains centred apart: R-hat far above 1.01; an AR(1)
    chain with rho = 0.8: ESS near N (1 - rho) / (1 + rho) (within 20%)."""
    rng = np.random.default_rng(0)
    iid = rng.standard_normal((4, 2000, 3))
    assert np.all(np.abs(split_rhat(iid) - 1) < 0.01)
    assert np.all(np.abs(effective_sample_size(iid) / 8000 - 1) < 0.2)
    apart = iid + np.arange(4)[:, None, None]
    assert np.all(split_rhat(apart) > 1.5)
    rho, n = 0.8, 20_000
    e = rng.standard_normal((4, n, 1)) * math.sqrt(1 - rho**2)
    ar = np.empty_like(e)
    ar[:, 0] = rng.standard_normal((4, 1))
    for t in range(1, n):
        ar[:, t] = rho * ar[:, t - 1] + e[:, t]
    want = 4 * n * (1 - rho) / (1 + rho)
    assert abs(effective_sample_size(ar)[0] / want - 1) < 0.2
    with pytest.raises(ValueError, match="draws must have shape"):
        split_rhat(np.zeros((2, 3)))


def test_unconverged_chains_are_not_summarised():
    rng = np.random.default_rng(1)
    data = survey(rng, 500, (-0.5, 1.0))
    short = rr_logit_bayes("r ~ x", data, FR, draws=8, burn_in=0, rng=2)
    assert not short.converged and short.draws.shape == (4, 8, 2)
    for read in (
        lambda: short.summary(),
        lambda: short.estimate,
        lambda: short.conf_int(),
    ):
        with pytest.raises(NotConvergedError, match="split R-hat of"):
            read()
    with pytest.raises(ValueError, match="prior_sd must be finite"):
        rr_logit_bayes("r ~ x", data, FR, prior_sd=math.inf)


@pytest.mark.slow
def test_a_weak_prior_on_a_large_sample_gives_the_maximum_likelihood_fit():
    """n = 5,000, prior sd 10 (the prior's precision 0.01, negligible against the
    data's): each posterior mean within 4 Monte-Carlo SEs (sd / sqrt(ESS))
    of the MLE, the posterior sd within 10% of the MLE's standard error, and the chains
    converged."""
    rng = np.random.default_rng(3)
    data = survey(rng, 5_000, (-0.5, 1.0))
    fit = rr_logit_bayes("r ~ x", data, FR, draws=3000, burn_in=500, rng=4)
    mle = rr_logit("r ~ x", data, FR)
    assert fit.converged
    gap = (fit.estimate - mle.params) / fit.mc_std_error
    assert np.all(np.abs(gap) < 4), gap
    assert np.all(np.abs(fit.std_error / mle.bse - 1) < 0.1)
    assert "R-hat" in fit.summary()
    # an estimate on the common base: the credible interval, the one JSON shape
    ci, equal_tailed = fit.confidence_interval(0.9), fit.conf_int(0.9)
    assert ci.low.equals(equal_tailed["low"]) and ci.high.equals(equal_tailed["high"])
    payload = fit.to_dict(0.9)
    assert payload["result"] == "RRLogitBayesResult" and payload["labels"] == ["Intercept", "x"]
    assert payload["interval"]["method"] == "bayes"
    assert payload["interval"]["low"] == equal_tailed["low"].tolist()
    assert payload["rhat"] == fit.rhat.tolist() and payload["chains"] == fit.draws.shape[0]


@pytest.mark.slow  # about 22 s; bench/simulation_grids.py (``sbc``) runs 800 replicates
def test_simulation_based_calibration(replicates: int = 100):
    """Talts et al. (2018): ``replicates`` replicates (100 here: 10 expected in each of
    the 10 bins, enough for the chi-square test), each drawing beta from its N(0, 1) prior,
    a survey of 200 through forced response, and the posterior (2 chains of 500
    draws): the share of the draws below the true beta (the normalised rank) is
    uniform on [0, 1] (a chi-square test over 10 bins, p > 0.001 for each
    coefficient). All draws are used: ranks among a thinned subset of autocorrelated
    draws are noisier for no gain."""
    rng = np.random.default_rng(5)
    ranks = np.empty((replicates, 2))
    for i in range(replicates):
        beta = rng.standard_normal(2)
        data = survey(rng, 200, beta)
        fit = rr_logit_bayes(
            "r ~ x",
            data,
            FR,
            prior_sd=1.0,
            chains=2,
            draws=500,
            burn_in=300,
            rng=rng,
            max_rhat=1.1,
        )
        ranks[i] = (fit.draws.reshape(-1, 2) < beta).mean(axis=0)
    for j in range(2):
        counts = np.bincount(np.minimum(ranks[:, j] * 10, 9).astype(int), minlength=10)
        assert stats.chisquare(counts).pvalue > 0.001, counts

"""Multilevel Bayesian list-experiment regression (R's ``ictregBayesHier``): recovery of
known coefficients by simulation, R's documented example against R's own sampler with
its random-effect prior fixed, and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.analysis import list_bayes_hierarchical

from .conftest import Z4

DATA = Path(__file__).parent / "data"


def simulated(seed: int, n: int = 3000, groups: int = 20) -> tuple[pd.DataFrame, dict]:
    """One sensitive item; the control and the sensitive model each with a slope in
    ``x`` and a normal intercept per group."""
    rng = np.random.default_rng(seed)
    truth = {"control.x": 0.3, "sensitive.1.x": 0.8, "control.group.Intercept": -0.4,
             "sensitive.1.group.Intercept": -1.0, "control.sigma2": 0.1,
             "sensitive.1.sigma2": 0.25}  # fmt: skip
    g = rng.integers(0, groups, n)
    u0 = rng.normal(truth["control.group.Intercept"], math.sqrt(truth["control.sigma2"]), groups)
    u1 = rng.normal(truth["sensitive.1.group.Intercept"], math.sqrt(truth["sensitive.1.sigma2"]),
                    groups)  # fmt: skip
    x, t = rng.normal(size=n), rng.integers(0, 2, n)
    h = 1 / (1 + np.exp(-(truth["control.x"] * x + u0[g])))
    z = rng.random(n) < 1 / (1 + np.exp(-(truth["sensitive.1.x"] * x + u1[g])))
    data = pd.DataFrame({"y": rng.binomial(3, h) + t * z, "x": x, "treat": t,
                         "g": [f"g{v:02d}" for v in g]})  # fmt: skip
    return data, truth


@pytest.mark.slow  # 6,000 sweeps: 9-18 s
def test_known_coefficients_are_recovered() -> None:
    """Every fixed coefficient and variance lies within 4 posterior SDs of the value the
    data were drawn from, and the kept chain's Monte Carlo error is small beside the
    posterior SD (its batch-means SE below a fifth of it)."""
    data, truth = simulated(7)
    fit = list_bayes_hierarchical("y ~ x", data, treat="treat", items=3, group="g",
                                  draws=3000, burn_in=3000, seed=3)  # fmt: skip
    for name, value in truth.items():
        assert abs(fit.params[name] - value) <= Z4 * fit.bse[name], name
        assert fit.mc_se[name] < fit.bse[name] / 5, name
    assert list(fit.groups) == sorted(data["g"].unique())
    assert 0.15 < fit.acceptance["slopes"] < 0.4
    interval = fit.credible_interval()
    assert (interval.low <= fit.params).all() and (fit.params <= interval.high).all()


def test_the_same_seed_gives_the_same_chain() -> None:
    data, _ = simulated(8, n=600, groups=6)
    one = list_bayes_hierarchical("y ~ x", data, treat="treat", items=3, group="g",
                                  draws=100, burn_in=100, seed=5)  # fmt: skip
    two = list_bayes_hierarchical("y ~ x", data, treat="treat", items=3, group="g",
                                  draws=100, burn_in=100, seed=5)  # fmt: skip
    pd.testing.assert_frame_equal(one.draws, two.draws)
    prevalence = one.draws["prevalence.1"]
    assert ((prevalence > 0) & (prevalence < 1)).all()


def test_a_group_without_a_treated_row_keeps_a_proper_intercept() -> None:
    """A group none of whose rows saw the sensitive item: its sensitive intercept is
    drawn from the groups' law alone, finite, with a spread near that law's."""
    data, _ = simulated(9, n=800, groups=5)
    data.loc[(data["g"] == "g00") & (data["treat"] == 1), "treat"] = 0
    fit = list_bayes_hierarchical("y ~ x", data, treat="treat", items=3, group="g",
                                  draws=400, burn_in=400, seed=6)  # fmt: skip
    lone = fit.draws["sensitive.1.intercept[g00]"]
    assert np.isfinite(lone).all() and lone.std() > 0.2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"group": "state"}, "group must name a column of data"),
        ({"group_formula": "~ 0 + x"}, "group_formula must keep the intercept"),
        ({"group_formula": "x"}, "group_formula must read '~ terms'"),
        ({"draws": 50}, "draws must be an integer >= 100"),
        ({"thin": 0}, "thin must be an integer >= 1"),
        ({"burn_in": -1}, "burn_in must be an integer >= 0"),
        ({"coef_precision": 0.0}, "coef_precision must be a finite number > 0"),
        ({"variance_prior": (5.0,)}, "variance_prior must be"),
        ({"variance_prior": (5.0, -1.0)}, "variance_prior's scale must be"),
        ({"draws": 10**7}, "draws x parameters must be at most"),
    ],
)
def test_bad_arguments_are_named(change, message) -> None:
    data, _ = simulated(10, n=300, groups=4)
    kwargs = {"treat": "treat", "items": 3, "group": "g", "draws": 100, "burn_in": 0, **change}
    with pytest.raises(ValueError, match=message):
        list_bayes_hierarchical("y ~ x", data, **kwargs)


def test_groups_must_be_known_and_several() -> None:
    data, _ = simulated(11, n=300, groups=4)
    with pytest.raises(ValueError, match="is missing on 1 used rows"):
        list_bayes_hierarchical("y ~ x", data.assign(g=data["g"].where(data.index != 3)),
                                treat="treat", items=3, group="g", draws=100)  # fmt: skip
    with pytest.raises(ValueError, match=r"must have 2\.\.10,000 groups, got 1"):
        list_bayes_hierarchical("y ~ x", data.assign(g="one"), treat="treat", items=3,
                                group="g", draws=100)  # fmt: skip

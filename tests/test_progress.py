"""Long library work reports its progress (issue 62, item 4): the simulations and the
sampler call ``progress(k)`` with the units just done, summing to the whole, and give
the same result as without it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from deniable import Warner, prevalence_test_error_rates
from deniable.analysis import power_coefficient, rr_logit_bayes
from deniable.data import regression_example


def test_the_test_error_rates_report_every_simulated_survey() -> None:
    calls: list[int] = []
    design = Warner(p=0.8)
    # 2,500 surveys of 10,000 respondents: chunks of 1,000 surveys, so three calls
    rates = prevalence_test_error_rates(
        design, n=10_000, prevalence=0.6, n_simulations=2_500, progress=calls.append
    )
    assert calls == [1_000, 1_000, 500]
    same = prevalence_test_error_rates(design, n=10_000, prevalence=0.6, n_simulations=2_500)
    assert rates == same


def test_a_simulated_power_reports_each_refit() -> None:
    example = regression_example()
    calls: list[int] = []
    args = ("r ~ x", example.data, example.design, [-1.0, 1.0], "x")
    got = power_coefficient(*args, n=200, method="simulation", reps=6, progress=calls.append)
    assert calls == [1] * 6
    same = power_coefficient(*args, n=200, method="simulation", reps=6)
    assert got.power == same.power
    formula: list[int] = []  # the formula simulates nothing: no call
    power_coefficient(*args, n=200, progress=formula.append)
    assert formula == []


def test_the_sampler_reports_each_iteration() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    truth = rng.random(300) < 1 / (1 + np.exp(1 - x))
    design = Warner(p=0.85)
    frame = pd.DataFrame({"y": design.randomize(truth.astype(int), rng), "x": x})
    calls: list[int] = []
    kwargs = {"chains": 2, "draws": 20, "burn_in": 10, "rng": 3, "max_rhat": 10.0}
    fit = rr_logit_bayes("y ~ x", frame, design, progress=calls.append, **kwargs)
    assert calls == [1] * 30
    same = rr_logit_bayes("y ~ x", frame, design, **kwargs)
    np.testing.assert_array_equal(fit.draws, same.draws)

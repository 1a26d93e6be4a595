"""estimate() with designs varying by respondent (the stacked design of estimation.pooled)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from deniable import ForcedResponse, KaryRR, MatrixDesign, Warner, estimate
from deniable.errors import ReportValidationError

DESIGNS = {
    "direct": MatrixDesign([[1.0, 0.0], [0.0, 1.0]]),
    "forced": ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
    "warner": Warner(p=0.75),
}
SIZES = {"direct": 300, "forced": 500, "warner": 700}


def survey(rng: np.random.Generator, pi: float) -> tuple[np.ndarray, np.ndarray]:
    keys, reports = [], []
    for key, size in SIZES.items():
        truth = (rng.random(size) < pi).astype(int)
        keys += [key] * size
        reports.append(DESIGNS[key].randomize(truth, rng))
    return np.array(keys, dtype=object), np.concatenate(reports)


def test_pooled_mle_is_the_pooled_likelihood_maximum_on_ethbe() -> None:
    """GLMMRR/ETHBE's "copied" item (direct, forced, unrelated question and crosswise by
    respondent): the pooled maximum likelihood equals the intercept-only rr_logit with
    the same designs by row; the moment estimate sums to 1."""
    from deniable.analysis import designs_by_row, rr_logit
    from deniable.data import load_rr_survey

    ethbe = load_rr_survey("GLMMRR/ETHBE")
    rows = ethbe[ethbe["Question"] == "copied"].dropna(subset=["RR_response"])
    keys, designs = designs_by_row(rows, forced="unconditional")
    y = rows["RR_response"].astype(int).to_numpy()
    fit = rr_logit("y ~ 1", rows.assign(design=keys, y=y), designs, group="design")
    mle = estimate(designs, y, "mle", groups=keys)
    assert mle.estimate[1] == pytest.approx(float(expit(fit.params["Intercept"])), abs=1e-6)
    assert mle.n == len(rows) == 4281
    moment = estimate(designs, y, groups=keys)
    assert moment.estimate.sum() == pytest.approx(1.0, abs=1e-12)
    assert any(label.startswith("DQ(1,0):") for label in moment.mechanism.report_labels)


@pytest.mark.slow  # over 5 s on 2 cores
@pytest.mark.parametrize("pi", [0.0, 0.001, 0.05, 0.2, 0.99])
def test_unbiased_calibrated_and_covering(pi: float) -> None:
    """600 simulated surveys mixing direct (300), forced response (500) and Warner
    (700) respondents: the moment estimate's mean is within 4 standard errors (of the
    mean) of the truth; its mean estimated variance matches the variance of the
    estimates within the 4-sigma band of a sample variance (4 sqrt(2 / 599)); the 95%
    Wald intervals (power-constrained) of the moment and maximum-likelihood estimates
    cover in at least 95% of surveys less 4 binomial standard errors, at the boundary
    too (where the maximum-likelihood one covers in all); and
    no interval is narrower than the reach z se_0 of an estimate at the boundary (the
    maximum-likelihood Wald interval alone collapsed to [0, 3e-7] at pi = 0.001 and
    covered 26% there)."""
    rng = np.random.default_rng(20261124 + int(pi * 1000))
    reps = 600
    est, var, cover = [], [], {"moment": 0, "mle": 0}
    for _ in range(reps):
        keys, reports = survey(rng, pi)
        for method in cover:
            res = estimate(DESIGNS, reports, method, groups=keys)
            ci = res.confidence_interval()
            cover[method] += ci.low[1] <= pi <= ci.high[1]
            assert res.boundary_std_error is not None
            reach = 1.959963984540054 * res.boundary_std_error[1]
            assert ci.high[1] >= reach - 1e-12 and ci.low[1] <= 1 - reach + 1e-12
            if method == "moment":
                est.append(res.estimate[1])
                var.append(res.std_error[1] ** 2)
    sd = float(np.std(est, ddof=1))
    assert abs(np.mean(est) - pi) < 4 * sd / math.sqrt(reps)
    assert abs(np.var(est, ddof=1) / np.mean(var) - 1) < 4 * math.sqrt(2 / (reps - 1))
    for method, count in cover.items():
        assert count / reps > 0.95 - 4 * math.sqrt(0.95 * 0.05 / reps), (method, count)


def test_bad_input_names_the_field() -> None:
    keys, reports = survey(np.random.default_rng(0), 0.3)
    with pytest.raises(ValueError, match="groups must give"):
        estimate(DESIGNS, reports)
    with pytest.raises(ValueError, match="groups is used only"):
        estimate(DESIGNS["forced"], reports, groups=keys)
    with pytest.raises(ValueError, match="keys with no design"):
        estimate({"direct": DESIGNS["direct"]}, reports, groups=keys)
    with pytest.raises(ValueError, match="one length"):
        estimate(DESIGNS, reports[:-1], groups=keys)
    with pytest.raises(ValueError, match="share their truths"):
        estimate({**DESIGNS, "kary": KaryRR(k=3, epsilon=1.0)}, reports, groups=keys)
    bad = reports.copy()
    bad[0] = 2
    with pytest.raises(ReportValidationError, match=r"outside 0\.\.1 of design 'direct'"):
        estimate(DESIGNS, bad, groups=keys)

"""Public functions the rest of the fast loop does not reach, each called once.

The fast loop (``pytest -m "not slow"``) is meant to call every public function at least
once; the ones here had no other fast caller (measured with ``coverage``, see the
README). Each call checks what the function promises, not only that it runs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deniable import ForcedResponse, HadamardResponse, KaryRR, Tally, estimate
from deniable.mechanisms._channels import MatrixChannel
from deniable.mechanisms._dbitflip import DBitFlip
from deniable.mechanisms._numeric import DuchiMean, OneBitMean
from deniable.mechanisms._prefix import PrefixExtension
from deniable.mechanisms._randomness import BlumBlumShub
from deniable.mechanisms._rappor import Rappor
from deniable.tallies import RapporTally

COINS = ForcedResponse(p_yes=0.25, p_no=0.25)


def test_matrix_channel_inverse_undoes_the_matrix() -> None:
    design = KaryRR(k=4, epsilon=1.0)
    channel = design.channel
    assert isinstance(channel, MatrixChannel)
    np.testing.assert_allclose(channel.inverse @ channel.matrix, np.eye(4), atol=1e-12)


def test_numeric_report_bounds_contain_every_report() -> None:
    rng = np.random.default_rng(0)
    for mech in (DuchiMean(1.0, 0.0, 10.0), OneBitMean(1.0, 0.0, 10.0)):
        low, high = mech.report_bounds
        reports = mech.debias(mech.randomize(rng.uniform(0, 10, 2000), rng))
        assert low <= reports.min() and reports.max() <= high


def test_hadamard_worst_case_variance_bounds_every_value() -> None:
    """The worst case over values of the per-report variance of the unbiased estimate;
    10,000 simulated reports of the worst value agree within 4 sigma of a variance."""
    oracle = HadamardResponse(8, 1.0)
    worst = oracle.worst_case_variance
    assert worst > 0 and math.isfinite(worst)
    rng = np.random.default_rng(1)
    n = 20_000

    spread = [
        estimate(oracle, oracle.randomize(np.zeros(n, dtype=np.int64), rng)).estimate[0]
        for _ in range(40)
    ]
    # value 0's variance is at most the worst case, and the sample variance of 40
    # estimates stays below its chi-square(39) 99.99% quantile times that variance / 39
    from scipy import stats

    assert np.var(spread, ddof=1) * n <= worst * stats.chi2.ppf(0.9999, 39) / 39


def test_dbitflip_and_pem_tally_and_describe_themselves() -> None:
    rng = np.random.default_rng(2)
    flip = DBitFlip(k=8, d=2, epsilon=1.0)
    tally = flip.tally(flip.randomize(rng.integers(0, 8, 500), rng))
    assert tally.n == 500 and int(tally.sampled.sum()) == 500 * 2
    pem = PrefixExtension(4.0, 3, "abc")
    reports = pem.randomize(["ab", "abc", "c"] * 100, rng)
    counted = pem.tally(reports)  # PEM's reports are their own sufficient statistic
    assert counted.shape == (300,) and set(counted["level"].tolist()) <= set(range(3))
    described = pem.to_dict()
    assert described["mechanism"] == "pem" and described["epsilon"] == pytest.approx(4.0)


def test_tallies_describe_themselves_as_json() -> None:
    shape = Tally(np.array([3, 5])).to_dict()
    assert shape["counts"] == [3, 5] and shape["n"] == 8
    rappor = RapporTally(np.zeros((2, 8), dtype=np.int64), np.array([4, 6], dtype=np.int64))
    described = rappor.to_dict()
    assert described["n_per_cohort"] == [4, 6] and np.shape(described["counts"]) == (2, 8)


def test_rappor_counts_its_candidates_as_its_truths() -> None:
    r = Rappor(n_bloom_bits=16, h=2, n_cohorts=2, candidates=["a", "b", "c"])
    assert r.n_truths == 3 and r.truth_labels == ("a", "b", "c")


def test_blum_blum_shub_yields_its_bits_per_step() -> None:
    gen = BlumBlumShub(p=499, q=547, seed=159_201)  # M = 272,953: floor(log2 log2 M) = 4
    assert gen.bits_per_step == 4
    out = gen.bytes(64)
    assert len(out) == 64 and gen.bytes(0) == b""


def test_group_model_report_probabilities_sum_to_one() -> None:
    from deniable.analysis import UnknownInnocuous

    model = UnknownInnocuous(p=[0.3, 0.7])
    probs = model.report_probabilities(0.2, [0.5])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    # Pr(yes | group g) = p_g pi + (1 - p_g) a
    np.testing.assert_allclose(probs[:, 1], [0.3 * 0.2 + 0.7 * 0.5, 0.7 * 0.2 + 0.3 * 0.5])


def test_logit_fit_reports_bic_and_its_covariance() -> None:
    from deniable.analysis import rr_logit

    rng = np.random.default_rng(3)
    n = 3000
    x = rng.normal(size=n)
    truth = rng.random(n) < 1 / (1 + np.exp(-(-0.5 + x)))
    frame = pd.DataFrame({"y": COINS.randomize(truth, rng), "x": x})
    fit = rr_logit("y ~ x", frame, COINS)
    cov = fit.cov_params()
    np.testing.assert_allclose(np.sqrt(np.diag(cov.to_numpy())), fit.bse.to_numpy(), rtol=1e-12)
    assert fit.bic == pytest.approx(-2 * fit.llf + math.log(n) * 2)
    predicted = fit.predicted_prevalence()
    assert predicted.labels == ["prevalence"]


def test_channel_estimate_summarises_and_compares_its_starts() -> None:
    from deniable.analysis import estimate_channel

    rng = np.random.default_rng(4)
    reports = COINS.randomize(rng.random(2000) < 0.3, rng)
    fit = estimate_channel(COINS, reports)
    assert not fit.starts_disagree
    assert "pi" in fit.summary()


def test_demo_and_live_rows_say_whether_they_cover() -> None:
    from deniable.collection.server._live import LiveRow
    from deniable.collection.study._demo_study import StudyRow
    from deniable.data._demo import DemoRow

    live = LiveRow("q", "yes", 100, 0.3, 0.05, 0.2, 0.4, 0.31, 0.3)
    assert live.covered and not LiveRow("q", "yes", 100, 0.3, 0.05, 0.2, 0.4, 0.5, 0.3).covered
    assert StudyRow("q", "arm a", 100, 0.3, 0.05, 0.2, 0.4, 0.25).covered
    row = DemoRow(
        "s", "q", "yes", "Warner(p=0.7)", math.inf, 100, 0.3, 0.05, 0.3, 0.2, 0.4, "wilson", None
    )
    assert row.covered is None and row.to_dict()["epsilon"] == "inf"
    assert DemoRow(*list(row.to_dict().values())[:12], 0.35).covered  # type: ignore[arg-type]


def test_the_last_estimate_like_results_label_their_entries(tmp_path, monkeypatch) -> None:
    from deniable.analysis import rr_correlation, statistical_parity
    from deniable.estimation._means import estimate_histogram
    from deniable.estimation._prefix_search import find_heavy_hitters

    rng = np.random.default_rng(6)
    n = 4000
    y = rng.normal(size=n)
    frame = pd.DataFrame({"y": y, "z": y + rng.normal(size=n)})
    corr = rr_correlation(frame, ["y", "z"], {}, bootstrap=20)
    assert corr.labels == ["y ~ z"]  # truth 1 / sqrt(2) = 0.707
    assert abs(float(corr.estimate.iloc[0]) - 1 / math.sqrt(2)) < 4 * float(corr.std_error.iloc[0])
    parity = statistical_parity(rng.integers(0, 2, n), rng.integers(0, 2, n))
    assert parity.labels == ["difference"] and abs(parity.estimate) < 4 * parity.std_error
    flip = DBitFlip(k=8, d=2, epsilon=1.0)
    hist = estimate_histogram(flip, flip.randomize(rng.integers(0, 8, n), rng))
    assert hist.labels == [f"bucket {t}" for t in range(8)]
    pem = PrefixExtension(4.0, 2, "ab")
    found = find_heavy_hitters(pem, pem.randomize(["ab"] * 3000 + ["ba"] * 1000, rng), 0.1)
    assert "ab" in found.labels
    ci = found.confidence_interval()
    assert np.all(ci.low <= found.estimate) and np.all(found.estimate <= ci.high)


def test_error_rates_name_the_simulated_rate_by_kind() -> None:
    from deniable.planning._testing import prevalence_test_error_rates

    rates = prevalence_test_error_rates(
        COINS, 400, 0.5, null=0.5, n_simulations=2000, rng=np.random.default_rng(7)
    )
    assert rates.kind == "false positive"
    assert rates.error_rate_simulated == rates.rejection_rate_simulated
    # within 4 binomial SEs of the exact rate
    se = math.sqrt(rates.error_rate_exact * (1 - rates.error_rate_exact) / 2000)
    assert abs(rates.error_rate_simulated - rates.error_rate_exact) < 4 * se + 1e-12


def test_device_files_are_found_and_forgotten(tmp_path, monkeypatch) -> None:
    from deniable.collection.respondent._client import numeric_truth
    from deniable.collection.respondent._memo import ReportMemo
    from deniable.collection.store._recipients import RecipientKey

    memo = ReportMemo(tmp_path / "memo.json")
    memo.put("survey@1", "q", 1)
    assert memo.get("survey@1", "q") == 1 and memo.forget() and not memo.forget()
    monkeypatch.delenv("DENIABLE_RECIPIENT_KEY_FILE", raising=False)
    db = tmp_path / "x.sqlite"
    assert RecipientKey.file_for(f"sqlite:///{db}") == tmp_path / "x.sqlite.recipient-key"
    rng = np.random.default_rng(8)
    codes = [numeric_truth({"low": 0.0, "high": 10.0}, 2.5, rng) for _ in range(4000)]
    # rounded at random to a bound: 1 with chance 0.25, within 4 binomial SEs
    assert abs(np.mean(codes) - 0.25) < 4 * math.sqrt(0.25 * 0.75 / 4000)

"""RAPPOR: exact epsilons by enumeration, memoized permanent randomization, decoding."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deniable import estimate
from deniable.errors import ReportValidationError
from deniable.estimation._rappor_decoding import decode_rappor
from deniable.mechanisms._rappor import Rappor, RapporReports


def _two_values_with_disjoint_bits(r: Rappor, cohort: int = 0) -> tuple[str, str]:
    seen = {}
    for i in range(1000):
        v = f"value-{i}"
        bits = frozenset(r.bloom_bits(cohort, v))
        if len(bits) == r.h:
            for w, other in seen.items():
                if not bits & other:
                    return w, v
            seen[v] = bits
    raise AssertionError("no pair found")


@pytest.mark.parametrize(("f", "p", "q", "h"), [(0.5, 0.5, 0.75, 1), (0.25, 0.25, 0.75, 2)])
def test_epsilons_by_enumeration(f, p, q, h):
    r = Rappor(n_bloom_bits=8, h=h, n_cohorts=1, f=f, p=p, q=q)
    v, w = _two_values_with_disjoint_bits(r)
    outputs = np.array(list(itertools.product([0, 1], repeat=8)), dtype=bool)

    def bloom(value):
        b = np.zeros(8, dtype=bool)
        b[r.bloom_bits(0, value)] = True
        return b

    def report_prob(value):  # one report: independent bits with p* / q*
        probs = np.where(bloom(value), r.p_star, r.q_star)
        return np.prod(np.where(outputs, probs, 1 - probs), axis=1)

    def permanent_prob(value):  # the memoized B'
        probs = np.where(bloom(value), 1 - r.f / 2, r.f / 2)
        return np.prod(np.where(outputs, probs, 1 - probs), axis=1)

    for dist, eps in ((report_prob, r.epsilon_report), (permanent_prob, r.epsilon_lifetime)):
        a, b = dist(v), dist(w)
        assert a.sum() == pytest.approx(1) and b.sum() == pytest.approx(1)
        ratio = max(np.max(a / b), np.max(b / a))
        assert math.log(ratio) == pytest.approx(eps, rel=1e-12)


def test_encoder_thresholds_and_memoized_permanent_response():
    r = Rappor(n_bloom_bits=16, h=2, n_cohorts=4, f=0.5, p=0.0, q=1.0)  # IRR off: the report is B'
    secrets = [bytes([i]) * 32 for i in range(50)]
    values = ["apple"] * 50
    first = r.randomize(values, secrets=secrets)
    again = r.randomize(values, secrets=secrets)
    np.testing.assert_array_equal(first.bits, again.bits)  # same client, same value: same B'
    np.testing.assert_array_equal(first.cohort, [r.cohort_of(s) for s in secrets])
    other = r.randomize(["pear"] * 50, secrets=secrets)
    assert not np.array_equal(first.bits, other.bits)
    # byte layout of the permanent coins: low bit = coin, (byte >> 1) < round(128 f) replaces
    tf = r.threshold_f
    bloom = r.bloom_bits(0, "apple")
    prr = np.full(16, tf << 1, dtype=np.uint8)  # not replaced: B' = B
    prr[0] = ((tf - 1) << 1) | 1  # replaced by coin 1
    prr[1] = (tf - 1) << 1  # replaced by coin 0
    out = r.encode(["apple"], [0], prr.tobytes(), np.zeros(64, np.uint8).tobytes())
    bits = np.unpackbits(out.bits, count=16, bitorder="little")
    expected = np.zeros(16, dtype=np.uint8)
    expected[bloom] = 1
    expected[0], expected[1] = 1, 0
    # p = 0 (threshold 0) and q = 1 (threshold 2^32 - 1): words of 0 report B' except
    # that word 0 < T_p = 0 never holds, so B' = 0 bits report 0 and B' = 1 bits report 1
    np.testing.assert_array_equal(bits, expected)


def test_decoding_finds_the_heavy_hitters_with_honest_errors():
    rng = np.random.default_rng(2014)
    candidates = [f"url-{i}" for i in range(100)]
    freq = np.zeros(100)
    freq[:20] = np.linspace(0.12, 0.02, 20)
    freq /= freq.sum()
    n = 200_000
    values = [candidates[i] for i in rng.choice(100, n, p=freq)]
    r = Rappor(n_bloom_bits=128, h=2, n_cohorts=32, candidates=candidates)
    reports = r.randomize(values, rng)
    res = estimate(r, reports)
    decoded = decode_rappor(r, reports)
    est, se, detected = decoded.estimate, decoded.std_error, decoded.detected
    np.testing.assert_array_equal(est, res.estimate)
    truth = np.bincount([int(v[4:]) for v in values], minlength=100) / n
    big = truth > 0.05
    # the large ones are detected and within 4.5 standard errors of the truth
    assert detected[big].all()
    assert np.all(np.abs(est[big] - truth[big]) < 4.5 * se[big])
    # at most one absent candidate is detected (Bonferroni at alpha = 0.05 over 100)
    assert detected[truth == 0].sum() <= 1
    ci = res.confidence_interval()
    assert np.all(ci.low <= ci.high)
    with pytest.raises(ValueError, match="normal"):
        res.confidence_interval(method="wilson")


def test_tallies_merge_and_bad_reports_are_rejected():
    rng = np.random.default_rng(1)
    r = Rappor(n_bloom_bits=12, h=2, n_cohorts=4, candidates=["a", "b"])
    reports = r.randomize(["a", "b", "a"] * 100, rng)
    merged = r.tally(reports[:100]) + r.tally(reports[100:])
    whole = r.tally(reports)
    np.testing.assert_array_equal(merged.counts, whole.counts)
    assert whole.n == 300
    with pytest.raises(ReportValidationError, match="shape"):
        r.tally(RapporReports(reports.cohort, reports.bits[:, :1]))
    bad = reports.bits.copy()
    bad[0, -1] = 0xF0
    with pytest.raises(ReportValidationError, match="padding"):
        r.tally(RapporReports(reports.cohort, bad))
    with pytest.raises(ReportValidationError, match="cohorts must lie"):
        r.tally(RapporReports(reports.cohort + 4, reports.bits))
    with pytest.raises(ValueError, match="h must be <= 8"):
        Rappor(h=9)
    with pytest.raises(ValueError, match="n_bloom_bits must be <= 4096"):
        Rappor(n_bloom_bits=4097)
    with pytest.raises(ValueError, match="n_cohorts must be <= 4096"):
        Rappor(n_cohorts=4097)
    with pytest.raises(ValueError, match="p and q must differ"):
        Rappor(p=0.5, q=0.5)
    with pytest.raises(TypeError, match="strings"):
        r.randomize([1, 2], rng)


def test_the_old_names_of_bloom_bits_and_cohorts_warn_and_still_work():
    """``k`` and ``m`` (Bloom bits, cohorts) were renamed so that ``k`` is a domain size
    everywhere; the old keywords, attributes and spec strings work until 0.3."""
    from deniable.mechanisms._registry import mechanism_from_spec

    new = Rappor(n_bloom_bits=16, h=2, n_cohorts=4)
    with pytest.warns(DeprecationWarning) as said:
        old = Rappor(k=16, h=2, m=4)
    assert [str(w.message).split(";")[0] for w in said] == [
        "Rappor's 'k' is deprecated",
        "Rappor's 'm' is deprecated",
    ]
    assert (
        old.params == new.params
        and old.spec == "rappor:n_bloom_bits=16,h=2,n_cohorts=4,f=0.5,p=0.5,q=0.75"
    )
    with pytest.warns(DeprecationWarning, match="'m' is deprecated; use 'n_cohorts'"):
        assert new.m == 4
    with pytest.warns(DeprecationWarning, match="'k' is deprecated"):
        assert new.k == 16
    with pytest.warns(DeprecationWarning):
        parsed = mechanism_from_spec("rappor:k=16,h=2,m=4")
    assert parsed.spec == new.spec and mechanism_from_spec(new.spec).params == new.params


@pytest.mark.slow  # 9 s: a decode of 2,000 candidates
def test_decoding_is_sparse_and_equals_the_hashed_bloom_bits():
    """The design matrix is built sparse from the digests (n_cohorts M h ones, not
    n_cohorts n_bloom_bits M floats), equal to the Bloom bits hashed one by one, and
    the decoder works on it. Measured (64 cohorts, 128 bits, 2 x 10^5 reports, 10,000
    candidates): 106 s and a 2.7 GB peak before, 10 s with no growth of the process's
    peak now, the same estimates to the last bit."""
    cands = [f"value-{i}" for i in range(2000)] + ["", "ü"]
    r = Rappor(n_bloom_bits=64, h=4, n_cohorts=16, candidates=cands)
    X = r.sparse_design_matrix()
    assert X.shape == (16 * 64, len(cands)) and X.nnz <= 16 * len(cands) * 4
    assert set(np.unique(X.data)) == {1.0}
    for j in (0, 7, 15):
        for c in (0, 1, 1999, 2000, 2001):
            column = np.zeros(64)
            column[r.bloom_bits(j, cands[c])] = 1.0
            np.testing.assert_array_equal(X[j * 64 : (j + 1) * 64, c].toarray().ravel(), column)
    np.testing.assert_array_equal(r.design_matrix(), X.toarray())
    rng = np.random.default_rng(3)
    reports = r.randomize(rng.choice(["value-1", "value-2", "value-3"], 20_000), rng)
    est = estimate(r, reports)
    assert est.detected[1:4].all() and not est.detected[4:].any()

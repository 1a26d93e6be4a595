"""Frequency oracles: exact epsilon from both sides, unbiasedness and exact variance.

Statistical checks simulate R independent surveys of a fixed population (so the
estimand is the population's frequencies) with a fixed seed, and compare with the
exact formulas of each oracle:

- mean of the R estimates of each f_v: |z| < 4.5 with z from the exact variance / R
  (two-sided 4.5-sigma: false-failure rate 6.8e-6 per check);
- sample variance over R surveys: (R - 1) s^2 / sigma^2 inside the chi-square
  quantiles at alpha = 1e-5 (two-sided), each estimate being a sum of 2,000
  independent Bernoulli support indicators, affine-transformed (close to normal).

With about 30 checks of each kind per oracle the suite's false-failure rate is below
1e-3.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import linalg, stats

import deniable
from deniable import (
    HadamardResponse,
    KaryRR,
    LocalHashing,
    SupportTally,
    UnaryEncoding,
    estimate,
    frequency_oracle,
    norm_sub,
    project_simplex,
)
from deniable.errors import MemoryLimitError, ReportValidationError
from deniable.mechanisms._hadamard import fwht
from deniable.mechanisms._oracle import TWO32
from deniable.mechanisms._unary import packed_bit_counts

R = 400
N = 2000
POPULATION = np.array([0.40, 0.25, 0.15, 0.10, 0.06, 0.04])  # k = 6
ORACLES = [
    UnaryEncoding(6, 1.0),
    UnaryEncoding(6, 1.0, optimized=False),
    LocalHashing(6, 1.0),
    LocalHashing(6, 0.3),  # g = 2
    LocalHashing(6, 2.0, g=5),
    HadamardResponse(6, 1.0, blocks=2),  # B = 2 blocks of b = 4 columns
    HadamardResponse(6, 0.5),  # B = 1: the high-privacy scheme
    HadamardResponse(6, 2.5, blocks=8),  # B = 8 blocks of b = 2: one value a block
    HadamardResponse(6, 3.0, blocks=2),  # several values a block, some variance from F_v
]


def _population(n: int) -> np.ndarray:
    counts = np.round(POPULATION * n).astype(int)
    counts[0] += n - counts.sum()
    return np.repeat(np.arange(POPULATION.size), counts)


@pytest.mark.parametrize("oracle", ORACLES, ids=repr)
def test_unbiased_with_exact_variance(oracle):
    rng = np.random.default_rng(20261121)
    values = _population(N)
    truth = np.bincount(values, minlength=oracle.k) / N
    est = np.empty((R, oracle.k))
    for r in range(R):
        est[r] = estimate(oracle, oracle.randomize(values, rng)).estimate
    sigma2 = oracle.variance(truth, N)
    z = (est.mean(axis=0) - truth) / np.sqrt(sigma2 / R)
    assert np.all(np.abs(z) < 4.5), z
    ratio = (R - 1) * est.var(axis=0, ddof=1) / sigma2
    lo, hi = stats.chi2.ppf([0.5e-5, 1 - 0.5e-5], R - 1)
    assert np.all((ratio > lo) & (ratio < hi)), ratio / (R - 1)


@pytest.mark.parametrize("oracle", ORACLES, ids=repr)
def test_wilson_intervals_cover(oracle):
    # coverage of the 95% intervals over R surveys x k values; the R surveys are
    # independent, so the average coverage has sd <= sqrt(0.95 * 0.05 / R) = 0.011
    rng = np.random.default_rng(7)
    values = _population(N)
    truth = np.bincount(values, minlength=oracle.k) / N
    covered = 0
    for _ in range(R):
        ci = estimate(oracle, oracle.randomize(values, rng)).confidence_interval()
        covered += int(np.sum((ci.low <= truth) & (truth <= ci.high)))
    share = covered / (R * oracle.k)
    assert abs(share - 0.95) < 4 * math.sqrt(0.95 * 0.05 / R)


# -- exact epsilon, from both sides ------------------------------------------------
def _max_ratio(prob: np.ndarray) -> float:
    """``prob``: (reports, truths) exact probabilities -> max over reports of max/min."""
    return float(np.max(prob.max(axis=1) / prob.min(axis=1)))


@pytest.mark.parametrize("optimized", [True, False])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, math.log(3), 4.0])
def test_unary_encoding_epsilon_by_enumeration(optimized, epsilon):
    oracle = UnaryEncoding(4, epsilon, optimized=optimized)
    reports = np.array(list(itertools.product([False, True], repeat=4)))
    prob = np.array([[oracle.report_probability(r, t) for t in range(4)] for r in reports])
    np.testing.assert_allclose(prob.sum(axis=0), 1.0, rtol=1e-12)
    ratio = _max_ratio(prob)
    assert ratio == pytest.approx(math.exp(oracle.epsilon), rel=1e-12)
    assert oracle.epsilon <= epsilon  # never more than asked
    assert oracle.epsilon > epsilon - 1e-8  # and essentially what was asked
    assert ratio > math.exp(oracle.epsilon - 1e-9)  # not epsilon - 1e-9 private


def test_unary_encoding_thresholds_are_what_the_encoder_uses():
    oracle = UnaryEncoding(3, 1.0)
    tp, tq = oracle.threshold_p, oracle.threshold_q
    # word layout: 3 little-endian uint32 per report; value 1
    words = np.array([[tq - 1, tp - 1, tq], [tq, tp, tq - 1]], dtype="<u4")
    out = oracle.encode(np.array([1, 1]), words.tobytes())
    bits = np.unpackbits(out, axis=1, count=3, bitorder="little")
    assert bits.tolist() == [[1, 1, 0], [0, 0, 1]]
    assert oracle.p_star == tp / TWO32 and oracle.q_star == tq / TWO32


@pytest.mark.parametrize(("epsilon", "g"), [(0.3, None), (1.0, None), (2.0, 5), (4.0, None)])
def test_local_hashing_epsilon_by_enumeration(epsilon, g):
    oracle = LocalHashing(5, epsilon, g=g)
    rng = np.random.default_rng(1)
    ratios = []
    for a, b in rng.integers(0, 2**63, size=(40, 2)):
        prob = oracle.report_probabilities(int(a) * 2 + 1, int(b))
        np.testing.assert_allclose(prob.sum(axis=0), 1.0, rtol=1e-12)
        ratios.append(_max_ratio(prob))
    assert max(ratios) <= math.exp(oracle.epsilon) * (1 + 1e-12)
    assert max(ratios) == pytest.approx(math.exp(oracle.epsilon), rel=1e-12)
    assert epsilon - 1e-8 < oracle.epsilon <= epsilon
    # q* is the exact collision-based support probability, 1/g up to ~g / 2^32
    assert oracle.q_star == pytest.approx(1 / oracle.g, abs=1e-8)


def test_local_hashing_encoder_boundaries_and_hash():
    oracle = LocalHashing(1000, 1.0)  # g = 4
    a, b = 0x9E3779B97F4A7C15, 0x0123456789ABCDEF
    v = np.array([123, 123, 123])
    bucket = ((((a * 123 + b) % 2**64) >> 32) * oracle.g) >> 32
    rows = []
    for keep_word, other_word in [
        (oracle.threshold_p - 1, 0),
        (oracle.threshold_p, 0),
        (2**32 - 1, 2**32 - 1),
    ]:
        rows.append(
            a.to_bytes(8, "little")
            + b.to_bytes(8, "little")
            + keep_word.to_bytes(4, "little")
            + other_word.to_bytes(4, "little")
        )
    out = oracle.encode(v, b"".join(rows))
    assert out["y"].tolist() == [bucket, (bucket + 1) % 4, (bucket + 3) % 4]
    assert out["a"][0] == a and out["b"][0] == b
    # the decoder's support test agrees with the hash
    tally = oracle.tally(out[:1])
    hashed = oracle.hash_buckets(out["a"][:1], out["b"][:1], np.arange(1000))
    np.testing.assert_array_equal(tally.counts, (hashed == out["y"][0]).astype(int))
    matrix = oracle.support_matrix(out).toarray()
    np.testing.assert_array_equal(matrix[0], hashed == out["y"][0])


@pytest.mark.parametrize(
    ("k", "epsilon", "blocks"), [(6, 0.5, None), (6, 2.0, None), (11, 4.0, None), (6, 3.0, 2)]
)
def test_hadamard_epsilon_and_estimator_by_enumeration(k, epsilon, blocks):
    oracle = HadamardResponse(k, epsilon, blocks=blocks)
    K = oracle.K
    rho = oracle.threshold_rho / TWO32
    # every column word y with the keep word below / above T_rho: exact P(report | truth)
    prob = np.zeros((K, k))
    for keep_word, weight in ((oracle.threshold_rho - 1, rho), (oracle.threshold_rho, 1 - rho)):
        for value in range(k):
            raw = np.array([[y, keep_word] for y in range(K)], dtype="<u4").tobytes()
            cols = oracle.encode(np.full(K, value), raw)
            prob[:, value] += weight * np.bincount(cols, minlength=K) / K
    np.testing.assert_allclose(prob.sum(axis=0), 1.0, rtol=1e-12)
    ratio = _max_ratio(prob)
    assert ratio == pytest.approx(math.exp(oracle.epsilon), rel=1e-12)
    assert epsilon - 1e-8 < oracle.epsilon <= epsilon
    # two probability levels: alpha on the value's set S_v (the support matrix), beta off it
    inside = oracle.support_matrix(np.arange(K)).toarray()
    assert inside.sum(axis=0).tolist() == [oracle.b // 2] * k
    alpha, beta = np.unique(prob).max(), np.unique(prob).min()
    np.testing.assert_allclose(prob, np.where(inside, alpha, beta), rtol=1e-12)
    assert oracle.likelihood_ratio() == pytest.approx(alpha / beta, rel=1e-12)
    # each column's weight for each value (from a one-report tally), and its moments
    weights = np.array([oracle.tally([c]).counts / oracle.tally([c]).scale for c in range(K)])
    assert set(np.unique(weights)) <= {0.0, 0.5, 1.0}
    mean = prob.T @ weights  # (truth, candidate): E[w_v | truth]
    np.testing.assert_allclose(np.diag(mean), oracle.p_star, rtol=1e-12)
    np.testing.assert_allclose(mean[~np.eye(k, dtype=bool)], oracle.q_star, rtol=1e-12)
    # the variance formula for a fixed population f (a share f_t of the reports have
    # truth t), from the exact second moments: sum_t f_t Var(w_v | t)
    f = np.random.default_rng(k).dirichlet(np.ones(k))
    second = prob.T @ weights**2
    var_w = f @ (second - mean**2)
    gap = oracle.p_star - oracle.q_star
    np.testing.assert_allclose(oracle.variance(f, 1), var_w / gap**2, rtol=1e-10)


@pytest.mark.parametrize("k", [10, 100, 1000, 10**6])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_hadamard_default_blocks_have_the_least_uniform_variance(k, epsilon):
    # the default B against every power of two with K = B b <= 2^32, on the exact
    # variance summed over a uniform population (computed here from variance())
    chosen = HadamardResponse(k, epsilon)
    uniform = np.full(k, 1.0 / k)
    best = chosen.variance(uniform, 1).sum()
    paper = 1 << math.floor(math.log2(min(2 * k, math.exp(epsilon))))
    for j in range(0, 21):
        if (1 << j) * 2 * k > 1 << 32:
            break
        other = HadamardResponse(k, epsilon, blocks=1 << j).variance(uniform, 1).sum()
        assert best <= other * (1 + 1e-12), (1 << j, other, chosen.B, best)
        if 1 << j == paper:
            assert best <= other


def test_hadamard_half_supports_use_wald_intervals():
    oracle = HadamardResponse(20, 3.0)
    assert oracle.B > 1
    tally = oracle.tally(oracle.randomize(np.arange(20), np.random.default_rng(0)))
    assert tally.scale == 2 and tally.to_dict()["scale"] == 2
    result = estimate(oracle, tally)
    assert result.default_interval_method == "normal"
    with pytest.raises(ValueError, match="needs binomial support counts"):
        result.confidence_interval(method="wilson")
    with pytest.raises(ReportValidationError, match="scales"):
        tally + SupportTally(np.zeros(20, dtype=np.int64), 3)
    with pytest.raises(ReportValidationError, match=r"0\.\.2"):
        SupportTally(np.array([3]), 1, scale=2)


def test_fwht_matches_the_hadamard_matrix():
    x = np.random.default_rng(0).integers(0, 100, 16)
    np.testing.assert_array_equal(fwht(x), linalg.hadamard(16) @ x)
    with pytest.raises(ValueError, match="power of two"):
        fwht(np.ones(6))


@pytest.mark.parametrize("n, k", [(1000, 21), (3000, 2100), (700, 8 * 300 + 5)])
def test_packed_bit_counts(n, k):
    # narrow rows go through byte histograms, rows of 64 bytes or more through
    # bit-sliced counters (3000 rows: several 15- and 255-row flushes per thread block)
    bits = np.random.default_rng(k).random((n, k)) < np.linspace(0.0, 1.0, k)
    packed = np.packbits(bits, axis=1, bitorder="little")
    np.testing.assert_array_equal(packed_bit_counts(packed, k), bits.sum(axis=0))


# -- estimation API ----------------------------------------------------------------
def test_estimate_result_object_and_tally_merging():
    oracle = LocalHashing(1000, 2.0)
    rng = np.random.default_rng(3)
    values = rng.integers(0, 10, 20_000)
    reports = oracle.randomize(values, rng)
    whole = oracle.tally(reports)
    merged = oracle.tally(reports[:7000]) + oracle.tally(reports[7000:])
    np.testing.assert_array_equal(whole.counts, merged.counts)
    res = estimate(oracle, merged)
    assert isinstance(res, deniable.PrevalenceEstimate)
    assert res.estimate.shape == (1000,) and res.std_error.shape == (1000,)
    assert res.covariance is None and res.n == 20_000
    for method in ("normal", "wilson", "beta", "chebyshev"):
        ci = res.confidence_interval(0.9, method)
        assert np.all((ci.low >= 0) & (ci.low <= ci.high) & (ci.high <= 1))
    with pytest.raises(ValueError, match="bayes"):
        res.confidence_interval(method="bayes")
    with pytest.raises(ValueError, match="moment' or 'mle"):
        estimate(oracle, reports, method="bayes")
    with pytest.raises(ValueError, match="reports themselves"):
        estimate(oracle, merged, method="mle")
    d = res.to_dict()
    assert d["mechanism"]["mechanism"] == "olh" and d["mechanism"]["epsilon"] <= 2.0


def test_bad_input_is_rejected_with_the_field_named():
    with pytest.raises(ValueError, match="epsilon must be in"):
        UnaryEncoding(10, 0.0)
    with pytest.raises(ValueError, match="k must be an integer >= 2"):
        LocalHashing(1, 1.0)
    with pytest.raises(ValueError, match="g must be an integer >= 2"):
        LocalHashing(10, 1.0, g=1)
    with pytest.raises(ValueError, match=r"values must hold codes in 0\.\.9"):
        HadamardResponse(10, 1.0).randomize([3, 10])
    with pytest.raises(TypeError, match="values must be an integer"):
        UnaryEncoding(10, 1.0).randomize([0.5])
    oue = UnaryEncoding(10, 1.0)
    with pytest.raises(ReportValidationError, match=r"shape \(n, 2\)"):
        oue.tally(np.zeros((3, 3), np.uint8))
    with pytest.raises(ReportValidationError, match="padding bits"):
        oue.tally(np.array([[0, 0b100]], np.uint8))
    olh = LocalHashing(10, 1.0)
    bad = olh.randomize(np.arange(10), np.random.default_rng(0))
    bad["y"][0] = olh.g
    with pytest.raises(ReportValidationError, match="buckets y must lie"):
        olh.tally(bad)
    with pytest.raises(ReportValidationError, match="columns must lie"):
        HadamardResponse(10, 1.0).tally(np.array([16]))
    with pytest.raises(ReportValidationError, match="cannot merge"):
        SupportTally(np.zeros(3, np.int64), 0) + SupportTally(np.zeros(4, np.int64), 0)
    with pytest.raises(ValueError, match="randomness must hold"):
        oue.encode([1], b"\0" * 3)


def test_randomize_uses_the_secure_source_by_default(monkeypatch):
    from deniable.mechanisms._randomness import SecureRandom

    calls = []
    real = SecureRandom.bytes_view  # the encoders' read of the keystream, without a copy

    def spy(self, n):
        calls.append(n)
        return real(self, n)

    monkeypatch.setattr(SecureRandom, "bytes_view", spy)
    LocalHashing(100, 1.0).randomize(np.arange(50))
    assert calls == [50 * 24]


# -- choosing an oracle and post-processing -----------------------------------------
def test_frequency_oracle_picks_the_lowest_variance():
    assert isinstance(frequency_oracle(4, 2.0), KaryRR)
    assert isinstance(frequency_oracle(10_000, 1.0), LocalHashing)
    assert isinstance(frequency_oracle(100, 0.5), UnaryEncoding)
    assert isinstance(frequency_oracle(100, 0.5, max_report_bytes=4), LocalHashing)
    for k, eps in [(3, 1.0), (50, 1.0), (500, 3.0), (10**5, 0.5)]:
        best = frequency_oracle(k, eps, max_decode_tests=None)
        chosen = (
            (math.exp(eps) + k - 2) / (math.exp(eps) - 1) ** 2
            if isinstance(best, KaryRR)
            else best.variance_at_zero
        )
        for other in (LocalHashing(k, eps), HadamardResponse(k, eps)):
            assert chosen <= other.variance_at_zero + 1e-9


def test_frequency_oracle_weighs_the_decoding_cost():
    """OLH decodes in n k hash tests: at k = 10^6 and n = 10^6 (10^12 tests, about 40 s)
    Hadamard response is chosen, its variance higher by 1.05x-2.02x (epsilon 0.5-4);
    with fewer reports, or no limit, OLH again; the limit and n are checked."""
    for eps in (0.5, 1.0, 2.0, 4.0):
        assert isinstance(frequency_oracle(10**6, eps), HadamardResponse)
        assert isinstance(frequency_oracle(10**6, eps, n=10_000), LocalHashing)
        assert isinstance(frequency_oracle(10**6, eps, max_decode_tests=None), LocalHashing)
        ratio = (
            HadamardResponse(10**6, eps).variance_at_zero
            / LocalHashing(10**6, eps).variance_at_zero
        )
        assert 1.0 < ratio < 2.1
    assert isinstance(frequency_oracle(10_000, 1.0), LocalHashing)  # 10^10 tests: in budget
    with pytest.raises(ValueError, match="n"):
        frequency_oracle(100, 1.0, n=0)
    with pytest.raises(ValueError, match="max_decode_tests"):
        frequency_oracle(100, 1.0, max_decode_tests=0)


def test_projection_and_norm_sub():
    rng = np.random.default_rng(5)
    for _ in range(200):
        f = rng.normal(0.05, 0.2, 20)
        proj = project_simplex(f)
        assert proj.min() >= 0 and proj.sum() == pytest.approx(1.0)
        # optimality (KKT): proj = max(f - theta, 0) for one theta
        theta = (f - proj)[proj > 0]
        np.testing.assert_allclose(theta, theta[0], atol=1e-12)
        ns = norm_sub(f)
        assert ns.min() >= 0 and ns.sum() == pytest.approx(1.0)
        if theta[0] >= 0:
            np.testing.assert_allclose(ns, proj, atol=1e-12)
    # theta < 0: Norm-Sub keeps negatives at zero, the projection does not
    f = np.array([0.3, 0.2, -0.05])
    assert norm_sub(f).tolist() == pytest.approx([0.55, 0.45, 0.0])
    assert project_simplex(f).tolist() == pytest.approx(
        [0.3 + 0.55 / 3, 0.2 + 0.55 / 3, -0.05 + 0.55 / 3]
    )


@pytest.mark.parametrize(
    "oracle", [UnaryEncoding(8, 1.0), LocalHashing(8, 1.0), HadamardResponse(8, 1.0)], ids=repr
)
def test_em_is_a_distribution_with_higher_likelihood(oracle):
    rng = np.random.default_rng(11)
    values = rng.choice(8, 3000, p=[0.5, 0.3, 0.1, 0.1, 0, 0, 0, 0])
    reports = oracle.randomize(values, rng)
    em = estimate(oracle, reports, method="mle")
    assert em.estimate.min() >= 0 and em.estimate.sum() == pytest.approx(1.0)
    support = oracle.support_matrix(reports).toarray()
    rho = oracle.likelihood_ratio()

    def loglik(f):
        return np.sum(np.log1p((rho - 1) * (support @ f)))

    moment = estimate(oracle, reports).estimate
    assert loglik(em.estimate) >= loglik(project_simplex(moment)) - 1e-9
    assert np.abs(em.estimate - np.bincount(values, minlength=8) / 3000).max() < 0.1
    # a maximum on the simplex (KKT): the log-likelihood's gradient g satisfies
    # g_v = n where f_v > 0 and g_v <= n where f_v = 0; SQUAREM reaches it
    f = em.estimate
    grad = (rho - 1) * support.T @ (1 / (1 + (rho - 1) * (support @ f))) + np.sum(
        1 / (1 + (rho - 1) * (support @ f))
    )
    active = f > 1e-4
    np.testing.assert_allclose(grad[active], 3000, rtol=1e-3)
    assert np.all(grad[~active] <= 3000 * (1 + 1e-3))
    # oracle_em says what it found: the same frequencies, named, and the steps taken
    from deniable.estimation import OracleEMResult, oracle_em

    found = oracle_em(oracle, reports)
    assert isinstance(found, OracleEMResult) and 0 < found.iterations < 3000
    np.testing.assert_allclose(found.frequencies, em.estimate, atol=1e-12)
    frequencies, iterations = found  # still unpacks as the (frequencies, iterations) pair
    assert iterations == found.iterations and frequencies is found.frequencies


@pytest.mark.parametrize("oracle", [UnaryEncoding(16, 1.0), LocalHashing(16, 2.0)], ids=repr)
def test_feldman_cousins_for_support_counts(oracle):
    """Each value's support count is Binomial(n, q* + (p* - q*) f_v): the oracle's
    feldman_cousins interval of every value is the one of the binary design
    [[1 - q*, 1 - p*], [q*, p*]] on the counts (n - C_v, C_v), whose coverage is at least
    the level at every prevalence (tests/test_coverage.py); sizes beyond the bound are
    refused."""
    rng = np.random.default_rng(5)
    values = np.concatenate([np.zeros(1990, dtype=np.int64), np.arange(1, 11)])
    res = estimate(oracle, oracle.randomize(values, rng))
    ci = res.confidence_interval(method="feldman_cousins")
    p, q = oracle.channel.p_star, oracle.channel.q_star
    binary = deniable.MatrixDesign([[1 - q, 1 - p], [q, p]])
    for v in range(oracle.k):
        counts = np.array([res.n - res.tally.counts[v], res.tally.counts[v]])
        ref = estimate(binary, deniable.Tally(counts)).confidence_interval(method="feldman_cousins")
        assert ci.low[v] == pytest.approx(ref.low[1], abs=1e-9)
        assert ci.high[v] == pytest.approx(ref.high[1], abs=1e-9)
    from deniable.estimation._estimates import MAX_UNIFIED_SUPPORT_CELLS

    n_huge = MAX_UNIFIED_SUPPORT_CELLS // oracle.k + 1
    huge = SupportTally(np.zeros(oracle.k, dtype=np.int64), n_huge, scale=1)
    with pytest.raises(ValueError, match="feldman_cousins for an oracle costs"):
        estimate(oracle, huge).confidence_interval(method="feldman_cousins")


def test_unary_encoding_refuses_reports_too_large_before_allocating():
    """k = 10^5 and 10^6 values would be 12.5 GB of packed reports (the allocation died
    at 11.6 GiB): refused up front with the limit, the largest call and the way out;
    tracemalloc sees no large allocation."""
    import tracemalloc

    from deniable.mechanisms._unary import MAX_REPORT_BYTES

    oue = UnaryEncoding(100_000, 1.0)
    values = np.zeros(10**6, dtype=np.int64)
    tracemalloc.start()
    try:
        with pytest.raises(MemoryLimitError, match=r"12,500,000,000 bytes") as said:
            oue.randomize(values, np.random.default_rng(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10**7
    assert f"{MAX_REPORT_BYTES // oue.n_bytes:,} values a call" in str(said.value)
    assert "LocalHashing or HadamardResponse" in str(said.value)
    assert said.value.asked == 12_500_000_000 and said.value.limit == MAX_REPORT_BYTES
    assert "memory_limit = 2,147,483,648 bytes" in str(said.value)
    small = oue.randomize(values[:1000], np.random.default_rng(0))  # within the limit
    assert small.shape == (1000, oue.n_bytes)
    with pytest.raises(MemoryLimitError, match="memory_limit = 1,000,000 bytes"):
        oue.randomize(values[:1000], np.random.default_rng(0), memory_limit=10**6)

"""Heavy hitters over strings of any length: PEM over UTF-8 bytes with a binary linear
local hash, decoded by the Walsh-Hadamard transform."""

from __future__ import annotations

import itertools
import math
import unicodedata
import warnings

import numpy as np
import pytest

from deniable import estimate
from deniable.errors import PrivacyWarning, ReportValidationError
from deniable.estimation import detection_limit, find_heavy_hitters
from deniable.estimation._byte_prefix_search import (
    extension_counts,
    find_string_heavy_hitters,
    support_counts,
    walsh_hadamard,
)
from deniable.mechanisms._byte_prefix import (
    BytePrefixExtension,
    MemoizedBytePrefixClient,
    prefix_hashes,
)


def test_the_walsh_hadamard_transform_is_the_dense_product():
    rng = np.random.default_rng(0)
    for size in (1, 2, 64, 256, 1024):
        w = np.arange(size)
        dense = 1 - 2 * (np.bitwise_count(w[:, None] & w[None, :]) % 2).astype(np.int64)
        for top in (100, 2**40):  # float32 / int32 below 2^24, float64 / int64 above
            x = rng.integers(-top, top, (3, size))
            np.testing.assert_array_equal(walsh_hadamard(x), x @ dense)
        x = rng.integers(-(2**14), 2**14, (2, size))  # a bound of 2^24 - 1 is still exact
        np.testing.assert_array_equal(walsh_hadamard(x, bound=2**24 - 1), x @ dense)
    with pytest.raises(ValueError, match="power-of-two"):
        walsh_hadamard(np.zeros((2, 12), dtype=np.int64))


@pytest.mark.parametrize("step", [1, 2])
def test_extension_counts_equal_the_hash_tested_one_by_one(step):
    """Every extension of every parent: the transform's counts are the support counts
    a direct test of ``A id == y`` gives, report by report."""
    bpem = BytePrefixExtension(2.0, max_bytes=8, step=step)
    rng = np.random.default_rng(1)
    reports = bpem.randomize(np.array(["ab", "abc", "b", "hello", "héllo"] * 40), rng)
    level = 1
    mine = reports[reports["level"] == level]
    parents = bpem.encode_values(["ab", "he", "h", ""])
    parents[:, step * level :] = 0
    got = extension_counts(bpem, mine, prefix_hashes(parents, step * level))
    a = mine["a"].reshape(mine.size, bpem.r)
    for p in range(parents.shape[0]):
        rows = np.repeat(parents[p][None], 1 << (8 * step), axis=0)
        xs = np.arange(1 << (8 * step))
        rows[:, step * level] = xs & 0xFF
        if step == 2:
            rows[:, step * level + 1] = xs >> 8
        ids = bpem.prefix_ids(rows, level)  # one per extension
        bucket = np.zeros((mine.size, ids.size), dtype=np.int64)
        for k in range(bpem.r):
            bit = np.bitwise_count(a[:, k][:, None] & ids[None, :]) & np.uint8(1)
            bucket |= bit.astype(np.int64) << k
        want = (bucket == mine["y"][:, None]).sum(axis=0)
        np.testing.assert_array_equal(got[p], want)


def test_epsilon_by_enumeration_on_a_small_alphabet():
    """Alphabet "ab", values of at most 3 bytes (15 values with the empty one), step 1:
    for sampled hash rows ``A``, the exact Pr(y | value) at every level over every value
    and bucket; the largest ratio is e^epsilon and no larger."""
    bpem = BytePrefixExtension(1.5, max_bytes=8, step=1)
    values = ["".join(t) for k in range(4) for t in itertools.product("ab", repeat=k)]
    padded = bpem.encode_values(values)
    kappa, g = bpem.keep_probability, bpem.g
    rng = np.random.default_rng(3)
    worst = 0.0
    for level in range(4):
        ids = bpem.prefix_ids(padded, level)
        for _ in range(100):
            a = rng.integers(0, 2**64, (1, bpem.r), dtype=np.uint64)
            true = np.array([bpem.buckets(a, np.array([i]))[0] for i in ids])
            probs = kappa * (true[None, :] == np.arange(g)[:, None]) + (1 - kappa) / g
            worst = max(worst, float((probs.max(axis=1) / probs.min(axis=1)).max()))
    assert worst == pytest.approx(math.exp(bpem.epsilon), rel=1e-12)
    assert bpem.epsilon == pytest.approx(1.5, abs=1e-8)
    # the level and the hash rows come from the random bytes only, whatever the value
    raw = rng.bytes(bpem.bytes_per_report)
    reports = [bpem.encode([v], raw)[0] for v in ["", "a", "bab", "ab"]]
    assert len({(int(r["level"]), r["a"].tobytes()) for r in reports}) == 1


def test_levels_are_drawn_with_the_stated_probabilities():
    """The level is a step function of the level word: every word below a bound and at
    it lands where ``level_bounds`` says, so Pr(level j) is exactly the share of words
    (``level_probabilities``), proportional to ``level_decay^j`` up to 2^-32; decay 1 is
    PEM's uniform ``floor(w levels / 2^32)``. 10^6 seeded reports: each level's count
    within 4 binomial sigmas of n Pr(level)."""
    for decay, max_bytes, step in [(1.0, 64, 2), (0.95, 64, 2), (0.5, 16, 1), (0.95, 248, 1)]:
        bpem = BytePrefixExtension(1.0, max_bytes, step, level_decay=decay)
        bounds = np.array(bpem.level_bounds, dtype=np.int64)
        assert bounds[-1] == 2**32 and np.all(np.diff(bounds) > 0)
        prob = bpem.level_probabilities
        assert prob.sum() == pytest.approx(1.0, abs=1e-15)
        want = decay ** np.arange(bpem.levels)
        np.testing.assert_allclose(prob, want / want.sum(), rtol=0, atol=2**-32)
        words = np.concatenate([bounds[:-1] - 1, bounds[:-1], [0, 2**32 - 1]])
        raw = np.zeros((words.size, bpem.bytes_per_report), dtype=np.uint8)
        raw[:, :4] = words.astype("<u4").view(np.uint8).reshape(-1, 4)
        got = bpem.encode(["v"] * words.size, raw.tobytes())["level"].astype(np.int64)
        lv = np.arange(bpem.levels - 1)
        np.testing.assert_array_equal(got, np.concatenate([lv, lv + 1, [0, bpem.levels - 1]]))
        if decay == 1.0:
            np.testing.assert_array_equal(got, (words * bpem.levels) >> 32)
    bpem = BytePrefixExtension(1.0)
    n = 10**6
    reports = bpem.randomize(np.array(["x"] * n), np.random.default_rng(4))
    counts = np.bincount(reports["level"], minlength=bpem.levels)
    p = bpem.level_probabilities
    assert np.all(np.abs(counts - n * p) <= 4 * np.sqrt(n * p * (1 - p)))
    for bad in (1.3, 0.4, float("nan")):
        with pytest.raises(ValueError, match=r"level_decay must be in \[0.5, 1\]"):
            BytePrefixExtension(1.0, level_decay=bad)
    with pytest.raises(ValueError, match="leaves level 32 of 248 with no reports"):
        BytePrefixExtension(1.0, max_bytes=248, step=1, level_decay=0.5)


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_the_variance_is_local_hashings():
    """One level, one prefix at 30% of 2,000 reports, 400 seeded surveys: the measured
    variance of its estimate matches ``s (1 - s) / (n (p* - q*)^2)`` (a chi-square
    band: 4 sigma of the sample variance), and that is within 1.08x of OLH's optimum
    at each epsilon up to 6 (g = 2^r, r <= 8)."""
    for eps in (0.5, 0.55, 1.0, 2.0, 4.0, 6.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)  # epsilon 6 > 5
            b = BytePrefixExtension(eps, max_bytes=8, step=1)
        e = math.exp(eps)
        olh = 4 * e / (e - 1) ** 2  # OLH's variance factor at frequency 0
        ours = b.q_star * (1 - b.q_star) / (b.p_star - b.q_star) ** 2
        assert 1.0 <= ours / olh <= 1.08
    bpem = BytePrefixExtension(1.0, max_bytes=8, step=1)
    n, runs, f = 2000, 400, 0.3
    values = np.array(["a"] * int(n * f) + ["b"] * (n - int(n * f)))
    parent = prefix_hashes(np.zeros((1, 8), dtype=np.uint8), 0)
    estimates = []
    for run in range(runs):
        raw = np.frombuffer(
            np.random.default_rng([5, run]).bytes(bpem.bytes_per_report * n), np.uint8
        ).reshape(n, bpem.bytes_per_report)
        raw = raw.copy()
        raw[:, :4] = 0  # a level word of 0: every report at the first level
        reports = bpem.encode(values, raw.tobytes())
        count = extension_counts(bpem, reports, parent)[0, ord("a")]
        estimates.append((count / n - bpem.q_star) / (bpem.p_star - bpem.q_star))
    gap = bpem.p_star - bpem.q_star
    s = bpem.q_star + gap * f
    # the values are fixed (f n of them 'a'): only the randomization varies
    exact = (f * bpem.p_star * (1 - bpem.p_star) + (1 - f) * bpem.q_star * (1 - bpem.q_star)) / (
        n * gap**2
    )
    assert s * (1 - s) / (n * gap**2) >= exact  # the sampling form bounds it
    measured = float(np.var(estimates, ddof=1))
    assert abs(measured / exact - 1) < 4 * math.sqrt(2 / (runs - 1))
    assert abs(np.mean(estimates) - f) < 4 * math.sqrt(exact / runs)


def test_long_strings_are_found_with_their_estimates():
    """High signal, 40,000 reports at epsilon 4, 8 levels of 2 bytes: the three frequent
    strings (one of 16 bytes, accented) are returned exactly, with estimates within 4
    standard errors, and nothing else; a decomposed input counts as its NFC form."""
    bpem = BytePrefixExtension(4.0, max_bytes=16)
    composed = "crème-brûlée-"  # 16 bytes of UTF-8
    decomposed = unicodedata.normalize("NFD", composed)
    assert len(composed.encode()) == 16 and decomposed != composed
    rng = np.random.default_rng(7)
    n = 40_000
    values = np.array(
        [composed] * 6000
        + [decomposed] * 6000
        + ["requests"] * 8000
        + ["ab"] * 6000
        + [f"tail-{i}" for i in range(14_000)]
    )
    rng.shuffle(values)
    found = find_string_heavy_hitters(bpem, bpem.randomize(values, rng), threshold=0.05)
    assert set(found.values) == {composed, "requests", "ab"}
    truth = {composed: 0.3, "requests": 0.2, "ab": 0.15}
    for value, est, se in zip(found.values, found.estimate, found.std_error, strict=True):
        assert abs(est - truth[value]) < 4 * se
    assert found.reports_per_level.sum() == n
    same = estimate(bpem, bpem.randomize(values, rng), threshold=0.05, top_k=2)
    assert same.values == [composed, "requests"]


def test_a_value_that_ends_early_is_tested_on_every_later_level():
    """Epsilon 4, 60,000 reports, threshold 5%: a 4-byte value at 15% (above its
    detection limit, 5.3%) and a 16-byte one at 10% (6.3%). In 16 levels of 1 byte the
    short value ends at level 4; its estimate pools levels 5..15 (the support counts of
    the direct hash tests, level by level), so its standard error is the one of 11
    levels' reports, and both estimates are within 4 standard errors of the truth."""
    bpem = BytePrefixExtension(4.0, max_bytes=16, step=1)
    rng = np.random.default_rng(11)
    values = np.array(
        ["abcd"] * 9000 + ["a-long-value-16b"] * 6000 + [f"t{i}" for i in range(45_000)]
    )
    reports = bpem.randomize(values, rng)
    found = find_string_heavy_hitters(bpem, reports, threshold=0.05)
    assert found.values == ["abcd", "a-long-value-16b"]
    share = {"abcd": 0.15, "a-long-value-16b": 0.1}
    p, q = bpem.p_star, bpem.q_star
    later = reports[reports["level"] >= 5]
    row = bpem.encode_values(["abcd"])
    pooled = sum(
        int(support_counts(bpem, later[later["level"] == lv], bpem.prefix_ids(row, lv))[0])
        for lv in range(5, 16)
    )
    assert found.estimate[0] == pytest.approx((pooled / later.size - q) / (p - q))
    last = int(np.sum(reports["level"] == 15))
    for value, est, se in zip(found.values, found.estimate, found.std_error, strict=True):
        s = q + (p - q) * est
        pooled_n = later.size if value == "abcd" else last
        assert se == pytest.approx(math.sqrt(s * (1 - s) / pooled_n) / (p - q))
        assert abs(est - share[value]) < 4 * se
    assert found.std_error[0] < found.std_error[1] / 2.5  # 11 levels of reports against 1


@pytest.mark.slow
def test_the_detection_limit_predicts_the_recall_of_a_short_value():
    """A 3-byte value placed at the limit for recall 0.5 (8 levels of 1 byte, epsilon
    1): found in about half of 100 runs (a normal approximation: within 4 binomial
    sigmas plus 0.1); its limit is below that of an 8-byte value."""
    bpem = BytePrefixExtension(1.0, max_bytes=8, step=1)
    n, threshold, runs = 20_000, 0.1, 100
    f = detection_limit(bpem, n, threshold, recall=0.5, length=3)
    assert f < detection_limit(bpem, n, threshold, recall=0.5)
    names = np.array(["xyz", "other-8b"] + [f"q{i:04d}" for i in range(3000)])
    weights = np.concatenate([[f, 0.2], np.full(3000, (0.8 - f) / 3000)])
    found = 0
    for run in range(runs):
        rng = np.random.default_rng([23, run])
        sample = names[rng.choice(names.size, n, p=weights)]
        hit = find_string_heavy_hitters(bpem, bpem.randomize(sample, rng), threshold).values
        found += "xyz" in hit
    assert abs(found / runs - 0.5) <= 4 * math.sqrt(0.25 / runs) + 0.1


@pytest.mark.slow
def test_false_discoveries_are_controlled_at_low_signal():
    """Epsilon 1, 20,000 reports, threshold 10%, step 1 over 8 bytes: two strings at
    20%, ten just below half the threshold (4.5%) and a tail of 2,000. Runs with a
    false discovery (a value below threshold / 2 in the sample) are a binomial count
    of probability at most false_discoveries: within 4 binomial sigmas of it."""
    bpem = BytePrefixExtension(1.0, max_bytes=8, step=1)
    rng0 = np.random.default_rng(0)
    names = [f"v{i:05d}" for i in range(2012)]
    rng0.shuffle(names)
    weights = np.array([0.2] * 2 + [0.045] * 10 + [0.15 / 2000] * 2000)
    values = np.array(names)
    n, threshold, runs, level = 20_000, 0.1, 60, 0.3
    with_false = 0
    for run in range(runs):
        rng = np.random.default_rng([17, run])
        sample = values[rng.choice(values.size, n, p=weights)]
        found = find_string_heavy_hitters(
            bpem, bpem.randomize(sample, rng), threshold, false_discoveries=level
        )
        with_false += any(np.mean(sample == v) < threshold / 2 for v in found.values)
        assert len(found) <= 2 / threshold
    assert with_false <= runs * level + 4 * math.sqrt(runs * level * (1 - level))


def test_bad_values_and_reports_are_named():
    bpem = BytePrefixExtension(1.0)
    with pytest.raises(ValueError, match="at most max_bytes = 64 bytes of UTF-8"):
        bpem.randomize(["é" * 33])  # 66 bytes
    with pytest.raises(ValueError, match="NUL"):
        bpem.randomize(["a\x00b"])
    with pytest.raises(ValueError, match="strings"):
        bpem.randomize(np.array([1, 2]))
    with pytest.raises(ValueError, match="multiple of 8"):
        BytePrefixExtension(1.0, max_bytes=60)
    with pytest.raises(ValueError, match="step"):
        BytePrefixExtension(1.0, step=3)
    reports = bpem.randomize(["x"] * 10, np.random.default_rng(0))
    bad = reports.copy()
    bad["level"][0] = 40
    with pytest.raises(ReportValidationError, match=r"'level' must be in 0\.\.31"):
        find_string_heavy_hitters(bpem, bad)
    bad = reports.copy()
    bad["y"][0] = bpem.g
    with pytest.raises(ReportValidationError, match="'y' must be a bucket"):
        bpem.check_reports(bad)
    with pytest.raises(ReportValidationError, match="dtype"):
        bpem.check_reports(np.zeros(3))


def test_reports_survive_the_binary_columns():
    pytest.importorskip("pyarrow")
    from deniable.tables.arrow import report_table, reports_from_batch

    bpem = BytePrefixExtension(2.0, max_bytes=32)
    reports = bpem.randomize(["deniable", "numpy", "日本語"] * 5, np.random.default_rng(2))
    table = report_table(bpem, reports)
    assert table.column_names == ["level", "a", "y"]
    back = reports_from_batch(bpem, table)
    np.testing.assert_array_equal(back, reports)


def test_a_device_memoizes_its_report_per_value():
    bpem = BytePrefixExtension(1.0)
    device = MemoizedBytePrefixClient(bpem)
    first = device.report("café")
    assert device.report(unicodedata.normalize("NFD", "café")) == first  # one value
    assert device.report("café") == first
    other = device.report("tea")
    assert device.distinct_values == 2
    assert device.lifetime_epsilon == pytest.approx(2 * bpem.epsilon)
    assert other.dtype == bpem.dtype
    # the memo is keyed by a keyed hash, not by the value
    assert all(b"caf" not in slot for slot in device._memo)


def test_string_and_byte_searches_are_one_search(monkeypatch):
    """PEM and byte-PEM differ only in their frontier (how a level's candidates are
    counted and extended); the level loop, pruning, cap and tests are one function."""
    from deniable.estimation import _byte_prefix_search, _level_search, _prefix_search
    from deniable.mechanisms import PrefixExtension

    calls = []
    real = _level_search.run_search

    def spy(frontier, plan, progress=None):
        calls.append(type(frontier).__name__)
        return real(frontier, plan, progress)

    monkeypatch.setattr(_prefix_search, "run_search", spy)
    monkeypatch.setattr(_byte_prefix_search, "run_search", spy)
    rng = np.random.default_rng(3)
    pem = PrefixExtension(4.0, max_length=2, alphabet="ab")
    found = find_heavy_hitters(pem, pem.randomize(np.array(["ab"] * 3000), rng), threshold=0.2)
    bpem = BytePrefixExtension(4.0, max_bytes=8)
    strings = find_string_heavy_hitters(bpem, bpem.randomize(["ab"] * 3000, rng), threshold=0.2)
    assert calls == ["_CodeFrontier", "_ByteFrontier"]
    assert found.values == strings.values == ["ab"]


def test_at_low_signal_the_noise_test_not_the_cap_decides_the_survivors():
    """Issue 44: epsilon 1, 20,000 reports over 8 levels of 2 bytes (2,500 a level),
    threshold 5%: the pruning alone lets nearly all 65,536 extensions of every parent
    through, so the cap (80) decided every level and the time swung with the overflow.
    The noise test keeps about 1 / t = 20 prefixes of frequency 0 a level: no level
    overflows, and every level tests no more than ``search_cost`` expects (the 1 / t
    frequent parents plus the noise test's)."""
    from deniable.estimation import search_cost

    bpem = BytePrefixExtension(1.0, max_bytes=16)
    names = np.array([f"name{i:04d}" for i in range(500)])
    weights = np.full(500, 1 / 500)
    cost = search_cost(bpem, 20_000, 0.05)
    for run in range(3):
        rng = np.random.default_rng([18, run])
        sample = names[rng.choice(500, 20_000, p=weights)]
        found = find_string_heavy_hitters(bpem, bpem.randomize(sample, rng), 0.05)
        assert not found.warnings, found.warnings
        assert np.all(found.candidates_per_level[1:] <= cost.candidates[1:]), (
            found.candidates_per_level,
            cost.candidates,
        )

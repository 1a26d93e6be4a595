"""Heavy hitters without a candidate list: the prefix extending method (Wang et al. 2021)."""

from __future__ import annotations

import itertools
import math
import string

import numpy as np
import pytest

from deniable.errors import DetectionLimitError, ReportValidationError
from deniable.estimation import detection_limit, find_heavy_hitters
from deniable.estimation._level_search import SURVIVOR_FACTOR
from deniable.mechanisms._prefix import PEM_DTYPE, PrefixExtension

LETTERS = string.ascii_lowercase


def zipf_population(rng: np.random.Generator, distinct: int = 100_000):
    """``distinct`` random 5-letter strings with Zipf(1.0) frequencies, largest first."""
    words: set[str] = set()
    while len(words) < distinct:
        draws = rng.integers(0, 26, size=(distinct, 5))
        words.update("".join(LETTERS[i] for i in row) for row in draws.tolist())
    values = np.array(sorted(words)[:distinct])
    rng.shuffle(values)
    weights = 1.0 / np.arange(1, distinct + 1)
    return values, weights / weights.sum()


@pytest.mark.slow  # about 14 s; bench/simulation_grids.py (``zipf``) runs 10 runs
def test_zipf_heavy_hitters_are_found_with_few_misses_and_false_positives(runs: int = 4):
    """n = 10^6, epsilon = 4, 10^5 distinct strings, Zipf(1.0): the 8 values with
    frequency >= 1% over ``runs`` runs with fixed seeds (4 here); goals: at most 5% of
    them missed, and at most one false positive (a value below half the threshold) per
    run on average."""
    rng = np.random.default_rng(2021)
    values, weights = zipf_population(rng)
    heavy = set(values[weights >= 0.01].tolist())
    assert len(heavy) == 8
    pem = PrefixExtension(4.0, max_length=5, alphabet=LETTERS)
    misses = false_positives = 0
    for run in range(runs):
        run_rng = np.random.default_rng([2021, run])
        sample = values[run_rng.choice(values.size, size=1_000_000, p=weights)]
        result = find_heavy_hitters(pem, pem.randomize(sample, run_rng), threshold=0.01)
        found = set(result.values)
        misses += len(heavy - found)
        false_positives += len(found - set(values[weights >= 0.005].tolist()))
        for value, est, se in zip(result.values, result.estimate, result.std_error, strict=True):
            if value in heavy:  # unbiased: each estimate within 5 SE of the true share
                truth = float(np.mean(sample == value))
                assert abs(est - truth) < 5 * se
    assert misses <= 0.05 * len(heavy) * runs
    assert false_positives / runs <= 1.0


def test_epsilon_by_enumeration_on_a_small_domain():
    """Alphabet "ab", values of at most 2 symbols (9 values with the empty one): for
    sampled hash seeds, the exact Pr(level, y | value) over every value and bucket."""
    pem = PrefixExtension(1.5, max_length=2, alphabet="ab", lengths=[1, 2])
    codes = pem.encode_values(["", "a", "b", "aa", "ab", "ba", "bb", "a", "b"])
    rng = np.random.default_rng(3)
    worst = 0.0
    for level, oracle in enumerate(pem.oracles):
        prefix = pem.prefixes(codes, level).astype(np.int64)
        for a, b in rng.integers(0, 2**63, size=(200, 2), dtype=np.uint64).tolist():
            probs = oracle.report_probabilities(a | 1, b)[:, prefix]  # (g, values)
            worst = max(worst, float((probs.max(axis=1) / probs.min(axis=1)).max()))
    assert worst <= math.exp(pem.epsilon) * (1 + 1e-12)
    assert worst == pytest.approx(math.exp(pem.epsilon), rel=1e-9)
    # the level comes from the first 4 random bytes only, whatever the value
    raw = rng.bytes(28)
    levels = {int(pem.encode([v], raw)[0]["level"]) for v in ["", "a", "bb", "ab"]}
    assert len(levels) == 1


def test_values_encode_and_decode():
    pem = PrefixExtension(2.0, max_length=4, alphabet="xyzäé")
    words = ["", "x", "äé", "zzzz", "éxy"]
    codes = pem.encode_values(words)
    assert [pem.decode(int(c)) for c in codes] == words
    assert pem.prefixes(codes, 0).tolist() == [c // 6 ** (4 - pem.lengths[0]) for c in codes]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="at most 6 for an alphabet of 26 symbols"):
        PrefixExtension(1.0, max_length=7, alphabet=LETTERS)
    with pytest.raises(ValueError, match="must not repeat"):
        PrefixExtension(1.0, alphabet="aab")
    with pytest.raises(ValueError, match="lengths must increase"):
        PrefixExtension(1.0, max_length=4, alphabet="ab", lengths=[2, 2, 4])
    pem = PrefixExtension(1.0, max_length=3, alphabet="ab")
    with pytest.raises(ValueError, match="only the symbols 'ab'; got 'c'"):
        pem.randomize(["abc"[::-1]])
    with pytest.raises(ValueError, match="at most 3 symbols"):
        pem.randomize(["abab"])
    bad = np.zeros(2, dtype=PEM_DTYPE)
    bad["level"] = [0, 9]
    with pytest.raises(ReportValidationError, match=r"'level' must be in 0\.\.0"):
        find_heavy_hitters(pem, bad)
    with pytest.raises(ValueError, match="threshold"):
        find_heavy_hitters(pem, pem.randomize(["a"]), threshold=1.5)


def _population(rng: np.random.Generator, alphabet: str, length: int, shares: list[float]):
    """Distinct random values of ``length`` symbols, one per share, and a uniform tail
    over the rest of the domain holding the remaining mass."""
    domain = np.array(
        ["".join(t) for t in itertools.product(alphabet, repeat=length)], dtype=object
    )
    rng.shuffle(domain)
    tail = domain[len(shares) :]
    weights = np.concatenate([shares, np.full(tail.size, (1 - sum(shares)) / tail.size)])
    return domain.astype(str), weights


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
def test_false_discoveries_are_controlled_at_low_signal():
    """Epsilon 1, 20,000 reports, threshold 10%: two values at 20%, ten just below half
    the threshold (4.5%) and a tail; the old rule (upper bound reaches the threshold)
    returned tail values in most runs. A false discovery is a value returned whose
    frequency in the sample is below threshold / 2; the runs with one are a binomial
    count of probability at most E[false discoveries] <= false_discoveries, so they
    stay within 4 binomial standard deviations of that bound."""
    pem = PrefixExtension(1.0, max_length=4, alphabet="abcd", lengths=[2, 4])
    values, weights = _population(np.random.default_rng(0), "abcd", 4, [0.2] * 2 + [0.045] * 10)
    n, threshold, runs = 20_000, 0.1, 150
    for level in (0.05, 0.3):
        with_false, returned = 0, []
        for run in range(runs):
            rng = np.random.default_rng([11, run])
            sample = values[rng.choice(values.size, n, p=weights)]
            result = find_heavy_hitters(
                pem, pem.randomize(sample, rng), threshold, false_discoveries=level
            )
            shares = {v: float(np.mean(sample == v)) for v in result.values}
            with_false += any(share < threshold / 2 for share in shares.values())
            returned.append(len(result))
            assert np.all(result.pvalue <= level / result.candidates_per_level[-1])
        assert with_false <= runs * level + 4 * math.sqrt(runs * level * (1 - level))
        assert np.mean(returned) <= 2 / threshold


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
def test_the_final_test_is_exact_at_half_the_threshold():
    """One level, so the only rule is the binomial test: a value whose share is exactly
    threshold / 2 in every sample is returned with probability at most (and, the test
    being exact, near) false_discoveries / m; 4-sigma binomial bounds over 400 runs."""
    pem = PrefixExtension(1.5, max_length=2, alphabet="abc", lengths=[2])
    n, threshold, level, runs = 10_000, 0.2, 0.9, 400
    m = pem.base**2  # candidates tested
    per_candidate = level / m
    fixed = np.array(["ab"] * (n // 10) + ["ca"] * (n // 2) + ["b"] * (2 * n // 5))
    hits = 0
    for run in range(runs):
        rng = np.random.default_rng([12, run])
        result = find_heavy_hitters(
            pem, pem.randomize(fixed, rng), threshold, false_discoveries=level
        )
        hits += "ab" in result.values
    spread = 4 * math.sqrt(runs * per_candidate * (1 - per_candidate))
    assert hits <= runs * per_candidate + spread
    assert hits >= runs * per_candidate / 4  # the test is not vacuous near its bound


def test_top_k_mode_returns_the_largest():
    pem = PrefixExtension(4.0, max_length=3, alphabet="abcd")
    values, weights = _population(np.random.default_rng(1), "abcd", 3, [0.3, 0.2, 0.1])
    rng = np.random.default_rng(2)
    sample = values[rng.choice(values.size, 60_000, p=weights)]
    result = find_heavy_hitters(pem, pem.randomize(sample, rng), top_k=3)
    assert result.values == list(values[:3]) and result.top_k == 3
    assert math.isnan(result.threshold) and np.all(np.diff(result.estimate) <= 0)


def test_the_survivors_are_bounded_and_the_overflow_names_the_detection_limit():
    """At low signal (epsilon 0.5, 2,000 reports a level) the pruning alone would let
    most of the 81 prefixes of frequency near 0 through; the noise test keeps about
    ``(1 + NOISE_FACTOR) / t`` and the cap never decides. With ``max_survivors`` below
    that, the overflow warns (or raises) and names the detection limit."""
    pem = PrefixExtension(0.5, max_length=4, alphabet="abcdefgh", lengths=[2, 4])
    values, weights = _population(np.random.default_rng(3), "abcdefgh", 4, [0.05])
    rng = np.random.default_rng(4)
    reports = pem.randomize(values[rng.choice(values.size, 4000, p=weights)], rng)
    result = find_heavy_hitters(pem, reports, 0.1)
    cap = math.ceil(SURVIVOR_FACTOR / 0.1)
    assert result.candidates_per_level[1] <= cap * pem.base**2 and not result.warnings
    tight = find_heavy_hitters(pem, reports, 0.1, max_survivors=2)
    assert tight.warnings and "detection limit" in tight.warnings[0]
    assert tight.candidates_per_level[1] <= 2 * pem.base**2
    with pytest.raises(DetectionLimitError, match="detection limit") as info:
        find_heavy_hitters(pem, reports, 0.1, max_survivors=2, on_overflow="raise")
    limit = detection_limit(pem, 4000, 0.1, max_survivors=2)
    assert info.value.detection_limit == pytest.approx(limit) and limit > 0.1
    with pytest.raises(ValueError, match="on_overflow"):
        find_heavy_hitters(pem, reports, 0.1, on_overflow="ignore")  # type: ignore[arg-type]


def test_the_noise_test_keeps_at_most_its_budget_of_prefixes_of_frequency_0():
    """Every value starts "aa": the other 728 first-level prefixes (of 729) have
    frequency exactly 0, at epsilon 1 with 1,500 reports a level the pruning alone keeps
    most of them, and the noise test's exact binomial test keeps each with probability
    at most ``NOISE_FACTOR / (t 729)``: over 40 runs the mean number kept is at most
    ``NOISE_FACTOR / t`` = 20 (plus 4 sigmas of a Poisson mean), and not vacuously
    small."""
    from deniable.estimation._level_search import NOISE_FACTOR
    from deniable.estimation._prefix_search import level_counts, search_levels

    pem = PrefixExtension(1.0, max_length=4, alphabet=LETTERS, lengths=[2, 4])
    threshold, runs, n = 0.05, 40, 3000
    budget = NOISE_FACTOR / threshold
    tails = ["".join(t) for t in itertools.product("abc", repeat=2)]
    sample_values = np.array([f"aa{t}" for t in tails])
    kept = []
    for run in range(runs):
        rng = np.random.default_rng([14, run])
        reports = pem.randomize(sample_values[rng.integers(0, len(tails), n)], rng)
        parents: list[int] = []

        def count(level, candidates, reports=reports, parents=parents):
            if level == 1:
                parents.extend(np.unique(candidates // np.uint64(pem.base**2)).tolist())
            return level_counts(pem, reports, level, candidates)

        found = search_levels(pem, count, n, threshold)
        assert found.candidates_per_level[0] == pem.base**2 and not found.warnings
        kept.append(len(parents) - 1)  # the prefixes kept besides "aa"
    mean = float(np.mean(kept))
    assert mean <= budget + 4 * math.sqrt(budget / runs), kept
    assert mean >= budget / 10, kept


def test_the_detection_limit_falls_with_reports_and_epsilon():
    pem = PrefixExtension(1.0, max_length=5, alphabet=LETTERS)
    limits = [detection_limit(pem, n, 0.01) for n in (10**5, 10**6, 10**7)]
    assert limits[0] > limits[1] > limits[2] >= 0.01
    sharper = PrefixExtension(4.0, max_length=5, alphabet=LETTERS)
    assert detection_limit(sharper, 10**6, 0.01) < limits[1]
    assert detection_limit(pem, 100, 0.01) == math.inf
    with pytest.raises(ValueError, match="recall"):
        detection_limit(pem, 10**6, 0.01, recall=1.0)


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_the_detection_limit_predicts_the_recall():
    """A value placed at the limit for recall 0.5 is found in about half the runs (the
    limit is a normal approximation: within 4 binomial sigmas plus 0.1)."""
    pem = PrefixExtension(1.0, max_length=4, alphabet="abcd", lengths=[2, 4])
    n, threshold, runs = 20_000, 0.1, 100
    f = detection_limit(pem, n, threshold, recall=0.5)
    values, weights = _population(np.random.default_rng(5), "abcd", 4, [f, 0.2])
    found = 0
    for run in range(runs):
        rng = np.random.default_rng([13, run])
        sample = values[rng.choice(values.size, n, p=weights)]
        found += values[0] in find_heavy_hitters(pem, pem.randomize(sample, rng), threshold).values
    assert abs(found / runs - 0.5) <= 4 * math.sqrt(0.25 / runs) + 0.1


def test_estimate_takes_the_search_options():
    from deniable import estimate

    pem = PrefixExtension(4.0, max_length=3, alphabet="abcd")
    rng = np.random.default_rng(0)
    reports = pem.randomize(np.array(["abc"] * 3000 + ["b"] * 2000 + ["dd"] * 5000), rng)
    assert estimate(pem, reports, top_k=2).values == ["dd", "abc"]
    found = estimate(pem, reports, threshold=0.1, false_discoveries=0.01, max_survivors=10)
    assert found.values == ["dd", "abc", "b"] and found.false_discoveries == 0.01
    with pytest.raises(TypeError, match="alpha"):
        estimate(pem, reports, alpha=0.1)


def test_search_cost_is_known_before_the_search_and_bounds_it():
    """Issue 44: the cost is a function of n, epsilon and the threshold, printed before
    the search. On the 39-symbol alphabet (6 symbols, levels 3, 5, 6) at n = 10^6,
    epsilon 1, threshold 1%: the first level's 64,000 prefixes, then at most 2 / t = 200
    parents' 1,600 extensions expected (the cap's 400 bound every case); the noise test
    lets about 1 / t through at low signal and next to none at high signal. A search at
    low signal tests no more than the cost says."""
    from deniable.estimation import search_cost
    from deniable.mechanisms import LocalHashing

    pem = PrefixExtension(1.0, max_length=6)
    cost = search_cost(pem, 10**6, 0.01)
    assert cost.candidates_bound.tolist() == [64_000, 640_000, 16_000]
    assert cost.candidates[0] == 64_000 and cost.candidates[1] <= 200 * 1_600
    assert cost.pairs <= 0.6 * cost.pairs_bound
    assert cost.reports.sum() == pytest.approx(10**6)
    sharp = search_cost(PrefixExtension(4.0, max_length=6), 10**7, 0.01)
    assert sharp.candidates[1] == pytest.approx(100 * 1_600, rel=1e-3)  # no noise passes
    assert "search cost" in str(cost) and "at most" in str(cost)
    with pytest.raises(TypeError, match="PEM or byte-PEM"):
        search_cost(LocalHashing(10, 1.0), 1000)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n"):
        search_cost(pem, 0)

    small = PrefixExtension(0.5, max_length=4, alphabet="abcdefgh", lengths=[2, 4])
    values, weights = _population(np.random.default_rng(3), "abcdefgh", 4, [0.05])
    for run in range(5):
        rng = np.random.default_rng([15, run])
        reports = small.randomize(values[rng.choice(values.size, 4000, p=weights)], rng)
        found = find_heavy_hitters(small, reports, 0.1)
        bound = search_cost(small, 4000, 0.1)
        assert np.all(found.candidates_per_level <= bound.candidates), run
        assert not found.warnings


@pytest.mark.parametrize("n", [1, 2, 7, 100, 4_321, 250_000])
def test_each_level_rule_is_a_least_count(n):
    """The pruning and the final test hold from a least count on (the rule is found by
    bisection, never over all counts): checked against the conditions evaluated at every
    count 0..n, for PEM and byte-PEM, at thresholds from 0.1% to 99.9%, with the noise test
    on and off."""
    from scipy import special

    from deniable.estimation._level_search import (
        _prune_rule,
        _test_rule,
        estimate_level,
        plan_search,
        support_pvalues,
    )
    from deniable.mechanisms import BytePrefixExtension

    counts = np.arange(n + 1)
    for mech in (PrefixExtension(0.5, max_length=4), BytePrefixExtension(4.0, max_bytes=8)):
        q_star = mech._search_shape()[4]
        estimate, std_error = estimate_level(mech, counts, n)
        for threshold in (0.001, 0.05, 0.5, 0.999):
            plan = plan_search(threshold, 0.05, 0.05, None, None, "keep")
            for tested in (1, 10**6):
                keep = estimate + plan.z * std_error >= plan.threshold
                if plan.noise < tested:
                    zero = np.where(counts > 0, special.bdtrc(counts - 1, n, q_star), 1.0)
                    keep &= zero <= plan.noise / tested
                assert np.array_equal(keep, counts >= _prune_rule(mech, plan, tested, n))
            for cut in (1e-9, 0.01, 0.5):
                rejects = support_pvalues(mech, plan, counts, n) <= cut
                assert np.array_equal(rejects, counts >= _test_rule(mech, plan, cut, n))
        top = plan_search(0.01, 0.05, 0.05, 3, None, "keep")
        assert _prune_rule(mech, top, 10, n) == 0 and _test_rule(mech, top, 0.01, n) == 0


def test_the_search_cost_of_a_billion_reports_allocates_nothing_of_that_size():
    """``search_cost`` at n = 10^9 (PEM, 3 levels of 3.3 x 10^8 reports each) peaks at a
    few kilobytes of Python allocations: the rules are least counts, not arrays a count."""
    import tracemalloc

    from deniable.estimation import search_cost

    pem = PrefixExtension(1.0, max_length=6)
    tracemalloc.start()
    cost = search_cost(pem, 10**9, 0.01)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert cost.candidates[1] == pytest.approx(100 * 1_600, rel=1e-3)

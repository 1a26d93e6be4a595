"""Heavy hitters without a candidate list: the prefix extending method (Wang et al. 2021)."""

from __future__ import annotations

import math
import string

import numpy as np
import pytest

from deniable.errors import ReportValidationError
from deniable.estimation.prefix import find_heavy_hitters
from deniable.mechanisms.prefix import PEM_DTYPE, PrefixExtension

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


@pytest.mark.slow
def test_zipf_heavy_hitters_are_found_with_few_misses_and_false_positives():
    """n = 10^6, epsilon = 4, 10^5 distinct strings, Zipf(1.0): the 8 values with
    frequency >= 1% over 10 runs with fixed seeds; goals: at most 5% of them missed, and
    at most one false positive per run on average."""
    rng = np.random.default_rng(2021)
    values, weights = zipf_population(rng)
    heavy = set(values[weights >= 0.01].tolist())
    assert len(heavy) == 8
    pem = PrefixExtension(4.0, max_length=5, alphabet=LETTERS)
    misses = false_positives = 0
    runs = 10
    for run in range(runs):
        run_rng = np.random.default_rng([2021, run])
        sample = values[run_rng.choice(values.size, size=1_000_000, p=weights)]
        result = find_heavy_hitters(pem, pem.randomize(sample, run_rng), threshold=0.01)
        found = set(result.values)
        misses += len(heavy - found)
        false_positives += len(found - heavy)
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

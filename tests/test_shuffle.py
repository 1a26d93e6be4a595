"""The central epsilon of a shuffled release (Feldman, McMillan & Talwar 2021)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from deniable.planning import shuffle_amplification
from deniable.planning._shuffle import _clone_counts, _pair_delta, kary_projection_epsilon


def test_the_reference_figures():
    """FMT 2021's implementation, n = 10^5, epsilon_0 = 4, delta = 10^-6: the numerical
    epsilon lies between its lower and upper bounds (0.16754 and 0.17279, 10 bisection
    steps of a stepped sum); the closed form is its 0.5378040242374512."""
    r = shuffle_amplification(10**5, 4.0, 1e-6)
    assert 0.1675385583317841 <= r.epsilon <= 0.172790550755978
    assert r.closed_form == pytest.approx(0.5378040242374512, rel=1e-12)
    assert r.clone_probability == pytest.approx(math.exp(-4.0))


def _brute_delta(n: int, eps0: float, clone: float, eps: float) -> float:
    """The hockey-stick divergence of the pair by enumerating (C, A, D) outright."""
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    p: dict[tuple[int, int], float] = {}
    q: dict[tuple[int, int], float] = {}
    for c in range(n):
        wc = stats.binom.pmf(c, n - 1, clone)
        for a in range(c + 1):
            wa = wc * stats.binom.pmf(a, c, 0.5)
            for d, wd in ((1, alpha), (0, 1 - alpha)):
                kp = (a + d, c - a + 1 - d)
                kq = (a + 1 - d, c - a + d)
                p[kp] = p.get(kp, 0.0) + wa * wd
                q[kq] = q.get(kq, 0.0) + wa * wd
    keys = set(p) | set(q)
    return sum(max(p.get(k, 0.0) - math.exp(eps) * q.get(k, 0.0), 0.0) for k in keys)


@pytest.mark.parametrize(("n", "eps0", "clone"), [(2, 1.0, 0.4), (9, 2.0, 0.3), (40, 3.0, 0.05)])
def test_the_divergence_equals_the_enumerated_pair(n, eps0, clone):
    """The tail sums over C equal the divergence of the pair enumerated point by point."""
    counts = _clone_counts(n, clone)
    for eps in (0.0, 0.3, 0.9 * eps0):
        assert _pair_delta(counts, eps0, eps) == pytest.approx(
            _brute_delta(n, eps0, clone, eps), abs=1e-12
        )
    assert _pair_delta(counts, eps0, eps0) == 0.0


@pytest.mark.parametrize("k", [2, 3, 7])
@pytest.mark.parametrize("eps0", [0.5, 2.0, 5.0])
def test_randomized_response_clones_by_enumeration(k, eps0):
    """k-ary randomized response: every input's report distribution is at least
    p = 1 / (e^eps0 + 1) times the sum of any two inputs' (the clone decomposition),
    with equality somewhere (p is the largest such)."""
    e = math.exp(eps0)
    report = (np.full((k, k), 1.0) + np.eye(k) * (e - 1)) / (e + k - 1)  # [input, output]
    p = 1 / (e + 1)
    slack = min(
        float((report[x] - p * (report[x0] + report[x1])).min())
        for x in range(k)
        for x0 in range(k)
        for x1 in range(k)
        if x0 != x1
    )
    assert slack >= -1e-15 and slack == pytest.approx(0.0, abs=1e-15)
    assert shuffle_amplification(
        1000, eps0, 1e-6, randomizer="randomized_response"
    ).clone_probability == pytest.approx(2 * p)


def test_monotone_in_n_and_epsilon_0():
    """More reports: a smaller central epsilon; a larger local epsilon: a larger one;
    randomized response's bound at most the general one."""
    by_n = [shuffle_amplification(n, 2.0, 1e-6).epsilon for n in (10**3, 10**4, 10**5, 10**6)]
    assert all(a > b for a, b in itertools.pairwise(by_n))
    by_eps = [shuffle_amplification(10**5, e, 1e-6).epsilon for e in (0.5, 1.0, 2.0, 4.0, 6.0)]
    assert all(a < b for a, b in itertools.pairwise(by_eps))
    for eps0 in (1.0, 4.0):
        rr = shuffle_amplification(10**5, eps0, 1e-6, randomizer="randomized_response")
        assert rr.epsilon <= shuffle_amplification(10**5, eps0, 1e-6).epsilon


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 200_000),
    eps0=st.floats(0.01, 10.0),
    log_delta=st.floats(-12.0, -1.0),
    rr=st.booleans(),
)
def test_the_bound_never_exceeds_epsilon_0(n, eps0, log_delta, rr):
    r = shuffle_amplification(
        n, eps0, 10.0**log_delta, randomizer="randomized_response" if rr else "general"
    )
    assert 0.0 <= r.epsilon <= eps0
    assert r.closed_form <= eps0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n must be"):
        shuffle_amplification(1, 1.0, 1e-6)
    with pytest.raises(ValueError, match="n must be at most"):
        shuffle_amplification(10**10, 1.0, 1e-6)
    with pytest.raises(ValueError, match="epsilon_0"):
        shuffle_amplification(100, math.inf, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        shuffle_amplification(100, 1.0, 1.5)
    with pytest.raises(ValueError, match="randomizer"):
        shuffle_amplification(100, 1.0, 1e-6, randomizer="laplace")  # type: ignore[arg-type]


# -- binary randomized response: the exact curve -----------------------------------------


def _binary_pair(n: int, eps0: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The count of "1" reports of n people, m of the other n - 1 answering 1, when the
    target answers 1 and when 0: full binomial pmfs convolved directly (no window)."""
    q = 1 / (math.exp(eps0) + 1)
    s = np.convolve(stats.binom.pmf(np.arange(m + 1), m, 1 - q),
                    stats.binom.pmf(np.arange(n - m), n - 1 - m, q))  # fmt: skip
    s = np.concatenate([[0.0], s, [0.0]])
    return (1 - q) * s[:-1] + q * s[1:], q * s[:-1] + (1 - q) * s[1:]


def _curve_epsilon(n: int, eps0: float, delta: float, others) -> float:
    """The smallest epsilon (bisected to 1e-10) at which every dataset in ``others`` is
    (epsilon, delta)-indistinguishable in both directions."""
    pairs = [_binary_pair(n, eps0, m) for m in others]

    def worst(eps: float) -> float:
        e = math.exp(eps)
        return max(max(np.maximum(p - e * q, 0).sum(), np.maximum(q - e * p, 0).sum())
                   for p, q in pairs)  # fmt: skip

    low, high = 0.0, eps0
    while high - low > 1e-10:
        mid = (low + high) / 2
        low, high = (mid, high) if worst(mid) > delta else (low, mid)
    return high


@pytest.mark.parametrize(("n", "eps0", "delta"), [(2, 1.0, 0.1), (7, 2.0, 1e-3), (40, 3.0, 1e-4),
                                                  (200, 1.0, 1e-6)])  # fmt: skip
def test_binary_randomized_response_is_exact_over_every_dataset(n, eps0, delta):
    """Against every dataset of the others (m = 0..n-1, enumerated outright): the
    computed epsilon is never below the exact one and within 1e-6 of it."""
    exact = _curve_epsilon(n, eps0, delta, range(n))
    r = shuffle_amplification(n, eps0, delta, randomizer="binary_randomized_response")
    assert r.epsilon == r.exact
    assert exact - 1e-9 <= r.exact <= exact * (1 + 1e-6) + 1e-9
    assert r.exact <= r.clones <= eps0


GRID = [(eps0, delta) for eps0 in (0.5, 1.0, 2.0, 4.0) for delta in (1e-6, 1e-9)]


@pytest.mark.slow  # 2.5 s at n = 1,000 (10 s at 10,000): the whole suite
@pytest.mark.parametrize("n", [1_000, 10_000])
def test_the_one_release_bound_on_the_grid(n):
    """Issue 43's grid: for binary RR the bound is never below the exact curve of the
    dataset where every other person answers 0 (a lower bound on the exact epsilon, from
    full pmfs) and within 5% of it (measured: within 0.07%); the clones' pair is 10-40%
    above it. At n = 1,000 the exact curve over every dataset is enumerated too.
    ``bench/simulation_grids.py`` runs the grid at n = 100,000 (157 s)."""
    for eps0, delta in GRID:
        r = shuffle_amplification(n, eps0, delta, randomizer="binary_randomized_response")
        floor = _curve_epsilon(n, eps0, delta, [0])
        assert floor - 1e-9 <= r.epsilon <= 1.05 * floor, (eps0, delta)
        assert r.epsilon <= r.clones
    if n == 1_000:
        r = shuffle_amplification(n, 2.0, 1e-6, randomizer="binary_randomized_response")
        exact = _curve_epsilon(n, 2.0, 1e-6, range(0, n, 1))
        assert exact - 1e-9 <= r.exact <= exact * (1 + 1e-6)


def test_the_clones_bound_is_loose_for_binary_randomized_response():
    """The issue's measurement: n = 5,000, epsilon_0 = 4, delta = 1e-6: the clones' pair
    gives 0.607 where the exact figure is 0.483 (0.4826 where every other person answers
    0, the issue's figure; 0.4829 over every dataset: a few answering 1 is slightly
    worse)."""
    r = shuffle_amplification(5_000, 4.0, 1e-6, randomizer="binary_randomized_response")
    assert r.clones == pytest.approx(0.6071, abs=1e-4)
    assert r.exact == pytest.approx(0.4829, abs=1e-4)
    assert r.exact >= _curve_epsilon(5_000, 4.0, 1e-6, [0]) - 1e-9
    general = shuffle_amplification(5_000, 4.0, 1e-6, randomizer="randomized_response")
    assert general.exact is None and general.epsilon == r.clones


def _histogram_law(values: tuple[int, ...], target: int, k: int, eps0: float) -> dict:
    """The law of the count vector of n shuffled k-ary RR reports (the others' ``values``
    and the target's ``target``), built person by person (no window, no FFT)."""
    e = math.exp(eps0)
    law = {(0,) * k: 1.0}
    for v in (*values, target):
        step: dict = {}
        for counts, mass in law.items():
            for r in range(k):
                share = (e if r == v else 1.0) / (e + k - 1)
                key = (*counts[:r], counts[r] + 1, *counts[r + 1 :])
                step[key] = step.get(key, 0.0) + mass * share
        law = step
    return law


def _histogram_epsilon(n: int, k: int, eps0: float, delta: float) -> float:
    """The exact central epsilon of the release of the whole count vector: the largest
    over every dataset of the others (as multisets: the law depends on their counts) of
    both hockey-stick divergences between target inputs 0 and 1, bisected to 1e-10."""
    pairs = []
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        p, q = _histogram_law(others, 0, k, eps0), _histogram_law(others, 1, k, eps0)
        keys = sorted(set(p) | set(q))
        pairs.append((np.array([p.get(c, 0.0) for c in keys]),
                      np.array([q.get(c, 0.0) for c in keys])))  # fmt: skip

    def worst(eps: float) -> float:
        e = math.exp(eps)
        return max(max(np.maximum(a - e * b, 0).sum(), np.maximum(b - e * a, 0).sum())
                   for a, b in pairs)  # fmt: skip

    low, high = 0.0, eps0
    while high - low > 1e-10:
        mid = (low + high) / 2
        low, high = (mid, high) if worst(mid) > delta else (low, mid)
    return high


@pytest.mark.parametrize(("n", "k", "eps0", "delta"),
                         [(4, 3, 1.0, 0.05), (6, 3, 2.0, 1e-3), (5, 4, 1.5, 1e-2)])  # fmt: skip
def test_the_kary_projection_brackets_the_exact_release_from_below(n, k, eps0, delta):
    """Against the whole count vector's law over every dataset of the others, built
    person by person: the projection's epsilon is never above the exact one, which is
    never above the clones' randomized-response bound."""
    exact = _histogram_epsilon(n, k, eps0, delta)
    low = kary_projection_epsilon(n, eps0, k, delta)
    high = shuffle_amplification(n, eps0, delta, randomizer="randomized_response").epsilon
    assert low <= exact + 1e-8 and exact <= high + 1e-8, (low, exact, high)


def test_the_kary_projection_is_the_binary_curve_at_two_and_its_slack_on_a_grid():
    """k = 2: the binary curve, exactly. k 3, 4 and 7 at n 1,000, epsilon_0 1, 2 and 4,
    delta 1e-6: the stated bound is 1.15-2.13x the projection (docs/collection.md gives
    the factor), never below it; the projection falls with k at a fixed epsilon_0."""
    for n, eps0 in ((1_000, 2.0), (5_000, 4.0)):
        r = shuffle_amplification(n, eps0, 1e-6, randomizer="binary_randomized_response")
        assert kary_projection_epsilon(n, eps0, 2, 1e-6) == pytest.approx(r.exact, rel=1e-9)
    ratios = []
    for eps0 in (1.0, 2.0, 4.0):
        high = shuffle_amplification(1_000, eps0, 1e-6, randomizer="randomized_response").epsilon
        lows = [kary_projection_epsilon(1_000, eps0, k, 1e-6) for k in (3, 4, 7)]
        assert lows == sorted(lows, reverse=True)
        ratios += [high / low for low in lows]
    assert min(ratios) >= 1.0 and max(ratios) <= 2.2, ratios
    with pytest.raises(ValueError, match="k must be"):
        kary_projection_epsilon(1_000, 1.0, 1, 1e-6)
    with pytest.raises(ValueError, match="n must be at most"):
        kary_projection_epsilon(300_000, 1.0, 3, 1e-6)

"""The central privacy of a shuffled release: amplification by shuffling.

Each report is ``epsilon_0``-LDP. When ``n`` reports from ``n`` different people are
released with no order and no link to who sent them, the release as a whole is also
``(epsilon, delta)``-DP in the central sense, for an ``epsilon`` much smaller than
``epsilon_0`` when ``n`` is large (Feldman, McMillan & Talwar 2021, "Hiding Among the
Clones", FOCS; their Theorem 3.2 and Appendix E).

Their reduction: whatever the others' data, each of the other ``n - 1`` reports is,
with probability ``2p``, a *clone* of the target's report on one of two neighbouring
inputs (``p`` each); so the release is a post-processing of the pair

    P = (A + D, C - A + 1 - D),   Q = (A + 1 - D, C - A + D),

with ``C ~ Bin(n - 1, 2p)``, ``A ~ Bin(C, 1/2)`` and ``D ~ Bernoulli(e^eps0 / (e^eps0 +
1))``. Any ``epsilon_0``-DP randomizer has ``2p = e^-epsilon_0``; k-ary randomized
response (and binary randomized response, ``k = 2``) has ``2p = 2 / (e^epsilon_0 + 1)``:
its report on any input puts at least ``1 / (e^eps0 + k - 1)`` on every output, which
is ``p`` times the sum of the two neighbours' ``(e^eps0 + 1) / (e^eps0 + k - 1)``
(Feldman, McMillan & Talwar 2023, "Stronger Privacy Amplification by Shuffling",
SODA, whose errata keeps this case). The hockey-stick divergence of the pair is
computed exactly here (a sum over ``C`` of binomial tails, the bulk of ``C``'s mass to
within ``1e-30`` and the rest bounded by its mass), so the numerical ``epsilon`` is an
upper bound that lies between the authors' implementation's lower and upper bounds.

The clones' pair is loose for binary randomized response: it reveals the clone count
``C``, which the release does not, and in the Gaussian regime its noise has variance
``C / 4`` where the release's has ``(n - 1) q (1 - q)``, so the bound is about
``sqrt(2 (1 - q))`` times the truth (``q = 1 / (e^eps0 + 1)``; 1.12x at eps0 = 0.5,
1.40x at eps0 = 4, n = 10^5). The same holds for the privacy blanket (Balle, Bell,
Gascon & Nissim 2019), which Su, Cheng & Wang (2025) show is the best decomposition.
For binary randomized response the release is computed exactly instead
(``randomizer="binary_randomized_response"``): a release of one binary question shows
the count of "1" reports and nothing else, whose law is, with ``m`` of the other
``n - 1`` people answering 1,

    S_m = Bin(m, 1 - q) + Bin(n - 1 - m, q),
    P_m = S_m + Bernoulli(1 - q)   (the target answers 1),
    Q_m = S_m + Bernoulli(q)       (the target answers 0),

so the exact central ``delta(epsilon)`` is ``max over m in 0..n-1`` of the two
hockey-stick divergences of ``(P_m, Q_m)``; by the symmetry ``0 <-> 1`` the ``m`` up to
``(n - 1) / 2`` suffice. Every ``m`` is evaluated (none is assumed to be the worst: the
largest is ``m = 0`` to within 0.02% of delta on every setting measured, but not exactly
``m = 0`` everywhere), each ``S_m`` by an FFT convolution of the two binomials on windows
holding all but 2e-18 of their mass, which is added to delta with a bound on the
rounding (of ``gammaln`` and of the FFT), so the result is an upper bound on the exact
curve within the bisection's 1e-9.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import fft, special

from .._validation import check_integer, check_probability

__all__ = [
    "MAX_REPORTS",
    "ShuffleAmplification",
    "kary_projection_epsilon",
    "shuffle_amplification",
]

#: The largest release analysed (the sum over ``C`` grows with ``sqrt(n)``).
MAX_REPORTS = 10**9

#: Mass of ``C`` left out of the exact sum (added to delta as an upper bound).
_TAIL = 1e-30

#: The largest release whose binary-RR curve is computed exactly (the cost grows with
#: ``n^1.5``: 0.3 s at 10^4, 12-25 s at 10^5); beyond it the clones' bound is given.
MAX_EXACT_REPORTS = 200_000


#: The mass of each binomial left out of its window on either side (added to delta).
_ROW_TAIL = 1e-18

#: Values of ``m`` convolved at once.
_BLOCK = 64


@dataclass(frozen=True)
class ShuffleAmplification:
    """The central ``(epsilon, delta)`` of ``n`` shuffled ``epsilon_0``-LDP reports.

    Attributes
    ----------
    epsilon : float, nats
        The numerical upper bound: the smallest epsilon (to 1e-9 relative) at which the
        clones' pair is ``(epsilon, delta)``-indistinguishable; never above
        ``epsilon_0``.
    closed_form : float, nats
        Feldman, McMillan & Talwar's (2021) closed form (any randomizer), or
        ``epsilon_0`` outside its range (``epsilon_0 > log(n / (16 log(4 / delta)))``).
    n : int
    epsilon_0 : float, nats
    delta : float in (0, 1)
    randomizer : {"general", "randomized_response", "binary_randomized_response"}
    clone_probability : float in (0, 1]
        ``2p``: the chance that another report is a clone of the target's.
    clones : float, nats
        The clones' pair's bound (Feldman, McMillan & Talwar 2021, 2023): ``epsilon``
        for every randomizer but binary randomized response.
    exact : float or None, nats
        Binary randomized response only: the exact central epsilon of the release (the
        largest over every dataset of the other ``n - 1``, to 1e-9 relative, never
        below it); ``epsilon`` then equals it. ``None`` for the other randomizers and
        beyond ``MAX_EXACT_REPORTS``.

    Examples
    --------
    >>> from deniable.planning import shuffle_amplification
    >>> central = shuffle_amplification(10_000, 1.0, 1e-6)
    >>> round(central.epsilon, 4), bool(central.epsilon < central.closed_form)
    (0.053, True)
    """

    epsilon: float
    closed_form: float
    n: int
    epsilon_0: float
    delta: float
    randomizer: str
    clone_probability: float
    clones: float
    exact: float | None = None


def _closed_form(n: int, eps0: float, delta: float) -> float:
    """FMT 2021, Theorem 3.1 (as in the authors' implementation); ``eps0`` outside its
    range."""
    if eps0 > math.log(n / (16 * math.log(4 / delta))):
        return eps0
    a = 8 * math.sqrt(math.exp(eps0) * math.log(4 / delta) / n)
    c = 8 * math.exp(eps0) / n
    shrink = (1 - math.exp(-eps0)) / (1 + math.exp(-eps0 - math.log1p(a + c)))
    return min(eps0, math.log1p(shrink * (a + c)))


def _clone_counts(n: int, clone: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``(c, Pr(C = c), mass left out)``: the bulk of ``C ~ Bin(n - 1, clone)`` (all but
    at most ``2 _TAIL`` of its mass), found once by a normal guess widened until the
    binomial tails beyond it are below ``_TAIL``."""
    mean, sd = (n - 1) * clone, math.sqrt(max((n - 1) * clone * (1 - clone), 1.0))
    width = 12.0
    while True:
        lo = max(int(mean - width * sd), 0)
        hi = min(math.ceil(mean + width * sd), n - 1)
        left = float(special.bdtr(lo - 1, n - 1, clone)) if lo > 0 else 0.0
        right = float(special.bdtrc(hi, n - 1, clone)) if hi < n - 1 else 0.0
        if (left <= _TAIL and right <= _TAIL) or (lo == 0 and hi == n - 1):
            break
        width *= 1.5
    from scipy import stats  # loaded on use: the core imports NumPy and scipy.special only

    c = np.arange(lo, hi + 1, dtype=np.int64)
    return c, stats.binom.pmf(c, n - 1, clone), left + right


def _pair_delta(counts: tuple[np.ndarray, np.ndarray, float], eps0: float, eps: float) -> float:
    """The hockey-stick divergence ``D_{e^eps}(P || Q)`` of the clones' pair (equal to
    ``D(Q || P)`` by symmetry), an upper bound within the mass of ``C`` left out."""
    if eps >= eps0:
        return 0.0
    c, weight, rest = counts
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    ratio = (math.exp(eps) * alpha - (1 - alpha)) / (alpha - math.exp(eps) * (1 - alpha))
    # P_c(a) / Q_c(a) falls with a: the positive part is the a below (c + 1) / (ratio + 1)
    k = np.floor((c + 1) / (ratio + 1)).astype(np.int64)
    below = special.bdtr(k, c, 0.5)
    below_1 = np.where(k >= 1, special.bdtr(np.maximum(k - 1, 0), c, 0.5), 0.0)
    p_mass = alpha * below + (1 - alpha) * below_1
    q_mass = (1 - alpha) * below + alpha * below_1
    part = np.maximum(p_mass - math.exp(eps) * q_mass, 0.0)
    return float(np.dot(weight, part) + rest)


def _log_binomial(k: np.ndarray, trials: np.ndarray, p: float) -> np.ndarray:
    """``log Pr(Bin(trials, p) = k)`` for ``0 <= k <= trials`` (arrays broadcast)."""
    return np.asarray(
        special.gammaln(trials + 1.0)
        - special.gammaln(k + 1.0)
        - special.gammaln(trials - k + 1.0)
        + special.xlogy(k, p)
        + special.xlog1py(trials - k, -p)
    )


def _binomial_rows(trials: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row ``i``: the pmf of ``Bin(trials[i], p)`` on a window holding all but at
    most ``2 _ROW_TAIL`` of its mass (zero beyond ``trials[i]``), the mass the window
    leaves out, and a bound on the pmf's relative error (``gammaln``'s rounding)."""
    from scipy import stats  # loaded on use, as in _clone_counts

    low = np.maximum(stats.binom.ppf(_ROW_TAIL, trials, p) - 1, 0).astype(np.int64)
    # the upper quantile by symmetry (``isf`` rounds ``1 - 1e-18`` to 1)
    high = np.minimum(trials - stats.binom.ppf(_ROW_TAIL, trials, 1 - p) + 1, trials)
    high = high.astype(np.int64)
    span = int((high - low).max()) + 1
    k = low[:, None] + np.arange(span)[None, :]
    inside = k <= high[:, None]
    size = trials[:, None].astype(np.float64)
    kk = np.minimum(k, high[:, None]).astype(np.float64)
    pmf = np.where(inside, np.exp(_log_binomial(kk, size, p)), 0.0)
    left = np.where(low > 0, special.bdtr(low - 1, trials, p), 0.0) + np.where(
        high < trials, special.bdtrc(high, trials, p), 0.0
    )
    # each of the five log terms is off by at most a few units in its last place
    rounding = 8 * np.finfo(float).eps * (special.gammaln(trials + 1.0) + trials + 1.0)
    return pmf, left, rounding


def _binary_deltas(n: int, eps0: float, eps: float, others: np.ndarray) -> np.ndarray:
    """``delta_m(eps)`` of a shuffled binary-RR release for each ``m`` in ``others``
    (how many of the other ``n - 1`` answer 1): the larger of the two hockey-stick
    divergences of ``(P_m, Q_m)``, plus the mass the windows leave out and a bound on
    the rounding of the pmfs and the FFT (so never below the exact value)."""
    q = 1 / (math.exp(eps0) + 1)
    return _count_deltas(n, 1 - q, q, eps, others)


def _count_deltas(n: int, p: float, q: float, eps: float, others: np.ndarray) -> np.ndarray:
    """``delta_m(eps)`` of the count of one report among ``n`` shuffled reports, for each
    ``m`` in ``others``: the target gives it with probability ``p`` on one input and
    ``q`` on the other, ``m`` of the others with ``p`` and the rest with ``q``. The count
    is ``Bernoulli + S``, ``S = Bin(m, p) + Bin(n - 1 - m, q)``, so ``P(k) - e^eps Q(k) =
    a S(k-1) - b S(k)`` with ``a = p - e^eps q``, ``b = e^eps (1 - q) - (1 - p)``, and
    ``Q(k) - e^eps P(k) = a' S(k) - b' S(k-1)`` with ``a' = (1 - q) - e^eps (1 - p)``,
    ``b' = e^eps p - q``; plus the windows' left-out mass and the rounding bound."""
    e = math.exp(eps)
    pairs = ((p - e * q, e * (1 - q) - (1 - p), False), ((1 - q) - e * (1 - p), e * p - q, True))
    out = np.empty(len(others))
    for start in range(0, len(others), _BLOCK):
        m = others[start : start + _BLOCK]
        ones, left_x, rel_x = _binomial_rows(m, p)
        zeros, left_y, rel_y = _binomial_rows(n - 1 - m, q)
        size = fft.next_fast_len(ones.shape[1] + zeros.shape[1] + 1)
        s = fft.irfft(fft.rfft(ones, size, axis=1) * fft.rfft(zeros, size, axis=1), size, axis=1)
        s = np.maximum(s, 0.0)
        s = np.concatenate([np.zeros((len(m), 1)), s], axis=1)  # S just below the window
        relative = (rel_x + rel_y)[:, None]
        absolute = (1e-15 * s.max(axis=1))[:, None]
        worst = 0.0
        for a, b, mirrored in pairs:
            x, y = (s[:, 1:], s[:, :-1]) if mirrored else (s[:, :-1], s[:, 1:])
            term = a * x - b * y
            error = relative * (abs(a) * x + b * y) + absolute * (abs(a) + b)
            bound = (np.maximum(term, 0.0) + np.where(term > -error, error, 0.0)).sum(axis=1)
            worst = np.maximum(worst, bound)
        out[start : start + _BLOCK] = worst + left_x + left_y
    return out


def kary_projection_epsilon(n: int, epsilon_0: float, k: int, delta: float) -> float:
    """A lower bound on the exact central epsilon of ``n`` shuffled reports of k-ary
    randomized response at ``epsilon_0``: the exact epsilon of one report's count alone.

    The release shows every report's count; the count of one report ``x`` is a
    post-processing of it, so its epsilon is at most the release's. The target reports
    ``x`` with probability ``p = e^eps0 / (e^eps0 + k - 1)`` on input ``x`` and ``q = 1 /
    (e^eps0 + k - 1)`` on another; of the others, ``m`` hold ``x`` (each reports it with
    ``p``) and the rest do not (``q``). The largest epsilon over every ``m`` in 0..n-1
    (:func:`_count_deltas`, bisected as the binary curve is) is a lower bound on the
    release's, and :func:`shuffle_amplification`'s ``"randomized_response"`` bound is an
    upper one: together they bracket the exact figure, whose slack docs/collection.md
    states. For ``k = 2`` it is the binary curve, exact.

    Parameters
    ----------
    n : int in 2..200,000
        Reports, one per person (the cost grows with ``n^1.5``: about twice the binary
        curve's, which uses its symmetry to check half the ``m``).
    epsilon_0 : float > 0, nats
    k : int in 2..10^6
        Categories of the design.
    delta : float in (0, 1)

    Returns
    -------
    float
        In nats, at most ``epsilon_0`` (to within the bisection's ``1e-9``, rounded up).

    Raises
    ------
    ValueError
        For ``n``, ``k``, ``epsilon_0`` or ``delta`` out of range.

    Examples
    --------
    >>> low = kary_projection_epsilon(1_000, 2.0, 4, 1e-6)
    >>> high = shuffle_amplification(1_000, 2.0, 1e-6, randomizer="randomized_response")
    >>> bool(low <= high.epsilon), round(low, 3)
    (True, 0.275)
    """
    n = check_integer("n", n, minimum=2)
    if n > MAX_EXACT_REPORTS:
        raise ValueError(f"n must be at most {MAX_EXACT_REPORTS:,} reports, got {n:,}")
    k = check_integer("k", k, minimum=2)
    if k > 10**6:
        raise ValueError(f"k must be at most 1,000,000 categories, got {k:,}")
    delta = check_probability("delta", delta, low_open=True, high_open=True)
    if not (isinstance(epsilon_0, int | float) and math.isfinite(epsilon_0) and epsilon_0 > 0):
        raise ValueError(f"epsilon_0 must be a finite number > 0 (nats), got {epsilon_0!r}")
    e0 = math.exp(float(epsilon_0))
    p, q = e0 / (e0 + k - 1), 1 / (e0 + k - 1)
    everyone = np.arange(0, n, dtype=np.int64)

    def worst(eps: float, among: np.ndarray) -> float:
        return float(_count_deltas(n, p, q, eps, among).max())

    eps = _bisect(lambda x: worst(x, everyone[:_BLOCK]), delta, float(epsilon_0))
    over = everyone[_count_deltas(n, p, q, eps, everyone) > delta]
    if len(over):
        eps = _bisect(lambda x: worst(x, over), delta, float(epsilon_0))
    return eps


def _bisect(delta_at: Callable[[float], float], delta: float, high: float) -> float:
    """The smallest ``eps`` in ``[0, high]`` (to 1e-9 relative, the upper end) with
    ``delta_at(eps) <= delta`` (``delta_at`` falls with ``eps``; 0 at ``high``)."""
    low = 0.0
    if delta_at(0.0) <= delta:
        return 0.0
    while high - low > 1e-9 * max(high, 1e-12):
        mid = (low + high) / 2
        low, high = (mid, high) if delta_at(mid) > delta else (low, mid)
    return high


def _binary_exact(n: int, eps0: float, delta: float) -> float:
    """The exact central epsilon of ``n`` shuffled binary-RR reports (module text):
    bisected on the first ``m``, checked on every ``m`` at once, and bisected again on
    the ``m`` that exceed delta there (every other ``m`` is below delta at any larger
    epsilon, since each ``delta_m`` falls with epsilon)."""
    everyone = np.arange(0, (n - 1) // 2 + 1, dtype=np.int64)
    first = everyone[:_BLOCK]
    eps = _bisect(lambda e: float(_binary_deltas(n, eps0, e, first).max()), delta, eps0)
    over = everyone[_binary_deltas(n, eps0, eps, everyone) > delta]
    if len(over):
        eps = _bisect(lambda e: float(_binary_deltas(n, eps0, e, over).max()), delta, eps0)
    return eps


def shuffle_amplification(
    n: int,
    epsilon_0: float,
    delta: float,
    *,
    randomizer: Literal["general", "randomized_response", "binary_randomized_response"] = "general",
) -> ShuffleAmplification:
    """The central ``(epsilon, delta)``-DP of a shuffled release of ``n`` reports, one
    from each of ``n`` people, each ``epsilon_0``-LDP (Feldman, McMillan & Talwar 2021).

    Parameters
    ----------
    n : int in 2..10^9
        Reports in the smallest group the release distinguishes, one per person (the
        cost grows with sqrt(n): 0.2 s at 10^5, 4 s at 10^7, 35 s at 10^9).
    epsilon_0 : float > 0, nats
        One person's whole local cost (the sum over the questions of the response).
    delta : float in (0, 1)
    randomizer : {"general", "randomized_response", "binary_randomized_response"}, \
default "general"
        ``"randomized_response"``: every question is k-ary (or binary) randomized
        response, whose clone probability ``2 / (e^eps0 + 1)`` gives a tighter bound;
        ``"binary_randomized_response"``: the one question is binary randomized response
        (Warner 1965), whose release is computed exactly (module text; up to
        ``MAX_EXACT_REPORTS``, at a cost growing with ``n^1.5``: 0.3 s at 10^4, 12-25 s
        at 10^5); ``"general"`` holds for any ``epsilon_0``-LDP randomizer.

    Returns
    -------
    ShuffleAmplification
        ``.epsilon`` (the tightest upper bound, at most ``epsilon_0``), ``.clones`` (the
        clones' pair's bound), ``.exact`` (binary randomized response) and
        ``.closed_form``.

    Raises
    ------
    ValueError, TypeError
        For ``n`` outside 2..10^9, ``epsilon_0 <= 0`` or not finite, ``delta`` outside (0, 1), or
        an unknown ``randomizer``.

    Examples
    --------
    >>> round(shuffle_amplification(10**5, 4.0, 1e-6).epsilon, 4)  # FMT 2021: 0.1675-0.1728
    0.1698
    >>> warner = shuffle_amplification(5_000, 4.0, 1e-6, randomizer="binary_randomized_response")
    >>> round(warner.exact, 4), round(warner.clones, 4)  # the clones' pair: 26% above
    (0.4829, 0.6071)
    """
    n = check_integer("n", n, minimum=2)
    if n > MAX_REPORTS:
        raise ValueError(f"n must be at most {MAX_REPORTS:,} reports, got {n:,}")
    delta = check_probability("delta", delta, low_open=True, high_open=True)
    if not (isinstance(epsilon_0, int | float) and math.isfinite(epsilon_0) and epsilon_0 > 0):
        raise ValueError(f"epsilon_0 must be a finite number > 0 (nats), got {epsilon_0!r}")
    eps0 = float(epsilon_0)
    if randomizer == "general":
        clone = math.exp(-eps0)
    elif randomizer in ("randomized_response", "binary_randomized_response"):
        clone = 2 / (math.exp(eps0) + 1)
    else:
        raise ValueError(
            "randomizer must be 'general', 'randomized_response' or "
            f"'binary_randomized_response', got {randomizer!r}"
        )
    counts = _clone_counts(n, clone)
    clones = _bisect(lambda e: _pair_delta(counts, eps0, e), delta, eps0)
    exact = None
    if randomizer == "binary_randomized_response" and n <= MAX_EXACT_REPORTS:
        exact = min(_binary_exact(n, eps0, delta), clones)
    return ShuffleAmplification(
        epsilon=clones if exact is None else exact,
        closed_form=_closed_form(n, eps0, delta),
        n=n,
        epsilon_0=eps0,
        delta=delta,
        randomizer=randomizer,
        clone_probability=clone,
        clones=clones,
        exact=exact,
    )

"""Goodness of fit: an encoder's output frequencies against the channel it documents,
and the check that it draws from the secure source.

A lower bound on epsilon cannot see an encoder that is *more* private than it claims
(a Warner ``p`` of 0.74 for 0.75): its estimates are then biased, and only the output
frequencies show it. Each test gives a p-value, Bonferroni-adjusted over its cells, and
the shift in one report probability it detects with probability about 0.84 at its
samples (``(z_{1 - alpha / 2m} + 1) sqrt(p (1 - p) / n)``, the normal approximation).

* A finite design: for each answer (the pair the audit uses, and every answer when
  there are at most 16), Pearson's chi-square of the report counts against ``n M[:, x]``.
* A frequency oracle: for values 0 and 1, how often a report supports each candidate
  (at most 64), against ``p*`` (the value itself) and ``q*`` (another), binomial z-tests.
* A numeric mechanism: at ``low``, the midpoint and ``high``, the mean debiased report
  against the value, a z-test with the exact variance (:meth:`report_variance`).
* A prefix encoder (PEM, byte-PEM): for the two strings, the levels' counts against
  the level probabilities (chi-square), and how often a report supports each string's
  prefix at its level against ``p*`` (its own) and ``q*`` (the other's), binomial z-tests.
* dBitFlip: for buckets 0 and 1, how often each bucket (at most 64) is sampled against
  ``d / k``, and how often a sampled bucket's bit is 1 against ``p*`` (the value's own
  bucket) and ``q*`` (another), binomial z-tests.
* RAPPOR: for the two strings, how often each report bit is 1 in each cohort, against
  ``p*`` (the string's Bloom bit set) and ``q*`` (not), binomial z-tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import Any

import numpy as np

from ._auditor import CHUNK, kernels
from ._targets import AuditTarget, Encoder, check_draws, targets_for

__all__ = ["FitTest", "SourceCheck", "fit_test", "source_check"]


@dataclass(frozen=True)
class FitTest:
    """An encoder's output frequencies against its documented channel.

    Attributes
    ----------
    target : str
    pvalue : float in [0, 1]
        Bonferroni-adjusted over the test's cells: below ``alpha`` means the encoder does
        not follow its channel.
    cells : int
        Tests combined.
    n : int
        Draws per input.
    detectable_shift : float
        The shift in one report probability found with probability about 0.84 at level
        ``alpha`` (module docstring).
    alpha : float
    runtime : str

    Examples
    --------
    >>> from deniable import Warner
    >>> fit_test(Warner(p=0.75), n=20_000)[0].pvalue > 0.01
    True
    """

    target: str
    pvalue: float
    cells: int
    n: int
    detectable_shift: float
    alpha: float
    runtime: str

    @property
    def rejects(self) -> bool:
        """Whether the encoder departs from its channel at level ``alpha``."""
        return self.pvalue < self.alpha

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``rejects``, JSON-ready."""
        return asdict(self) | {"rejects": self.rejects}


def _draw(target: AuditTarget, encode: Encoder, x: Any, n: int, rng: Any) -> list[Any]:
    return [
        encode(target.inputs(x, min(CHUNK, n - s)), rng) for s in range(0, n, CHUNK)
    ]  # fmt: skip


def _design_pvalues(
    target: AuditTarget, encode: Encoder, n: int, rng: Any
) -> tuple[list[float], float]:
    from scipy.stats import chisquare

    m = np.asarray(target.mechanism.matrix, dtype=np.float64)
    answers = list(range(m.shape[1])) if m.shape[1] <= 16 else [int(target.x0), int(target.x1)]
    pvalues = []
    for x in answers:
        counts = np.zeros(m.shape[0], dtype=np.int64)
        for reports in _draw(target, encode, x, n, rng):
            counts += np.bincount(np.asarray(reports, np.int64), minlength=m.shape[0])[: m.shape[0]]
        expected = n * m[:, x]
        if np.any(counts[expected == 0] > 0) or counts.sum() != n:
            pvalues.append(0.0)  # a report the channel never gives, or codes out of range
            continue
        keep = expected > 0
        pvalues.append(
            float(chisquare(counts[keep], expected[keep]).pvalue) if keep.sum() > 1 else 1.0
        )
    return pvalues, float(m.max())


def _oracle_pvalues(
    target: AuditTarget, encode: Encoder, n: int, rng: Any
) -> tuple[list[float], float]:
    from scipy.stats import norm

    oracle = target.mechanism
    k = min(int(oracle.k), 64)
    pvalues = []
    top = 0.0
    for x in (0, 1):
        support = np.zeros(k, dtype=np.int64)
        for reports in _draw(target, encode, x, n, rng):
            s = oracle.support_matrix(reports).tocsc()[:, :k]
            support += np.asarray(s.sum(axis=0), dtype=np.int64).ravel()
        rates = oracle.support_probabilities(x, k)
        top = max(top, float(rates.max()))
        for v in range(k):
            z = (support[v] - n * rates[v]) / math.sqrt(n * rates[v] * (1 - rates[v]))
            pvalues.append(float(2 * norm.sf(abs(z))))
    return pvalues, top


def _bloom_pvalues(
    target: AuditTarget, encode: Encoder, n: int, rng: Any
) -> tuple[list[float], float]:
    """RAPPOR: how often each report bit is 1, per cohort, against ``p*`` where the
    string's Bloom bit is set and ``q*`` where it is not."""
    from scipy.stats import norm

    rappor = target.mechanism
    k = rappor.n_bloom_bits
    p, q = float(rappor.p_star), float(rappor.q_star)
    pvalues = []
    for x in (target.x0, target.x1):
        rows = np.zeros(rappor.n_cohorts, dtype=np.int64)
        ones = np.zeros((rappor.n_cohorts, k), dtype=np.int64)
        for reports in _draw(target, encode, x, n, rng):
            bits = np.unpackbits(reports.bits, axis=1, bitorder="little")[:, :k]
            np.add.at(rows, reports.cohort.astype(np.int64), 1)
            np.add.at(ones, reports.cohort.astype(np.int64), bits.astype(np.int64))
        for c in np.flatnonzero(rows).tolist():
            bloom = np.zeros(k, dtype=bool)
            bloom[rappor.bloom_bits(c, x)] = True
            rate = np.where(bloom, p, q)
            z = (ones[c] - rows[c] * rate) / np.sqrt(rows[c] * rate * (1 - rate))
            pvalues += (2 * norm.sf(np.abs(z))).tolist()
    return pvalues, max(p, q)


def _prefix_pvalues(
    target: AuditTarget, encode: Encoder, n: int, rng: Any
) -> tuple[list[float], float]:
    """PEM and byte-PEM: the level counts, and the support of each string's prefix."""
    from scipy.stats import chisquare, norm

    mech = target.mechanism
    levels = np.asarray(mech.level_probabilities, dtype=np.float64)
    p, q = float(mech.channel.p_star), float(mech.channel.q_star)
    pvalues = []
    for x, y in ((target.x0, target.x1), (target.x1, target.x0)):
        counts = np.zeros(levels.size, dtype=np.int64)
        own = other = 0
        for reports in _draw(target, encode, x, n, rng):
            counts += np.bincount(reports["level"].astype(np.int64), minlength=levels.size)
            own += int(np.count_nonzero(mech.prefix_supports(reports, x)))
            other += int(np.count_nonzero(mech.prefix_supports(reports, y)))
        pvalues.append(float(chisquare(counts, n * levels).pvalue) if levels.size > 1 else 1.0)
        for hits, rate in ((own, p), (other, q)):
            z = (hits - n * rate) / math.sqrt(n * rate * (1 - rate))
            pvalues.append(float(2 * norm.sf(abs(z))))
    return pvalues, p


def _bucket_pvalues(
    target: AuditTarget, encode: Encoder, n: int, rng: Any
) -> tuple[list[float], float]:
    """dBitFlip: the sampled buckets' counts, and the bits of the value's bucket and of
    the others."""
    from scipy.stats import norm

    mech = target.mechanism
    k = min(int(mech.k), 64)
    p, q, share = float(mech.channel.p_star), float(mech.channel.q_star), mech.d / mech.k
    pvalues = []
    for x in (0, 1):
        sampled = np.zeros(k, dtype=np.int64)
        own = [0, 0]  # [bits that are 1, buckets sampled], the value's bucket
        other = [0, 0]
        for reports in _draw(target, encode, x, n, rng):
            buckets, bits = np.asarray(reports.buckets), np.asarray(reports.bits)
            sampled += np.bincount(buckets.ravel(), minlength=mech.k)[:k]
            mine = buckets == x
            own = [own[0] + int(bits[mine].sum()), own[1] + int(mine.sum())]
            other = [other[0] + int(bits[~mine].sum()), other[1] + int((~mine).sum())]
        cells = [(int(c), n, share) for c in sampled] + [(*own, p), (*other, q)]
        for hits, trials, rate in cells:
            if trials == 0 or rate in (0.0, 1.0):
                continue
            z = (hits - trials * rate) / math.sqrt(trials * rate * (1 - rate))
            pvalues.append(float(2 * norm.sf(abs(z))))
    return pvalues, max(p, share)


def _numeric_pvalues(
    target: AuditTarget, encode: Encoder, n: int, rng: Any
) -> tuple[list[float], float]:
    from scipy.stats import norm

    mech = target.mechanism
    pvalues = []
    for x in (float(mech.low), (mech.low + mech.high) / 2.0, float(mech.high)):
        total = 0.0
        for reports in _draw(target, encode, x, n, rng):
            total += float(np.sum(mech.debias(reports)))
        sd = math.sqrt(float(mech.report_variance(np.array([x]))[0]) / n)
        pvalues.append(float(2 * norm.sf(abs(total / n - x) / sd)))
    return pvalues, 0.5


def fit_test(
    mechanism: Any,
    *,
    n: int = 100_000,
    alpha: float = 0.01,
    runtime: str | None = None,
    encode: Encoder | Sequence[Encoder] | None = None,
    rng: Any = None,
    confirm: bool = False,
) -> list[FitTest]:
    """Test an encoder's output frequencies against its documented channel.

    Parameters
    ----------
    mechanism : Design, FrequencyOracle, NumericMechanism or TwoLayerDesign
    n : int, default 100,000
        Draws per input, 1..10^9.
    alpha : float in (0, 1), default 0.01
        The level of each target's test.
    runtime : {"numpy", "numba"}, optional
    encode : callable or sequence of callables, optional
        ``(inputs, rng) -> reports`` in place of the shipped encoder; one per target
        for a panel or RAPPOR.
    rng : numpy.random.Generator, optional
        Default None: the secure source.
    confirm : bool, default False
        A target whose test rejects is drawn afresh at the same ``n`` and rejects only
        if the fresh draws reject too; its p-value is then the larger of the two, valid
        because two independent tests both at most ``a`` have probability ``a**2`` under
        the channel. A family of checks run often (a CI suite) needs this: at ``alpha``
        0.01 a correct encoder fails one run in a hundred, confirmed one in 10^4. A
        shift of ``detectable_shift`` is then found with probability about 0.84**2.

    Returns
    -------
    list of FitTest
        One per target (two for a panel).

    Raises
    ------
    ValueError
        For ``n`` or ``alpha`` out of range, or an ``encode`` that is not one per target.

    Examples
    --------
    >>> from deniable.mechanisms import DuchiMean
    >>> fit_test(DuchiMean(1.0), n=20_000)[0].cells
    3
    """
    from scipy.stats import norm

    check_draws(n)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    targets = targets_for(mechanism, encode)
    out = []
    with kernels(runtime):
        for target in targets:
            pvalues, top = _target_pvalues(target, n, rng)
            m = len(pvalues)
            z = float(norm.isf(alpha / (2 * m)))
            shift = (z + 1.0) * math.sqrt(top * (1 - top) / n)
            adjusted = min(1.0, min(pvalues) * m)
            if confirm and adjusted < alpha:  # a rejection counts only if fresh draws agree
                adjusted = max(adjusted, min(1.0, min(_target_pvalues(target, n, rng)[0]) * m))
            out.append(FitTest(target.name, adjusted, m, n, shift, alpha, runtime or "default"))
    return out


def _target_pvalues(target: AuditTarget, n: int, rng: Any) -> tuple[list[float], float]:
    """One target's per-cell p-values at ``n`` draws an input, and its largest rate."""
    run = target.encode
    if target.kind == "oracle":
        return _oracle_pvalues(target, run, n, rng)
    if target.kind == "bloom":
        return _bloom_pvalues(target, run, n, rng)
    if target.kind == "numeric":
        return _numeric_pvalues(target, run, n, rng)
    if target.kind == "prefix":
        return _prefix_pvalues(target, run, n, rng)
    if target.kind == "bucket":
        return _bucket_pvalues(target, run, n, rng)
    return _design_pvalues(target, run, n, rng)


@dataclass(frozen=True)
class SourceCheck:
    """Whether an encoder draws its randomness from the secure source, and only from it.

    Attributes
    ----------
    target : str
    fresh : bool
        Two runs on the same inputs differ (no fixed seed, no constant source).
    from_secure_source : bool
        With the secure source replaced by one fixed stream, two runs agree (no other
        source, such as ``random`` or an unseeded NumPy generator, is read).

    Examples
    --------
    >>> from deniable import Warner
    >>> check = source_check(Warner(p=0.75))[0]
    >>> check.fresh and check.from_secure_source
    True
    """

    target: str
    fresh: bool
    from_secure_source: bool

    @property
    def passes(self) -> bool:
        """Both hold."""
        return self.fresh and self.from_secure_source


def source_check(
    mechanism: Any, *, n: int = 65_536, encode: Encoder | Sequence[Encoder] | None = None
) -> list[SourceCheck]:
    """Check that an encoder's randomness comes from the secure source alone.

    Runs the encoder twice on the same ``n`` inputs (``x0`` and ``x1`` in turn, or the
    midpoint of a numeric range, where a report is least certain) with its default source,
    then twice with the secure source replaced by one seeded stream, restarted for each
    run. An encoder with a fixed seed fails the first; one that also reads another source
    (``random``, ``numpy.random.default_rng()``, the clock) fails the second.

    Parameters
    ----------
    mechanism : Design, FrequencyOracle, NumericMechanism or TwoLayerDesign
    n : int, default 65,536
        Inputs per run: two honest runs agree with probability
        ``prod_i sum_y Pr(y | x_i)^2``, below 10^-9 unless nearly every report is
        certain (epsilon above about 12 nats).
    encode : callable or sequence of callables, optional
        In place of the shipped encoder; one per target for a panel or RAPPOR.

    Returns
    -------
    list of SourceCheck

    Raises
    ------
    ValueError
        For an ``encode`` that is not one per target.

    Examples
    --------
    >>> from deniable.mechanisms import UnaryEncoding
    >>> [c.passes for c in source_check(UnaryEncoding(k=8, epsilon=1.0), n=1024)]
    [True]
    """
    from ..mechanisms import default_source_replaced

    targets = targets_for(mechanism, encode)
    out = []
    for target in targets:
        run = target.encode
        values = _varied(target, n)
        fresh = not _same(run(values, None), run(values, None))
        runs = []
        for _ in range(2):
            with default_source_replaced(np.random.default_rng(20261207)):
                runs.append(run(values, None))
        out.append(SourceCheck(target.name, fresh, _same(runs[0], runs[1])))
    return out


def _varied(target: AuditTarget, n: int) -> Any:
    """``n`` inputs where reports are least certain: ``x0`` and ``x1`` in turn, or a
    numeric range's midpoint."""
    if isinstance(target.x0, float):
        return np.full(n, (target.x0 + float(target.x1)) / 2.0)
    values = target.inputs(target.x0, n)
    values[1::2] = target.x1
    return values


def _same(a: Any, b: Any) -> bool:
    if is_dataclass(a) and is_dataclass(b):  # RAPPOR's and dBitFlip's reports: each field
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    a, b = np.asarray(a), np.asarray(b)
    return bool(a.shape == b.shape and a.tobytes() == b.tobytes())

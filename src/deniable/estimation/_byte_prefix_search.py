"""Finding heavy hitters among strings of any length from byte-PEM reports.

Byte-PEM's frontier for the one search of :mod:`._level_search` (generous pruning
capped at ``SURVIVOR_FACTOR / threshold``, the exact binomial test of ``frequency <=
threshold / 2`` on the last level, top-k mode), with the counting of
:class:`~deniable.mechanisms.BytePrefixExtension`: the candidates of a
level are every ``step``-byte extension ``x`` of each surviving parent ``P``, and their
support counts come from one fast Walsh-Hadamard transform a parent.

A value shorter than ``max_bytes`` is padded with zeros, so every level after the one
where it ends asks about the value itself. Extensions that end a value are admitted
(at most ``cap`` a level) and tested on the reports of all the levels after their
admission, pooled (independent of the data that admitted them); the last level's
candidates are tested on that level. Each family gets half of ``false_discoveries``,
Bonferroni over ``(levels - 1) cap`` admitted values and over the last level's
candidates: E[values returned below ``threshold / 2``] <= ``false_discoveries``.

Why: a report ``(A, y)`` supports ``id = G(P) XOR x`` when ``A id = y`` over GF(2), and
``[A id = y] = 2^-r sum_u (-1)^(u.y + u.(A id))`` over the ``g = 2^r`` vectors ``u``.
With ``v = A^T u`` (64 bits) and ``w`` its low ``8 step`` bits, ``u.(A id) = v.G(P) +
w.x``, so the counts of all ``x`` are ``C_P(x) = 2^-r sum_w S_P(w) (-1)^(w.x)``: the
Walsh-Hadamard transform of ``S_P(w) = sum over reports and u with low bits w of
(-1)^(u.y + v.G(P))``. A parent costs ``n g`` additions and a transform of
``2^(8 step)`` points (``8 step 2^(8 step)`` additions), against ``n 2^(8 step)`` hash
tests, and the counts are exact integers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._validation import check_integer
from ..errors import ReportValidationError
from ..mechanisms import (
    BytePrefixExtension,
    hadamard_spectrum,
    linear_hash_counts,
    prefix_hashes,
    walsh_hadamard_rows,
)
from ._extension_select import dense_blocks, strongest
from ._level_search import (
    FoundModel,
    Plan,
    PrefixHeavyHitters,
    Rule,
    Selection,
    noise_bar,
    plan_search,
    run_search,
    support_pvalues,
    survivors_expected,
)

__all__ = [
    "ExtensionCounter",
    "SupportCounter",
    "counts_from_spectrum",
    "extension_counts",
    "extension_spectrum",
    "find_string_heavy_hitters",
    "search_string_levels",
    "string_found_model",
    "support_counts",
    "walsh_hadamard",
]

#: Report-by-``u`` entries handled at once (bounds the temporaries to about 100 MB).
_CHUNK = 1 << 22


def walsh_hadamard(values: NDArray[np.int64], bound: int | None = None) -> NDArray[np.int64]:
    """The unnormalised Walsh-Hadamard transform along the last axis (length a power of
    two): ``out[..., x] = sum_w values[..., w] (-1)^popcount(w & x)``; int64, exact.

    Every partial sum is at most ``bound`` (default: the largest ``sum |values|`` of a
    row) in magnitude; the compiled path runs int64 butterflies, one row a thread, the
    NumPy path a product with the 256 x 256 Hadamard matrix and butterflies in the
    narrowest exact type.

    Raises
    ------
    ValueError
        If the last axis is not a power of two long.
    """
    out = np.array(values, dtype=np.int64, order="C")
    size = out.shape[-1]
    if size < 1 or size & (size - 1):
        raise ValueError(f"the last axis must have a power-of-two length, got {size}")
    if bound is None:
        bound = int(np.abs(out).sum(axis=-1).max()) if out.size else 0
    walsh_hadamard_rows(out.reshape(-1, size), bound)
    return out


def _report_terms(
    bpem: BytePrefixExtension, reports: NDArray[np.void]
) -> tuple[NDArray[np.uint64], NDArray[np.uint8], NDArray[np.int64]]:
    """``(A, y, w)`` of the reports: the hash rows (n, r) uint64, the buckets (n,) uint8
    and ``w`` (n, g) int64, the low ``8 step`` bits of ``v = A^T u`` for every ``u``."""
    n, g = reports.size, bpem.g
    a = np.ascontiguousarray(reports["a"].reshape(n, bpem.r))
    low_bits = (a & np.uint64((1 << (8 * bpem.step)) - 1)).astype(np.int64)
    w = np.zeros((n, g), dtype=np.int64)
    for u in range(1, g):  # w(u) = w(u without its lowest bit) XOR the row of that bit
        low = (u & -u).bit_length() - 1
        w[:, u] = w[:, u & (u - 1)] ^ low_bits[:, low]
    return a, np.ascontiguousarray(reports["y"], dtype=np.uint8), w


def extension_spectrum(
    bpem: BytePrefixExtension, reports: NDArray[np.void], parent_hashes: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """The spectrum ``S_P(w)`` of each parent among ``reports`` (one level's): the sum
    over reports and ``u`` with ``A^T u`` low bits ``w`` of ``(-1)^(u.y + v.G(P))``.

    Integers, so spectra of any split of the reports (files, Spark tasks) add up to
    the whole's; :func:`counts_from_spectrum` turns the sum into support counts.

    Parameters
    ----------
    bpem : BytePrefixExtension
    reports : ndarray of ``bpem.dtype``, shape (n,)
        The reports of one level.
    parent_hashes : ndarray of uint64, shape (P,)
        ``G`` of each parent (:func:`~deniable.mechanisms._byte_prefix.prefix_hashes`).

    Returns
    -------
    ndarray of int64, shape (P, 2^(8 step)), each entry at most ``n g`` in magnitude
    """
    width = 1 << (8 * bpem.step)
    if reports.size == 0 or parent_hashes.size == 0:
        return np.zeros((parent_hashes.size, width), dtype=np.int64)
    rows = max(1, _CHUNK // bpem.g)
    spectrum: NDArray[np.int64] | None = None
    for r0 in range(0, reports.size, rows):
        a, y, w = _report_terms(bpem, reports[r0 : r0 + rows])
        part = hadamard_spectrum(a, y, w, parent_hashes, width)
        spectrum = part if spectrum is None else spectrum + part
    assert spectrum is not None
    return spectrum


def counts_from_spectrum(
    bpem: BytePrefixExtension, spectrum: NDArray[np.int64], reports: int
) -> NDArray[np.int64]:
    """Support counts (P, 2^(8 step)) int64 from the summed spectrum of ``reports``
    reports (:func:`extension_spectrum`): its Walsh-Hadamard transform over ``g``,
    computed in ``spectrum``'s own memory when it is a C-contiguous int64 array (it is
    overwritten)."""
    out = np.ascontiguousarray(spectrum, dtype=np.int64)
    if out.ndim != 2 or out.shape[1] != 1 << (8 * bpem.step):
        raise ValueError(f"spectrum must have shape (P, {1 << (8 * bpem.step)}), got {out.shape}")
    # |S(w)| summed over w is at most (reports x g): the transform's every partial sum
    walsh_hadamard_rows(out, max(reports, 1) * bpem.g)
    out //= bpem.g
    return out


def extension_counts(
    bpem: BytePrefixExtension, reports: NDArray[np.void], parent_hashes: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """Support counts of every extension of each parent among ``reports`` (one level's).

    Parameters
    ----------
    bpem : BytePrefixExtension
    reports : ndarray of ``bpem.dtype``, shape (n,)
        The reports of one level.
    parent_hashes : ndarray of uint64, shape (P,)
        ``G`` of each parent (:func:`~deniable.mechanisms._byte_prefix.prefix_hashes`).

    Returns
    -------
    ndarray of int64, shape (P, 2^(8 step))
        Entry ``(p, x)``: the reports that support the prefix ``parent p + x`` (``x``
        little-endian).
    """
    spectrum = extension_spectrum(bpem, reports, parent_hashes)
    return counts_from_spectrum(bpem, spectrum, reports.size)


#: ``extensions(level, parent hashes (P,) uint64, least, ids)``: the support counts of every
#: extension of each parent among that level's reports, a block of ``PARENTS_AT_ONCE``
#: parents at a time, in order: each block either dense, ``(B, 2^(8 step))`` int64
#: (:func:`extension_counts`, in one process or added up over Spark tasks: counts of any
#: split of the reports add up), or only its entries whose count is at least ``least``,
#: ``(rows, xs, counts)`` of shape (E,) each, rows within the block (a Spark task that
#: holds all the level's reports sends only those). ``ids`` (uint64, or None) are the ids
#: whose support the search asks next of the same level (:data:`SupportCounter`): a
#: counter may count them in the same pass.
ExtensionCounter = Callable[
    [int, NDArray[np.uint64], int, NDArray[np.uint64] | None], Iterable[Any]
]


#: ``support(level, ids (E,) uint64) -> support counts (E,) int64`` of arbitrary ids
#: among that level's reports (:func:`support_counts`).
SupportCounter = Callable[[int, NDArray[np.uint64]], NDArray[np.int64]]


def support_counts(
    bpem: BytePrefixExtension, reports: NDArray[np.void], ids: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """How many of ``reports`` (shape (n,), one level's) support each id (E,) uint64
    (``BytePrefixExtension.prefix_ids``): ``#{i : A_i id = y_i}``, int64 (E,)."""
    a = np.ascontiguousarray(reports["a"].reshape(reports.size, bpem.r))
    return linear_hash_counts(a, np.ascontiguousarray(reports["y"], dtype=np.uint8), ids)


def _extension_kinds(bpem: BytePrefixExtension) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """``(goes on, ends)``, each (2^(8 step),) bool: the extensions ``x`` of a prefix
    with no padding yet that hold no padding, and those that end it (padding at the
    end; never a NUL inside a value, so padding is followed by padding only)."""
    x = np.arange(1 << (8 * bpem.step))
    if bpem.step == 1:
        return x != 0, x == 0
    return ((x & 0xFF) != 0) & (x >> 8 != 0), x >> 8 == 0


def _extend(
    bpem: BytePrefixExtension,
    parents: NDArray[np.uint8],
    parent_of: NDArray[np.int64],
    x: NDArray[np.int64],
    start: int,
) -> NDArray[np.uint8]:
    """The prefixes ``parents[parent_of] + x`` (``x`` little-endian at byte ``start``)."""
    out = parents[parent_of].copy()
    out[:, start] = x & 0xFF
    if bpem.step == 2:
        out[:, start + 1] = x >> 8
    return out


def find_string_heavy_hitters(
    bpem: BytePrefixExtension,
    reports: Any,
    threshold: float = 0.01,
    miss_rate: float = 0.05,
    *,
    false_discoveries: float = 0.05,
    top_k: int | None = None,
    max_survivors: int | None = None,
    on_overflow: Literal["keep", "raise"] = "keep",
    progress: Callable[[int], None] | None = None,
) -> PrefixHeavyHitters:
    """Strings (up to ``bpem.max_bytes`` of UTF-8) whose frequency reaches ``threshold``.

    Guarantees as :func:`~deniable.estimation.find_heavy_hitters`'s: at most
    ``false_discoveries`` values expected below ``threshold / 2``, survivors capped at
    ``SURVIVOR_FACTOR / threshold``. A value that ends before the last level is tested
    on the reports of every level after the one that admitted it (the module's text),
    its ``std_error`` about ``sqrt(levels after)`` times one level's.
    ``candidates_per_level`` counts the extensions tested and the ended values counted.

    Parameters
    ----------
    bpem : BytePrefixExtension
    reports : ndarray of the mechanism's report dtype, shape (n,)
    threshold, miss_rate, false_discoveries, top_k, max_survivors, on_overflow
        As :func:`~deniable.estimation.find_heavy_hitters`.
    progress : callable, optional
        Called as ``progress(1)`` after each level is searched (``bpem.levels`` calls
        in all), for a bar or a log (``tqdm(total=bpem.levels).update`` draws one).

    Returns
    -------
    PrefixHeavyHitters

    Raises
    ------
    ValueError, DetectionLimitError
        As :func:`~deniable.estimation.find_heavy_hitters`.
    ReportValidationError
        For malformed reports or none.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import find_string_heavy_hitters
    >>> from deniable.mechanisms import BytePrefixExtension
    >>> bpem = BytePrefixExtension(4.0, max_bytes=8)
    >>> reports = bpem.randomize(["tea"] * 6000 + ["café"] * 4000, np.random.default_rng(0))
    >>> find_string_heavy_hitters(bpem, reports, threshold=0.1).values
    ['tea', 'café']
    """
    arr = bpem.check_reports(reports)
    if arr.size == 0:
        raise ReportValidationError("no reports")
    levels = arr["level"]
    mine: dict[int, NDArray[np.void]] = {}  # the reports of the current level

    def of_level(level: int) -> NDArray[np.void]:
        if level not in mine:
            mine.clear()
            mine[level] = arr[levels == level]
        return mine[level]

    return search_string_levels(
        bpem,
        lambda level, hashes, _least, _ids: dense_blocks(
            functools.partial(extension_counts, bpem, of_level(level)), hashes
        ),
        lambda level, ids: support_counts(bpem, of_level(level), ids),
        np.bincount(levels, minlength=bpem.levels),
        threshold,
        miss_rate,
        false_discoveries=false_discoveries,
        top_k=top_k,
        max_survivors=max_survivors,
        on_overflow=on_overflow,
        progress=progress,
    )


def search_string_levels(
    bpem: BytePrefixExtension,
    extensions: ExtensionCounter,
    support: SupportCounter,
    reports_per_level: NDArray[np.int64],
    threshold: float = 0.01,
    miss_rate: float = 0.05,
    *,
    false_discoveries: float = 0.05,
    top_k: int | None = None,
    max_survivors: int | None = None,
    on_overflow: Literal["keep", "raise"] = "keep",
    progress: Callable[[int], None] | None = None,
) -> PrefixHeavyHitters:
    """The search of :func:`find_string_heavy_hitters`, with the reports wherever they
    are: ``extensions(level, parent_hashes)`` returns the support counts of every extension
    of each parent among that level's reports (:func:`extension_counts`, summed over any
    split of them) and ``support(level, ids)`` their
    :func:`support_counts` (in one process, or added up over Spark tasks);
    ``reports_per_level`` (levels,) int64 counts them.

    Raises
    ------
    ValueError, DetectionLimitError
        As :func:`~deniable.estimation.find_heavy_hitters`.
    ReportValidationError
        If ``reports_per_level`` has the wrong shape or sums to 0.
    """
    plan = plan_search(threshold, miss_rate, false_discoveries, top_k, max_survivors, on_overflow)
    sizes = np.asarray(reports_per_level, dtype=np.int64)
    if sizes.shape != (bpem.levels,) or sizes.min() < 0 or sizes.sum() == 0:
        raise ReportValidationError(
            f"reports_per_level must hold {bpem.levels} non-negative counts, not all 0"
        )
    return run_search(_ByteFrontier(bpem, extensions, support, sizes, plan), plan, progress)


class _ByteFrontier:
    """Byte-PEM's candidates (see :class:`Frontier <._level_search.Frontier>`): every
    ``step``-byte extension of the surviving parents (rows of ``max_bytes`` uint8),
    counted from spectra a few parents at a time, and the pool of values that ended
    before the last level, tested on the levels after (the module's text)."""

    final_share = 0.5

    def __init__(
        self,
        bpem: BytePrefixExtension,
        extensions: ExtensionCounter,
        support: SupportCounter,
        sizes: NDArray[np.int64],
        plan: Plan,
    ) -> None:
        self.mechanism, self.extensions, self.support = bpem, extensions, support
        self.sizes, self.plan = sizes, plan
        self.levels, self.total = bpem.levels, int(sizes.sum())
        self.goes_on, self.ends = _extension_kinds(bpem)
        self.z_pool = float(special.ndtri(1 - plan.miss_rate / bpem.levels))
        self.parents = np.zeros((1, bpem.max_bytes), dtype=np.uint8)
        self.pool = _Pool(np.zeros((0, bpem.max_bytes), dtype=np.uint8))
        self.ended = self.pool.rows

    def tested(self, level: int) -> tuple[int, int]:
        tested = self.parents.shape[0] * int((self.goes_on | self.ends).sum())
        return tested, tested + self.pool.size

    def select(self, level: int, rule: Rule, cap: int | None) -> Selection:
        bpem, n_l = self.mechanism, int(self.sizes[level])
        last, start = level == self.levels - 1, bpem.step * level
        kinds = (
            ((self.goes_on | self.ends, cap),) if last else ((self.goes_on, cap), (self.ends, cap))
        )
        hashes = prefix_hashes(self.parents, start)
        least = rule(n_l)
        ids = bpem.prefix_ids(self.pool.rows, level) if self.pool.size and n_l else None
        found = strongest(bpem, self.extensions(level, hashes, least, ids), least, kinds)
        if ids is not None:  # the ended values gather this level's evidence
            self.pool.add(self.support(level, ids), n_l)
            if not last:
                self.pool.prune(bpem, self.plan, self.z_pool)
        parent_of, x, counts, passing = found[0]
        if not last:
            end_of, end_x, _, _ = found[1]
            self.ended = _extend(bpem, self.parents, end_of, end_x, start)
        rows = _extend(bpem, self.parents, parent_of, x, start)
        return Selection(rows, counts, n_l, passing)

    def advance(self, level: int, kept: Selection) -> None:
        self.pool.admit(self.ended)
        self.parents = kept.ids

    def decode(self, ids: NDArray[Any]) -> list[str | None]:
        return [self.mechanism.decode(bytes(row)) for row in ids]

    def found_model(self) -> FoundModel:
        return string_found_model(self.mechanism)

    def earlier(
        self, plan: Plan
    ) -> tuple[NDArray[Any], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The pool's values (family a: tested on the levels after their admission, at
        ``false_discoveries / 2`` over the at most ``(levels - 1) cap`` admitted)."""
        pool = self.pool
        pool.keep(pool.reports > 0)
        pvalue = support_pvalues(self.mechanism, plan, pool.counts, pool.reports)
        if plan.top_k is None:
            passed = pvalue <= plan.false_discoveries / 2 / ((self.levels - 1) * plan.cap)
            pool.keep(passed)
            pvalue = pvalue[passed]
        estimate, std_error = pool.estimates(self.mechanism)
        return pool.rows, estimate, std_error, pvalue


class _Pool:
    """Values that ended (padding reached) before the last level, with the support
    counts and reports of every level after the one that admitted them."""

    def __init__(self, rows: NDArray[np.uint8]) -> None:
        self.rows = rows
        self.counts = np.zeros(rows.shape[0], dtype=np.int64)
        self.reports = np.zeros(rows.shape[0], dtype=np.int64)

    @property
    def size(self) -> int:
        return int(self.rows.shape[0])

    def admit(self, rows: NDArray[np.uint8]) -> None:
        self.rows = np.concatenate([self.rows, rows])
        self.counts = np.concatenate([self.counts, np.zeros(rows.shape[0], dtype=np.int64)])
        self.reports = np.concatenate([self.reports, np.zeros(rows.shape[0], dtype=np.int64)])

    def add(self, counts: NDArray[np.int64], reports: int) -> None:
        self.counts += counts
        self.reports += reports

    def estimates(self, bpem: BytePrefixExtension) -> tuple[NDArray[np.float64], ...]:
        """Pooled ``(estimate, std_error)`` of each value (std_error inf without reports)."""
        _, _, _, p_star, q_star = bpem._search_shape()
        n = np.maximum(self.reports, 1)
        share = self.counts / n
        est = (share - q_star) / (p_star - q_star)
        se = np.sqrt(np.maximum(share * (1 - share), 1e-300) / n) / (p_star - q_star)
        return est, np.where(self.reports > 0, se, np.inf)

    def keep(self, which: NDArray[Any]) -> None:
        self.rows, self.counts, self.reports = (
            self.rows[which],
            self.counts[which],
            self.reports[which],
        )

    def prune(self, bpem: BytePrefixExtension, plan: Plan, z: float) -> None:
        """Keep the values whose pooled upper bound (``z``: ``miss_rate`` split over the
        levels) reaches the threshold; in top-k mode the ``cap`` largest estimates."""
        est, se = self.estimates(bpem)
        if plan.top_k is None:
            self.keep(est + z * se >= plan.threshold)
        elif self.size > plan.cap:
            self.keep(np.argsort(-est, kind="stable")[: plan.cap])


def string_found_model(bpem: BytePrefixExtension, length: int | None = None) -> FoundModel:
    """Byte-PEM's model of its search for a value of ``length`` bytes (default
    ``max_bytes``; :func:`_found_string_probability`).

    Raises
    ------
    ValueError, TypeError
        For a ``length`` outside 0..max_bytes.
    """
    size = check_integer("length", bpem.max_bytes if length is None else length, minimum=0)
    if size > bpem.max_bytes:
        raise ValueError(f"length must be in 0..{bpem.max_bytes} (max_bytes), got {size}")

    return lambda n, f, threshold, fd, miss, cap: _found_string_probability(
        bpem, n, f, threshold, fd, miss, cap, size
    )


def _found_string_probability(
    bpem: BytePrefixExtension,
    n: float,
    f: float,
    threshold: float,
    false_discoveries: float,
    miss_rate: float,
    cap: int,
    length: int,
) -> float:
    """Normal approximation of Pr(a value of ``length`` bytes and frequency ``f`` is
    returned by :func:`find_string_heavy_hitters`): it survives the pruning of every
    level before the one where it ends (the upper bound reaches the threshold, and its
    estimate passes the noise test among about ``survivors_expected`` parents' extensions),
    then either the last level's
    test (a value that ends in the last step) or its admission and the pooled test of
    the levels after (``false_discoveries / 2`` over ``(levels - 1) cap`` admitted),
    after the last pooled pruning."""
    levels, width, _, p_star, q_star = bpem._search_shape()
    n_level = n * bpem.level_probabilities  # the expected reports of each level
    gap, q = float(p_star - q_star), float(q_star)
    ending = 256.0 if bpem.step == 2 else 1.0  # the extensions that end a value

    def se(freq: float, reports: float) -> float:
        s = q + gap * freq
        return math.sqrt(max(s * (1 - s), 1e-300) / max(reports, 1e-300)) / gap

    def passes(bar: float, reports: float) -> float:
        return float(special.ndtr((f - bar) / se(f, reports)))

    parents = survivors_expected(threshold, cap)

    def pruned(level: int, per_parent: float) -> float:  # survives one level's pruning
        tested = (width if level == 0 else parents * width) * per_parent / width
        reports = float(n_level[level])
        bar = threshold - z_miss * se(threshold, reports)
        return passes(max(bar, noise_bar(tested, se(0.0, reports), threshold)), reports)

    z_miss = float(special.ndtri(1 - miss_rate))
    end = min(length // bpem.step, levels - 1)
    prob = math.prod(pruned(level, width) for level in range(end))
    s0 = q + gap * threshold / 2
    if end == levels - 1:  # tested on the last level, over its candidates
        tested = width * (1 if end == 0 else parents)
        z_test = float(special.ndtri(1 - false_discoveries / 2 / tested))
        last = float(n_level[end])
        return prob * passes(threshold / 2 + z_test * math.sqrt(s0 * (1 - s0) / last) / gap, last)
    prob *= pruned(end, ending)
    pooled = float(n_level[end + 1 :].sum())
    z_test = float(special.ndtri(1 - false_discoveries / 2 / ((levels - 1) * cap)))
    prob *= passes(threshold / 2 + z_test * math.sqrt(s0 * (1 - s0) / pooled) / gap, pooled)
    if end < levels - 2:  # the pooled pruning before the last level
        z_pool = float(special.ndtri(1 - miss_rate / levels))
        before = pooled - float(n_level[-1])
        prob *= passes(threshold - z_pool * se(threshold, before), before)
    return float(prob)

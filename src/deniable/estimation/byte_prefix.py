"""Finding heavy hitters among strings of any length from byte-PEM reports.

The search is :mod:`deniable.estimation.prefix`'s (generous pruning capped at
``SURVIVOR_FACTOR / threshold``, the exact binomial test of ``frequency <= threshold /
2`` at ``false_discoveries / m`` on the last level, top-k mode), with the counting of
:class:`~deniable.mechanisms.byte_prefix.BytePrefixExtension`: the candidates of a
level are every ``step``-byte extension ``x`` of each surviving parent ``P``, and their
support counts come from one fast Walsh-Hadamard transform a parent.

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
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special

from ..errors import ReportValidationError
from ..mechanisms._kernels import hadamard_spectrum, walsh_hadamard_rows
from ..mechanisms.byte_prefix import BytePrefixExtension, prefix_hashes
from .prefix import (
    PrefixHeavyHitters,
    _estimate_level,
    _overflow,
    _plan,
    _result,
)

__all__ = [
    "SpectrumCounter",
    "counts_from_spectrum",
    "extension_counts",
    "extension_spectrum",
    "find_string_heavy_hitters",
    "search_string_levels",
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
        ``G`` of each parent (:func:`~deniable.mechanisms.byte_prefix.prefix_hashes`).

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
        ``G`` of each parent (:func:`~deniable.mechanisms.byte_prefix.prefix_hashes`).

    Returns
    -------
    ndarray of int64, shape (P, 2^(8 step))
        Entry ``(p, x)``: the reports that support the prefix ``parent p + x`` (``x``
        little-endian).
    """
    spectrum = extension_spectrum(bpem, reports, parent_hashes)
    return counts_from_spectrum(bpem, spectrum, reports.size)


#: ``spectrum(level, parent hashes (P,) uint64) -> summed spectrum (P, 2^(8 step))``.
SpectrumCounter = Callable[[int, NDArray[np.uint64]], NDArray[np.int64]]


def _open_extensions(bpem: BytePrefixExtension) -> NDArray[np.bool_]:
    """The extensions ``x`` (2^(8 step),) that may follow a parent that has not ended:
    no NUL inside a value, so a padding byte is followed by padding only."""
    x = np.arange(1 << (8 * bpem.step))
    return np.ones(x.size, dtype=bool) if bpem.step == 1 else ((x & 0xFF) != 0) | (x >> 8 == 0)


def _ended(bpem: BytePrefixExtension, parents: NDArray[np.uint8], level: int) -> NDArray[np.bool_]:
    """Which parents (P,) already ended in padding: they extend by padding only."""
    if level == 0:
        return np.zeros(parents.shape[0], dtype=bool)
    return np.asarray(parents[:, bpem.step * level - 1] == 0)


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
) -> PrefixHeavyHitters:
    """Strings (up to ``bpem.max_bytes`` of UTF-8) whose frequency reaches ``threshold``.

    Parameters and guarantees as :func:`deniable.estimation.prefix.find_heavy_hitters`:
    the expected number of values returned below ``threshold / 2`` is at most
    ``false_discoveries``; the survivors are capped at ``SURVIVOR_FACTOR / threshold``.
    ``candidates_per_level`` counts the valid extensions tested.

    Raises
    ------
    ValueError, DetectionLimitError
        As :func:`~deniable.estimation.prefix.find_heavy_hitters`.
    ReportValidationError
        For malformed reports or none.
    """
    arr = bpem.check_reports(reports)
    if arr.size == 0:
        raise ReportValidationError("no reports")
    levels = arr["level"]
    mine: dict[int, NDArray[np.void]] = {}  # the reports of the current level

    def spectrum(level: int, hashes: NDArray[np.uint64]) -> NDArray[np.int64]:
        if level not in mine:
            mine.clear()
            mine[level] = arr[levels == level]
        return extension_spectrum(bpem, mine[level], hashes)

    return search_string_levels(
        bpem,
        spectrum,
        np.bincount(levels, minlength=bpem.levels),
        threshold,
        miss_rate,
        false_discoveries=false_discoveries,
        top_k=top_k,
        max_survivors=max_survivors,
        on_overflow=on_overflow,
    )


def search_string_levels(
    bpem: BytePrefixExtension,
    spectrum: SpectrumCounter,
    reports_per_level: NDArray[np.int64],
    threshold: float = 0.01,
    miss_rate: float = 0.05,
    *,
    false_discoveries: float = 0.05,
    top_k: int | None = None,
    max_survivors: int | None = None,
    on_overflow: Literal["keep", "raise"] = "keep",
) -> PrefixHeavyHitters:
    """The search of :func:`find_string_heavy_hitters`, with the reports wherever they
    are: ``spectrum(level, parent_hashes)`` returns the summed
    :func:`extension_spectrum` of that level's reports (in one process, or added up
    over Spark tasks), and ``reports_per_level`` (levels,) int64 counts them.

    Raises
    ------
    ValueError, DetectionLimitError
        As :func:`~deniable.estimation.prefix.find_heavy_hitters`.
    ReportValidationError
        If ``reports_per_level`` has the wrong shape or sums to 0.
    """
    plan = _plan(threshold, miss_rate, false_discoveries, top_k, max_survivors, on_overflow)
    sizes = np.asarray(reports_per_level, dtype=np.int64)
    if sizes.shape != (bpem.levels,) or sizes.min() < 0 or sizes.sum() == 0:
        raise ReportValidationError(
            f"reports_per_level must hold {bpem.levels} non-negative counts, not all 0"
        )
    parents = np.zeros((1, bpem.max_bytes), dtype=np.uint8)
    n_level: list[int] = []
    n_candidates: list[int] = []
    warnings: list[str] = []
    _, _, _, p_star, q_star = bpem._search_shape()
    for level in range(bpem.levels):
        n_l, last = int(sizes[level]), level == bpem.levels - 1
        ended = int(_ended(bpem, parents, level).sum())  # each tests one extension
        tested = ended + (parents.shape[0] - ended) * int(_open_extensions(bpem).sum())
        n_level.append(n_l)
        n_candidates.append(tested)
        c = np.arange(n_l + 1)
        if last:  # the exact test of frequency <= threshold / 2 (of 0 in top-k mode)
            null = q_star + (p_star - q_star) * (0 if plan.top_k else plan.threshold / 2)
            pvalues = np.where(c > 0, special.bdtrc(c - 1, max(n_l, 1), null), 1.0)
            wanted = (
                np.ones(c.size, dtype=bool)
                if plan.top_k
                else pvalues <= plan.false_discoveries / max(tested, 1)
            )
            cap = plan.top_k
        else:  # generous: the upper bound reaches the threshold (all in top-k mode)
            est, se = _estimate_level(bpem, c, n_l)
            wanted = (
                np.ones(c.size, dtype=bool) if plan.top_k else est + plan.z * se >= plan.threshold
            )
            cap = plan.cap
        parent_of, x, counts, passing = _strongest(
            bpem, functools.partial(spectrum, level), n_l, parents, level, wanted, cap
        )
        if last:
            break
        if passing > plan.cap and plan.top_k is None:
            _overflow(level, passing, int(sizes.sum()), bpem, plan, warnings)
        parents = _extend(bpem, parents, parent_of, x, bpem.step * level)
    found = _extend(bpem, parents, parent_of, x, bpem.step * (bpem.levels - 1))
    decoded = [bpem.decode(bytes(row)) for row in found]
    utf8 = np.array([d is not None for d in decoded], dtype=bool)
    counts = counts[utf8] if counts.size else counts
    estimate, std_error = _estimate_level(bpem, counts, n_level[-1])
    return _result(
        [d for d in decoded if d is not None],
        estimate,
        std_error,
        pvalues[counts] if counts.size else np.zeros(0),
        n_level,
        n_candidates,
        plan,
        warnings,
    )


#: Parents whose extensions are counted at once (bounds the counts to 32 MB).
_PARENTS_AT_ONCE = 64


def _strongest(
    bpem: BytePrefixExtension,
    spectrum: Callable[[NDArray[np.uint64]], NDArray[np.int64]],
    reports: int,
    parents: NDArray[np.uint8],
    level: int,
    wanted: NDArray[np.bool_],
    cap: int | None,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]:
    """``(parent index, x, count, passing)``: the valid extensions whose support count
    ``c`` has ``wanted[c]``, at most ``cap`` of them with the largest counts (ties: the
    first in parent and ``x`` order), largest first; ``passing`` counts every one that
    qualified. Parents are counted a few at a time, so memory stays bounded whatever
    the survivors."""
    width = 1 << (8 * bpem.step)
    hashes = prefix_hashes(parents, bpem.step * level)
    keys = np.zeros(0, dtype=np.int64)
    counts = np.zeros(0, dtype=np.int64)
    passing = 0
    # the counts wanted are usually all those from a least one: compares, no lookup
    least = int(np.argmax(wanted)) if wanted.any() else wanted.size
    upward = bool(wanted[least:].all())
    open_x, ended = _open_extensions(bpem), _ended(bpem, parents, level)
    shut_x = np.flatnonzero(~open_x)  # never after a parent that has not ended
    for p0 in range(0, parents.shape[0], _PARENTS_AT_ONCE):
        block = counts_from_spectrum(bpem, spectrum(hashes[p0 : p0 + _PARENTS_AT_ONCE]), reports)
        mask = block >= least if upward else wanted[block]
        done = ended[p0 : p0 + block.shape[0]]
        # the valid ones: open extensions of parents that have not ended, padding after one
        shut = mask[:, shut_x].sum(axis=1)
        invalid = int(shut[~done].sum()) + (int(mask[done, 1:].sum()) if done.any() else 0)
        passing += int(np.count_nonzero(mask)) - invalid
        if cap is not None and counts.size >= cap:  # below the cap-th best: never kept
            mask &= block >= counts.min()
        rows, xs = np.nonzero(mask)
        ok = np.where(done[rows], xs == 0, open_x[xs])
        rows, xs = rows[ok], xs[ok]
        got = block[rows, xs]
        keys = np.concatenate([keys, (rows + p0).astype(np.int64) * width + xs])
        counts = np.concatenate([counts, got])
        if cap is not None and counts.size > cap:
            # one sortable score: the count, then the earlier key
            score = (counts << 32) | ((1 << 32) - 1 - keys)
            top = np.argpartition(-score, cap - 1)[:cap]
            keys, counts = keys[top], counts[top]
    score = (counts << 32) | ((1 << 32) - 1 - keys)
    order = np.argsort(-score, kind="stable")
    keys, counts = keys[order], counts[order]
    return keys // width, keys % width, counts, passing

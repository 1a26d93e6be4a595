"""The frequency-oracle encoders' and decoders' inner loops in NumPy (private).

The path taken when numba is not installed (or ``DENIABLE_KERNELS=numpy``): every
function has the signature and the results of its compiled twin in ``_kernels_numba``,
value for value (the same integer arithmetic, and the same floating-point operations
in the same order). Work is cut into blocks of about ``_BLOCK`` elements so that
temporaries stay in cache and memory stays bounded whatever ``n`` and ``k``. Local
hashing's support counts over many reports walk the candidates one by one (one add,
one compare and one count per report and candidate) on one thread per core, as
NumPy's ufuncs release the GIL.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "binary_draw",
    "byte_histograms",
    "hadamard_spectrum",
    "linear_hash_counts",
    "olh_candidate_counts",
    "olh_encode",
    "olh_support_counts",
    "olh_support_pairs",
    "packed_column_bit_counts",
    "piecewise_draw",
    "walsh_hadamard_rows",
    "words_to_uniforms",
]

#: Elements (uint64 hash states, bytes) per block of a chunked pass: 2 MiB of uint64.
_BLOCK = 1 << 18
_SHIFT = np.uint64(32)
#: Reports per slice of the candidate-by-candidate walk (1 MiB of uint64 states).
_WALK = 1 << 17
#: Distinct report bounds up to which reports are grouped to compare with a scalar.
_SHARED_BOUNDS = 4
#: Reports from which the support counts walk the candidates instead of blocks.
_WALK_FROM = 2 * _WALK
#: Columns up to which a byte histogram counts column by column.
_NARROW = 64


def _support_bounds(
    b: NDArray[np.uint64], lo: NDArray[np.uint64], width: NDArray[np.uint64]
) -> tuple[NDArray[np.bool_], NDArray[np.uint64], NDArray[np.uint64]]:
    """``(never, start, last)``: the support test ``lo <= h(c) < lo + width`` as one compare.

    ``h(c) = ((a c + b) mod 2^64) >> 32`` lies in ``[lo, hi)`` (``hi = min(lo + width,
    2^32)``) iff ``(a c + start) mod 2^64 <= last`` with ``start = b - lo 2^32`` (mod
    2^64) and ``last = (hi - lo) 2^32 - 1``; rows flagged ``never`` support no value.
    """
    top = np.minimum(lo + width, np.uint64(1 << 32))
    never = (top <= lo) | (lo >= np.uint64(1 << 32))
    always = (lo == 0) & (top == np.uint64(1 << 32))
    span = np.where(never | always, np.uint64(1), top - lo)  # in [1, 2^32) where used
    last = np.where(always, np.uint64(2**64 - 1), (span << _SHIFT) - np.uint64(1))
    return never, b - (lo << _SHIFT), last  # start wraps mod 2^64


def _support_blocks(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    candidates: NDArray[np.uint64],
) -> Iterator[tuple[int, int, NDArray[np.bool_]]]:
    """Blocks ``(row start, column start, support mask)`` of the reports x candidates test.

    The mask's entry ``(i, j)`` is ``lo[i] <= h_i(c_j) < lo[i] + width[i]`` with
    ``h_i(c) = ((a[i] c + b[i]) mod 2^64) >> 32``, as in the compiled kernels, tested
    as one multiply, one add and one compare per entry (:func:`_support_bounds`).
    """
    n, k = a.shape[0], candidates.shape[0]
    cols = min(k, _BLOCK) if k else 1
    rows = max(1, min(_BLOCK // cols, 65_535))
    never, start, last = _support_bounds(b, lo, width)
    x = np.empty((rows, cols), dtype=np.uint64)
    mask = np.empty((rows, cols), dtype=np.bool_)
    for c0 in range(0, k, cols):
        cand = candidates[c0 : c0 + cols]
        for r0 in range(0, n, rows):
            r1 = min(n, r0 + rows)
            block, out = x[: r1 - r0, : cand.shape[0]], mask[: r1 - r0, : cand.shape[0]]
            np.multiply.outer(a[r0:r1], cand, out=block)  # wraps mod 2^64
            block += start[r0:r1, None]
            np.less_equal(block, last[r0:r1, None], out=out)
            out[never[r0:r1]] = False
            yield r0, c0, out


def _walk(
    a: NDArray[np.uint64],
    start: NDArray[np.uint64],
    last: NDArray[np.uint64] | np.uint64,
    candidates: NDArray[np.uint64],
    counts: NDArray[np.int64],
) -> None:
    """Add to ``counts`` the support counts of sorted ``candidates`` over some reports.

    The hash state of candidate ``c + d`` is the state of ``c`` plus ``a d`` (mod 2^64),
    so a run of consecutive candidates costs one add, one compare and one count per
    report. ``last`` is one bound per report, or one for all (a compare with a scalar
    reads half the memory).
    """
    x = np.empty(a.shape[0], dtype=np.uint64)
    hit = np.empty(a.shape[0], dtype=np.bool_)
    previous = None
    for j, c in enumerate(candidates.tolist()):
        if previous is None or c - previous > 1:
            np.multiply(a, np.uint64(c), out=x)  # wraps mod 2^64
            x += start
        elif c - previous == 1:
            np.add(x, a, out=x)
        previous = c
        np.less_equal(x, last, out=hit)
        counts[j] += np.count_nonzero(hit)


def _shared_bound_groups(
    a: NDArray[np.uint64],
    start: NDArray[np.uint64],
    last: NDArray[np.uint64],
    rest: NDArray[np.bool_],
) -> list[tuple[NDArray[np.uint64], NDArray[np.uint64], Any]]:
    """The reports flagged in ``rest`` split by bound, when at most ``_SHARED_BOUNDS`` occur.

    Local hashing's buckets have one width (the last one clipped at 2^32), so its
    reports share one or two bounds; other inputs are walked with a bound per report.
    Each pass peels off the reports equal to the first bound left (no sort).
    """
    groups: list[tuple[NDArray[np.uint64], NDArray[np.uint64], Any]] = []
    keep = rest
    while rest.any():
        if len(groups) == _SHARED_BOUNDS:
            return [(a[keep], start[keep], last[keep])]
        bound = last[np.argmax(rest)]
        same = rest & (last == bound)
        groups.append((a[same], start[same], bound))
        rest = rest & ~same
    return groups


def _walk_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    candidates: NDArray[np.uint64],
) -> NDArray[np.int64]:
    """Support counts of sorted ``candidates``, walked on slices of ``_WALK`` reports."""
    counts = np.zeros(candidates.shape[0], dtype=np.int64)
    for r0 in range(0, a.shape[0], _WALK):
        r1 = min(a.shape[0], r0 + _WALK)
        never, start, last = _support_bounds(b[r0:r1], lo[r0:r1], width[r0:r1])
        for group in _shared_bound_groups(a[r0:r1], start, last, ~never):
            _walk(*group, candidates, counts)
    return counts


def _candidate_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    candidates: NDArray[np.uint64],
) -> NDArray[np.int64]:
    k = candidates.shape[0]
    if a.shape[0] < _WALK_FROM or k == 0:
        counts = np.zeros(k, dtype=np.int64)
        for _r0, c0, mask in _support_blocks(a, b, lo, width, candidates):
            # at most 65,535 rows a block: a uint16 sum cannot overflow
            counts[c0 : c0 + mask.shape[1]] += np.add.reduce(
                mask.view(np.uint8), axis=0, dtype=np.uint16
            )
        return counts
    order = np.argsort(candidates, kind="stable")
    ordered = candidates[order]
    # NumPy's ufuncs release the GIL: one thread per core, each on a share of reports
    workers = max(1, min(os.cpu_count() or 1, a.shape[0] // _WALK))
    per = -(-a.shape[0] // workers)
    with ThreadPoolExecutor(workers) as pool:
        parts = pool.map(
            lambda r0: _walk_counts(
                a[r0 : r0 + per],
                b[r0 : r0 + per],
                lo[r0 : r0 + per],
                width[r0 : r0 + per],
                ordered,
            ),
            range(0, a.shape[0], per),
        )
        total = np.sum(list(parts), axis=0, dtype=np.int64)
    counts = np.empty(k, dtype=np.int64)
    counts[order] = total
    return counts


def olh_support_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
) -> NDArray[np.int64]:
    """Support counts, shape (k,): ``C[v] = #{i : h_i(v) in [lo[i], lo[i] + width[i])}``."""
    return _candidate_counts(a, b, lo, width, np.arange(int(k), dtype=np.uint64))


def olh_candidate_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    candidates: NDArray[np.uint64],
) -> NDArray[np.int64]:
    """Support counts of arbitrary candidate values, shape (m,)."""
    return _candidate_counts(a, b, lo, width, np.ascontiguousarray(candidates, dtype=np.uint64))


def olh_support_pairs(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    """The support sets of the reports as CSR ``(indptr (n+1,), indices (nnz,))``."""
    n = a.shape[0]
    per_row = np.zeros(n, dtype=np.int64)
    rows: list[NDArray[np.int64]] = []
    cols: list[NDArray[np.int64]] = []
    for r0, c0, mask in _support_blocks(a, b, lo, width, np.arange(int(k), dtype=np.uint64)):
        r, c = np.nonzero(mask)
        rows.append(r + r0)
        cols.append(c + c0)
        per_row[r0 : r0 + mask.shape[0]] += np.count_nonzero(mask, axis=1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    if not rows:
        return indptr, np.empty(0, dtype=np.int32)
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    order = np.lexsort((c_all, r_all))  # column blocks interleave: row-major order
    return indptr, c_all[order].astype(np.int32)


def byte_histograms(packed: NDArray[np.uint8]) -> NDArray[np.int64]:
    """How often each byte value occurs in each column of ``packed`` (n, nbytes): (nbytes, 256).

    A few columns (at most ``_NARROW``): blocks of rows are transposed so that each
    column is one contiguous run of bytes, which ``bincount`` reads without a widened
    copy of the block. Many: one ``bincount`` a block over the bytes offset by
    ``256 j``, so the calls do not grow with the columns.
    """
    n, nbytes = packed.shape
    counts = np.zeros((nbytes, 256), dtype=np.int64)
    if nbytes <= _NARROW:
        rows = max(1, (8 * _BLOCK) // max(nbytes, 1))
        for r0 in range(0, n, rows):
            columns = np.ascontiguousarray(packed[r0 : r0 + rows].T)
            for j in range(nbytes):
                counts[j] += np.bincount(columns[j], minlength=256)
        return counts
    flat = counts.reshape(-1)
    offsets = np.arange(nbytes, dtype=np.int64) * 256
    rows = max(1, _BLOCK // nbytes)
    for r0 in range(0, n, rows):
        codes = packed[r0 : r0 + rows].astype(np.int64) + offsets
        flat += np.bincount(codes.ravel(), minlength=256 * nbytes)
    return counts


#: Bit ``b`` of each of the 8 bytes of a little-endian uint64 word.
_PLANE_MASKS = tuple(np.uint64(0x0101010101010101 << b) for b in range(8))
#: Rows per block of the bit-plane count (a thread's unit of work).
_PLANE_ROWS = 1 << 16


def _plane_counts(block: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Bit counts of one block of rows: each column's bytes as uint64 words (8 rows a
    word), masked to one bit plane and counted with ``bitwise_count`` (popcount)."""
    n, nbytes = block.shape
    whole = n - n % 8
    words = np.ascontiguousarray(block[:whole].T).view(np.uint64)  # (nbytes, whole / 8)
    plane = np.empty_like(words)
    out = np.empty((nbytes, 8), dtype=np.int64)
    for b, mask in enumerate(_PLANE_MASKS):
        np.bitwise_and(words, mask, out=plane)
        out[:, b] = np.bitwise_count(plane).sum(axis=1, dtype=np.int64)
    counts = out.reshape(-1)
    if whole < n:  # the last rows of the block, fewer than 8
        counts += np.unpackbits(block[whole:], axis=1, bitorder="little").sum(
            axis=0, dtype=np.int64
        )
    return counts


def packed_column_bit_counts(packed: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Number of 1 bits at each bit position of the rows of ``packed`` (n, nbytes).

    Returns int64, shape (8 * nbytes,), entry ``8 j + b`` counting bit ``b`` of byte ``j``.
    Blocks of ``_PLANE_ROWS`` rows are counted by bit plane (one mask and one popcount
    per 8 rows, column and bit), one thread per core (NumPy's ufuncs release the GIL).
    """
    n, nbytes = packed.shape
    if n == 0:
        return np.zeros(8 * nbytes, dtype=np.int64)
    blocks = [packed[r0 : r0 + _PLANE_ROWS] for r0 in range(0, n, _PLANE_ROWS)]
    workers = max(1, min(os.cpu_count() or 1, len(blocks)))
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(_plane_counts, blocks))
    return np.asarray(np.sum(parts, axis=0, dtype=np.int64), dtype=np.int64)


def olh_encode(
    values: NDArray[np.int64],
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    keep: NDArray[np.uint32],
    other: NDArray[np.uint32],
    g: int,
    threshold: int,
) -> NDArray[np.uint32]:
    """Local-hashing reports' buckets (see ``LocalHashing.encode``), shape (n,)."""
    gg = np.uint64(g)
    x = (a * values.astype(np.uint64) + b) >> _SHIFT
    bucket = (x * gg) >> _SHIFT
    off = (other.astype(np.uint64) * np.uint64(g - 1)) >> _SHIFT
    moved = bucket + np.uint64(1) + off
    moved = np.where(moved >= gg, moved - gg, moved)
    return np.where(keep < threshold, bucket, moved).astype(np.uint32)


def words_to_uniforms(out: NDArray[np.float64]) -> None:
    """In place: read ``out``'s bytes as uint64 words ``w``, write ``(w >> 11) / 2^53``."""
    words = out.view(np.uint64)
    for s in range(0, out.size, _BLOCK):
        out[s : s + _BLOCK] = (words[s : s + _BLOCK] >> np.uint64(11)).astype(
            np.float64
        ) * 1.1102230246251565e-16


def binary_draw(
    truths: NDArray[Any], u: NDArray[np.float64], threshold: NDArray[np.float64]
) -> NDArray[np.uint8]:
    """Binary reports ``u < threshold[truth]``, shape (n,), dtype uint8."""
    codes = truths.view(np.uint8) if truths.dtype == np.bool_ else truths
    out: NDArray[np.uint8] = (u < threshold[codes]).astype(np.uint8)
    return out


def piecewise_draw(
    x: NDArray[np.float64],
    u: NDArray[np.float64],
    c: float,
    p_centre: float,
    alpha: float = 1.0,
    c_duchi: float = 1.0,
) -> NDArray[np.float64]:
    """Piecewise-mechanism reports (Wang et al. 2019), one uniform per value, shape (n,).

    The arithmetic of ``_kernels_numba.piecewise_draw``, branch by branch, on masks.
    """
    out = np.empty(x.size, dtype=np.float64)
    duchi = u >= alpha
    if duchi.any():
        ud = (u[duchi] - alpha) / (1.0 - alpha)
        out[duchi] = np.where(ud < 0.5 + x[duchi] / (2.0 * c_duchi), c_duchi, -c_duchi)
    rest = ~duchi
    xi, ui = x[rest], u[rest] / alpha
    left = (c + 1.0) / 2.0 * xi - (c - 1.0) / 2.0
    centre = ui < p_centre
    with np.errstate(divide="ignore", invalid="ignore"):  # the branch not taken may divide by 0
        s = (ui - p_centre) / (1.0 - p_centre) * (c + 1.0)
        tails = np.where(s < left + c, s - c, s - 1.0)
        out[rest] = np.where(centre, left + ui / p_centre * (c - 1.0), tails)
    return out


#: ``1 - 2 parity(x)`` for every byte ``x``.
_SIGNS = (1 - 2 * (np.bitwise_count(np.arange(256)) & 1).astype(np.int64)).astype(np.float64)


def hadamard_spectrum(
    a: NDArray[np.uint64],
    y: NDArray[np.uint8],
    w: NDArray[np.int64],
    hashes: NDArray[np.uint64],
    width: int,
) -> NDArray[np.int64]:
    """Byte-PEM's spectra, shape (P, width) (see ``_kernels.hadamard_spectrum``): a few
    parents at a time, each entry's sign by one table lookup and one ``bincount``."""
    out = np.zeros((hashes.size, width), dtype=np.int64)
    n, r = a.shape
    us = np.arange(w.shape[1], dtype=np.uint8)
    per = max(1, _BLOCK * 8 // max(w.size, 1))
    for p0 in range(0, hashes.size, per):
        h = hashes[p0 : p0 + per]
        z = np.broadcast_to(y, (h.size, n)).copy()
        for j in range(r):
            z ^= (np.bitwise_count(a[:, j][None, :] & h[:, None]) & np.uint8(1)) << np.uint8(j)
        sign = _SIGNS[us[None, None, :] & z[:, :, None]]
        index = (np.arange(h.size, dtype=np.int64)[:, None, None] * width + w[None]).ravel()
        part = np.bincount(index, weights=sign.ravel(), minlength=h.size * width)
        out[p0 : p0 + h.size] = np.rint(part).astype(np.int64).reshape(-1, width)
    return out


@functools.cache
def _hadamard(size: int) -> NDArray[np.float64]:
    h = np.ones((1, 1))
    while h.shape[0] < size:
        h = np.block([[h, h], [h, -h]])
    return h


def walsh_hadamard_rows(values: NDArray[np.int64], bound: int) -> None:
    """In place: the unnormalised Walsh-Hadamard transform of each row (P, 2^m) int64.

    The lowest 8 bits of the index by one product with the 256 x 256 Hadamard matrix,
    the others by butterflies on long runs; the product in float32 while ``bound`` <
    2^24 (exact) and the butterflies in int32 below 2^31: half the memory traffic of
    float64 and int64.
    """
    rows, size = values.shape
    real = np.float32 if bound < 2**24 else np.float64
    whole = np.int32 if bound < 2**31 else np.int64
    low = min(size, 256)
    out = np.rint(values.reshape(-1, low).astype(real) @ _hadamard(low).astype(real))
    out = out.astype(whole).reshape(rows, size)
    h = low
    while h < size:
        view = out.reshape(rows, size // (2 * h), 2, h)
        first, second = view[..., 0, :], view[..., 1, :]
        kept = first.copy()
        first += second
        np.subtract(kept, second, out=second)
        h *= 2
    values[...] = out


def linear_hash_counts(
    a: NDArray[np.uint64], y: NDArray[np.uint8], ids: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """``out[e] = #{i : A_i ids[e] = y_i}`` over GF(2), shape (E,) int64: a block of
    ids at a time against every report."""
    n, r = a.shape
    out = np.zeros(ids.size, dtype=np.int64)
    per = max(1, _BLOCK // max(n, 1))
    for e0 in range(0, ids.size, per):
        h = ids[e0 : e0 + per]
        z = np.broadcast_to(y, (h.size, n)).copy()
        for j in range(r):
            z ^= (np.bitwise_count(a[:, j][None, :] & h[:, None]) & np.uint8(1)) << np.uint8(j)
        out[e0 : e0 + h.size] = np.count_nonzero(z == 0, axis=1)
    return out

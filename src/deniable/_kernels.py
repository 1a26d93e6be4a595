"""Compiled inner loops of the frequency-oracle decoders (private; numba).

Local hashing needs, for every report ``(a, b, y)`` and every candidate ``v``, the
test "does ``h_{a,b}(v)`` fall in bucket ``y``?": ``n * k`` hash evaluations, which no
array expression can avoid. With the multiply-add-shift family the hash of ``v + 1``
is the hash state of ``v`` plus ``a`` (mod 2^64), so the inner loop over candidates is
one add, one shift, one subtract and one compare, which LLVM vectorises. Reports are
split into blocks, one per thread (``prange``); each block adds into its own row of
counts, summed at the end.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["byte_histograms", "olh_encode", "olh_support_counts", "olh_support_pairs"]


@numba.njit(parallel=True, cache=True, nogil=True)
def _olh_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
    blocks: int,
) -> NDArray[np.int64]:
    n = a.shape[0]
    partial = np.zeros((blocks, k), dtype=np.int64)
    per = (n + blocks - 1) // blocks
    for blk in numba.prange(blocks):
        row = partial[blk]
        start = blk * per
        stop = min(n, start + per)
        for i in range(start, stop):
            x = b[i]
            step = a[i]
            low = lo[i]
            w = width[i]
            for v in range(k):
                row[v] += ((x >> np.uint64(32)) - low) < w
                x += step
    return partial.sum(axis=0)  # type: ignore[no-any-return]


def olh_support_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
) -> NDArray[np.int64]:
    """Support counts, shape (k,).

    ``C[v] = #{i : lo[i] <= ((a[i] v + b[i]) mod 2^64) >> 32 < lo[i] + width[i]}``.
    """
    blocks = max(1, min(a.shape[0], 8 * numba.get_num_threads()))
    return np.asarray(_olh_counts(a, b, lo, width, int(k), blocks), dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _olh_pairs(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    n = a.shape[0]
    indptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        x = b[i]
        c = 0
        for _v in range(k):
            c += ((x >> np.uint64(32)) - lo[i]) < width[i]
            x += a[i]
        indptr[i + 1] = indptr[i] + c
    indices = np.empty(indptr[n], dtype=np.int32)
    for i in range(n):
        x = b[i]
        j = indptr[i]
        for v in range(k):
            if ((x >> np.uint64(32)) - lo[i]) < width[i]:
                indices[j] = v
                j += 1
            x += a[i]
    return indptr, indices


def olh_support_pairs(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    """The support sets of the reports as CSR ``(indptr (n+1,), indices (nnz,))``."""
    indptr, indices = _olh_pairs(a, b, lo, width, int(k))
    return np.asarray(indptr), np.asarray(indices)


@numba.njit(parallel=True, cache=True, nogil=True)
def _byte_histograms(packed: NDArray[np.uint8], blocks: int) -> NDArray[np.int64]:
    # counters laid out (byte value, column): the columns of one row hit consecutive
    # counters when their bytes are equal (sparse reports are mostly zero bytes), instead
    # of counters 2 KiB apart that collide in the same cache sets
    n, nbytes = packed.shape
    out = np.zeros((blocks, 256, nbytes), dtype=np.int64)
    per = (n + blocks - 1) // blocks
    for blk in numba.prange(blocks):
        hist = out[blk]
        start = blk * per
        stop = min(n, start + per)
        for i in range(start, stop):
            for j in range(nbytes):
                hist[packed[i, j], j] += 1
    return out.sum(axis=0)  # type: ignore[no-any-return]


def byte_histograms(packed: NDArray[np.uint8]) -> NDArray[np.int64]:
    """How often each byte value occurs in each column of ``packed`` (n, nbytes): (nbytes, 256)."""
    blocks = max(1, min(packed.shape[0], 2 * numba.get_num_threads()))
    counts = _byte_histograms(np.ascontiguousarray(packed), blocks)
    return np.ascontiguousarray(np.asarray(counts, dtype=np.int64).T)


@numba.njit(cache=True, nogil=True)
def _olh_encode(
    values: NDArray[np.int64],
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    keep: NDArray[np.uint32],
    other: NDArray[np.uint32],
    g: int,
    threshold: int,
) -> NDArray[np.uint32]:
    n = values.shape[0]
    out = np.empty(n, dtype=np.uint32)
    gg = np.uint64(g)
    shift = np.uint64(32)
    for i in range(n):
        x = (a[i] * np.uint64(values[i]) + b[i]) >> shift
        bucket = (x * gg) >> shift
        if keep[i] < threshold:
            out[i] = bucket
        else:
            off = (np.uint64(other[i]) * np.uint64(g - 1)) >> shift
            y = bucket + np.uint64(1) + off
            if y >= gg:
                y -= gg
            out[i] = y
    return out


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
    return np.asarray(_olh_encode(values, a, b, keep, other, int(g), int(threshold)))

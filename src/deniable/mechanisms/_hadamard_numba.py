"""Byte-PEM's compiled inner loops (private; numba): the spectra of the reports and the
Walsh-Hadamard transform that turns them into support counts. Re-exported by
``_kernels_numba``; the NumPy twins are in ``_kernels_numpy``.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["hadamard_spectrum", "linear_hash_counts", "walsh_hadamard_rows"]

#: ``1 - 2 parity(x)`` for every byte ``x``.
_SIGNS = 1 - 2 * (np.bitwise_count(np.arange(256)) & 1).astype(np.int64)


@numba.njit(cache=True, inline="always")
def _parity(x: np.uint64) -> np.uint64:
    x ^= x >> np.uint64(32)
    x ^= x >> np.uint64(16)
    x ^= x >> np.uint64(8)
    x ^= x >> np.uint64(4)
    x ^= x >> np.uint64(2)
    x ^= x >> np.uint64(1)
    return x & np.uint64(1)


@numba.njit(parallel=True, cache=True, nogil=True)
def _hadamard_spectrum(
    a: NDArray[np.uint64],
    y: NDArray[np.uint8],
    w: NDArray[np.int64],
    hashes: NDArray[np.uint64],
    signs: NDArray[np.int64],
    out: NDArray[np.int64],
) -> None:
    # one parent a thread: its row (width int64) stays in cache while every entry adds;
    # r parities a report, then one table lookup an entry
    n, r = a.shape
    g = w.shape[1]
    for p in numba.prange(hashes.shape[0]):
        row, h = out[p], hashes[p]
        for i in range(n):
            z = np.uint64(y[i])
            for j in range(r):
                z ^= _parity(a[i, j] & h) << np.uint64(j)
            for u in range(g):
                row[w[i, u]] += signs[np.uint64(u) & z]


def hadamard_spectrum(
    a: NDArray[np.uint64],
    y: NDArray[np.uint8],
    w: NDArray[np.int64],
    hashes: NDArray[np.uint64],
    width: int,
) -> NDArray[np.int64]:
    """Byte-PEM's spectra, shape (P, width) (see ``_kernels.hadamard_spectrum``)."""
    out = np.zeros((hashes.shape[0], width), dtype=np.int64)
    _hadamard_spectrum(
        np.ascontiguousarray(a, dtype=np.uint64),
        np.ascontiguousarray(y, dtype=np.uint8),
        np.ascontiguousarray(w, dtype=np.int64),
        np.ascontiguousarray(hashes, dtype=np.uint64),
        _SIGNS,
        out,
    )
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _walsh_hadamard_rows(values: NDArray[np.int64]) -> None:
    # the first three stages on 8 values held in registers, then long runs of
    # butterflies that LLVM vectorises; one row a thread
    rows, size = values.shape
    for p in numba.prange(rows):
        row = values[p]
        h = 1
        if size >= 8:
            for s in range(0, size, 8):
                a0, a1, a2, a3 = row[s] + row[s + 1], row[s] - row[s + 1], row[s + 2], row[s + 3]
                a2, a3 = a2 + row[s + 3], a2 - row[s + 3]
                a4, a5, a6, a7 = row[s + 4], row[s + 5], row[s + 6], row[s + 7]
                a4, a5, a6, a7 = a4 + a5, a4 - a5, a6 + a7, a6 - a7
                b0, b1, b2, b3 = a0 + a2, a1 + a3, a0 - a2, a1 - a3
                b4, b5, b6, b7 = a4 + a6, a5 + a7, a4 - a6, a5 - a7
                row[s], row[s + 1], row[s + 2], row[s + 3] = b0 + b4, b1 + b5, b2 + b6, b3 + b7
                row[s + 4], row[s + 5] = b0 - b4, b1 - b5
                row[s + 6], row[s + 7] = b2 - b6, b3 - b7
            h = 8
        while h < size:
            for start in range(0, size, 2 * h):
                for i in range(start, start + h):
                    x, y = row[i], row[i + h]
                    row[i], row[i + h] = x + y, x - y
            h *= 2


def walsh_hadamard_rows(values: NDArray[np.int64], bound: int) -> None:
    """In place: the unnormalised Walsh-Hadamard transform of each row (P, 2^m) int64
    (butterflies in int64, one row a thread; ``bound`` is not needed)."""
    _walsh_hadamard_rows(values)


@numba.njit(parallel=True, cache=True, nogil=True)
def _linear_hash_counts(
    a: NDArray[np.uint64], y: NDArray[np.uint8], ids: NDArray[np.uint64], out: NDArray[np.int64]
) -> None:
    n, r = a.shape
    for e in numba.prange(ids.shape[0]):
        h, total = ids[e], 0
        for i in range(n):
            z = np.uint64(y[i])
            for j in range(r):
                z ^= _parity(a[i, j] & h) << np.uint64(j)
            total += z == 0
        out[e] = total


def linear_hash_counts(
    a: NDArray[np.uint64], y: NDArray[np.uint8], ids: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """``out[e] = #{i : A_i ids[e] = y_i}`` over GF(2), shape (E,) int64."""
    out = np.zeros(ids.shape[0], dtype=np.int64)
    _linear_hash_counts(
        np.ascontiguousarray(a, dtype=np.uint64),
        np.ascontiguousarray(y, dtype=np.uint8),
        np.ascontiguousarray(ids, dtype=np.uint64),
        out,
    )
    return out

"""Compiled inner loops of the oracles' encoders and decoders (private; numba, the accelerator).

The NumPy twins in ``_kernels_numpy`` give the same values; ``_kernels`` picks one.

Local hashing needs, for every report ``(a, b, y)`` and every candidate ``v``, the
test "does ``h_{a,b}(v)`` fall in bucket ``y``?": ``n * k`` hash evaluations, which no
array expression can avoid. With the multiply-add-shift family the hash of ``v + 1``
is the hash state of ``v`` plus ``a`` (mod 2^64), so the inner loop over candidates is
one add, one shift, one subtract and one compare, which LLVM vectorises. Reports are
split into blocks, one per thread (``prange``); each block adds into its own row of
counts, summed at the end.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from ._hadamard_numba import hadamard_spectrum, linear_hash_counts, walsh_hadamard_rows

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
    "ue_lazy_encode",
    "walsh_hadamard_rows",
    "words_to_uniforms",
]


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
    return np.asarray(_olh_counts(a, b, lo, width, int(k), _blocks(a.shape[0])), dtype=np.int64)


def _blocks(n: int) -> int:
    """Row blocks for a parallel count: 8 per thread (load balance), at most one per row."""
    return max(1, min(n, 8 * numba.get_num_threads()))


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


@numba.njit(parallel=True, cache=True, nogil=True)
def _packed_bit_counts(packed: NDArray[np.uint8], blocks: int) -> NDArray[np.int64]:
    # Bit-sliced ("vertical") counters: plane b holds bit b of every column's running
    # count. A row is added into 4-bit counters (a ripple-carry add, 8 operations per
    # byte column, which LLVM vectorises across columns: 32 per AVX2 instruction);
    # every 15 rows the 4-bit counters are added into 8-bit ones, and every 255 rows
    # those are flushed into int64 counts, each before it can overflow.
    n, nbytes = packed.shape
    out = np.zeros((blocks, 8 * nbytes), dtype=np.int64)
    per = (n + blocks - 1) // blocks
    for blk in numba.prange(blocks):
        counts = out[blk]
        low = np.zeros((4, nbytes), dtype=np.uint8)
        planes = np.zeros((8, nbytes), dtype=np.uint8)
        start = blk * per
        stop = min(n, start + per)
        for group in range(start, stop, 255):
            group_stop = min(stop, group + 255)
            for sub in range(group, group_stop, 15):
                for i in range(sub, min(group_stop, sub + 15)):
                    row = packed[i]
                    for j in range(nbytes):
                        c = row[j]
                        for b in range(4):
                            t = low[b, j] & c
                            low[b, j] ^= c
                            c = t
                for j in range(nbytes):  # planes += low (4-bit into 8-bit, ripple carry)
                    carry = np.uint8(0)
                    for b in range(8):
                        q = low[b, j] if b < 4 else np.uint8(0)
                        x = planes[b, j]
                        half = x ^ q
                        planes[b, j] = half ^ carry
                        carry = (x & q) | (carry & half)
                    for b in range(4):
                        low[b, j] = 0
            for b in range(8):
                for j in range(nbytes):
                    x = planes[b, j]
                    if x:
                        for bit in range(8):
                            counts[8 * j + bit] += ((x >> bit) & 1) << b
                    planes[b, j] = 0
    return out.sum(axis=0)  # type: ignore[no-any-return]


def packed_column_bit_counts(packed: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Number of 1 bits at each bit position of the rows of ``packed``.

    ``packed``: uint8, shape (n, nbytes), bits little-endian within bytes; returns int64,
    shape (8 * nbytes,), entry ``8 j + b`` counting bit ``b`` of byte ``j``. Narrow rows
    (under ``_WIDE`` bytes): the byte values of each column are histogrammed (one
    increment per byte) and a 256 x 8 table turns them into bit counts. Wider rows:
    bit-sliced counters add whole rows at a time, 32 columns per vector instruction
    (1.5-2x faster at 125 bytes a row, 4x at 1,250).
    """
    if packed.shape[1] < _WIDE:
        return (byte_histograms(packed) @ _BIT_TABLE).reshape(-1)
    blocks = max(1, min(packed.shape[0] // 1024, numba.get_num_threads()))
    return np.asarray(_packed_bit_counts(np.ascontiguousarray(packed), blocks), dtype=np.int64)


#: Row width (bytes) from which bits are counted by bit-sliced counters.
_WIDE = 64
_BIT_TABLE = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.int64)


# lowest set bit of each 16-bit value (0 for 0, unused)
_WORDS16 = np.arange(1 << 16, dtype=np.int64)
_LOWEST_BIT16 = np.bitwise_count(np.maximum((_WORDS16 & -_WORDS16) - 1, 0)).astype(np.int8)


@numba.njit(cache=True, nogil=True, inline="always")
def _nibble(stream: NDArray[np.uint8], pos: int) -> int:
    return (int(stream[pos >> 1]) >> (4 * (pos & 1))) & 15


@numba.njit(cache=True, nogil=True, inline="always")
def _below(
    ties: NDArray[np.uint8], pos: int, avail: int, t: NDArray[np.int64], first: int
) -> tuple[int, int]:
    """Finish ``word < T`` after its nibbles before ``first`` tied: (bit, new pos), or (-1, -1)."""
    for i in range(first, 8):
        if pos >= avail:
            return -1, -1
        v = _nibble(ties, pos)
        pos += 1
        if v != t[i]:
            return (1 if v < t[i] else 0), pos
    return 0, pos  # all 32 bits equal: word == T, not below


_LANES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_GATHER = np.uint64(0x0002040810204081)  # bit 7 of byte i -> bit 56 + i
_LOW_NIBBLES = np.uint64(0x0F0F0F0F0F0F0F0F)


@numba.njit(cache=True, nogil=True)
def _ue_lazy(
    codes: NDArray[np.int64],
    top: NDArray[np.uint64],
    pbytes: NDArray[np.uint8],
    ties: NDArray[np.uint8],
    tq: NDArray[np.int64],
    tp: NDArray[np.int64],
    k: int,
    out: NDArray[np.uint8],
) -> int:
    # Output bytes 2h and 2h + 1 of a row take the 16 first nibbles of the 64-bit word
    # top[r, h]: bit i of byte 2h the low nibble of the word's byte i, bit i of byte
    # 2h + 1 its high nibble. The comparisons with T's first nibble run 8 at once, one
    # nibble per byte lane (SWAR): lane + 0x80 - t has its high bit clear iff lane < t,
    # and (lane ^ t) + 0x7f iff lane == t; a multiply gathers the 8 high bits into a
    # byte. Ties are resolved afterwards, in bit order, from the ``ties`` stream.
    m, nb = out.shape
    avail = 2 * ties.shape[0]
    pos = 0
    last_mask = np.int64((1 << (k - 8 * (nb - 1))) - 1)
    below = (np.uint64(0x80) - np.uint64(tq[0])) * _LANES
    same = np.uint64(tq[0]) * _LANES
    seven = np.uint64(0x7F) * _LANES
    t1 = tq[1]
    tie_at = np.empty(nb + 1, dtype=np.int64)
    tie_mask = np.empty(nb + 1, dtype=np.int64)
    for r in range(m):
        # the true value's bit: Bernoulli(T_p / 2^32), its own nibble, ties from the stream
        u = int(pbytes[r]) & 15
        tbit = 1 if u < tp[0] else 0
        if u == tp[0]:
            tbit, pos = _below(ties, pos, avail, tp, 1)
            if pos < 0:
                return -1
        row = top[r]
        outrow = out[r]
        n_ties = 0
        for h in range(nb >> 1):
            w = row[h]
            lo = w & _LOW_NIBBLES
            hi = (w >> np.uint64(4)) & _LOW_NIBBLES
            res = np.int64(((~(lo + below) & _HIGH) * _GATHER) >> np.uint64(56)) | (
                np.int64(((~(hi + below) & _HIGH) * _GATHER) >> np.uint64(56)) << 8
            )
            tie = np.int64(((~((lo ^ same) + seven) & _HIGH) * _GATHER) >> np.uint64(56)) | (
                np.int64(((~((hi ^ same) + seven) & _HIGH) * _GATHER) >> np.uint64(56)) << 8
            )
            outrow[2 * h] = np.uint8(res & 255)
            outrow[2 * h + 1] = np.uint8(res >> 8)
            tie_at[n_ties] = h
            tie_mask[n_ties] = tie
            n_ties += 1 if tie else 0
        if nb & 1:  # last byte alone: the low nibbles of its word
            h = nb >> 1
            lo = row[h] & _LOW_NIBBLES
            res = np.int64(((~(lo + below) & _HIGH) * _GATHER) >> np.uint64(56))
            tie = np.int64(((~((lo ^ same) + seven) & _HIGH) * _GATHER) >> np.uint64(56))
            outrow[2 * h] = np.uint8(res)
            tie_at[n_ties] = h
            tie_mask[n_ties] = tie
            n_ties += 1 if tie else 0
        # padding bits past k are 0; the true value's bit was drawn above
        c = np.int64(codes[r])
        last = nb - 1
        outrow[last] = np.uint8(np.int64(outrow[last]) & last_mask)
        skip = np.int64(1) << (8 * ((c >> 3) & 1) + (c & 7))
        pad = np.int64(255 ^ last_mask) << (8 * (last & 1))
        for i in range(n_ties):
            h = tie_at[i]
            tie = tie_mask[i]
            if h == c >> 4:
                tie &= ~skip
            if h == last >> 1:
                tie &= ~pad
            set_bits = np.int64(0)
            while tie:
                j = np.int64(_LOWEST_BIT16[tie])
                tie &= tie - 1
                if pos >= avail:
                    return -1
                v = _nibble(ties, pos)  # the second nibble decides 15 times in 16
                pos += 1
                bit = int(v < t1)
                if v == t1:
                    bit, pos = _below(ties, pos - 1, avail, tq, 1)
                    if pos < 0:
                        return -1
                set_bits |= bit << j
            outrow[2 * h] |= np.uint8(set_bits & 255)
            outrow[2 * h + 1] |= np.uint8(set_bits >> 8)
        cb = c >> 3
        outrow[cb] = np.uint8((np.int64(outrow[cb]) & (255 ^ (1 << (c & 7)))) | (tbit << (c & 7)))
    return pos


def ue_lazy_encode(
    codes: NDArray[np.int64],
    top: NDArray[np.uint64],
    pbytes: NDArray[np.uint8],
    ties: NDArray[np.uint8],
    tq: NDArray[np.int64],
    tp: NDArray[np.int64],
    k: int,
    out: NDArray[np.uint8],
) -> int:
    """Unary-encoding reports from lazily compared nibbles (see ``UnaryEncoding.randomize``).

    Writes ``out`` (uint8, (m, ceil(k/8))); returns the number of tie nibbles used from
    ``ties``, or -1 if ``ties`` ran out (call again with a longer ``ties``).
    """
    # read-only views: bytes and bytearray sources then share one compiled signature
    top, pbytes, ties = (_read_only(a) for a in (top, pbytes, ties))
    return int(_ue_lazy(codes, top, pbytes, ties, tq, tp, int(k), out))


def _read_only(a: NDArray[Any]) -> NDArray[Any]:
    view = a.view()
    view.setflags(write=False)
    return view


@numba.njit(cache=True, nogil=True)
def _words_to_uniforms(out: NDArray[np.float64], words: NDArray[np.uint64]) -> None:
    for i in range(out.size):
        out[i] = np.float64(words[i] >> np.uint64(11)) * 1.1102230246251565e-16  # 2^-53


def words_to_uniforms(out: NDArray[np.float64]) -> None:
    """In place: read ``out``'s bytes as uint64 words ``w``, write ``(w >> 11) / 2^53``.

    One pass over memory (NumPy's shift, cast and multiply take three). ``out`` is a
    contiguous float64 array, shape (n,), whose bytes are random; afterwards every value
    lies on the 2^-53 grid of [0, 1).
    """
    _words_to_uniforms(out, out.view(np.uint64))


@numba.njit(cache=True, nogil=True)
def _binary_draw(
    truths: NDArray[Any], u: NDArray[np.float64], threshold: NDArray[np.float64]
) -> NDArray[np.uint8]:
    out = np.empty(truths.size, dtype=np.uint8)
    for i in range(truths.size):
        out[i] = u[i] < threshold[truths[i]]
    return out


def binary_draw(
    truths: NDArray[Any], u: NDArray[np.float64], threshold: NDArray[np.float64]
) -> NDArray[np.uint8]:
    """Binary reports ``u < threshold[truth]``, shape (n,), dtype uint8, in one pass.

    ``truths``: validated codes (int or bool), shape (n,); ``u``: uniforms, shape (n,);
    ``threshold``: ``Pr(report 1 | truth)`` per truth, shape (k,), float64.
    """
    codes = truths.view(np.uint8) if truths.dtype == np.bool_ else truths
    return _binary_draw(codes, u, threshold)


@numba.njit(cache=True, nogil=True)
def _piecewise_draw(
    x: NDArray[np.float64],
    u: NDArray[np.float64],
    c: float,
    p_centre: float,
    alpha: float,
    c_duchi: float,
) -> NDArray[np.float64]:
    out = np.empty(x.size, dtype=np.float64)
    for i in range(x.size):
        xi, ui = x[i], u[i]
        if ui >= alpha:  # Duchi's branch, with the rest of the uniform
            ui = (ui - alpha) / (1.0 - alpha)
            out[i] = c_duchi if ui < 0.5 + xi / (2.0 * c_duchi) else -c_duchi
            continue
        ui = ui / alpha
        left = (c + 1.0) / 2.0 * xi - (c - 1.0) / 2.0
        if ui < p_centre:  # uniform on the centre piece [left, left + c - 1]
            out[i] = left + ui / p_centre * (c - 1.0)
        else:  # uniform on [-c, left) U (left + c - 1, c], of total length c + 1
            s = (ui - p_centre) / (1.0 - p_centre) * (c + 1.0)
            out[i] = s - c if s < left + c else s - 1.0
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

    ``x``: values in [-1, 1], float64 (n,); ``u``: uniforms (n,). With probability
    ``alpha`` (the hybrid mechanism's; 1 for the piecewise mechanism alone) the report is
    piecewise with half-width ``c`` and centre probability ``p_centre``, otherwise
    Duchi's ``+-c_duchi``. Each decision uses the uniform left over by the one before,
    rescaled to [0, 1), which is again uniform and independent of that decision.
    """
    return _piecewise_draw(x, u, c, p_centre, alpha, c_duchi)


@numba.njit(parallel=True, cache=True, nogil=True)
def _olh_candidate_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    candidates: NDArray[np.uint64],
    blocks: int,
) -> NDArray[np.int64]:
    # like _olh_counts, but candidates are arbitrary codes: one multiply each instead of
    # walking consecutive values by addition (which keeps that hot loop cheaper)
    n, k = a.shape[0], candidates.shape[0]
    partial = np.zeros((blocks, k), dtype=np.int64)
    per = (n + blocks - 1) // blocks
    for blk in numba.prange(blocks):
        row = partial[blk]
        for i in range(blk * per, min(n, blk * per + per)):
            for j in range(k):
                x = (a[i] * candidates[j] + b[i]) >> np.uint64(32)
                row[j] += (x - lo[i]) < width[i]
    return partial.sum(axis=0)  # type: ignore[no-any-return]


def olh_candidate_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    candidates: NDArray[np.uint64],
) -> NDArray[np.int64]:
    """Support counts of arbitrary candidate values, shape (m,).

    ``C[j] = #{i : lo[i] <= ((a[i] c_j + b[i]) mod 2^64) >> 32 < lo[i] + width[i]}``.
    """
    cands = np.ascontiguousarray(candidates, dtype=np.uint64)
    counts = _olh_candidate_counts(a, b, lo, width, cands, _blocks(a.shape[0]))
    return np.asarray(counts, dtype=np.int64)

"""The encoders' and decoders' inner loops: compiled by numba when it is installed
(``pip install 'deniable[fast]'``), NumPy otherwise (private).

Both paths return the same values (``tests/test_kernels.py`` checks them against each
other). ``DENIABLE_KERNELS=numpy`` forces the NumPy path, ``DENIABLE_KERNELS=numba``
requires the compiled one; :func:`kernel_backend` says which one runs.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "binary_draw",
    "byte_histograms",
    "hadamard_spectrum",
    "kernel_backend",
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

#: The environment variable that picks a path: ``numba``, ``numpy`` or unset (numba if
#: installed).
ENV = "DENIABLE_KERNELS"


def kernel_backend() -> Literal["numba", "numpy"]:
    """The path the inner loops take: ``"numba"`` (compiled) or ``"numpy"``.

    ``numba`` when numba is installed (the ``fast`` extra), unless the environment
    variable ``DENIABLE_KERNELS`` is ``numpy``.

    Raises
    ------
    ValueError
        If ``DENIABLE_KERNELS`` is set to anything but ``numba`` or ``numpy``.
    ModuleNotFoundError
        If ``DENIABLE_KERNELS=numba`` and numba is not installed.
    """
    choice = os.environ.get(ENV, "").strip().lower()
    if choice not in ("", "numba", "numpy"):
        raise ValueError(f"{ENV} must be 'numba', 'numpy' or unset, got {choice!r}")
    if choice == "numpy":
        return "numpy"
    if _have_numba():
        return "numba"
    if choice == "numba":
        from .._extras import require

        require("numba", "fast")
    return "numpy"


@functools.cache
def _have_numba() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _load(backend: str) -> ModuleType:
    return importlib.import_module(f"{__package__}._kernels_{backend}")


def _module() -> ModuleType:
    return _load(kernel_backend())


def olh_support_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
) -> NDArray[np.int64]:
    """Support counts, shape (k,): ``C[v] = #{i : lo[i] <= h_i(v) < lo[i] + width[i]}``."""
    return np.asarray(_module().olh_support_counts(a, b, lo, width, k), dtype=np.int64)


def olh_candidate_counts(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    candidates: NDArray[np.uint64],
) -> NDArray[np.int64]:
    """Support counts of arbitrary candidate values, shape (m,)."""
    return np.asarray(_module().olh_candidate_counts(a, b, lo, width, candidates), dtype=np.int64)


def olh_support_pairs(
    a: NDArray[np.uint64],
    b: NDArray[np.uint64],
    lo: NDArray[np.uint64],
    width: NDArray[np.uint64],
    k: int,
) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    """The support sets of the reports as CSR ``(indptr (n+1,), indices (nnz,))``."""
    indptr, indices = _module().olh_support_pairs(a, b, lo, width, k)
    return np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int32)


def byte_histograms(packed: NDArray[np.uint8]) -> NDArray[np.int64]:
    """How often each byte value occurs in each column of ``packed`` (n, nbytes): (nbytes, 256)."""
    return np.asarray(_module().byte_histograms(packed), dtype=np.int64)


def packed_column_bit_counts(packed: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Number of 1 bits at each bit position of ``packed`` (n, nbytes): (8 * nbytes,)."""
    return np.asarray(_module().packed_column_bit_counts(packed), dtype=np.int64)


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
    out = _module().olh_encode(values, a, b, keep, other, g, threshold)
    return np.asarray(out, dtype=np.uint32)


def words_to_uniforms(out: NDArray[np.float64]) -> None:
    """In place: read ``out``'s bytes as uint64 words ``w``, write ``(w >> 11) / 2^53``."""
    _module().words_to_uniforms(out)


def binary_draw(
    truths: NDArray[Any], u: NDArray[np.float64], threshold: NDArray[np.float64]
) -> NDArray[np.uint8]:
    """Binary reports ``u < threshold[truth]``, shape (n,), dtype uint8."""
    return np.asarray(_module().binary_draw(truths, u, threshold), dtype=np.uint8)


def piecewise_draw(
    x: NDArray[np.float64],
    u: NDArray[np.float64],
    c: float,
    p_centre: float,
    alpha: float = 1.0,
    c_duchi: float = 1.0,
) -> NDArray[np.float64]:
    """Piecewise-mechanism reports (Wang et al. 2019), one uniform per value, shape (n,)."""
    out = _module().piecewise_draw(x, u, c, p_centre, alpha, c_duchi)
    return np.asarray(out, dtype=np.float64)


def hadamard_spectrum(
    a: NDArray[np.uint64],
    y: NDArray[np.uint8],
    w: NDArray[np.int64],
    hashes: NDArray[np.uint64],
    width: int,
) -> NDArray[np.int64]:
    """Byte-PEM's spectra, shape (P, width) int64.

    For each parent ``p``, report ``i`` (rows ``a[i]`` (r,) uint64, bucket ``y[i]``) and
    ``u`` in ``0..g-1``: ``out[p, w[i, u]] += (-1)^parity(u & z)``, where bit ``j`` of
    ``z = y[i] XOR (parity(a[i, j] & hashes[p]))_j``: ``u.y + (A^T u).G(P)`` mod 2.
    """
    out = _module().hadamard_spectrum(a, y, w, hashes, width)
    return np.asarray(out, dtype=np.int64)


def walsh_hadamard_rows(values: NDArray[np.int64], bound: int) -> NDArray[np.int64]:
    """The unnormalised Walsh-Hadamard transform of each row of ``values`` (P, 2^m)
    int64, C-contiguous, in place; every partial sum is at most ``bound`` in magnitude
    (the NumPy path then computes in float32 below 2^24 and int32 below 2^31, exactly).
    Returns ``values``."""
    _module().walsh_hadamard_rows(values, bound)
    return values


def linear_hash_counts(
    a: NDArray[np.uint64], y: NDArray[np.uint8], ids: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """Support counts of arbitrary ids under binary linear hashing, shape (E,) int64:
    ``out[e] = #{i : A_i ids[e] = y_i}`` over GF(2) (rows ``a`` (n, r) uint64, buckets
    ``y`` (n,) uint8)."""
    return np.asarray(_module().linear_hash_counts(a, y, ids), dtype=np.int64)

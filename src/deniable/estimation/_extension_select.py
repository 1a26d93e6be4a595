"""Byte-PEM's selection of a level's extensions from their support counts, a block of
parents at a time (:func:`strongest`): the counts arrive dense, or as the entries at or
above the least count the level's rule takes (a Spark task that holds the whole level
sends only those, :mod:`deniable.tables._spark_search`), and at most a cap of the
largest of each kind are kept (:mod:`._byte_prefix_search`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ..mechanisms import BytePrefixExtension

__all__ = ["PARENTS_AT_ONCE", "dense_blocks", "strongest"]

#: Parents whose extensions are counted at once (bounds the counts to 32 MB).
PARENTS_AT_ONCE = 64


def dense_blocks(
    count: Callable[[NDArray[np.uint64]], NDArray[np.int64]], hashes: NDArray[np.uint64]
) -> Iterator[NDArray[np.int64]]:
    """The support counts of each block of ``PARENTS_AT_ONCE`` parents, one block at a
    time (memory stays bounded): what an :data:`ExtensionCounter` yields in process."""
    for p0 in range(0, hashes.size, PARENTS_AT_ONCE):
        yield count(hashes[p0 : p0 + PARENTS_AT_ONCE])


def strongest(
    bpem: BytePrefixExtension,
    blocks: Iterable[Any],
    least: int,
    kinds: tuple[tuple[NDArray[np.bool_], int | None], ...],
) -> list[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]]:
    """For each kind ``(allowed x (2^(8 step),) bool, cap)``: ``(parent index, x, count,
    passing)`` of the allowed extensions whose support count is at least ``least`` (the
    level's rule),
    at most ``cap`` of them with the largest counts (ties: the first in parent and ``x``
    order), largest first; ``passing`` counts every one that qualified. ``blocks`` are
    the parents' counts a block of ``PARENTS_AT_ONCE`` at a time (:data:`ExtensionCounter`):
    dense, or the entries at or above ``least`` as ``(rows, xs, counts)``."""
    width = 1 << (8 * bpem.step)
    none = np.zeros(0, dtype=np.int64)
    kept = [(none, none, 0) for _ in kinds]
    for b, block in enumerate(blocks):
        p0 = b * PARENTS_AT_ONCE
        if isinstance(block, tuple):  # the entries at or above least
            rows, xs, values = (np.asarray(a, dtype=np.int64) for a in block)
            ok = values >= least
            rows, xs, values = rows[ok], xs[ok], values[ok]
            for k, (allowed, cap) in enumerate(kinds):
                sel = allowed[xs]
                keys, counts, passing = kept[k]
                passing += int(np.count_nonzero(sel))
                if cap is not None and counts.size >= cap:  # below the cap-th best
                    sel &= values >= counts.min()
                kept[k] = _gather(keys, counts, passing, (rows[sel] + p0) * width + xs[sel],
                                  values[sel], cap)  # fmt: skip
            continue
        qualified = block >= least
        for k, (allowed, cap) in enumerate(kinds):
            keys, counts, passing = kept[k]
            mask = qualified & allowed[None, :]
            passing += int(np.count_nonzero(mask))
            if cap is not None and counts.size >= cap:  # below the cap-th best: never kept
                mask &= block >= counts.min()
            r, x = np.nonzero(mask)
            new = (r + p0).astype(np.int64) * width + x
            kept[k] = _gather(keys, counts, passing, new, block[r, x], cap)
    out = []
    for keys, counts, passing in kept:
        order = np.argsort(-_score(keys, counts), kind="stable")
        out.append((keys[order] // width, keys[order] % width, counts[order], passing))
    return out


def _gather(
    keys: NDArray[np.int64],
    counts: NDArray[np.int64],
    passing: int,
    new_keys: NDArray[np.int64],
    new_counts: NDArray[np.int64],
    cap: int | None,
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """The kept entries with the new ones, cut to the ``cap`` best (by :func:`_score`)."""
    keys = np.concatenate([keys, new_keys.astype(np.int64)])
    counts = np.concatenate([counts, new_counts.astype(np.int64)])
    if cap is not None and counts.size > cap:
        top = np.argpartition(-_score(keys, counts), cap - 1)[:cap]
        keys, counts = keys[top], counts[top]
    return keys, counts, passing


def _score(keys: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """One sortable score: the count, then the earlier key."""
    return np.asarray((counts << 32) | ((1 << 32) - 1 - keys), dtype=np.int64)

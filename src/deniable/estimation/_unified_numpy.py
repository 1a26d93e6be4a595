"""Feldman & Cousins' (1998) unified interval for a binomial share, in NumPy (private).

The path taken without numba: the construction of ``_unified_numba`` (read its
docstring for the statistics), vectorised across the problems of a call and, within a
problem, across the counts of a window around the region's mode. The region at share
``lam`` grows outward from its mode, each step taking the side of larger likelihood
ratio; since the ratios fall away from the mode on both sides, the order of the steps
is the merge of the two sides' sorted ratios, found with one ``searchsorted``. The
probabilities are the same running products (``cumprod`` multiplies in the same order
as the loop) and the mass the same running sum (``cumsum``), so the regions, and the
bisected ends, are those of the compiled loop.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["unified_share_interval"]

_STEPS = 48
#: Elements per block of (problems x window) arrays.
_BLOCK = 1 << 18


def _xlogy(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * np.log(np.where(y > 0.0, y, 1.0))
    out = np.where(y <= 0.0, -np.inf, out)
    return np.where(x == 0.0, 0.0, out)


def _loglik(
    y: NDArray[np.float64], n: NDArray[np.float64], lam: NDArray[np.float64]
) -> NDArray[np.float64]:
    return _xlogy(y, lam) + _xlogy(n - y, 1.0 - lam)


def _log_ratio(
    y: NDArray[np.int64], n: NDArray[np.int64], lam: NDArray[np.float64], a: float, b: float
) -> NDArray[np.float64]:
    yf, nf = y.astype(np.float64), n.astype(np.float64)
    best = np.minimum(np.maximum(yf / nf, a), b)
    return _loglik(yf, nf, lam) - _loglik(yf, nf, best)


def _window_log_ratio(
    y: NDArray[np.int64], n: NDArray[np.int64], lam: NDArray[np.float64], a: float, b: float
) -> NDArray[np.float64]:
    """:func:`_log_ratio` of a window ``y`` (m, w) of counts in ``0..n`` of rows with
    shares ``lam`` (m,) inside (0, 1): the logs of ``lam`` are taken once a row, and the
    best share's once an element, as ``xlogy`` would (0 for a count of 0)."""
    yf = y.astype(np.float64)
    nf = n.astype(np.float64)[:, None]
    rest = nf - yf
    with np.errstate(divide="ignore", invalid="ignore"):
        out = yf * np.log(lam)[:, None]
        out += rest * np.log(1.0 - lam)[:, None]
        best = np.clip(yf / nf, a, b)
        out -= np.where(yf == 0.0, 0.0, yf * np.log(best))
        out -= np.where(rest == 0.0, 0.0, rest * np.log(1.0 - best))
    return out


def _lgamma(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``math.lgamma`` elementwise (the compiled path's function, bit for bit)."""
    return np.array([math.lgamma(v) for v in x.tolist()], dtype=np.float64)


def _regions(
    n: NDArray[np.int64], lam: NDArray[np.float64], a: float, b: float, level: float
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The acceptance regions ``[lo, hi]`` (counts) at shares ``lam``, shape of ``n``."""
    lo = np.where(lam <= 0.0, 0, n).astype(np.int64)
    hi = lo.copy()
    live = np.flatnonzero((lam > 0.0) & (lam < 1.0))
    if live.size == 0:
        return lo, hi
    nl, ll = n[live], lam[live]
    y0 = np.minimum(np.floor(nl * ll).astype(np.int64), nl)
    step = (y0 < nl) & (
        _log_ratio(np.minimum(y0 + 1, nl), nl, ll, a, b) > _log_ratio(y0, nl, ll, a, b)
    )
    y0 = y0 + step
    nf, yf = nl.astype(np.float64), y0.astype(np.float64)
    log_pmf = _lgamma(nf + 1.0) - _lgamma(yf + 1.0) - _lgamma(nf - yf + 1.0) + _loglik(yf, nf, ll)
    p0 = np.exp(log_pmf)
    sd = np.sqrt(nf * ll * (1.0 - ll))
    width = np.minimum(np.ceil(4.0 * sd).astype(np.int64) + 8, np.maximum(y0, nl - y0))
    # at a share on the edge of [a, b] every count beyond it has the ratio 0 (its best
    # share is the edge itself): the loop takes that whole side first, then the other
    flat = np.flatnonzero((ll == a) | (ll == b))
    for i in flat.tolist():
        lo[live[i]], hi[live[i]] = _flat_region(
            int(nl[i]), float(ll[i]), int(y0[i]), float(p0[i]), bool(ll[i] == a), level
        )
    width[flat] = 0
    todo = np.flatnonzero(width > 0)
    while todo.size:
        w = int(width[todo].max())
        per = max(1, _BLOCK // (2 * w + 1))
        retry = []
        for s in range(0, todo.size, per):
            idx = todo[s : s + per]
            got, r_lo, r_hi = _grow(nl[idx], ll[idx], y0[idx], p0[idx], w, a, b, level)
            lo[live[idx[got]]] = r_lo[got]
            hi[live[idx[got]]] = r_hi[got]
            retry.append(idx[~got])
        todo = np.concatenate(retry)
        width[todo] *= 2
    return lo, hi


def _flat_region(
    n: int, lam: float, y0: int, p0: float, left_first: bool, level: float
) -> tuple[int, int]:
    """The region at a share on the edge of ``[a, b]`` (``lam == a``: ``left_first``).

    Every count on the far side of the edge has the likelihood ratio 0, the largest, so
    the loop takes that side whole (ties go to the left count, and none arises on the
    other side), then the counts of the other side in order: the running products and
    the running sum of the compiled loop, in its order, computed a growing chunk at a
    time until the mass reaches ``level`` (a product that underflows to 0 stays 0, so
    the rest of its side adds nothing).
    """
    odds = lam / (1.0 - lam)
    lengths = (y0, n - y0) if left_first else (n - y0, y0)
    mass = p0
    taken = [0, 0]
    if mass >= level:
        return y0, y0
    chunk = int(4.0 * math.sqrt(n * lam * (1.0 - lam))) + 64
    for which in (0, 1):
        left = left_first == (which == 0)
        p, done = p0, 0
        while done < lengths[which]:
            stop = min(lengths[which], done + chunk)
            if left:  # ``lo`` before each step
                before = y0 - np.arange(done, stop, dtype=np.float64)
                factors = before / (n - before + 1.0) / odds
            else:  # ``hi`` before each step
                before = y0 + np.arange(done, stop, dtype=np.float64)
                factors = (n - before) / (before + 1.0) * odds
            products = np.cumprod(np.concatenate([[p], factors]))[1:]
            masses = np.cumsum(np.concatenate([[mass], products]))[1:]
            hit = np.flatnonzero(masses >= level)
            if hit.size:
                taken[which] = done + int(hit[0]) + 1
                break
            p, mass, done, chunk = float(products[-1]), float(masses[-1]), stop, 2 * chunk
            if p == 0.0:  # the rest of this side adds nothing
                done = lengths[which]
        else:
            taken[which] = lengths[which]
            continue
        break
    first, second = taken
    if left_first:
        return y0 - first, y0 + second
    return y0 - second, y0 + first


def _grow(
    n: NDArray[np.int64],
    lam: NDArray[np.float64],
    y0: NDArray[np.int64],
    p0: NDArray[np.float64],
    w: int,
    a: float,
    b: float,
    level: float,
) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]:
    """Grow each region from its mode ``y0`` by up to ``w`` counts a side.

    Returns (done, lo, hi): ``done`` is False where the window was too narrow.
    """
    m = n.size
    j = np.arange(1, w + 1, dtype=np.int64)
    right = y0[:, None] + j  # counts added on the right, in order
    left = y0[:, None] - j
    nn = np.broadcast_to(n[:, None], right.shape)
    ok_r, ok_l = right <= nn, left >= 0
    r_ratio = np.where(ok_r, _window_log_ratio(np.minimum(right, nn), n, lam, a, b), -np.inf)
    l_ratio = np.where(ok_l, _window_log_ratio(np.maximum(left, 0), n, lam, a, b), -np.inf)
    odds = lam / (1.0 - lam)
    hi_before = (right - 1).astype(np.float64)  # the loop's ``hi`` before each step
    lo_before = (left + 1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_r = (nn - (right - 1)) / (hi_before + 1.0) * odds[:, None]
        f_l = lo_before / (nn - lo_before + 1.0) / odds[:, None]
    p_r = np.cumprod(np.concatenate([p0[:, None], f_r], axis=1), axis=1)[:, 1:]
    p_l = np.cumprod(np.concatenate([p0[:, None], f_l], axis=1), axis=1)[:, 1:]
    p_r = np.where(ok_r, p_r, 0.0)
    p_l = np.where(ok_l, p_l, 0.0)
    # merge: the loop takes the right count iff its ratio beats the left one's; with
    # both sides falling, that is a stable sort of (left, right) by falling ratio, a tie
    # going to the left count, which comes first in the row
    order = np.argsort(-np.concatenate([l_ratio, r_ratio], axis=1), axis=1, kind="stable")
    rows = np.arange(m)[:, None]
    merged = np.empty((m, 2 * w + 1), dtype=np.float64)
    merged[:, 0] = p0
    merged[:, 1:] = np.take_along_axis(np.concatenate([p_l, p_r], axis=1), order, axis=1)
    side = np.zeros((m, 2 * w + 1), dtype=np.int8)  # -1 left, +1 right, 0 none
    flags = np.concatenate([np.where(ok_l, -1, 0), np.where(ok_r, 1, 0)], axis=1)
    side[:, 1:] = np.take_along_axis(flags.astype(np.int8), order, axis=1)
    rank = np.empty_like(order)
    rank[rows, order] = np.arange(2 * w)[None, :]
    pos_l_last, pos_r_last = rank[:, w - 1], rank[:, 2 * w - 1]
    mass = np.cumsum(merged, axis=1)
    reached = mass >= level
    valid = ok_l.sum(axis=1) + ok_r.sum(axis=1)  # the valid steps come first
    hit = reached.any(axis=1)
    stop = np.where(hit, reached.argmax(axis=1), valid)
    # a side whose window ends before its range does: after its last count in the
    # window the loop would compare with a count outside it, so the order is known
    # only up to there
    big = 2 * w + 1
    limit = np.minimum(
        np.where(y0 + w < n, pos_r_last + 1, big), np.where(y0 - w > 0, pos_l_last + 1, big)
    )
    whole = (y0 - w <= 0) & (y0 + w >= n)
    done = (hit & (stop <= limit)) | (~hit & whole)
    taken = np.arange(big)[None, :] <= stop[:, None]
    lo = y0 - ((side == -1) & taken).sum(axis=1)
    hi = y0 + ((side == 1) & taken).sum(axis=1)
    return done, lo.astype(np.int64), hi.astype(np.int64)


def _ends(
    y_up: NDArray[np.int64],
    y_down: NDArray[np.int64],
    n: NDArray[np.int64],
    a: float,
    b: float,
    level: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The bisected lower and upper ends (``_lower(y_down)``, ``_upper(y_up)`` of the
    compiled path), both ends' regions computed in one call per step."""
    m = n.size
    nn = np.concatenate([n, n])
    edge = np.concatenate([np.full(m, b), np.full(m, a)])  # upper ends first
    lo_reg, hi_reg = _regions(nn, edge, a, b, level)
    settled = np.concatenate([lo_reg[:m] <= y_up, hi_reg[m:] >= y_down])
    lo_lam, hi_lam = np.full(2 * m, a), np.full(2 * m, b)
    upper = np.arange(2 * m) < m
    for _ in range(_STEPS):
        mid = 0.5 * (lo_lam + hi_lam)
        lo_reg, hi_reg = _regions(nn, mid, a, b, level)
        inside = np.where(
            upper,
            lo_reg <= np.concatenate([y_up, y_up]),
            hi_reg >= np.concatenate([y_down, y_down]),
        )
        raise_lo = np.where(upper, inside, ~inside)
        lo_lam = np.where(raise_lo, mid, lo_lam)
        hi_lam = np.where(raise_lo, hi_lam, mid)
    ends = np.where(settled, edge, np.where(upper, lo_lam, hi_lam))
    return ends[m:], ends[:m]


def unified_share_interval(
    y: NDArray[np.int64], n: NDArray[np.int64], a: float, b: float, confidence_level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Feldman-Cousins interval for binomial shares known to lie in ``[a, b]`` (see
    ``_unified_numba.unified_share_interval``; same arguments, same values)."""
    shape = np.shape(y)
    yy = np.asarray(y, dtype=np.int64).ravel()
    nn = np.broadcast_to(np.asarray(n, dtype=np.int64), shape).ravel()
    a, b, level = float(a), float(b), float(confidence_level)
    low, high = np.full(yy.shape, a), np.full(yy.shape, b)
    some = np.flatnonzero(nn > 0)
    if some.size:
        ny, nn_ = yy[some], nn[some]
        at_a = np.minimum(np.ceil(nn_ * a).astype(np.int64), nn_)
        at_b = np.maximum(np.floor(nn_ * b).astype(np.int64), 0)
        low[some], high[some] = _ends(np.maximum(ny, at_a), np.minimum(ny, at_b), nn_, a, b, level)
    return low.reshape(shape), high.reshape(shape)

"""The variances of a complex sample's Horvitz-Thompson estimate (private to
:mod:`deniable.analysis`, which documents each method and its source): Deville's
(1999) approximation, the Horvitz-Thompson form with joint inclusion probabilities,
ultimate clusters, the stratified jackknife, and simple random sampling."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._resampling import campbell_berger_skinner, escobar_berger

_Array = NDArray[np.float64]


def _deville(y: _Array, pi: _Array) -> float:
    """Deville (1999) variance of the HT total of ``y`` (``sampling::varest``)."""
    a = (1 - pi) / np.sum(1 - pi)
    centre = np.sum(a * y / pi)
    denom = 1 - np.sum(a**2)
    return float(np.sum((1 - pi) * (y / pi - centre) ** 2) / denom)


def _ht_pij(y: _Array, pi: _Array, pij: _Array) -> float:
    """Horvitz-Thompson variance estimator of the HT total with second-order probabilities."""
    pkl = pij.copy()
    np.fill_diagonal(pkl, pi)
    delta = 1 - np.outer(pi, pi) / pkl
    u = y / pi
    return float(u @ delta @ u)


def _strata_clusters(
    n: int, strata: ArrayLike | None, clusters: ArrayLike | None
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    h = np.zeros(n, dtype=np.intp) if strata is None else np.unique(strata, return_inverse=True)[1]
    if clusters is None:
        c = np.arange(n, dtype=np.intp)
    else:
        pairs = np.stack([h, np.unique(np.asarray(clusters).astype(str), return_inverse=True)[1]])
        c = np.unique(pairs, axis=1, return_inverse=True)[1].reshape(-1)
    return h.astype(np.intp), c.astype(np.intp)


def _ultimate_cluster(u: _Array, h: NDArray[np.intp], c: NDArray[np.intp]) -> float:
    totals = np.bincount(c, weights=u)
    stratum_of = np.zeros(totals.size, dtype=np.intp)
    stratum_of[c] = h
    v = 0.0
    for s in np.unique(stratum_of):
        t = totals[stratum_of == s]
        if t.size < 2:
            continue  # a stratum with one cluster contributes no estimable variance
        v += t.size / (t.size - 1) * float(np.sum((t - t.mean()) ** 2))
    return v


class _Sample(NamedTuple):
    """A sample's revised values and design: revised values ``r`` and their per-person
    variances ``v`` (or None), inclusion probabilities ``p`` and weights ``w``, the
    joint inclusion probabilities ``P`` (or None), strata and clusters, the estimand,
    the population size and the jackknife's correction."""

    r: _Array
    v: _Array | None
    p: _Array
    w: _Array
    P: _Array | None
    strata: Any
    clusters: Any
    kind: str
    N: float | None
    fpc: bool


def _point(r: _Array, w: _Array, kind: str, N: float | None) -> tuple[float, float, float]:
    """The Horvitz-Thompson total, the mean over ``N``, or Hajek's mean (Taylor-
    linearised), with the scale and centre of its linearised variable."""
    total = float(np.sum(r * w))
    if kind == "total":
        return total, 1.0, 0.0
    if N is not None:
        return total / N, 1 / N**2, 0.0
    nhat = float(np.sum(w))
    est = total / nhat
    return est, 1 / nhat**2, est


def _variance(s: _Sample, variance: str, scale: float, centre: float, device: str) -> float:
    """The estimate's variance by ``variance`` (see :func:`survey_estimate`)."""
    r, v, p, w, P, kind, N = s.r, s.v, s.p, s.w, s.P, s.kind, s.N
    n = r.size
    lin = r - centre  # linearised variable (the mean's variance is scale * V(total of lin))
    rr_part = float(np.sum(v * w)) if v is not None else 0.0
    if variance == "deville":
        if v is None:
            raise ValueError(f"{device} has no per-person variance: use 'srswr' or 'srswor'")
        return scale * (_deville(lin, p) + rr_part)
    if variance == "pij":
        if P is None:
            raise ValueError("variance='pij' needs the pij matrix")
        return scale * (_ht_pij(lin, p, P) + rr_part)
    if variance in ("escobar_berger", "campbell_berger_skinner"):
        if P is None:
            raise ValueError(f"variance={variance!r} needs the pij matrix (or hajek_pij(pi))")
        size = N if N is not None else float(round(np.sum(w)))  # RRTCS's default N
        replicate = escobar_berger if variance == "escobar_berger" else campbell_berger_skinner
        return float(replicate(r, p, P, kind, size))
    if variance in ("srswr", "srswor"):
        if N is None and kind == "total":
            raise ValueError(f"variance={variance!r} for a total needs N")
        size = N if N is not None else float(np.sum(w))
        f = n / size if variance == "srswor" else 0.0
        return (size**2 if kind == "total" else 1.0) * (1 - f) * float(np.var(r, ddof=1)) / n
    h, c = _strata_clusters(n, s.strata, s.clusters)
    if variance == "ultimate_cluster":
        return scale * _ultimate_cluster(lin * w, h, c)
    # RRTCS's finite-population correction 1 - mean(pi_h), stratum by stratum
    keep = 1.0 - np.bincount(h, weights=p) / np.bincount(h) if s.fpc else None
    return _jackknife(r, w, h, c, kind, N, keep)


def _jackknife(
    r: _Array,
    w: _Array,
    h: NDArray[np.intp],
    c: NDArray[np.intp],
    kind: str,
    N: float | None,
    fpc: _Array | None = None,
) -> float:
    """Delete-one-cluster jackknife (JKn) within strata, vectorised over replicates;
    stratum ``h``'s part multiplied by ``fpc[h]`` when given."""
    n_clusters = int(c.max()) + 1
    cluster_stratum = np.zeros(n_clusters, dtype=np.intp)
    cluster_stratum[c] = h
    per_stratum = np.bincount(cluster_stratum)
    t_c = np.bincount(c, weights=r * w, minlength=n_clusters)
    w_c = np.bincount(c, weights=w, minlength=n_clusters)
    t_h = np.bincount(cluster_stratum, weights=t_c)
    w_h = np.bincount(cluster_stratum, weights=w_c)
    T, W = float(t_c.sum()), float(w_c.sum())
    nh = per_stratum[cluster_stratum].astype(np.float64)
    ok = nh > 1
    factor = np.where(ok, nh / np.where(ok, nh - 1, 1), 0.0)
    # replicate (h, j): stratum h's other clusters reweighted by n_h / (n_h - 1)
    t_rep = T - t_h[cluster_stratum] + factor * (t_h[cluster_stratum] - t_c)
    w_rep = W - w_h[cluster_stratum] + factor * (w_h[cluster_stratum] - w_c)
    if kind == "total":
        theta = t_rep
    elif N is not None:
        theta = t_rep / N
    else:
        theta = t_rep / w_rep
    v = 0.0
    for s in np.flatnonzero(per_stratum > 1):
        th = theta[cluster_stratum == s]
        part = (th.size - 1) / th.size * float(np.sum((th - th.mean()) ** 2))
        v += part * (1.0 if fpc is None else float(fpc[s]))
    return v

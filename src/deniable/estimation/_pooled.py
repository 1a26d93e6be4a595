"""Designs varying by respondent: one prevalence from reports drawn through several designs.

Respondent ``i`` answers through design ``P_{g_i}`` (surveys that mix direct questioning,
forced response, crosswise ..., as GLMMRR's MTURK and ETHBE data do). With ``n_g`` of the
``n`` respondents in design ``g`` (fixed by the survey), the pair ``(g, r)`` is a report
of one stacked design ``P[(g, r), k] = (n_g / n) P_g[r, k]``: its columns sum to 1 and
``E[c_(g, r) / n] = (P pi)_(g, r)``, so the least-squares moment estimator (on the
plane ``sum(pi) = 1``, :func:`pooled_moment`) is unbiased and
the EM maximum likelihood on the stacked design is the pooled maximum likelihood
``sum_i log (P_{g_i} pi)_{r_i}`` (the weights ``n_g / n`` do not depend on ``pi``).
Because the ``n_g`` are fixed, the report shares vary within each design only: the
moment estimator ``Q lam`` has covariance ``Q V Q^T`` with ``V`` block diagonal, block ``g``
equal to ``(n_g / n^2) (diag(s_g) - s_g s_g^T)``, ``s_g`` the report shares within
design ``g`` (the stratified form of Chaudhuri & Mukerjee 1988).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ReportValidationError
from ..mechanisms import Design, MatrixDesign

__all__ = [
    "boundary_std_errors",
    "moment_covariance_at",
    "pooled_design",
    "pooled_moment",
]


def pooled_design(
    designs: Mapping[Hashable, Design], groups: ArrayLike, reports: ArrayLike
) -> tuple[MatrixDesign, NDArray[np.intp], NDArray[np.intp]]:
    """The stacked design of respondents answering through different designs.

    Parameters
    ----------
    designs : mapping of key to Design
        Every design has the same truths (the same ``k``); report counts may differ.
    groups : array_like, shape (n,)
        Each respondent's design key.
    reports : array_like of int, shape (n,)
        Each respondent's report code under its own design (``0..m_g-1``).

    Returns
    -------
    design : MatrixDesign, shape (sum of m_g over the designs used, k)
        Reports labelled ``"key:report"``, in the order of ``designs``.
    codes : ndarray of intp, shape (n,)
        Each respondent's report code in the stacked design.
    blocks : ndarray of intp, shape (m,)
        For each stacked report, the position of its design among those used.

    Raises
    ------
    ValueError
        For designs with different truths, keys not in ``designs``, or lengths that
        differ.
    ReportValidationError
        For a report code outside its design's ``0..m_g-1``, or no reports at all.
    """
    if not designs:
        raise ValueError("designs must name at least one design")
    ks = {d.n_truths for d in designs.values()}
    if len(ks) != 1:
        raise ValueError(f"designs must share their truths (the same k), got k in {sorted(ks)}")
    keys = np.asarray(groups, dtype=object)
    codes = np.asarray(reports)
    if keys.shape != codes.shape or codes.ndim != 1:
        raise ValueError(
            f"groups and reports must be 1-D of one length, got {keys.shape}, {codes.shape}"
        )
    if codes.size == 0:
        raise ReportValidationError("no reports to estimate from")
    names = list(designs)
    index = {key: j for j, key in enumerate(names)}
    unknown = {k for k in set(keys.tolist()) if k not in index}
    if unknown:
        raise ValueError(f"groups hold keys with no design: {sorted(map(str, unknown))[:5]}")
    g = np.fromiter((index[k] for k in keys.tolist()), dtype=np.intp, count=keys.size)
    if not np.issubdtype(codes.dtype, np.integer):
        as_int = codes.astype(np.int64)
        if not np.array_equal(as_int, codes):
            raise ReportValidationError("reports must be integer report codes")
        codes = as_int
    sizes = np.array([designs[name].n_reports for name in names])
    if np.any(codes < 0) or np.any(codes >= sizes[g]):
        bad = int(np.flatnonzero((codes < 0) | (codes >= sizes[g]))[0])
        raise ReportValidationError(
            f"report {int(codes[bad])} of respondent {bad} is outside 0..{sizes[g[bad]] - 1} "
            f"of design {names[g[bad]]!r}"
        )
    n_g = np.bincount(g, minlength=len(names))
    used = np.flatnonzero(n_g)
    offsets = np.zeros(len(names), dtype=np.intp)
    blocks, labels, owner, start = [], [], [], 0
    for b, j in enumerate(used):
        d = designs[names[j]]
        offsets[j] = start
        blocks.append(d.matrix * (n_g[j] / codes.size))
        owner += [b] * d.n_reports
        labels += [f"{names[j]}:{label}" for label in d.report_labels]
        start += d.n_reports
    first = designs[names[used[0]]]
    stacked = MatrixDesign(
        np.vstack(blocks), truth_labels=first.truth_labels, report_labels=tuple(labels)
    )
    return stacked, (offsets[g] + codes).astype(np.intp), np.asarray(owner, dtype=np.intp)


def _block_covariance(
    counts: NDArray[np.int64], blocks: NDArray[np.intp], shares: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``V``: block ``g`` is ``(n_g / n^2) (diag(s_g) - s_g s_g^T)``, ``s_g`` = ``shares``
    of design ``g``'s reports."""
    n = counts.sum()
    V = np.zeros((counts.size, counts.size))
    for b in np.unique(blocks):
        rows = np.flatnonzero(blocks == b)
        s = shares[rows]
        V[np.ix_(rows, rows)] = counts[rows].sum() / n**2 * (np.diag(s) - np.outer(s, s))
    return V


def _estimator(design: Design) -> NDArray[np.float64]:
    """``Q`` (k, m) of the least-squares estimator on the plane ``sum(pi) = 1``."""
    P = design.matrix
    m, k = P.shape
    A = np.vstack([-np.ones((1, k - 1)), np.eye(k - 1)])
    e1 = np.zeros(k)
    e1[0] = 1.0
    G = A @ np.linalg.pinv(P @ A)  # (k, m)
    return np.asarray(np.outer(e1 - G @ P @ e1, np.ones(m)) + G)  # pi_hat = Q lam


def _within(
    design: Design, counts: NDArray[np.int64], blocks: NDArray[np.intp], pi: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each stacked report's expected share within its own design at prevalence ``pi``."""
    expected = design.matrix @ pi  # (n_g / n) P_g pi
    sizes = np.bincount(blocks, weights=counts)[blocks] / counts.sum()
    return np.asarray(expected / sizes)


def pooled_moment(
    design: Design, counts: NDArray[np.int64], blocks: NDArray[np.intp]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Moment estimate and covariance for a stacked design with fixed design sizes.

    The least-squares solution of ``P pi = lam`` on the plane ``sum(pi) = 1``: with
    ``pi = e_1 + A t`` (``A`` a basis of the sum-zero vectors), ``t = (P A)^+ (lam - P
    e_1)``, so ``pi_hat = Q lam`` is linear, unbiased, and sums to 1 (for a square
    design it is ``P^-1 lam``). Its covariance is ``Q V Q^T`` with ``V`` the block
    covariance of fixed design sizes (see the module docstring).

    ``counts`` (m,) are the stacked report counts and ``blocks`` (m,) each report's
    design (from :func:`pooled_design`); returns the estimate (k,) and covariance (k, k).
    """
    n = counts.sum()
    lam = counts / n
    Q = _estimator(design)
    shares = np.bincount(blocks, weights=counts)[blocks]
    V = _block_covariance(counts, blocks, counts / shares)
    return np.asarray(Q @ lam), np.asarray(Q @ V @ Q.T)


def moment_covariance_at(
    designs: Mapping[Hashable, Design], groups: ArrayLike, reports: ArrayLike,
    pi: ArrayLike,
) -> NDArray[np.float64]:  # fmt: skip
    """Covariance (k, k) of the pooled moment estimate of these reports, with their
    design sizes, were the prevalence ``pi`` (k,): the variance an arm's estimate has
    at the common pooled prevalence, which weights it in Cochran's Q (never the arm's
    own plug-in variance, which is 0 for a direct arm without a "yes")."""
    stacked, codes, blocks = pooled_design(designs, groups, reports)
    counts = np.bincount(codes, minlength=stacked.n_reports)
    Q = _estimator(stacked)
    V = _block_covariance(counts, blocks, _within(stacked, counts, blocks, np.asarray(pi)))
    return np.asarray(Q @ V @ Q.T)


def boundary_std_errors(
    design: Design, counts: NDArray[np.int64], blocks: NDArray[np.intp]
) -> NDArray[np.float64] | None:
    """Standard error of each category's moment estimate when its prevalence is 0, for
    two truths (the other's then 1), with the same design sizes; ``None`` for more.

    Used for the power constraint of the Wald interval (Cowan, Cranmer, Gross & Vitells
    2011): an estimate below 0 gets at least the upper end ``z se_0`` an estimate at 0
    would get, so the interval never claims more precision than an estimate at the
    boundary supports. Returns shape (2,)."""
    if design.n_truths != 2:
        return None
    Q = _estimator(design)
    out = np.empty(2)
    for j in range(2):
        pi = np.zeros(2)
        pi[1 - j] = 1.0
        V = _block_covariance(counts, blocks, _within(design, counts, blocks, pi))
        out[j] = float(np.sqrt(max((Q @ V @ Q.T)[j, j], 0.0)))
    return out

"""Decoding RAPPOR reports: LASSO selection and NNLS fit (Erlingsson, Pihur & Korolova 2014)."""

from __future__ import annotations

import numpy as np

from .._extras import require
from .._validation import MEMORY_LIMIT
from ..errors import ReportValidationError
from ..mechanisms import Rappor, RapporReports
from ..tallies import RapporTally
from ._estimates import RapporEstimate
from ._normal_theory import bonferroni_z

__all__ = ["decode_rappor"]


def decode_rappor(
    rappor: Rappor,
    reports: RapporReports | RapporTally,
    alpha: float = 0.05,
    seed: int = 0,
    *,
    memory_limit: int = MEMORY_LIMIT,
) -> RapporEstimate:
    """Frequencies, standard errors and detections of the candidates.

    Per cohort, the number of clients with each Bloom bit set is estimated; the shares
    are regressed on the candidates' Bloom bits (weighted by cohort size): LASSO
    (scikit-learn, non-negative, penalty by 5-fold cross-validation, ``seed``) selects
    candidates, NNLS fits them, and standard errors come from the
    heteroscedasticity-consistent sandwich with the binomial variance of each count
    (Erlingsson, Pihur & Korolova 2014, Section 4; Google's ``analysis/R/decode.R``).

    Parameters
    ----------
    rappor : Rappor
        With candidates (``M`` strings).
    reports : RapporReports or RapporTally
    alpha : float in (0, 1), default 0.05
        Family-wise significance level of the detections.
    seed : int, default 0
        Seed of the cross-validation folds.
    memory_limit : int, default 2 GiB
        Bytes the sparse design matrix may take while it is built
        (:meth:`~deniable.mechanisms.Rappor.sparse_design_matrix`).

    Returns
    -------
    RapporEstimate
        ``estimate`` (M,): estimated share of reports from each candidate (0 when not
        selected); ``std_error`` (M,): sandwich standard errors (0 when not selected);
        ``detected`` (M,): ``estimate / std_error > z_{1 - alpha / M}`` (Bonferroni).

    Raises
    ------
    ValueError
        Without candidates, or for ``alpha`` outside (0, 1).
    MemoryLimitError
        (a ValueError) Before building a design matrix larger than ``memory_limit``.
    ReportValidationError
        For malformed reports or no reports at all.
    ModuleNotFoundError
        Without scikit-learn (``pip install 'deniable[rappor]'``).
    """
    from scipy import optimize

    LassoCV = require("sklearn.linear_model", "rappor").LassoCV
    self = rappor

    tally = reports if isinstance(reports, RapporTally) else self.tally(reports)
    if tally.n == 0:
        raise ReportValidationError("no reports to estimate from (n = 0)")
    X = self.sparse_design_matrix(memory_limit=memory_limit)
    N = tally.n_per_cohort.astype(np.float64)
    used = N > 0
    f, p, q = self.f, self.p, self.q
    scale = (1 - f) * (q - p)
    t = (tally.counts - (p + 0.5 * f * q - 0.5 * f * p) * N[:, None]) / scale
    rows = np.repeat(used, self.n_bloom_bits)
    y = (t[used] / N[used, None]).reshape(-1)
    c = tally.counts[used].astype(np.float64)
    var_y = (c * (N[used, None] - c) / N[used, None]) / (N[used, None] * scale) ** 2
    var_y = np.maximum(var_y.reshape(-1), 1.0 / (N[used].max() * scale) ** 2)
    weight = np.sqrt(np.repeat(N[used], self.n_bloom_bits))
    from scipy import sparse

    Xw = sparse.csc_matrix(sparse.diags(weight) @ X[np.flatnonzero(rows)])
    yw = y * weight
    M = X.shape[1]
    lasso = LassoCV(
        positive=True, fit_intercept=False, cv=5, alphas=40, random_state=seed, max_iter=5000
    ).fit(Xw, yw)
    selected = np.nonzero(lasso.coef_ > 0)[0]
    est = np.zeros(M)
    se = np.zeros(M)
    if selected.size:
        coef, _ = optimize.nnls(Xw[:, selected].toarray(), yw)
        active = selected[coef > 0]
        coef = coef[coef > 0]
        est[active] = coef
        if active.size:
            A = Xw[:, active].toarray()
            bread = np.linalg.pinv(A.T @ A)
            meat = (A * (var_y * weight**2)[:, None]).T @ A
            cov = bread @ meat @ bread
            se[active] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    z = bonferroni_z(alpha, M)
    detected = (se > 0) & (est > z * se)
    return RapporEstimate(
        rappor, tally, "lasso+nnls", est, None, variance=se**2, detected=detected, alpha=alpha
    )

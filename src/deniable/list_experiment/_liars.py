"""The list experiment's ceiling and floor liars (Blair & Imai 2012, section 3.3).

A respondent whose truthful treated count would be ``J + 1`` (every control item and
the sensitive one) reveals the sensitive answer; one whose count would be 1 with only
the sensitive item reveals it as surely by answering 0 nowhere else. Blair & Imai model
the respondents who avoid that: among those with ``Z = 1`` and ``Y(0) = J``, a share
``q_u(x) = g(x_u' beta_u)`` answers ``J`` (ceiling liars); among those with ``Z = 1`` and
``Y(0) = 0``, a share ``q_l(x) = g(x_l' beta_l)`` answers 0 (floor liars). The
constrained model of :mod:`._item_count_ml` gives the rest: ``Z ~ Bernoulli(g(x'delta))``
and ``Y(0) ~ Binomial(J, g(x'psi))``. A treated count's likelihood is the sum over the
latent ``(Z, Y(0))`` that report it:

- ``Z = 0``: ``Y(0) = y`` (``y <= J``);
- ``Z = 1``, ``1 <= Y(0) <= J - 1``: ``y = Y(0) + 1``;
- ``Z = 1``, ``Y(0) = 0``: ``y = 0`` with ``q_l``, ``y = 1`` with ``1 - q_l``;
- ``Z = 1``, ``Y(0) = J``: ``y = J`` with ``q_u``, ``y = J + 1`` with ``1 - q_u``.

(R's ``list::ictreg`` writes the same terms case by case, which counts the liars of
``y = 1`` twice when ``J = 1``; the sum above does not.) With ``liar_prior="cauchy"`` the
liars' coefficients take the weakly informative priors of Gelman, Jakulin, Pittau & Su
(2008) that ``ictreg(ceiling.fit = "bayesglm")`` uses: independent Cauchy(0, 10) on the
intercept and Cauchy(0, 2.5) on each other coefficient, unscaled. The estimate is then
the posterior mode, and its standard errors come from the observed information of the
log posterior.

Without a prior, a liars' share may have its maximum at 0 (no liars of that kind): its
intercept then runs off towards minus infinity, where the log-likelihood is flat, and
the observed information gives it a standard error of 10^5 or more. An intercept below
:data:`BOUNDARY_LOGIT` is tested against the boundary as the overdispersed model's
``rho`` is: the block is held at a share of 0 (intercept :data:`HELD_LOGIT`, other
coefficients 0), the rest refitted, and where a share of 1e-6 does no better the
boundary is taken, with NaN standard errors for the block and a warning; the others'
are those of the model with the block held there.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special

from .._fitting import (
    ModelFrame,
    inverse_information,
    maximise_score,
    model_frame,
    score_hessian,
)
from ._channel import ChannelLikelihood

__all__ = ["LiarLikelihood", "fit_liars", "liar_prior_scales", "log_binomial"]

#: A liars' intercept below this (a share under 4.5e-5) is tested against the boundary 0.
BOUNDARY_LOGIT = -10.0
#: The intercept at which a share at the boundary is held (a share of 9.4e-14).
HELD_LOGIT = -30.0
#: The share whose log-likelihood is compared with the boundary's.
STEP_SHARE = 1e-6

ValueAndScore = Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]]

#: ``liar_prior`` values: none (maximum likelihood), Gelman et al.'s Cauchy priors, or
#: those priors with R's standard errors (every scale 2.5 in the information).
LiarPrior = Literal["cauchy", "list_package"] | None


def log_binomial(k: NDArray[np.float64], j: int, eta: NDArray[np.float64]) -> NDArray[np.float64]:
    """log Binomial(k; j, logistic(eta)), -inf outside 0..j."""
    inside = (k >= 0) & (k <= j)
    kk = np.clip(k, 0, j)
    out = (
        special.gammaln(j + 1)
        - special.gammaln(kk + 1)
        - special.gammaln(j - kk + 1)
        - kk * np.logaddexp(0, -eta)
        - (j - kk) * np.logaddexp(0, eta)
    )
    return np.where(inside, out, -np.inf)


def liar_prior_scales(terms: list[str]) -> NDArray[np.float64]:
    """Cauchy scales of a liar model's coefficients: 10 for the intercept, 2.5 else."""
    return np.array([10.0 if t == "Intercept" else 2.5 for t in terms])


class LiarLikelihood:
    """Observed-data log-likelihood (plus the log prior of the liars' coefficients, if
    any) and its analytic score, for ``theta = (delta, psi, beta_l, beta_u)``; a model
    left out has no coefficients (``q = 0``)."""

    def __init__(
        self,
        y: NDArray[np.float64],
        t: NDArray[np.bool_],
        x: NDArray[np.float64],
        j: int,
        x_floor: NDArray[np.float64] | None,
        x_ceiling: NDArray[np.float64] | None,
        scales: tuple[NDArray[np.float64] | None, NDArray[np.float64] | None],
        variances: tuple[NDArray[np.float64] | None, NDArray[np.float64] | None] = (None, None),
    ):
        self.y, self.t, self.x, self.j = y, t, x, j
        self.x_floor, self.x_ceiling = x_floor, x_ceiling
        self.scales, self.variances = scales, variances
        self.k = x.shape[1]
        self.k_floor = 0 if x_floor is None else x_floor.shape[1]
        self.k_ceiling = 0 if x_ceiling is None else x_ceiling.shape[1]
        self.size = 2 * self.k + self.k_floor + self.k_ceiling
        # log C(J, y) and log C(J, y - 1), -inf outside 0..J (so is the binomial there)
        zero = np.zeros_like(y)
        self._choose = [log_binomial(y - shift, j, zero) + j * math.log(2) for shift in (0, 1)]

    def split(self, theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        k, kf = self.k, self.k_floor
        return theta[:k], theta[k : 2 * k], theta[2 * k : 2 * k + kf], theta[2 * k + kf :]

    def _log_q(
        self, design: NDArray[np.float64] | None, beta: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """``(log q, log (1 - q), q)`` a row; q = 0 without a model."""
        n = self.y.size
        if design is None:
            return np.full(n, -np.inf), np.zeros(n), np.zeros(n)
        eta = design @ beta
        return -np.logaddexp(0, -eta), -np.logaddexp(0, eta), special.expit(eta)

    def _cases(self, theta: NDArray[np.float64]) -> tuple[Any, ...]:
        """Each latent case's posterior given the report, ``w`` (6, n), the log-likelihood
        a row and the cases' derivatives (module text)."""
        delta, psi, b_floor, b_ceiling = self.split(theta)
        x, y, t, j = self.x, self.y, self.t, self.j
        e_d, e_h = x @ delta, x @ psi
        log_g, log_1g = -np.logaddexp(0, -e_d), -np.logaddexp(0, e_d)
        g, h = special.expit(e_d), special.expit(e_h)
        lql, l1ql, ql = self._log_q(self.x_floor, b_floor)
        lqu, l1qu, qu = self._log_q(self.x_ceiling, b_ceiling)
        none = np.full(y.size, -np.inf)
        # log Binomial(k; J, h) = log C(J, k) - k log(1 + e^-eta) - (J - k) log(1 + e^eta)
        up, down = np.logaddexp(0, -e_h), np.logaddexp(0, e_h)
        at_y = self._choose[0] - y * up - (j - y) * down
        below = self._choose[1] - (y - 1) * up - (j - y + 1) * down
        at0, at_j = -j * down, -j * up
        # the latent cases of a treated count: (log term, Y(0), d/d eta_g, d/d eta_l, d/d eta_u)
        cases: list[tuple[Any, Any, Any, Any, Any]] = [
            (log_1g + at_y, y, -g, 0.0, 0.0),
            (np.where((y >= 2) & (y <= j), log_g + below, none), y - 1,
             1 - g, 0.0, 0.0),
            (np.where(y == 0, log_g + lql + at0, none), 0.0, 1 - g, 1 - ql, 0.0),
            (np.where(y == 1, log_g + l1ql + at0, none), 0.0, 1 - g, -ql, 0.0),
            (np.where(y == j, log_g + lqu + at_j, none), float(j), 1 - g, 0.0, 1 - qu),
            (np.where(y == j + 1, log_g + l1qu + at_j, none), float(j), 1 - g, 0.0, -qu),
        ]  # fmt: skip
        terms = np.stack([c[0] for c in cases])
        ll = special.logsumexp(terms, axis=0)
        ll = np.where(t, ll, at_y)
        with np.errstate(invalid="ignore"):
            w = np.exp(terms - ll)
        w = np.where(np.isfinite(w) & t, w, 0.0)
        return w, ll, cases, h, ql, qu

    def rows(self, theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each row's log-likelihood (shape (n,), without the prior; -inf where the count
        is impossible) and its score (shape (n, parameters); 0 there)."""
        x, y, t, j = self.x, self.y, self.t, self.j
        w, ll, cases, h, _, _ = self._cases(theta)
        s_g, s_h, s_l, s_u = (np.zeros(y.size) for _ in range(4))
        for wc, (_, y0, dg, dl, du) in zip(w, cases, strict=True):
            s_g += wc * dg
            s_h += wc * (y0 - j * h)
            s_l += wc * dl
            s_u += wc * du
        s_h = np.where(t, s_h, y - j * h)
        possible = np.isfinite(ll)
        parts = [x * s_g[:, None], x * s_h[:, None]]
        for design, s in ((self.x_floor, s_l), (self.x_ceiling, s_u)):
            if design is not None:
                parts.append(design * s[:, None])
        return ll, np.where(possible[:, None], np.concatenate(parts, axis=1), 0.0)

    def log_prior(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """The liars' coefficients' log prior (Cauchy or Normal, where given) and its
        gradient (shape (parameters,); 0 for delta and psi)."""
        _, _, b_floor, b_ceiling = self.split(theta)
        value, grads = 0.0, [np.zeros(2 * self.k)]
        for m, beta in enumerate((b_floor, b_ceiling)):
            if beta.size == 0:
                continue
            grad = np.zeros(beta.size)
            scale, variance = self.scales[m], self.variances[m]
            if scale is not None:  # Cauchy(0, scale) on each coefficient
                value -= float(np.sum(np.log(math.pi * scale) + np.log1p((beta / scale) ** 2)))
                grad -= 2 * beta / (scale**2 + beta**2)
            if variance is not None:  # Normal(0, variance) on each coefficient
                value -= float(
                    np.sum(0.5 * np.log(2 * math.pi * variance) + beta**2 / (2 * variance))
                )
                grad -= beta / variance
            grads.append(grad)
        return value, np.concatenate(grads)

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        ll, score = self.rows(theta)
        prior, grad = self.log_prior(theta)
        return float(ll.sum()) + prior, score.sum(axis=0) + grad

    def liar_information(
        self, theta: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64] | None, NDArray[np.float64] | None]:
        """The complete-data information of each liar model's logistic regression at the
        E-step of ``theta``: ``X' diag(a q (1 - q)) X``, ``a`` the posterior probability
        that the row is at risk of lying (``Z = 1`` and ``Y(0) = 0`` or ``J``)."""
        w, _, _, _, ql, qu = self._cases(theta)
        out: list[NDArray[np.float64] | None] = []
        for design, a, q in ((self.x_floor, w[2] + w[3], ql), (self.x_ceiling, w[4] + w[5], qu)):
            out.append(None if design is None else design.T @ ((a * q * (1 - q))[:, None] * design))
        return out[0], out[1]


def fit_liars(
    frame: ModelFrame,
    data: pd.DataFrame,
    counts: tuple[NDArray[np.float64], NDArray[np.bool_], int],
    liars: tuple[bool | str, bool | str],
    prior: LiarPrior,
    start: NDArray[np.float64],
    max_iter: int,
    channel: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64], list[str]]:
    """The ceiling and floor liar model (module text) from the constrained fit ``start``:
    ``(theta, log-likelihood, score, covariance, the liars' names)``; with ``channel``
    (the misclassification matrix over ``0..J+1``) the counts were stored through it
    (:mod:`._channel`).

    Raises
    ------
    ValueError
        For an unknown ``prior``, a liar formula with missing values in rows kept, or
        ``prior="list_package"`` (R's fixed point of the counts as sent) with a channel.
    """
    if prior not in (None, "cauchy", "list_package"):
        raise ValueError(f"liar_prior must be None, 'cauchy' or 'list_package', got {prior!r}")
    if channel is not None and prior == "list_package":
        raise ValueError(
            "liar_prior='list_package' reproduces R's fit of counts as sent; through a "
            "channel use liar_prior=None or 'cauchy'"
        )
    y, t, j = counts
    designs: list[NDArray[np.float64] | None] = []
    scales: list[NDArray[np.float64] | None] = []
    names: list[str] = []
    for label, spec in zip(("floor", "ceiling"), (liars[1], liars[0]), strict=True):
        if spec is False:
            designs.append(None)
            scales.append(None)
            continue
        rhs = "1" if spec is True else str(spec).strip().lstrip("~")
        liar = model_frame(f"{frame.response} ~ {rhs}", data.loc[frame.rows])
        if len(liar.rows) != len(frame.rows):
            raise ValueError(f"the {label} formula {spec!r} has missing values in rows kept")
        designs.append(liar.X)
        scales.append(None if prior is None else liar_prior_scales(liar.terms))
        names += [f"{label}.{s}" for s in liar.terms]
    lik = LiarLikelihood(y, t, frame.X, j, designs[0], designs[1], (scales[0], scales[1]))
    if channel is not None:
        return _fit_through(lik, start, max_iter, channel, names)
    begin = _begin(lik, start)
    bare = LiarLikelihood(y, t, frame.X, j, designs[0], designs[1], (None, None))
    if prior is None:  # a share's maximum may be at 0: held there, NaN standard errors
        theta = maximise_score(lik.value_and_score, begin, max_iter)
        theta, score, cov = _at_boundary(lik.value_and_score, theta, lik, names, max_iter)
        return theta, bare.value_and_score(theta)[0], score, cov, names
    if prior == "list_package":
        theta, score = _bayesglm_fixed_point(lik, begin, max_iter)
    else:
        theta = maximise_score(lik.value_and_score, begin, max_iter)
        _, score = lik.value_and_score(theta)
    # the log-likelihood at the estimate, without the prior (as R reports it)
    ll = bare.value_and_score(theta)[0]
    information = lik
    if prior == "list_package":  # R's Hessian: every liar coefficient at scale 2.5
        flat = [None if s is None else np.full(s.size, 2.5) for s in scales]
        information = LiarLikelihood(y, t, frame.X, j, designs[0], designs[1], (flat[0], flat[1]))
    cov = np.asarray(np.linalg.inv(-score_hessian(information.value_and_score, theta)))
    return theta, ll, score, cov, names


def _blocks(lik: LiarLikelihood, names: list[str]) -> list[tuple[str, int, int, int]]:
    """``(label, first index, width, intercept index)`` of each liar block with an
    intercept."""
    out = []
    for label, offset, width in (("floor", 2 * lik.k, lik.k_floor),
                                 ("ceiling", 2 * lik.k + lik.k_floor, lik.k_ceiling)):  # fmt: skip
        block = names[offset - 2 * lik.k : offset - 2 * lik.k + width]
        if width and f"{label}.Intercept" in block:
            out.append((label, offset, width, offset + block.index(f"{label}.Intercept")))
    return out


def _held(
    value_and_score: ValueAndScore, size: int, fixed: dict[int, float]
) -> tuple[ValueAndScore, Callable[[NDArray[np.float64]], NDArray[np.float64]], list[int]]:
    """The objective of the coefficients not in ``fixed``, those held at their values."""
    keep = [i for i in range(size) if i not in fixed]

    def full(free: NDArray[np.float64]) -> NDArray[np.float64]:
        theta = np.empty(size)
        theta[keep] = free
        for i, v in fixed.items():
            theta[i] = v
        return theta

    def held(free: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        value, score = value_and_score(full(free))
        return value, score[keep]

    return held, full, keep


def _at_boundary(
    value_and_score: ValueAndScore,
    theta: NDArray[np.float64],
    lik: LiarLikelihood,
    names: list[str],
    max_iter: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The maximum likelihood fit with any liars' share whose maximum is at 0 held there
    (module text): ``(theta, score, covariance)``, NaN in the held blocks' rows."""
    fixed: dict[int, float] = {}
    for label, offset, width, intercept in _blocks(lik, names):
        if theta[intercept] >= BOUNDARY_LOGIT:
            continue
        block = {offset + i: 0.0 for i in range(width)} | {intercept: HELD_LOGIT}
        trial = fixed | block
        held, full, keep = _held(value_and_score, theta.size, trial)
        at = full(maximise_score(held, theta[keep], max_iter))
        step = at.copy()
        step[intercept] = math.log(STEP_SHARE / (1 - STEP_SHARE))
        if value_and_score(step)[0] <= value_and_score(at)[0]:
            fixed, theta = trial, at
            warnings.warn(
                f"the {label} liars' share is at its boundary (0: no {label} liars): its "
                "coefficients' standard errors are undefined (NaN) and the others' are "
                "those of the model with it held there",
                stacklevel=6,
            )
    held, _, keep = _held(value_and_score, theta.size, fixed)
    _, score_free = held(theta[keep])
    cov_free = inverse_information(-score_hessian(held, theta[keep]), "the observed information")
    cov = np.full((theta.size, theta.size), np.nan)
    cov[np.ix_(keep, keep)] = cov_free
    score = np.zeros(theta.size)
    score[keep] = score_free
    return theta, score, cov


def _begin(lik: LiarLikelihood, start: NDArray[np.float64]) -> NDArray[np.float64]:
    """The liar model's start: the constrained fit, and about one in eight lying."""
    begin = np.zeros(lik.size)
    begin[: 2 * lik.k] = start
    for offset, design in ((2 * lik.k, lik.x_floor), (2 * lik.k + lik.k_floor, lik.x_ceiling)):
        if design is not None:
            begin[offset] = -2.0
    return begin


def _fit_through(
    lik: LiarLikelihood,
    start: NDArray[np.float64],
    max_iter: int,
    channel: NDArray[np.float64],
    names: list[str],
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64], list[str]]:
    """:func:`fit_liars` of counts stored through ``channel``: the liar model at each
    count ``0..J+1`` summed over the counts a stored value may come from."""
    n = lik.y.size
    at = [
        LiarLikelihood(np.full(n, float(c)), lik.t, lik.x, lik.j, lik.x_floor, lik.x_ceiling,
                       lik.scales)
        for c in range(lik.j + 2)
    ]  # fmt: skip
    through = ChannelLikelihood(lambda theta, c: at[c].rows(theta), lik.y, channel, lik.log_prior)
    theta = maximise_score(through.value_and_score, _begin(lik, start), max_iter)
    _, score = through.value_and_score(theta)
    bare = ChannelLikelihood(lambda th, c: at[c].rows(th), lik.y, channel)  # without the prior
    cov = np.asarray(np.linalg.inv(-score_hessian(through.value_and_score, theta)))
    return theta, bare.value_and_score(theta)[0], score, cov, names


def _bayesglm_fixed_point(
    lik: LiarLikelihood, theta: NDArray[np.float64], max_iter: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """R's estimate under ``ceiling.fit = "bayesglm"``: not the posterior mode, but the
    fixed point of Gelman et al.'s (2008) approximate EM that ``arm::bayesglm`` runs in
    each M-step. Each liar coefficient takes a Normal(0, sd^2) prior with ``sd^2 =
    (beta^2 + V_jj + scale^2) / 2`` (the t prior of 1 df), ``V`` the inverse of the
    complete-data information of the liars' logistic regression plus ``diag(1 / sd^2)``;
    iterated until ``sd^2`` moves by less than 1e-9 relatively (the estimate then moves
    by about 1e-9 too). Returns the estimate
    and the score of the last step's objective (0 at the fixed point)."""
    scales = lik.scales
    variances = [None if s is None else s**2 for s in scales]
    for _ in range(1000):
        step = LiarLikelihood(lik.y, lik.t, lik.x, lik.j, lik.x_floor, lik.x_ceiling,
                              (None, None), (variances[0], variances[1]))  # fmt: skip
        theta = maximise_score(step.value_and_score, theta, max_iter)
        betas, change = step.split(theta)[2:], 0.0
        for m, information in enumerate(step.liar_information(theta)):
            old, scale = variances[m], scales[m]
            if information is None or old is None or scale is None:
                continue
            v = np.linalg.inv(information + np.diag(1 / old))
            new = (betas[m] ** 2 + np.diag(v) + scale**2) / 2
            change = max(change, float(np.max(np.abs(new - old) / old)))
            variances[m] = new
        if change < 1e-9:
            break
    return theta, step.value_and_score(theta)[1]

"""Bayesian logistic regression of a randomized answer (as rr's ``rrreg.bayes``).

The model of :func:`~deniable.analysis.rr_logit`: row ``i`` reports ``y_i`` with chance
``A + B Z_i`` (its design's line, :mod:`deniable.analysis`) given its true
answer ``Z_i ~ Bernoulli(sigmoid(x_i beta))``, with independent normal priors ``beta_j ~
N(mu_j, sd_j^2)`` (rr's defaults: mean 0, precision 0.01, so sd 10). The posterior is
sampled by data augmentation of the true answers (Tanner & Wong 1987; Blair, Imai &
Zhou 2015 for randomized response), alternating

1. ``Z_i | y_i, beta ~ Bernoulli((A + B) s_i / (A + B s_i))``, ``s_i = sigmoid(x_i
   beta)`` (exact), and
2. ``beta | Z``: :data:`METROPOLIS_STEPS` random-walk Metropolis steps on the
   complete-data logistic posterior,
   its proposal ``N(beta, (2.38^2 / p) V)`` with ``V`` the inverse complete-data
   information at the maximum-likelihood fit (Roberts, Gelman & Gilks 1997),

in ``chains`` chains started from overdispersed points around the maximum-likelihood
fit. Convergence is checked by the split R-hat of every coefficient (Gelman et al.
2013, BDA3 Sec. 11.4) and the effective sample size from the chains' autocorrelations
(Geyer's initial positive sequence); a result whose largest R-hat exceeds ``max_rhat``
refuses to be summarised (:class:`NotConvergedError`) and says how far it is.

The flat-prior posterior is improper (the likelihood of a randomized answer stays
bounded away from 0 as a coefficient grows: a report is possible whatever the truth),
so the prior's sd must be finite.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from .._fitting import PosteriorMixin, model_frame
from .._validation import JSON, check_integer
from ..estimation import Summary
from ..mechanisms import Design
from ._group_channels import GroupModel, as_channel
from ._regression import report_codes, rr_logit

__all__ = [
    "METROPOLIS_STEPS",
    "NotConvergedError",
    "RRLogitBayesResult",
    "effective_sample_size",
    "rr_logit_bayes",
    "split_rhat",
]

_Array = NDArray[np.float64]
#: Metropolis steps on ``beta | Z`` between two draws of the true answers.
METROPOLIS_STEPS = 5


class NotConvergedError(RuntimeError):
    """The chains have not converged (split R-hat above the limit): the posterior is
    not summarised."""


def split_rhat(draws: ArrayLike) -> _Array:
    """Split R-hat of each parameter, shape (p,), from draws of shape (chains, draws,
    p) (Gelman et al. 2013, BDA3 Sec. 11.4): each chain cut in halves, then the ratio of
    the pooled variance estimate to the mean within-half variance, square-rooted.
    Near 1 when the chains agree; 1.01 is the usual limit (Vehtari et al. 2021).

    Raises
    ------
    ValueError
        For fewer than 4 draws a chain or an array that is not 3-D.
    """
    x = np.asarray(draws, dtype=np.float64)
    if x.ndim != 3 or x.shape[1] < 4:
        raise ValueError("draws must have shape (chains, draws >= 4, parameters)")
    half = x.shape[1] // 2
    halves = np.concatenate([x[:, :half], x[:, half : 2 * half]], axis=0)  # (2C, half, p)
    n = halves.shape[1]
    means = halves.mean(axis=1)
    within = halves.var(axis=1, ddof=1).mean(axis=0)
    between = n * means.var(axis=0, ddof=1)
    pooled = (n - 1) / n * within + between / n
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.sqrt(pooled / within)
    return np.where(within > 0, rhat, np.inf)


def effective_sample_size(draws: ArrayLike) -> _Array:
    """Effective sample size of each parameter, shape (p,), from draws (chains, draws,
    p): the chains' pooled autocorrelations summed in pairs while positive (Geyer's
    initial positive sequence; Gelman et al. 2013, BDA3 Sec. 11.5)."""
    x = np.asarray(draws, dtype=np.float64)
    chains, n, p = x.shape
    centred = x - x.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n
    within = x.var(axis=1, ddof=1).mean(axis=0)
    pooled = (n - 1) / n * within + x.mean(axis=1).var(axis=0, ddof=1 if chains > 1 else 0)
    out = np.empty(p)
    for j in range(p):
        if pooled[j] <= 0:
            out[j] = chains * n
            continue
        rho = 1.0 - (within[j] - acov[:, :, j].mean(axis=0)) / pooled[j]
        rho[0] = 1.0
        total, t = 0.0, 0
        while t + 1 < n:
            pair = rho[t] + rho[t + 1]
            if pair <= 0:
                break
            total += pair
            t += 2
        out[j] = chains * n / max(2 * total - 1, 1e-12)
    return np.asarray(np.minimum(out, chains * n * math.log10(chains * n)), dtype=np.float64)


@dataclass(frozen=True)
class RRLogitBayesResult(PosteriorMixin):
    """Posterior draws of a Bayesian randomized-response logistic regression: an
    estimate on the common base (``estimate`` the posterior means, ``std_error`` the
    posterior standard deviations, ``confidence_interval`` the equal-tailed credible
    interval, ``to_dict`` the one JSON shape with R-hat and ESS).

    Attributes
    ----------
    draws : ndarray, shape (chains, draws, p), float64
        The kept draws of the coefficients, chain by chain.
    terms : list of str
    rhat : ndarray, shape (p,)
        Split R-hat of each coefficient.
    ess : ndarray, shape (p,)
        Effective sample size of each coefficient.
    acceptance : float in [0, 1]
        Share of accepted Metropolis proposals.
    max_rhat : float
        The limit above which the result refuses to be summarised.
    prior_mean, prior_sd : ndarray, shape (p,)

    Examples
    --------
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> x = example.data["x"]
    >>> from deniable.analysis import rr_logit_bayes
    >>> fit = rr_logit_bayes("r ~ x", data, design, draws=500, burn_in=200, max_rhat=1.1)
    >>> fit.labels, fit.converged
    (['Intercept', 'x'], True)
    """

    draws: _Array = field(repr=False)
    terms: list[str]
    rhat: _Array
    ess: _Array
    acceptance: float
    max_rhat: float
    prior_mean: _Array = field(repr=False)
    prior_sd: _Array = field(repr=False)

    def _draws_frame(self) -> pd.DataFrame:
        """Every chain's kept draws, one column per term (raises as :attr:`estimate`)."""
        self._check()
        return pd.DataFrame(self.draws.reshape(-1, self.draws.shape[2]), columns=self.terms)

    @property
    def labels(self) -> list[str]:
        """The terms, as every estimate names its entries."""
        return list(self.terms)

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape, with each term's ``rhat`` and ``ess``, the ``acceptance``
        and the chains' shape (raises as :attr:`estimate`)."""
        out = super().to_dict(confidence_level, method)
        chains, draws, _ = self.draws.shape
        return out | {
            "rhat": self.rhat.tolist(),
            "ess": self.ess.tolist(),
            "acceptance": self.acceptance,
            "chains": chains,
            "draws": draws,
        }

    @property
    def converged(self) -> bool:
        """Whether every split R-hat is at most :attr:`max_rhat`."""
        return bool(np.all(self.rhat <= self.max_rhat))

    def _check(self) -> None:
        if not self.converged:
            worst = int(np.argmax(self.rhat))
            raise NotConvergedError(
                f"the chains have not converged: split R-hat of {self.terms[worst]!r} is "
                f"{self.rhat[worst]:.3f} > max_rhat = {self.max_rhat}; run more draws "
                "(draws=, burn_in=) or check the model"
            )

    @property
    def mc_std_error(self) -> pd.Series:
        """Monte-Carlo standard error of each posterior mean: sd / sqrt(ESS)."""
        return self.std_error / np.sqrt(self.ess)

    def credible_interval(self, level: float = 0.95) -> pd.DataFrame:
        """The old name of :meth:`conf_int` (equal-tailed credible intervals, columns
        ``low`` and ``high`` by term), kept one release with a ``DeprecationWarning``.

        Raises
        ------
        NotConvergedError, ValueError
            Unconverged chains; a level outside (0, 1).
        """
        import warnings

        warnings.warn(
            "RRLogitBayesResult.credible_interval is renamed conf_int (the package's one "
            "name); the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.conf_int(level)

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Posterior mean, sd, credible interval, R-hat and ESS by term (raises as
        :attr:`estimate`; ``method`` is ``bayes`` or None)."""
        level = confidence_level
        ci = self.conf_int(level)
        mean, sd = self.estimate, self.std_error
        head = (
            f"{'':14s} {'mean':>9s} {'sd':>8s} {'low':>9s} {'high':>9s} {'R-hat':>6s} {'ESS':>7s}"
        )
        lines = [
            "Bayesian randomized-response logistic regression (data augmentation)",
            f"chains {self.draws.shape[0]} x draws {self.draws.shape[1]}; acceptance "
            f"{self.acceptance:.2f}; {level:.0%} equal-tailed intervals",
            head,
        ]
        low, high = ci["low"].to_numpy(), ci["high"].to_numpy()
        for j, t in enumerate(self.terms):
            lines.append(
                f"{t:14s} {mean.iloc[j]:9.4f} {sd.iloc[j]:9.4f} {low[j]:9.4f} {high[j]:9.4f} "
                f"{self.rhat[j]:9.3f} {self.ess[j]:9.0f}"
            )
        return Summary("\n".join(lines))


def rr_logit_bayes(
    formula: str,
    data: pd.DataFrame,
    design: Design | Mapping[Hashable, Design] | GroupModel,
    *,
    group: str | None = None,
    prior_mean: float | ArrayLike = 0.0,
    prior_sd: float | ArrayLike = 10.0,
    chains: int = 4,
    draws: int = 5000,
    burn_in: int = 1000,
    max_rhat: float = 1.01,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int], None] | None = None,
) -> RRLogitBayesResult:
    """Sample the posterior of a randomized-response logistic regression (module text).

    Parameters
    ----------
    formula, data, design, group
        As :func:`~deniable.analysis.rr_logit`; the design must be known (no unknown
        channel parameters).
    prior_mean : float or array of shape (p,), default 0
    prior_sd : float > 0 or array of shape (p,), default 10
        Normal prior sd of each coefficient (rr's default precision 0.01).
    chains : int in 2..64, default 4
    draws, burn_in : int, default 5000 and 1000
        Kept and discarded iterations per chain (at most 10^6 in all). On rr's Nigeria
        data (2,423 rows, 7 coefficients) the defaults give effective sample sizes of
        about 1,400 and split R-hats below 1.01 in about 20 s.
    max_rhat : float > 1, default 1.01
    rng : Generator or seed, optional
    progress : callable, optional
        Called as ``progress(1)`` after each iteration of the sampler (every chain at
        once), ``burn_in + draws`` calls in all: a bar's advance, or a callback.

    Returns
    -------
    RRLogitBayesResult

    Raises
    ------
    ValueError
        For a design with unknown parameters, a non-positive or non-finite prior sd,
        bad counts, or what :func:`rr_logit` refuses.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import Warner
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=1000)
    >>> truth = rng.random(1000) < 1 / (1 + np.exp(1 - x))
    >>> design = Warner(p=0.85)
    >>> df = pd.DataFrame({"y": design.randomize(truth.astype(int), rng), "x": x})
    >>> fit = rr_logit_bayes("y ~ x", df, design, chains=2, draws=500, rng=0)
    >>> fit.estimate.round(1).to_dict()
    {'Intercept': -0.8, 'x': 0.8}
    """
    chains, draws, burn_in = _check_sampler(chains, draws, burn_in, max_rhat)
    channel = as_channel(design)
    if channel.param_names:
        raise ValueError("rr_logit_bayes needs a known design (no unknown parameters)")
    frame = model_frame(formula, data)
    X = np.asarray(frame.X, dtype=np.float64)
    n, p = X.shape
    y = report_codes(frame.y, channel.n_reports, frame.response)
    keys = data.loc[frame.rows, group].to_numpy() if group is not None else None
    groups = channel.group_codes(keys, n)
    mean0 = np.broadcast_to(np.asarray(prior_mean, dtype=np.float64), (p,)).copy()
    sd0 = np.broadcast_to(np.asarray(prior_sd, dtype=np.float64), (p,)).copy()
    if not np.all(np.isfinite(sd0) & (sd0 > 0)):
        raise ValueError("prior_sd must be finite and > 0 (the flat-prior posterior is improper)")
    A, B, _, _ = channel.coefficients(np.empty(0))
    a, b = A[groups, y], B[groups, y]
    gen = np.random.default_rng(rng)
    mle = rr_logit(formula, data, design, group=group)
    beta_hat = mle.params.to_numpy()[:p]
    if not np.all(np.isfinite(beta_hat)):
        beta_hat = mean0.copy()
    s = expit(X @ beta_hat)
    info = (X * (s * (1 - s))[:, None]).T @ X + np.diag(1 / sd0**2)
    proposal = np.linalg.cholesky(np.linalg.inv(info) * 2.38**2 / p)
    beta = beta_hat + 2.0 * (gen.standard_normal((chains, p)) @ _spread(mle, sd0, p).T)
    model = _Augmented(X, a, b, mean0, sd0, proposal)
    kept, accepted = _sample(model, beta, burn_in, draws, gen, progress)
    return RRLogitBayesResult(
        draws=kept,
        terms=[str(t) for t in frame.terms],
        rhat=split_rhat(kept),
        ess=effective_sample_size(kept),
        acceptance=accepted / (chains * draws * METROPOLIS_STEPS),
        max_rhat=float(max_rhat),
        prior_mean=mean0,
        prior_sd=sd0,
    )


def _check_sampler(chains: int, draws: int, burn_in: int, max_rhat: float) -> tuple[int, int, int]:
    """The sampler's sizes, checked: at most 64 chains and 10^6 draws in all."""
    chains = check_integer("chains", chains, minimum=2)
    draws = check_integer("draws", draws, minimum=4)
    burn_in = check_integer("burn_in", burn_in, minimum=0)
    if chains > 64 or chains * (draws + burn_in) > 10**6:
        raise ValueError("chains must be at most 64 and chains x (draws + burn_in) at most 10^6")
    if not max_rhat > 1:
        raise ValueError(f"max_rhat must be above 1, got {max_rhat!r}")
    return chains, draws, burn_in


def _spread(mle: Any, sd0: NDArray[np.float64], p: int) -> NDArray[np.float64]:
    """The starts' spread: the fit's covariance factor, or the prior's where it has none."""
    try:
        spread = np.linalg.cholesky(mle.covariance[:p, :p] + 1e-12 * np.eye(p))
        if not np.all(np.isfinite(spread)):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        spread = np.diag(np.minimum(sd0, 1.0))
    return np.asarray(spread, dtype=np.float64)


class _Augmented(NamedTuple):
    """The data-augmented model: the design matrix, each row's report terms ``a``,
    ``b`` (``Pr(report | yes) = a + b``, ``Pr(report | no) = a``), the normal prior and
    the random-walk proposal's Cholesky factor."""

    X: _Array
    a: _Array
    b: _Array
    mean0: _Array
    sd0: _Array
    proposal: _Array

    def complete(self, beta: _Array, z: _Array) -> _Array:
        """log p(Z | beta) + log prior, one value per chain, shape (C,)."""
        eta = self.X @ beta.T  # (n, C)
        ll = (z * eta - np.logaddexp(0.0, eta)).sum(axis=0)
        return np.asarray(ll - 0.5 * (((beta - self.mean0) / self.sd0) ** 2).sum(axis=1))


def _sample(
    model: _Augmented,
    beta: _Array,
    burn_in: int,
    draws: int,
    gen: np.random.Generator,
    progress: Callable[[int], None] | None = None,
) -> tuple[_Array, int]:
    """Gibbs over the true answers, Metropolis within for the coefficients, every chain
    at once: the kept draws (chains, draws, p) and the proposals accepted."""
    chains, p = beta.shape
    X, a, b = model.X, model.a, model.b
    kept = np.empty((chains, draws, p))
    accepted = 0
    for it in range(burn_in + draws):
        s = expit(X @ beta.T)  # (n, C)
        post = (a + b)[:, None] * s / (a[:, None] + b[:, None] * s)
        z = (gen.random(post.shape) < post).astype(np.float64)
        current = model.complete(beta, z)
        for _ in range(METROPOLIS_STEPS):
            candidate = beta + gen.standard_normal((chains, p)) @ model.proposal.T
            proposed = model.complete(candidate, z)
            accept = np.log(gen.random(chains)) < proposed - current
            beta = np.where(accept[:, None], candidate, beta)
            current = np.where(accept, proposed, current)
            if it >= burn_in:
                accepted += int(accept.sum())
        if it >= burn_in:
            kept[:, it - burn_in] = beta
        if progress is not None:
            progress(1)
    return kept, accepted

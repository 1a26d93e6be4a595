"""Two-layer randomized response for a panel: RAPPOR's permanent and instantaneous layers
over a finite design (Erlingsson, Pihur & Korolova 2014, section 3).

A person asked the same question in several waves keeps, per distinct true answer
``t``, a *permanent* report ``s ~ P[:, t]`` drawn once (``P``: the permanent design, a
square ``(k, k)`` design over the answers), and every wave sends an *instantaneous*
randomization ``r ~ M[:, s]`` of it (``M``: the instantaneous design, ``(m, k)``). The
report of one wave follows the composed channel ``C = M P`` (shape ``(m, k)``), which
the estimators use exactly; what one report reveals is ``epsilon_1 = epsilon(C)``; what
any number of reports of one answer reveal together is at most ``epsilon_inf =
epsilon(P)`` (they are post-processing of one permanent report), so a person whose answer
takes ``d`` distinct values over the waves spends at most ``d epsilon_inf``
(sequential composition over the ``d`` independent permanent reports; Dwork & Roth
2014, Thm 3.16). ``epsilon_1 <= min(epsilon(M), epsilon(P))`` (post-processing).

Whoever holds a device's permanent reports and sees one of its sent reports learns the
answer behind it up to the instantaneous layer's ``epsilon(M)`` only.

Covariance across waves
-----------------------
Given the truths, two reports of one person are independent unless they share a
permanent report (the same answer in both waves); then ``r1, r2`` are independent given
``s``, so for any vector ``g`` over reports
``Cov(g[r1], g[r2] | t) = Var_s(sum_r g[r] M[r, s]) >= 0`` with ``s ~ P[:, t]``
(:meth:`TwoLayerDesign.shared_covariance`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import as_codes
from ._designs import Design
from ._randomness import RandomSource

__all__ = ["TwoLayerDesign"]


class TwoLayerDesign(Design):
    """The composed channel of a permanent and an instantaneous design.

    Parameters
    ----------
    permanent : Design
        Square design ``P``, shape ``(k, k)``: the permanent layer over the ``k`` answers.
    instantaneous : Design
        Design ``M``, shape ``(m, k)``, over the ``k`` permanent reports (which are
        answers' codes).
    truth_labels, report_labels : tuple of str, optional
        Default: the instantaneous design's.

    Attributes
    ----------
    matrix : ndarray, shape (m, k), float64
        ``M @ P``, ``Pr(report r | truth t)`` of one wave.
    epsilon_1 : float
        Nats one report reveals: :attr:`epsilon` of the composed channel.
    epsilon_inf : float
        Nats all reports of one answer reveal together: ``epsilon(P)``.

    Raises
    ------
    ValueError
        If ``P`` is not square or its size differs from ``M``'s number of truths, or
        the composed matrix is not identifiable (rank deficient).

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.mechanisms import TwoLayerDesign
    >>> panel = TwoLayerDesign(Warner(p=0.9), Warner(p=0.75))
    >>> panel.matrix.round(3).tolist(), round(panel.epsilon, 4)
    ([[0.7, 0.3], [0.3, 0.7]], 0.8473)
    """

    spec_name = "matrix"  # its spec rebuilds the composed channel as a MatrixDesign

    def __init__(
        self,
        permanent: Design,
        instantaneous: Design,
        *,
        truth_labels: tuple[str, ...] | None = None,
        report_labels: tuple[str, ...] | None = None,
    ) -> None:
        k = instantaneous.n_truths
        if permanent.matrix.shape != (k, k):
            raise ValueError(
                f"panel.permanent must be a design over the question's {k} answers with "
                f"{k} reports (one per answer), got shape {permanent.matrix.shape} "
                "(reports x answers)"
            )
        composed = instantaneous.matrix @ permanent.matrix
        composed = composed / composed.sum(axis=0)
        if np.linalg.matrix_rank(composed) < k:
            raise ValueError("panel: the composed channel does not identify the answers")
        self.permanent = permanent
        self.instantaneous = instantaneous
        super().__init__(
            composed,
            truth_labels=truth_labels or instantaneous.truth_labels,
            report_labels=report_labels or instantaneous.report_labels,
        )

    @property
    def two_layer(self) -> TwoLayerDesign:
        """This design (a panel's two layers)."""
        return self

    @property
    def epsilon_1(self) -> float:
        """Nats one wave's report reveals (the composed channel's epsilon)."""
        return self.epsilon

    @property
    def epsilon_inf(self) -> float:
        """Nats every report of one answer reveals together (the permanent layer's):
        the bound of one device, which keeps one permanent report per answer."""
        return self.permanent.epsilon

    def shared_bound(self, reports: int) -> float:
        """Nats that ``reports`` reports drawn from one permanent report reveal at most:
        ``epsilon_1`` for one; for more, ``min(epsilon_inf, reports x epsilon(M))``
        (post-processing of the permanent report; and each report is
        ``epsilon(M)``-LDP given it, so the likelihood ratio of the reports between two
        answers is at most ``e^(reports epsilon(M))``).

        Parameters
        ----------
        reports : int, at least 1

        Raises
        ------
        ValueError
            If ``reports`` is below 1.
        """
        if reports < 1:
            raise ValueError(f"reports must be at least 1, got {reports}")
        if reports == 1:
            return self.epsilon_1
        return min(self.epsilon_inf, reports * self.instantaneous.epsilon)

    def waves_bound(self, waves: int) -> float:
        """Nats a person's reports of ``waves`` waves reveal at most, *whatever devices
        answer*: each device keeps its own permanent report per answer, so the waves
        split into groups that share one (a device and an answer), independent of each
        other; the bound is the largest sum of :meth:`shared_bound` over the ways to
        split ``waves`` into groups (sequential composition across groups, Dwork & Roth
        2014, Thm 3.16). Every wave on a new device gives ``waves x epsilon_1``, the
        usual worst case; RAPPOR's ``k x epsilon_inf`` (Erlingsson et al. 2014) is the
        bound of one device only.

        Parameters
        ----------
        waves : int, at least 0

        Returns
        -------
        float
            Nats; 0 for no waves. Non-decreasing in ``waves``.

        Raises
        ------
        ValueError
            If ``waves`` is negative.

        Examples
        --------
        >>> from deniable import Warner
        >>> from deniable.mechanisms import TwoLayerDesign
        >>> panel = TwoLayerDesign(Warner(p=0.9), Warner(p=0.9))
        >>> round(panel.waves_bound(6), 4), round(6 * panel.epsilon_1, 4)
        (9.0981, 9.0981)
        """
        if waves < 0:
            raise ValueError(f"waves must be at least 0, got {waves}")
        e_1, e_inf, e_m = self.epsilon_1, self.epsilon_inf, self.instantaneous.epsilon
        shared = np.array([0.0, e_1] + [min(e_inf, m * e_m) for m in range(2, waves + 1)])
        best = np.zeros(waves + 1)
        for w in range(1, waves + 1):  # best[w] = max over the first group's size m
            best[w] = float(np.max(shared[1 : w + 1] + best[w - 1 :: -1][:w]))
        return float(best[waves])

    def permanent_reports(self, truths: ArrayLike, u: ArrayLike) -> NDArray[np.integer]:
        """The permanent report of each truth for the uniforms ``u``, drawn as
        :meth:`~deniable.mechanisms.Design.randomize` draws (two reports: 1 when
        ``u < P[1, t]``; more: the first ``s`` with ``u < P[0, t] + ... + P[s, t]``): a
        device derives ``u`` once per answer, so the same answer always finds the same
        permanent report.

        Parameters
        ----------
        truths : array_like of int, shape (n,)
            Answer codes ``0..k-1``.
        u : array_like of float, shape (n,)
            Uniforms on [0, 1).
        """
        codes = as_codes("truths", truths, self.n_truths)
        grid = np.asarray(u, dtype=np.float64).reshape(codes.shape)
        # the generic draw of the matrix (not a named design's own, k-ary RR's differs):
        # what a device that rebuilt the layer from its served columns draws
        return Design._draw(self.permanent, codes, grid)

    def instantaneous_reports(
        self, permanent: ArrayLike, rng: RandomSource | np.random.Generator | None = None
    ) -> NDArray[np.integer]:
        """A fresh instantaneous report of each permanent report (secure source by
        default), shape ``(n,)``."""
        return self.instantaneous.randomize(permanent, rng)

    def shared_covariance(self, truth: int) -> NDArray[np.float64]:
        """Covariance matrix, shape ``(m, m)``, of the report indicators of two waves of
        one person whose answer ``truth`` is the same in both (they share a permanent
        report): ``sum_s P[s, t] M[:, s] M[:, s]^T - C[:, t] C[:, t]^T``, positive
        semi-definite."""
        M, P = self.instantaneous.matrix, self.permanent.matrix
        c = self.matrix[:, truth]
        return (M * P[:, truth]) @ M.T - np.outer(c, c)

    @property
    def params(self) -> dict[str, Any]:
        """``{"matrix": composed}`` (the channel of one report)."""
        return {"matrix": self.matrix.tolist()}

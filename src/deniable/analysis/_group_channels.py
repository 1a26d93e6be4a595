"""Binary-trait channels with several randomization groups and unknown parameters.

A *channel* says how the report of a respondent in randomization group ``g`` depends
on whether the respondent carries the sensitive trait:

``Pr(report r | group g) = A[g, r](theta) + B[g, r](theta) * pi``

where ``pi`` is the prevalence (or, in regression, ``pi(x) = sigmoid(x beta)``) and
``theta`` holds the design parameters that are *not* known and are estimated jointly
with ``pi``. Every classical design is affine in ``pi``; the designs below are also
affine in ``theta``, so the log-likelihood's derivatives are exact and cheap.

Channels
--------
:class:`KnownChannel`
    One known :class:`~deniable.mechanisms.Design` per group (e.g. direct questioning in
    one group, forced response in another): ``A = P[:, no]``, ``B = P[:, yes] - P[:, no]``.
:class:`UnknownInnocuous`
    Unrelated question with an innocuous question of unknown prevalence ``a``,
    two or more groups with different probabilities ``p_g`` of the sensitive question
    (Greenberg, Abul-Ela, Simmons & Horvitz 1969): ``Pr(yes) = p_g pi + (1 - p_g) a``.
:class:`CheatingDetection`
    Clark & Desharnais (1998): a forced "yes" with probability ``p_g``, otherwise the
    truth, but a share ``gamma`` of respondents (cheaters) says "no" whatever happens;
    ``pi`` is the share of honest carriers: ``Pr(yes) = pi + p_g (1 - pi - gamma)``.
:class:`StochasticLieDetector`
    Moshagen, Musch & Erdfelder (2012): non-carriers answer the sensitive statement
    with probability ``p_g`` and its negation otherwise, carriers answer truthfully
    with unknown probability ``t`` (honesty): ``Pr(yes) = pi t + (1 - pi)(1 - p_g)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_probability
from ..mechanisms import Design, is_design

__all__ = [
    "CheatingDetection",
    "GroupModel",
    "KnownChannel",
    "StochasticLieDetector",
    "UnknownInnocuous",
    "WithDirectQuestioning",
    "as_channel",
]

_Array = NDArray[np.float64]


class GroupModel(ABC):
    """Abstract channel over ``G`` randomization groups and ``m`` report symbols.

    Attributes
    ----------
    group_labels : tuple
        The value of the grouping column for each group, in order.
    n_reports : int
        Number of report symbols ``m`` (2 for yes/no designs).
    param_names : tuple of str
        Names of the unknown design parameters ``theta`` (may be empty).
    bounds : list of (float, float)
        Allowed range of each parameter.

    Examples
    --------
    >>> from deniable.analysis import CheatingDetection, GroupModel
    >>> isinstance(CheatingDetection([0.3, 0.7]), GroupModel)
    True
    """

    group_labels: tuple[Hashable, ...]
    n_reports: int = 2
    param_names: tuple[str, ...] = ()
    bounds: list[tuple[float, float]]
    #: True when the prevalence and the one parameter are shares of the same population
    #: (``pi + parameter <= 1``), as the cheaters of the cheating-detection model.
    shares_sum_at_most_one: bool = False

    @property
    def n_groups(self) -> int:
        """Number of randomization groups ``G``."""
        return len(self.group_labels)

    @abstractmethod
    def coefficients(self, theta: _Array) -> tuple[_Array, _Array, _Array, _Array]:
        """``A, B`` of shape (G, m) and their derivatives ``dA, dB`` of shape (q, G, m)."""

    def start(self) -> _Array:
        """Starting values of ``theta`` (mid-range)."""
        return np.array([(lo + hi) / 2 for lo, hi in self.bounds], dtype=np.float64)

    def group_codes(self, groups: ArrayLike | None, n: int) -> NDArray[np.intp]:
        """Map group values (shape (n,)) to ``0..G-1``.

        Raises
        ------
        ValueError
            If a value is not one of :attr:`group_labels`, or groups are missing for a
            channel with several groups.
        """
        if groups is None:
            if self.n_groups != 1:
                raise ValueError(
                    f"group is required: this channel has {self.n_groups} randomization "
                    f"groups {list(self.group_labels)}"
                )
            return np.zeros(n, dtype=np.intp)
        values: NDArray[Any] = np.asarray(groups)
        if values.shape != (n,):
            raise ValueError(f"group must have shape ({n},), got {values.shape}")
        codes = np.full(n, -1, dtype=np.intp)
        for i, label in enumerate(self.group_labels):
            codes[values == label] = i
        if np.any(codes < 0):
            bad = values[codes < 0][0]
            bad = bad.item() if isinstance(bad, np.generic) else bad
            raise ValueError(
                f"group value {bad!r} is not a randomization group; allowed: "
                f"{', '.join(map(repr, self.group_labels))}"
            )
        return np.asarray(codes, dtype=np.intp)

    def report_probabilities(self, prevalence: float, theta: ArrayLike = ()) -> _Array:
        """``Pr(report | group)``, shape (G, m), at a prevalence in [0, 1]."""
        A, B, _, _ = self.coefficients(np.asarray(theta, dtype=np.float64))
        return A + B * prevalence

    def simulate(
        self,
        truths: ArrayLike,
        groups: NDArray[np.intp],
        theta: ArrayLike,
        rng: np.random.Generator,
    ) -> NDArray[np.intp]:
        """Draw reports for 0/1 truths and group codes (simulation only; seeded ``rng``)."""
        t = np.asarray(truths, dtype=np.float64)
        A, B, _, _ = self.coefficients(np.asarray(theta, dtype=np.float64))
        probs = A[groups] + B[groups] * t[:, None]  # (n, m)
        u = rng.random(t.size)
        drawn: NDArray[np.intp] = (u[:, None] > np.cumsum(probs, axis=1)[:, :-1]).sum(axis=1)
        return drawn.astype(np.intp)


def _probabilities(name: str, p: Sequence[float]) -> _Array:
    values = [check_probability(f"{name}[{i}]", v) for i, v in enumerate(p)]
    if len(values) < 1:
        raise ValueError(f"{name} needs one probability per randomization group")
    return np.asarray(values, dtype=np.float64)


def _labels(labels: Sequence[Hashable] | None, n: int) -> tuple[Hashable, ...]:
    out = tuple(range(1, n + 1)) if labels is None else tuple(labels)
    if len(out) != n or len(set(out)) != n:
        raise ValueError(f"group_labels must be {n} distinct values, got {list(out)}")
    return out


class KnownChannel(GroupModel):
    """Known designs, one per randomization group.

    Parameters
    ----------
    designs : Design or mapping of group value to Design
        Each with two truths (no, yes) and the same number of report symbols.

    Raises
    ------
    ValueError
        If a design does not have exactly two truths, or the report sets differ.

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.analysis import KnownChannel
    >>> KnownChannel(Warner(p=0.8)).n_groups, KnownChannel(Warner(p=0.8)).param_names
    (1, ())
    """

    def __init__(self, designs: Design | Mapping[Hashable, Design]) -> None:
        mapping = dict(designs) if isinstance(designs, Mapping) else {0: designs}
        if not mapping:
            raise ValueError("designs must name at least one design")
        for label, d in mapping.items():
            if not is_design(d):
                raise TypeError(f"designs[{label!r}] must be a Design, got {type(d).__name__}")
            if d.n_truths != 2:
                raise ValueError(
                    f"designs[{label!r}] must have two truths (no, yes), got {d.n_truths}"
                )
        sizes = {d.n_reports for d in mapping.values()}
        if len(sizes) != 1:
            raise ValueError(f"all designs must have the same number of reports, got {sizes}")
        self.designs = mapping
        self.group_labels = tuple(mapping)
        self.n_reports = sizes.pop()
        self.bounds = []
        P = np.stack([d.matrix for d in mapping.values()])  # (G, m, 2)
        self._A = P[:, :, 0].copy()
        self._B = P[:, :, 1] - P[:, :, 0]

    def __repr__(self) -> str:
        return f"KnownChannel({self.designs!r})"

    def coefficients(self, theta: _Array) -> tuple[_Array, _Array, _Array, _Array]:
        empty = np.zeros((0, *self._A.shape))
        return self._A, self._B, empty, empty

    def group_codes(self, groups: ArrayLike | None, n: int) -> NDArray[np.intp]:
        if groups is None and self.n_groups == 1:
            return np.zeros(n, dtype=np.intp)
        return super().group_codes(groups, n)


class _GroupsWithOneParameter(GroupModel):
    """Yes/no designs over randomization groups that differ in one known probability."""

    def __init__(self, p: Sequence[float], group_labels: Sequence[Hashable] | None = None):
        self.p = _probabilities("p", p)
        if np.unique(self.p).size < 2:
            raise ValueError(f"p must differ between at least two groups, got {self.p.tolist()}")
        self.group_labels = _labels(group_labels, self.p.size)
        self.bounds = [(0.0, 1.0)]

    def __repr__(self) -> str:
        p = ", ".join(f"{v:.6g}" for v in self.p)
        return f"{type(self).__name__}(p=[{p}], group_labels={list(self.group_labels)!r})"


class UnknownInnocuous(_GroupsWithOneParameter):
    """Unrelated question with unknown innocuous prevalence (Greenberg et al. 1969).

    ``Pr(yes | group g) = p_g pi + (1 - p_g) a``, ``a`` the parameter
    ``innocuous_prevalence``; identifiable with two groups whose
    ``p_g`` differ.

    Parameters
    ----------
    p : sequence of float in [0, 1]
        Probability of the sensitive question in each group.
    group_labels : sequence, optional
        Values of the grouping column (default 1, 2, ...).

    Examples
    --------
    >>> from deniable.analysis import UnknownInnocuous
    >>> UnknownInnocuous([0.3, 0.7]).n_groups
    2
    """

    param_names = ("innocuous_prevalence",)

    def coefficients(self, theta: _Array) -> tuple[_Array, _Array, _Array, _Array]:
        (innocuous,) = theta
        q = 1.0 - self.p
        A = np.stack([1.0 - q * innocuous, q * innocuous], axis=1)
        B = np.stack([-self.p, self.p], axis=1)
        dA = np.stack([-q, q], axis=1)[None]
        return A, B, dA, np.zeros_like(dA)


class CheatingDetection(_GroupsWithOneParameter):
    """Cheating detection model (Clark & Desharnais 1998).

    A device says "answer yes" with probability ``p_g``, otherwise "answer truthfully";
    a share ``gamma`` of respondents (cheaters) says "no" whatever the device says.
    ``pi`` is the share of honest carriers; honest non-carriers are ``1 - pi - gamma``,
    so :func:`~deniable.analysis.estimate_channel` keeps ``pi + gamma <= 1``.
    ``Pr(yes | group g) = pi + p_g (1 - pi - gamma)``.

    Parameters
    ----------
    p : sequence of float in [0, 1]
        Probability of a forced "yes" in each group (two different values).
    group_labels : sequence, optional
        Values of the grouping column (default 1, 2, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.analysis import CheatingDetection, estimate_channel
    >>> rng = np.random.default_rng(0)
    >>> channel = CheatingDetection([0.3, 0.7])
    >>> groups = np.arange(4000) % 2 + 1
    >>> truth = rng.random(4000) < 0.2
    >>> reports = np.where(rng.random(4000) < np.where(groups == 1, 0.3, 0.7), 1, truth).astype(int)
    >>> fit = estimate_channel(channel, reports, groups)
    >>> fit.params.round(1).tolist()
    [0.2, 0.0]
    """

    param_names = ("gamma",)
    shares_sum_at_most_one = True

    def coefficients(self, theta: _Array) -> tuple[_Array, _Array, _Array, _Array]:
        (gamma,) = theta
        yes_a = self.p * (1.0 - gamma)
        A = np.stack([1.0 - yes_a, yes_a], axis=1)
        B = np.stack([-(1.0 - self.p), 1.0 - self.p], axis=1)
        dA = np.stack([self.p, -self.p], axis=1)[None]
        return A, B, dA, np.zeros_like(dA)

    def start(self) -> _Array:
        return np.array([0.1])


class StochasticLieDetector(_GroupsWithOneParameter):
    """Stochastic lie detector (Moshagen, Musch & Erdfelder 2012).

    Non-carriers answer the sensitive statement with probability ``p_g`` (saying "no")
    and its negation otherwise (saying "yes"); carriers say "yes" with the unknown
    probability ``t`` (``t < 1``: some carriers lie).
    ``Pr(yes | group g) = pi t + (1 - pi)(1 - p_g)``.

    Parameters
    ----------
    p : sequence of float in [0, 1]
        ``p_g`` for each group (two different values); the minaret survey of Heck &
        Moshagen (2018) used ``(2/12, 10/12)``.
    group_labels : sequence, optional
        Values of the grouping column (default 1, 2, ...).

    Examples
    --------
    >>> from deniable.analysis import StochasticLieDetector
    >>> StochasticLieDetector([0.3, 0.7]).param_names
    ('t',)
    """

    param_names = ("t",)

    def coefficients(self, theta: _Array) -> tuple[_Array, _Array, _Array, _Array]:
        (t,) = theta
        A = np.stack([self.p, 1.0 - self.p], axis=1)
        B = np.stack([1.0 - t - self.p, t - (1.0 - self.p)], axis=1)
        ones = np.ones_like(self.p)
        dB = np.stack([-ones, ones], axis=1)[None]
        return A, B, np.zeros_like(dB), dB

    def start(self) -> _Array:
        return np.array([0.9])


class WithDirectQuestioning(GroupModel):
    """A channel plus one group asked directly (no randomization).

    ``RRreg::RRlog`` treats ``group == 0`` this way: the direct answers inform the
    logistic model through ``Pr(yes) = pi`` while the randomized groups also inform the
    channel's unknown parameters (Heck & Moshagen 2018).

    Parameters
    ----------
    channel : GroupModel
        The randomized groups (two report symbols).
    label : hashable, default 0
        The value of the grouping column for the directly asked group.

    Examples
    --------
    >>> from deniable.analysis import CheatingDetection, WithDirectQuestioning
    >>> WithDirectQuestioning(CheatingDetection([0.3, 0.7])).n_groups
    3
    """

    def __init__(self, channel: GroupModel, label: Hashable = 0) -> None:
        if channel.n_reports != 2:
            raise ValueError("direct questioning needs a yes/no channel")
        if label in channel.group_labels:
            raise ValueError(f"label {label!r} is already a randomization group")
        self.inner = channel
        self.group_labels = (*channel.group_labels, label)
        self.param_names = channel.param_names
        self.bounds = channel.bounds
        self.n_reports = 2

    def __repr__(self) -> str:
        return f"WithDirectQuestioning({self.inner!r}, {self.group_labels[-1]!r})"

    def coefficients(self, theta: _Array) -> tuple[_Array, _Array, _Array, _Array]:
        A, B, dA, dB = self.inner.coefficients(theta)
        A = np.vstack([A, [1.0, 0.0]])
        B = np.vstack([B, [-1.0, 1.0]])
        pad = np.zeros((dA.shape[0], 1, 2))
        return A, B, np.concatenate([dA, pad], axis=1), np.concatenate([dB, pad], axis=1)

    def start(self) -> _Array:
        return self.inner.start()


def as_channel(design: Design | Mapping[Hashable, Design] | GroupModel) -> GroupModel:
    """A :class:`GroupModel` from a design, a mapping of group value to design, or a channel."""
    if isinstance(design, GroupModel):
        return design
    if is_design(design) or isinstance(design, Mapping):
        return KnownChannel(design)
    raise TypeError(
        "design must be a Design, a mapping of group value to Design, or a GroupModel, got "
        f"{type(design).__name__}"
    )


def __getattr__(name: str) -> Any:
    """Old names, kept for one release with a DeprecationWarning (see CHANGELOG.md)."""
    if name == "Channel":
        import warnings

        warnings.warn(
            "deniable.analysis.Channel is renamed GroupModel (Channel is the mechanisms' "
            "channel); the old name goes in 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        return GroupModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

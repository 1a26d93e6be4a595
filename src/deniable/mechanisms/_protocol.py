"""The mechanism protocol: what every design, frequency oracle and RAPPOR has.

A *mechanism* is a known channel from truths to reports (Warner 1965; Chaudhuri &
Mukerjee 1988). Whatever its reports look like (a report code, packed bits, a hash
seed and bucket), every mechanism here gives

* its privacy: :attr:`Mechanism.epsilon`, exact and rounded up, in nats, checked by
  the one shared guard :func:`check_epsilon`;
* a vectorised, secure-by-default randomizer ``randomize(truths, rng=None)``;
* the tally its reports reduce to (:meth:`Mechanism.tally`), a mergeable sufficient
  statistic (:mod:`deniable.tallies`);
* its channel (:attr:`Mechanism.channel`, :mod:`deniable.mechanisms`), a
  record of the law from a truth to a report, by which estimation looks up the
  arithmetic that turns reports into an estimate: a misclassification matrix, a support
  channel (Wang et al. 2017), RAPPOR's Bloom filter, a numeric mean's, dBitFlip's
  buckets or PEM's prefix levels;
* its reports as columns, in text (:meth:`Mechanism.report_columns`) and in binary
  form (:attr:`Mechanism.report_fields`, :meth:`Mechanism.report_arrays`);
* a name and parameters (:attr:`Mechanism.params`, :meth:`Mechanism.to_dict`,
  :attr:`Mechanism.spec`) that :func:`deniable.mechanisms.mechanism_from_spec`
  turns back into the same mechanism.

:func:`deniable.estimation.estimate` asks the channel to estimate, never the class.

Privacy guard
-------------
Epsilon is a property of the channel, derived, never taken on trust. One guard holds
for every mechanism: a requested epsilon must be a real number in ``(0, 30]`` nats
(:data:`MAX_EPSILON`: beyond it no floating-point channel is distinguishable from
the identity), and a mechanism whose epsilon exceeds :data:`LARGE_EPSILON` (5 nats)
warns with :class:`~deniable.errors.PrivacyWarning` when it is built: one report then
moves an observer's odds on the true answer by a factor above ``e^5 = 148``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from .._validation import check_real
from ..errors import PrivacyWarning
from ._channels import (
    BloomChannel,
    BucketChannel,
    BytePrefixChannel,
    Channel,
    MatrixChannel,
    MeanChannel,
    PrefixChannel,
    SupportChannel,
)

if TYPE_CHECKING:
    from ._randomness import RandomSource

__all__ = [
    "LARGE_EPSILON",
    "MAX_EPSILON",
    "BloomChannel",
    "BucketChannel",
    "BytePrefixChannel",
    "CategoricalMechanism",
    "Channel",
    "MatrixChannel",
    "MeanChannel",
    "Mechanism",
    "PrefixChannel",
    "ReportField",
    "ReportT",
    "SupportChannel",
    "TallyT",
    "check_epsilon",
    "check_question_epsilon",
    "check_stated_epsilon",
    "spec_string",
    "warn_large_epsilon",
]

#: Epsilon (nats) above which building a mechanism warns with PrivacyWarning.
LARGE_EPSILON = 5.0
#: Largest epsilon (nats) a mechanism may be asked for.
MAX_EPSILON = 30.0


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Validate a requested epsilon: a real number in ``(0, 30]`` nats.

    Parameters
    ----------
    epsilon : float
        The epsilon asked for, in nats.
    name : str, default "epsilon"
        The field errors name.

    Returns
    -------
    float
        ``epsilon`` as a float.

    Raises
    ------
    TypeError
        For a non-numeric value.
    ValueError
        For a value outside ``(0, 30]``, naming ``name`` and the allowed range.

    Examples
    --------
    >>> from deniable.mechanisms import check_epsilon
    >>> check_epsilon(1.5)
    1.5
    """
    eps = check_real(name, epsilon)
    if not 0.0 < eps <= MAX_EPSILON:
        raise ValueError(f"{name} must be in (0, {MAX_EPSILON:g}] nats, got {eps}")
    return eps


def check_question_epsilon(epsilon: float, field: str, allow_large: bool = False) -> None:
    """The guard on one question's (or one report's) privacy loss, in nats.

    ``epsilon`` must be finite and at most :data:`MAX_EPSILON`; above
    :data:`LARGE_EPSILON` it needs an explicit opt-in (``allow_large``). The same bounds
    as :func:`check_epsilon` and :func:`warn_large_epsilon`, which mechanisms apply when
    they are built; surveys apply this one to each question.

    Raises
    ------
    ValueError
        Naming ``field``, the epsilon and the allowed values.
    """
    if not math.isfinite(epsilon):
        raise ValueError(
            f"{field}: epsilon is infinite (a report can prove a sensitive answer); "
            "choose parameters under which every report is possible for every answer"
        )
    if epsilon > MAX_EPSILON:
        raise ValueError(
            f"{field}: epsilon {epsilon:.4g} nats exceeds the hard maximum {MAX_EPSILON:g}"
        )
    if epsilon > LARGE_EPSILON and not allow_large:
        raise ValueError(
            f"{field}: epsilon {epsilon:.4g} nats is above {LARGE_EPSILON:g}; set "
            "allow_large_epsilon: true to accept it (one report then moves an observer's "
            f"odds by a factor above e^{LARGE_EPSILON:g} = {math.exp(LARGE_EPSILON):.0f})"
        )


def check_stated_epsilon(actual: float, stated: float | str, what: str) -> None:
    """Refuse a privacy claim that understates the mechanism's epsilon.

    A client rebuilds the mechanism from what a server publishes and recomputes its
    epsilon (``actual``, nats, rounded up); the server's ``stated`` epsilon (a number or
    ``"inf"``) must not be smaller, up to a relative ``1e-9`` for the rounding of the
    published numbers.

    Raises
    ------
    ValueError
        Naming ``what``, the stated and the actual epsilon.
    """
    stated_f = math.inf if stated == "inf" else float(stated)
    if actual > stated_f * (1 + 1e-9):
        raise ValueError(
            f"{what}: the server states epsilon {stated} but its matrix gives {actual}"
        )


def warn_large_epsilon(epsilon: float, what: str) -> None:
    """Warn (:class:`~deniable.errors.PrivacyWarning`) when ``epsilon`` exceeds 5 nats.

    ``inf`` (one-sided designs, which state a likelihood-ratio bound instead) does not
    warn here: those designs need an explicit opt-in wherever they are used.
    """
    if LARGE_EPSILON < epsilon < math.inf:
        warnings.warn(
            f"{what} has epsilon = {epsilon:.3f} nats > {LARGE_EPSILON:g}: one report "
            f"multiplies an observer's odds on the true answer by up to {math.exp(epsilon):.3g}",
            PrivacyWarning,
            stacklevel=3,
        )


@dataclass(frozen=True)
class ReportField:
    """One column of a mechanism's reports in binary form (Arrow, Parquet, Spark).

    Attributes
    ----------
    name : str
        The column's name.
    kind : {"int", "float", "bytes"}
        1-D integers, 1-D float64, or rows of ``width`` bytes (uint8, shape (n, width)).
    width : int
        Bytes per report for ``bytes`` (0 otherwise).

    Examples
    --------
    >>> from deniable import Warner
    >>> Warner(p=0.7).report_fields
    (ReportField(name='report', kind='int', width=0),)
    """

    name: str
    kind: Literal["int", "float", "bytes"]
    width: int = 0


#: The reports a mechanism draws (``randomize``) and reads back (``reports_from_*``).
ReportT = TypeVar("ReportT", covariant=True)
#: The sufficient statistic its reports reduce to (``tally``).
TallyT = TypeVar("TallyT", covariant=True)


@runtime_checkable
class Mechanism(Protocol[ReportT, TallyT]):
    """What every mechanism provides, whatever its reports: designs, frequency oracles,
    RAPPOR, numeric means, dBitFlip and the prefix extending method.

    Generic in its reports and its tally: ``Mechanism[NDArray[np.int64], Tally]`` for a
    design, ``Mechanism[RapporReports, RapporTally]`` for RAPPOR, ``Mechanism[
    NDArray[np.float64], MeanTally]`` for a numeric mean. Its :attr:`channel` names the
    arithmetic of estimation (:mod:`deniable.mechanisms`; the arithmetic is
    :mod:`deniable.estimation`'s).

    Examples
    --------
    >>> from deniable import LocalHashing, Mechanism, Warner
    >>> all(isinstance(m, Mechanism) for m in (Warner(p=0.7), LocalHashing(k=10, epsilon=1.0)))
    True
    """

    @property
    def spec_name(self) -> str:
        """Registry name (``forced-response``, ``kary-rr``, ``oue``, ``olh``, ...)."""
        ...

    @property
    def epsilon(self) -> float:
        """Exact local-DP epsilon of one report, in nats, rounded up (``inf`` if none)."""
        ...

    @property
    def params(self) -> dict[str, Any]:
        """Constructor parameters (JSON-ready)."""
        ...

    @property
    def channel(self) -> Channel:
        """The channel from truths to reports (a record; estimation looks its arithmetic
        up by it)."""
        ...

    @property
    def spec(self) -> str:
        """``"name:param=value,..."``, accepted by ``mechanism_from_spec``."""
        ...

    @property
    def report_fields(self) -> tuple[ReportField, ...]:
        """The binary columns of the reports (see :func:`deniable.tables.arrow.report_table`)."""
        ...

    def randomize(
        self, truths: Any, rng: RandomSource | np.random.Generator | None = None, /
    ) -> ReportT:
        """Reports for ``truths`` (secure randomness unless a seeded ``rng`` is given)."""
        ...

    def tally(self, reports: Any, /) -> TallyT:
        """The sufficient statistic of ``reports`` (validated)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{"mechanism": name, "params": {...}, "epsilon": ...}``."""
        ...

    def report_columns(self, reports: Any, /) -> dict[str, Any]:
        """The reports as named text-ready table columns (CSV), validated."""
        ...

    def reports_from_columns(self, columns: Mapping[str, Sequence[Any]], /) -> ReportT:
        """Reports from named table columns, validated (inverse of ``report_columns``)."""
        ...

    def report_arrays(self, reports: Any, /) -> dict[str, NDArray[Any]]:
        """The reports as the binary columns of :attr:`report_fields`, validated."""
        ...

    def reports_from_arrays(self, arrays: Mapping[str, NDArray[Any]], /) -> ReportT:
        """Reports from binary columns, validated (inverse of ``report_arrays``)."""
        ...


@runtime_checkable
class CategoricalMechanism(Mechanism[ReportT, TallyT], Protocol[ReportT, TallyT]):
    """A mechanism over a finite set of truths, whose estimate is a distribution over
    them: designs, frequency oracles and RAPPOR.

    Examples
    --------
    >>> from deniable import LocalHashing, Warner
    >>> from deniable.mechanisms import CategoricalMechanism
    >>> mechanisms = (Warner(p=0.7), LocalHashing(k=10, epsilon=1.0))
    >>> [isinstance(m, CategoricalMechanism) for m in mechanisms]
    [True, True]
    """

    @property
    def n_truths(self) -> int:
        """Number of truth categories (the length of the estimated distribution)."""
        ...

    @property
    def truth_labels(self) -> tuple[str, ...]:
        """One label per truth category."""
        ...


def spec_string(name: str, params: dict[str, Any]) -> str:
    """``name:key=value,...`` for the parameters that are numbers (the spec grammar)."""
    items = [
        f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}"
        for k, v in params.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    return name + (":" + ",".join(items) if items else "")

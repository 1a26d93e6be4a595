"""One registry of named mechanisms, for spec strings, survey files and the command line.

A spec is ``"name:param=value,..."``: ``forced-response:p_yes=1/6,p_no=1/6``,
``kary-rr:k=5,epsilon=1``, ``olh:k=1000,epsilon=2``. Values may be decimals or
fractions; parameter names use ``_`` or ``-``.

Finite designs: ``forced-response``, ``warner``, ``unrelated-question``, ``crosswise``,
``kuk``, ``mangat``, ``triangular``, ``kary-rr``; ``direct`` (no randomization:
the control of validation studies, and covariates). Frequency oracles: ``oue`` and
``sue`` (k, epsilon), ``olh`` (k, epsilon, optional g), ``hadamard`` (k, epsilon,
optional blocks), ``rappor`` (k, h, m, f, p, q). Numeric values (means and bucket
histograms): ``duchi``, ``piecewise``, ``hybrid`` (epsilon, low, high), ``1bitmean``
(epsilon, low, high, grid), ``dbitflip`` (k, epsilon, d). Heavy hitters over strings:
``pem`` (epsilon, max_length), ``pem-bytes`` (epsilon, max_bytes, step, level_decay).
:func:`mechanism_from_spec` builds any of them;
:func:`design_from_spec`, :func:`oracle_from_spec` and :func:`numeric_from_spec` accept
only their kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from ..tallies import DBitFlipTally, MeanTally, RapporTally, SupportTally, Tally
from ._binary import Crosswise, ForcedResponse, Kuk, Mangat, Triangular, UnrelatedQuestion, Warner
from ._byte_prefix import BytePrefixExtension
from ._dbitflip import DBitFlip
from ._designs import Design
from ._direct import Direct
from ._hadamard import HadamardResponse
from ._kary import KaryRR
from ._local_hashing import LocalHashing
from ._numeric import DuchiMean, HybridMean, NumericMechanism, OneBitMean, Piecewise
from ._oracle import FrequencyOracle
from ._prefix import PrefixExtension
from ._protocol import Mechanism
from ._rappor import Rappor
from ._unary import UnaryEncoding

__all__ = [
    "DESIGNS",
    "MECHANISMS",
    "NUMERIC",
    "ORACLES",
    "AnyMechanism",
    "as_design",
    "check_parameters",
    "design_from_spec",
    "mechanism_from_dict",
    "mechanism_from_spec",
    "numeric_from_spec",
    "oracle_from_spec",
    "parse_spec",
    "tally",
]

#: Named finite designs (survey files accept these).
DESIGNS: Mapping[str, Callable[..., Design]] = {
    cls.spec_name: cls
    for cls in (
        ForcedResponse,
        Warner,
        UnrelatedQuestion,
        Crosswise,
        Kuk,
        Mangat,
        Triangular,
        KaryRR,
        Direct,
    )
}


def _unary(optimized: bool) -> Callable[..., UnaryEncoding]:
    def build(**kwargs: Any) -> UnaryEncoding:
        if kwargs.pop("optimized", optimized) != optimized:
            raise TypeError(f"optimized must be {optimized} for this name")
        return UnaryEncoding(optimized=optimized, **kwargs)

    return build


#: Named frequency oracles (large domains).
ORACLES: Mapping[str, Callable[..., Any]] = {
    "oue": _unary(True),
    "sue": _unary(False),
    "olh": LocalHashing,
    "hadamard": HadamardResponse,
    "rappor": Rappor,
}

#: Named mechanisms for numeric values (means, bucket histograms).
NUMERIC: Mapping[str, Callable[..., Any]] = {
    cls.spec_name: cls for cls in (DuchiMean, Piecewise, HybridMean, OneBitMean, DBitFlip)
}

#: Every named mechanism: designs, oracles, numeric mechanisms and PEM (``pem``, and
#: ``pem-bytes`` for strings of any length).
MECHANISMS: Mapping[str, Callable[..., Any]] = {
    **DESIGNS,
    **ORACLES,
    **NUMERIC,
    PrefixExtension.spec_name: PrefixExtension,
    BytePrefixExtension.spec_name: BytePrefixExtension,
}


def parse_spec(spec: str) -> tuple[str, dict[str, float | int]]:
    """Split ``"name:param=value,..."`` into the lower-case name and numeric parameters.

    Raises
    ------
    ValueError
        For a parameter that is not ``name=number``.
    """
    name, _, rest = spec.strip().partition(":")
    name = name.strip().lower().replace("_", "-")
    kwargs: dict[str, float | int] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"parameter {item!r} must look like name=value")
        kwargs[key.strip().replace("-", "_")] = _number(key.strip(), value.strip())
    return name, kwargs


def _number(key: str, text: str) -> float | int:
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            return float(num) / float(den)
        value = float(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"parameter {key} must be a number, got {text!r}") from None
    return (
        int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
    )


def check_parameters(kind: str, name: str, builder: Callable[..., Any], given: Any) -> None:
    """Refuse parameters a builder does not take, or lacks, naming the allowed ones.

    Raises
    ------
    ValueError
        ``"design 'warner' takes p; got q"`` and the like.
    """
    import inspect

    try:
        signature = inspect.signature(builder)
    except (TypeError, ValueError):  # a builder without a signature: it checks itself
        return
    params = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    ]
    if any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
        return
    allowed = [p.name for p in params]
    unknown = sorted(set(given) - set(allowed))
    missing = [p.name for p in params if p.default is p.empty and p.name not in given]
    takes = ", ".join(allowed) or "no parameters"
    if unknown:
        raise ValueError(f"{kind} {name!r} takes {takes}; got {', '.join(unknown)}")
    if missing:
        raise ValueError(f"{kind} {name!r} needs {', '.join(missing)} (it takes {takes})")


#: What :func:`mechanism_from_spec` builds: every kind of mechanism, as a union that
#: :func:`deniable.estimate`'s overloads resolve member by member (a checked user's
#: builder and estimator compose).
AnyMechanism = (
    Design
    | FrequencyOracle
    | Rappor
    | NumericMechanism
    | DBitFlip
    | PrefixExtension
    | BytePrefixExtension
)


def _build(kind: str, table: Mapping[str, Callable[..., Any]], name: str, kwargs: Any) -> Any:
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; allowed: {', '.join(sorted(table))}")
    check_parameters(kind, name, table[name], kwargs)
    try:
        return table[name](**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad parameters for {kind} {name!r}: {exc}") from None


def mechanism_from_spec(spec: str) -> AnyMechanism:
    """Build any named mechanism from ``"name:param=value,..."``: the one builder
    (designs, oracles, RAPPOR, numeric means, dBitFlip, PEM); the others narrow it.

    Parameters
    ----------
    spec : str
        A mechanism's registry name and its parameters (epsilon in nats, probabilities
        in [0, 1]), as :attr:`Mechanism.spec` writes it.

    Returns
    -------
    AnyMechanism
        The mechanism: a union of every kind, which :func:`deniable.estimate`'s
        overloads resolve member by member.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the allowed ones), a malformed
        parameter, or an invalid value.

    Examples
    --------
    >>> mechanism_from_spec("olh:k=1000,epsilon=2")
    LocalHashing(k=1000, epsilon=2.0, g=8)
    """
    name, kwargs = parse_spec(spec)
    built: AnyMechanism = _build("mechanism", MECHANISMS, name, kwargs)
    return built


@overload
def tally(mechanism: Design, reports: Any) -> Tally: ...
@overload
def tally(mechanism: FrequencyOracle, reports: Any) -> SupportTally: ...
@overload
def tally(mechanism: Rappor, reports: Any) -> RapporTally: ...
@overload
def tally(mechanism: NumericMechanism, reports: Any) -> MeanTally: ...
@overload
def tally(mechanism: DBitFlip, reports: Any) -> DBitFlipTally: ...
@overload
def tally(mechanism: PrefixExtension | BytePrefixExtension, reports: Any) -> NDArray[np.void]: ...


def tally(
    mechanism: AnyMechanism, reports: Any
) -> Tally | SupportTally | RapporTally | MeanTally | DBitFlipTally | NDArray[np.void]:
    """The sufficient statistic of ``mechanism``'s reports: the one tally beside the one
    builder (:func:`mechanism_from_spec`) and the one estimator (:func:`deniable.estimate`),
    so that a mechanism built from a spec goes through ``randomize``, ``tally`` and
    ``estimate`` without narrowing (each overload gives its kind's tally; a union of
    mechanisms gets the union of their tallies).

    Parameters
    ----------
    mechanism : Mechanism
        Any mechanism of the package.
    reports : array_like or reports
        What ``mechanism.randomize`` returned (report codes, oracle reports, RAPPOR's
        reports, numeric reports, PEM's reports).

    Returns
    -------
    Tally, SupportTally, RapporTally, MeanTally, DBitFlipTally or ndarray of void
        ``mechanism.tally(reports)``.

    Raises
    ------
    ValueError, TypeError
        As the mechanism's own ``tally`` (reports of another mechanism, a malformed
        report).

    Examples
    --------
    >>> import numpy as np
    >>> built = mechanism_from_spec("warner:p=0.75")
    >>> tally(built, built.randomize(np.array([1, 1, 0, 1]), np.random.default_rng(0))).n
    4
    """
    method: Callable[[Any], Any] = mechanism.tally
    out: Tally | SupportTally | RapporTally | MeanTally | DBitFlipTally | NDArray[np.void]
    out = method(reports)
    return out


def as_design(mechanism: Mechanism[Any, Any]) -> Design:
    """``mechanism`` as a finite design, for the analyses only designs have.

    Raises
    ------
    ValueError
        If it is not a finite design (an oracle, RAPPOR or a numeric mechanism).
    """
    if not isinstance(mechanism, Design):
        raise ValueError(f"{mechanism.spec_name!r} is not a finite design")
    return mechanism


def design_from_spec(spec: str) -> Design:
    """Build a finite design from ``"name:param=value,param=value"``.

    Parameters
    ----------
    spec : str
        A design's registry name and its parameters (probabilities in [0, 1],
        fractions such as ``1/6`` allowed), as :attr:`Design.spec` writes it.

    Returns
    -------
    Design
        The design, equal to the one the spec was written from.

    Raises
    ------
    ValueError
        For an unknown design name, a malformed parameter, or an invalid value.

    Examples
    --------
    >>> design_from_spec("forced-response:p_yes=1/6,p_no=1/6")
    ForcedResponse(p_yes=0.16666666666666666, p_no=0.16666666666666666)
    """
    name, kwargs = parse_spec(spec)
    return _build("design", DESIGNS, name, kwargs)  # type: ignore[no-any-return]


def oracle_from_spec(spec: str) -> Mechanism[Any, Any]:
    """Build a frequency oracle (``oue``, ``sue``, ``olh``, ``hadamard``, ``rappor``).

    Parameters
    ----------
    spec : str
        ``"name:k=...,epsilon=..."`` (epsilon in nats; RAPPOR: its Bloom-filter sizes).

    Returns
    -------
    FrequencyOracle or Rappor

    Raises
    ------
    ValueError
        For an unknown name or a bad parameter.

    Examples
    --------
    >>> oracle_from_spec("hadamard:k=100,epsilon=1")
    HadamardResponse(k=100, epsilon=1.0)
    """
    name, kwargs = parse_spec(spec)
    return _build("oracle", ORACLES, name, kwargs)  # type: ignore[no-any-return]


def mechanism_from_dict(data: Mapping[str, Any]) -> Mechanism[Any, Any]:
    """Inverse of ``mechanism.to_dict()``: ``{"mechanism": name, "params": {...}}``.

    Parameters
    ----------
    data : mapping
        ``{"mechanism": registry name, "params": {constructor parameters}}`` (other
        keys, such as the stated ``epsilon``, are ignored).

    Returns
    -------
    Mechanism
        The mechanism ``to_dict`` was called on, rebuilt.

    Raises
    ------
    ValueError
        For a missing or unknown name, or bad parameters.

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.mechanisms import mechanism_from_dict
    >>> mechanism_from_dict(Warner(p=0.7).to_dict())
    Warner(p=0.7)
    """
    name = data.get("mechanism")
    if not isinstance(name, str):
        raise ValueError("mechanism: a name is required, e.g. {'mechanism': 'warner', ...}")
    params = data.get("params", {})
    if not isinstance(params, Mapping):
        raise ValueError("params must be a mapping of parameter names to values")
    if name == "matrix":
        from ._designs import MatrixDesign

        design: Mechanism[Any, Any] = MatrixDesign(**params)
        return design
    return _build("mechanism", MECHANISMS, name, dict(params))  # type: ignore[no-any-return]


def numeric_from_spec(spec: str) -> DuchiMean | Piecewise | HybridMean | OneBitMean | DBitFlip:
    """Build a numeric mechanism (``duchi``, ``piecewise``, ``hybrid``, ``1bitmean``, ``dbitflip``).

    Parameters
    ----------
    spec : str
        ``"name:epsilon=...,low=...,high=..."`` (epsilon in nats; dBitFlip: ``k``, ``d``).

    Returns
    -------
    DuchiMean, Piecewise, HybridMean, OneBitMean or DBitFlip

    Raises
    ------
    ValueError
        For an unknown name or a bad parameter.

    Examples
    --------
    >>> numeric_from_spec("piecewise:epsilon=1,low=0,high=100")
    Piecewise(epsilon=1.0, low=0.0, high=100.0)
    """
    name, kwargs = parse_spec(spec)
    return _build("numeric mechanism", NUMERIC, name, kwargs)  # type: ignore[no-any-return]

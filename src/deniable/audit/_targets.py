"""What the auditor runs: a shipped encoder, two neighbouring inputs, and the event that
tells their outputs apart, chosen from the channel the mechanism claims.

* A finite design (binary, k-ary, PRAM, a panel's layers): the pair of answers and the
  one report ``y`` with the largest ``M[y, x0] / M[y, x1]``; that ratio is
  ``e^epsilon`` by the definition of a finite design's epsilon, so the event attains the
  claim. For the geometric channel on a count (a list count's post-randomization) the
  neighbours are counts that differ by one, the unit its epsilon is stated for (Ghosh,
  Roughgarden & Sundararajan 2009).
* A frequency oracle (unary encoding, local hashing, Hadamard response): values 0 and 1,
  and the event "the report supports 0 and not 1" (Wang et al. 2017's support sets).
  Its ratio is ``p* / q*`` for local hashing and Hadamard response and
  ``p (1 - q) / (q (1 - p))`` for unary encoding: the epsilon of each.
* A numeric mechanism (Duchi et al. 2018, the piecewise and hybrid mechanisms of Wang
  et al. 2019, 1BitMean of Ding et al. 2017): the ends of the range, and the event
  "the debiased report is at least ``high``", whose ratio is ``e^epsilon`` for each.
* A prefix encoder for heavy hitters (PEM over an alphabet, and over UTF-8 bytes; Wang
  et al. 2021): two one-symbol strings, whose prefixes differ at every level, and the
  event "the report supports the first's prefix at its level and not the second's".
  The level is drawn apart from the value and each level is local hashing, so the ratio
  is ``p* / q*`` given the two buckets differ, the claimed epsilon, at every level.
* dBitFlip (Ding, Kulkarni & Yekhanin 2017): buckets 0 and 1, and with ``d >= 2`` the
  event "the report samples both, its bit for 0 is 1 and for 1 is 0", whose ratio is
  ``(p* / q*)^2 = e^(2 b)``; with ``d = 1``, "it samples 0 with bit 1, or 1 with bit 0",
  ratio ``p* / q* = e^b``: the claimed epsilon in each case (the buckets are sampled
  apart from the value).
* A panel (:class:`~deniable.mechanisms.TwoLayerDesign`): the permanent layer alone
  (``epsilon_inf``) and one report through both layers, the instantaneous layer applied
  to the permanent report (``epsilon_1``).
* RAPPOR (Erlingsson, Pihur & Korolova 2014): two strings with disjoint Bloom bits, and
  the event "the report's cohort gives them ``h`` bits each, none shared, every bit of
  the first is 1 and every bit of the second is 0" (the cohort is drawn apart from the
  string, so it weighs both inputs alike), whose ratio
  is ``e^epsilon`` for one report (both layers, ``epsilon_1``) and for the permanent
  layer alone (``epsilon_inf``, drawn by the same encoder with the instantaneous layer
  the identity, ``p = 0, q = 1``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["AuditTarget", "audit_targets", "check_draws", "targets_for"]

#: An encoder: ``(inputs of shape (n,), rng) -> reports`` (n rows).
Encoder = Callable[[NDArray[Any], Any], Any]
#: Which reports fall in the event: ``reports -> bool array, shape (n,)``.
EventTest = Callable[[Any], NDArray[np.bool_]]


@dataclass(frozen=True)
class AuditTarget:
    """One claim to audit.

    Attributes
    ----------
    name : str
        The mechanism and, for a panel, the layer (``"... epsilon_inf"``).
    claimed : float
        The epsilon the mechanism states for this target, in nats (may be ``inf``).
    x0, x1 : int, float or str
        The two neighbouring inputs.
    encode : callable
        The shipped encoder, ``(inputs, rng) -> reports``.
    event : callable
        ``reports -> bool array``: the distinguishing event.
    event_name : str
        The event in words.
    mechanism : object
        The mechanism whose claim this is (for the goodness-of-fit test).
    kind : {"finite", "oracle", "numeric", "bloom", "prefix", "bucket"}
        Which channel the claim is about (how the fit test reads the reports).

    Examples
    --------
    >>> from deniable.mechanisms import KaryRR
    >>> (target,) = audit_targets(KaryRR(k=3, epsilon=1.0))
    >>> target.x0, target.x1, target.inputs(target.x0, 2).tolist()
    (0, 1, [0, 0])
    """

    name: str
    claimed: float
    x0: int | float | str
    x1: int | float | str
    encode: Encoder
    event: EventTest
    event_name: str
    mechanism: Any
    kind: str = "finite"

    def inputs(self, x: int | float | str, n: int) -> NDArray[Any]:
        """``n`` copies of input ``x`` (int64 for codes, float64 for numbers, objects for
        RAPPOR's strings)."""
        dtype = object if isinstance(x, str) else np.float64 if isinstance(x, float) else np.int64
        return np.full(n, x, dtype=dtype)


def _design_event(
    matrix: NDArray[np.float64], adjacent: bool = False
) -> tuple[int, int, list[int]]:
    """``(x0, x1, ys)``: the neighbouring answers with the largest ratio
    ``M[y, x0] / M[y, x1]`` (``inf`` where ``M[y, x1] = 0 < M[y, x0]``) and every report
    ``y`` that attains it (their union has the same ratio and more mass, so a tighter
    bound); among pairs of equal ratio, the one whose event is likeliest under ``x1``.
    Any two answers are neighbours, or with ``adjacent`` only counts that differ by one."""
    m = np.asarray(matrix, dtype=np.float64)
    best: tuple[float, float, int, int, list[int]] = (-1.0, -1.0, 0, 1, [0])
    for x0 in range(m.shape[1]):
        for x1 in range(m.shape[1]):
            if x0 == x1 or (adjacent and abs(x0 - x1) != 1):
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(m[:, x0] > 0, m[:, x0] / m[:, x1], 0.0)
            top = float(ratio.max())
            ys = [int(y) for y in np.flatnonzero(ratio >= top * (1 - 1e-9))]
            mass = float(m[ys, x1].sum())
            larger = top > best[0] * (1 + 1e-9)
            as_large = top >= best[0] * (1 - 1e-9)
            if larger or (as_large and mass > best[1]):
                best = (top, mass, x0, x1, ys)
    return best[2], best[3], best[4]


def _finite(name: str, design: Any, encode: Encoder, claimed: float) -> AuditTarget:
    # a count's epsilon is between counts that differ by one (the sensitive item)
    adjacent = bool(getattr(design, "adjacent_neighbours", False))
    x0, x1, ys = _design_event(design.matrix, adjacent)
    labels = [design.report_labels[y] if y < len(design.report_labels) else str(y) for y in ys]
    return AuditTarget(
        name, claimed, x0, x1, encode,
        lambda reports: np.isin(np.asarray(reports), ys),
        f"report {' or '.join(map(repr, labels))} (codes {ys}), answer {x0} against {x1}",
        design,
    )  # fmt: skip


def _oracle(oracle: Any) -> AuditTarget:
    def supports_0_not_1(reports: Any) -> NDArray[np.bool_]:
        s = oracle.support_matrix(reports).tocsc()
        first = s[:, 0].toarray().ravel().astype(bool)
        second = s[:, 1].toarray().ravel().astype(bool)
        return np.asarray(first & ~second, dtype=np.bool_)

    return AuditTarget(
        repr(oracle), float(oracle.epsilon), 0, 1, oracle.randomize, supports_0_not_1,
        "the report supports value 0 and not value 1", oracle, "oracle",
    )  # fmt: skip


def _prefix(mech: Any) -> AuditTarget:
    symbols = getattr(mech, "alphabet", "ab")  # PEM's own alphabet; any bytes for byte-PEM
    x0, x1 = (symbols[0], symbols[1]) if len(symbols) > 1 else (symbols[0], "")

    def supports_x0_not_x1(reports: Any) -> NDArray[np.bool_]:
        return np.asarray(
            mech.prefix_supports(reports, x0) & ~mech.prefix_supports(reports, x1), np.bool_
        )

    return AuditTarget(
        repr(mech), float(mech.epsilon), x0, x1, mech.randomize, supports_x0_not_x1,
        f"the report supports {x0!r}'s prefix at its level and not {x1!r}'s", mech, "prefix",
    )  # fmt: skip


def _bucket(mech: Any) -> AuditTarget:
    def sampled_bits_point_to_0(reports: Any) -> NDArray[np.bool_]:
        buckets, bits = np.asarray(reports.buckets), np.asarray(reports.bits)
        zero_says_1 = np.any((buckets == 0) & (bits == 1), axis=1)
        one_says_0 = np.any((buckets == 1) & (bits == 0), axis=1)
        if mech.d >= 2:
            return np.asarray(zero_says_1 & one_says_0, dtype=np.bool_)
        return np.asarray(zero_says_1 | one_says_0, dtype=np.bool_)

    event = ("it samples buckets 0 and 1, bit 1 for 0 and bit 0 for 1" if mech.d >= 2
             else "it samples bucket 0 with bit 1, or bucket 1 with bit 0")  # fmt: skip
    return AuditTarget(repr(mech), float(mech.epsilon), 0, 1, mech.randomize,
                       sampled_bits_point_to_0, event, mech, "bucket")  # fmt: skip


def _numeric(mech: Any) -> AuditTarget:
    high = float(mech.high)
    return AuditTarget(
        repr(mech), float(mech.epsilon), high, float(mech.low), mech.randomize,
        lambda reports: np.asarray(mech.debias(reports)) >= high,
        f"the debiased report is at least high = {high:g}", mech, "numeric",
    )  # fmt: skip


def _panel(panel: Any) -> list[AuditTarget]:
    permanent, instantaneous = panel.permanent, panel.instantaneous
    name = f"panel of {permanent!r} then {instantaneous!r}"

    def both_layers(values: NDArray[Any], rng: Any) -> Any:
        return instantaneous.randomize(permanent.randomize(values, rng), rng)

    return [
        _finite(f"{name}: epsilon_inf (the permanent layer)", permanent,
                permanent.randomize, float(panel.epsilon_inf)),
        _finite(f"{name}: epsilon_1 (one report through both layers)", panel,
                both_layers, float(panel.epsilon_1)),
    ]  # fmt: skip


def _bloom_pair(rappor: Any) -> tuple[str, str]:
    """Two strings whose Bloom bits in cohort 0 are ``h`` distinct bits each, disjoint."""
    words = [f"value-{i}" for i in range(4096)]
    bits = {w: rappor.bloom_bits(0, w) for w in words}
    usable = [w for w in words if len(set(bits[w])) == rappor.h]
    for w0 in usable:
        for w1 in usable:
            if w0 != w1 and not set(bits[w0]) & set(bits[w1]):
                return w0, w1
    raise ValueError(f"no two strings with disjoint Bloom bits in {rappor!r}")  # pragma: no cover


def _rappor(rappor: Any) -> list[AuditTarget]:
    import warnings

    v0, v1 = _bloom_pair(rappor)

    def ones_of_v0_zeros_of_v1(reports: Any) -> NDArray[np.bool_]:
        bits = np.unpackbits(reports.bits, axis=1, bitorder="little")[:, : rappor.n_bloom_bits]
        out = np.zeros(len(reports), dtype=np.bool_)
        for c in np.unique(reports.cohort).tolist():
            b0, b1 = set(rappor.bloom_bits(c, v0)), set(rappor.bloom_bits(c, v1))
            if len(b0) < rappor.h or len(b1) < rappor.h or b0 & b1:
                continue  # a cohort where the two share a bit: not in the event
            rows = reports.cohort == c
            ones, zeros = sorted(b0), sorted(b1)
            out[rows] = bits[rows][:, ones].all(axis=1) & ~bits[rows][:, zeros].any(axis=1)
        return out

    params = {k: v for k, v in rappor.params.items() if k not in ("p", "q")}
    with warnings.catch_warnings():  # the identity IRR has no report epsilon: it is meant
        warnings.simplefilter("ignore")
        permanent_only = type(rappor)(**params, p=0.0, q=1.0)
    event = f"in a cohort where they share no bit, the bits of {v0!r} all 1 and of {v1!r} all 0"
    return [
        AuditTarget(f"{rappor!r}: epsilon_inf (the permanent layer, the IRR the identity)",
                    float(rappor.epsilon_lifetime), v0, v1, permanent_only.randomize,
                    ones_of_v0_zeros_of_v1, event, permanent_only, "bloom"),
        AuditTarget(f"{rappor!r}: epsilon_1 (one report through both layers)",
                    float(rappor.epsilon_report), v0, v1, rappor.randomize,
                    ones_of_v0_zeros_of_v1, event, rappor, "bloom"),
    ]  # fmt: skip


def audit_targets(mechanism: Any) -> list[AuditTarget]:
    """The targets of one mechanism (two for a panel), each with the event its claimed
    channel implies (module docstring).

    Parameters
    ----------
    mechanism : Design, FrequencyOracle, NumericMechanism, prefix encoder or DBitFlip
        Any of :mod:`deniable.mechanisms`' finite designs, oracles (unary encoding, local
        hashing, Hadamard response), prefix encoders (PEM and byte-PEM), dBitFlip and
        numeric mechanisms, a :class:`~deniable.mechanisms.TwoLayerDesign`, or RAPPOR.

    Returns
    -------
    list of AuditTarget

    Raises
    ------
    TypeError
        For a mechanism the auditor does not know, naming it.

    Examples
    --------
    >>> from deniable import Warner
    >>> [t.event_name for t in audit_targets(Warner(p=0.75))]
    ["report 'no' (codes [0]), answer 0 against 1"]
    """
    # by the channel's record and the protocol, never by the mechanism's class
    channel = getattr(mechanism, "channel", None)
    if getattr(mechanism, "two_layer", None) is not None:
        return _panel(mechanism)
    if hasattr(mechanism, "bloom_bits") and hasattr(mechanism, "epsilon_lifetime"):
        return _rappor(mechanism)
    if hasattr(channel, "matrix"):
        return [_finite(repr(mechanism), mechanism, mechanism.randomize, mechanism.epsilon)]
    supports = hasattr(mechanism, "support_probabilities")
    if getattr(channel, "frequency_oracle", False) and supports:
        return [_oracle(mechanism)]
    if hasattr(channel, "levels") and hasattr(mechanism, "prefix_supports"):
        return [_prefix(mechanism)]
    if hasattr(channel, "p_star") and hasattr(mechanism, "bit_epsilon"):
        return [_bucket(mechanism)]
    if hasattr(channel, "low") and hasattr(mechanism, "debias"):
        return [_numeric(mechanism)]
    raise TypeError(
        f"cannot audit {type(mechanism).__name__}: give a finite design, a frequency "
        "oracle (unary encoding, local hashing, Hadamard response), a prefix encoder "
        "(PEM, byte-PEM), dBitFlip, a numeric mechanism, RAPPOR or a TwoLayerDesign"
    )


def targets_for(mechanism: Any, encode: Encoder | Sequence[Encoder] | None) -> list[AuditTarget]:
    """:func:`audit_targets`, each with the encoder to run: its shipped one, or ``encode``
    in its place (one callable for a mechanism of one target, a sequence of one per
    target for a panel or RAPPOR).

    Raises
    ------
    ValueError
        For one ``encode`` with a mechanism of several targets, or a sequence of another
        length than the targets.
    TypeError
        For a mechanism the auditor does not know.
    """
    targets = audit_targets(mechanism)
    if encode is None:
        return targets
    encoders = [encode] if callable(encode) else list(encode)
    if len(encoders) != len(targets):
        names = "; ".join(t.name for t in targets)
        raise ValueError(
            f"encode replaces the encoders one for one: {len(targets)} target(s) ({names}), "
            f"{len(encoders)} encoder(s) given"
        )
    return [replace(t, encode=e) for t, e in zip(targets, encoders, strict=True)]


def check_draws(n: int) -> int:
    """``n`` draws per input, an integer in 1..10^9 (bounded before anything is drawn).

    Raises
    ------
    ValueError
        Naming ``n`` and its range.
    """
    if isinstance(n, bool) or not (isinstance(n, int) and 1 <= n <= 10**9):
        raise ValueError(f"n must be an integer in 1..10^9, got {n!r}")
    return n

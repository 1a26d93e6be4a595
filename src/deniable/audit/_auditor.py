"""The black-box auditor: run a shipped encoder many times on two neighbouring inputs,
count the distinguishing event, and bound epsilon from below (:mod:`._bounds`).

A bound above the claim, confirmed on fresh draws, is a defect of the encoder or of the
claim. A bound well under the claim says nothing by itself: the goodness-of-fit test
(:mod:`._fit`) sees an encoder that is more private than it says, which a lower bound
cannot.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._bounds import epsilon_lower_bound
from ._targets import AuditTarget, Encoder, check_draws, targets_for

__all__ = ["CHUNK", "RUNTIMES", "EpsilonAudit", "audit_epsilon", "kernels", "run_encoder"]

#: The Python runtimes: the NumPy kernels and the numba-compiled ones.
RUNTIMES = ("numpy", "numba")
#: Draws per encoder call (memory stays bounded whatever ``n`` is).
CHUNK = 1 << 18


@contextlib.contextmanager
def kernels(runtime: str | None) -> Iterator[None]:
    """Run the encoders on one runtime's kernels (``DENIABLE_KERNELS``); None leaves it.

    Raises
    ------
    ValueError
        For a runtime other than ``numpy``, ``numba`` or None.
    """
    if runtime is None:
        yield
        return
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
    before = os.environ.get("DENIABLE_KERNELS")
    os.environ["DENIABLE_KERNELS"] = runtime
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("DENIABLE_KERNELS", None)
        else:
            os.environ["DENIABLE_KERNELS"] = before


def run_encoder(target: AuditTarget, encode: Encoder, x: Any, n: int, rng: Any) -> int:
    """How many of ``n`` encodings of input ``x`` fall in the target's event (in chunks
    of :data:`CHUNK`)."""
    hits = 0
    for start in range(0, n, CHUNK):
        reports = encode(target.inputs(x, min(CHUNK, n - start)), rng)
        hits += int(np.count_nonzero(target.event(reports)))
    return hits


@dataclass(frozen=True)
class EpsilonAudit:
    """A measured lower bound beside a claimed epsilon.

    Attributes
    ----------
    target : str
        The mechanism (and layer).
    claimed : float
        Its stated epsilon, in nats.
    lower_bound : float
        The measured bound, in nats: the true epsilon is at least this with probability
        ``confidence`` (Clopper-Pearson; Jagielski, Ullman & Oprea 2020).
    confidence : float in (0, 1)
    n : int
        Draws per input.
    hits : tuple of (int, int)
        Draws in the event under ``x0`` and under ``x1``.
    event : str
        The distinguishing event, in words.
    runtime : str
        ``numpy``, ``numba`` or ``default`` (whichever the kernels chose).
    seconds : float
        Wall time of the draws.

    Examples
    --------
    >>> from deniable import Warner
    >>> a = audit_epsilon(Warner(p=0.75), n=20_000)[0]
    >>> a.lower_bound <= a.claimed, round(a.claimed, 4)
    (True, 1.0986)
    """

    target: str
    claimed: float
    lower_bound: float
    confidence: float
    n: int
    hits: tuple[int, int]
    event: str
    runtime: str
    seconds: float

    @property
    def exceeds(self) -> bool:
        """Whether the bound is above the claim (a defect, once confirmed afresh)."""
        return self.lower_bound > self.claimed * (1 + 1e-12)

    @property
    def tightness(self) -> float:
        """``lower_bound / claimed`` (0 for an infinite claim)."""
        return self.lower_bound / self.claimed if np.isfinite(self.claimed) else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The fields, and ``exceeds`` and ``tightness``, JSON-ready."""
        return asdict(self) | {"exceeds": self.exceeds, "tightness": self.tightness}


def audit_epsilon(
    mechanism: Any,
    *,
    n: int = 100_000,
    confidence: float = 0.99,
    runtime: str | None = None,
    encode: Encoder | Sequence[Encoder] | None = None,
    rng: Any = None,
) -> list[EpsilonAudit]:
    """Audit a mechanism's claimed epsilon by running its shipped encoder.

    Parameters
    ----------
    mechanism : Design, FrequencyOracle, NumericMechanism or TwoLayerDesign
        The claim (its epsilon and channel); a panel gives one audit per layer.
    n : int, default 100,000
        Draws per input, at least 1 and at most 10^9.
    confidence : float in (0, 1), default 0.99
        Of each bound (a family of audits needs ``1 - alpha / m`` each).
    runtime : {"numpy", "numba"}, optional
        The kernels to run; default: whichever the machine uses.
    encode : callable or sequence of callables, optional
        ``(inputs, rng) -> reports`` in place of the shipped encoder (to audit a copy;
        the mutation tests plant defects this way); for a panel or RAPPOR, whose two
        targets have two encoders, a sequence of one per target.
    rng : numpy.random.Generator, optional
        Default None: the encoders' secure source, as on a respondent's device.

    Returns
    -------
    list of EpsilonAudit
        One per target of :func:`~deniable.audit.audit_targets`.

    Raises
    ------
    ValueError
        For ``n`` or ``confidence`` out of range, an unknown runtime, or ``encode``
        whose length is not the targets' (one callable for a panel or RAPPOR).
    TypeError
        For a mechanism the auditor does not know.

    Examples
    --------
    >>> from deniable import ForcedResponse
    >>> [a.exceeds for a in audit_epsilon(ForcedResponse(p_yes=0.2, p_no=0.2), n=10_000)]
    [False]
    """
    check_draws(n)
    targets = targets_for(mechanism, encode)
    out = []
    with kernels(runtime):
        for target in targets:
            run = target.encode
            run(target.inputs(target.x0, 16), rng)  # compile the kernels outside the clock
            start = time.perf_counter()
            k0 = run_encoder(target, run, target.x0, n, rng)
            k1 = run_encoder(target, run, target.x1, n, rng)
            seconds = time.perf_counter() - start
            bound = epsilon_lower_bound(k0, n, k1, n, confidence)
            out.append(
                EpsilonAudit(
                    target.name, target.claimed, bound, confidence, n, (k0, k1),
                    target.event_name, runtime or "default", seconds,
                )
            )  # fmt: skip
    return out

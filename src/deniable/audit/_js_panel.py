"""The browser's panel question audited in Node: ``panelReport`` in the page's
``randomizer.js``, both layers and the memo that keeps the permanent one.

A panel question's report on a device is ``panelReport(q, truth, secret)``: the permanent
report of ``truth``, drawn by the uniform ``HMAC-SHA256(secret, "deniable permanent|"
+ key + "|" + truth)`` (so it stays the same on that device for every wave: the memo of
RAPPOR's permanent response, Erlingsson, Pihur & Korolova 2014), randomized afresh by
the instantaneous layer. Its two claims are audited on the shipped function, a new owner
(a new secret) per respondent: ``epsilon_inf`` with the instantaneous layer the
identity, so that ``panelReport`` returns the permanent report itself, and ``epsilon_1``
with both layers. :func:`node_panel_memo_check` checks the memo: with each owner's
secret kept, the permanent report is the same in two waves, and the reports through
both layers are not (their instantaneous draws are fresh).
"""

from __future__ import annotations

import base64
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._js import _draw
from ._targets import Encoder, audit_targets

__all__ = ["MemoCheck", "node_panel_encoders", "node_panel_memo_check"]

#: The panel key the harness gives the question (the page's is the survey's own).
KEY = "audit"


@dataclass(frozen=True)
class MemoCheck:
    """Whether a device keeps a panel question's permanent report across waves.

    Attributes
    ----------
    target : str
    permanent_kept : bool
        With each owner's secret kept, two waves give the same permanent report.
    instantaneous_fresh : bool
        Two waves' reports through both layers differ (fresh instantaneous draws).

    Examples
    --------
    >>> MemoCheck("panel", True, True).passes
    True
    """

    target: str
    permanent_kept: bool
    instantaneous_fresh: bool

    @property
    def passes(self) -> bool:
        """Both hold."""
        return self.permanent_kept and self.instantaneous_fresh

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``passes``, JSON-ready."""
        return asdict(self) | {"passes": self.passes}


def _columns(design: Any) -> list[list[float]]:
    columns: list[list[float]] = np.asarray(design.matrix, dtype=np.float64).T.tolist()
    return columns


def _panel_fields(panel: Any, module: str | Path) -> tuple[Path, dict[str, Any], Any, Any]:
    matrices = (panel.permanent.matrix, panel.instantaneous.matrix)
    if max(max(np.shape(m)) for m in matrices) > 256:
        raise ValueError("node_panel_encoders takes layers of at most 256 answers and reports")
    identity = np.eye(np.shape(panel.permanent.matrix)[0]).tolist()
    fields = {"panel": {"key": KEY, "columns": _columns(panel.permanent)}}
    return Path(module).resolve(), fields, identity, _columns(panel.instantaneous)


def node_panel_encoders(panel: Any, module: str | Path) -> list[Encoder]:
    """Encoders that draw a panel question's reports with the page's ``panelReport`` in
    Node, a new owner's secret per respondent.

    Parameters
    ----------
    panel : TwoLayerDesign
        Its permanent and instantaneous layers, of at most 256 answers and reports each.
    module : str or Path
        The page's ``collection/respondent/web/randomizer.js`` (or the npm package's).

    Returns
    -------
    list of callable
        ``[permanent layer, both layers]``, the order of
        :func:`~deniable.audit.audit_targets`' panel targets, each ``(truths, rng) ->
        reports`` (uint8, shape (n,)); ``rng`` must be None. Give the list as
        ``encode=`` to :func:`~deniable.audit.audit_epsilon` or
        :func:`~deniable.audit.fit_test`.

    Raises
    ------
    ValueError
        For a layer of more than 256 answers or reports, or an ``rng``.
    RuntimeError
        Without Node.js, or when the module fails.

    Examples
    --------
    >>> import shutil
    >>> from deniable import Warner
    >>> from deniable.mechanisms import TwoLayerDesign
    >>> from deniable.audit import audit_epsilon
    >>> panel = TwoLayerDesign(Warner(p=0.9), Warner(p=0.75))
    >>> module = "src/deniable/collection/respondent/web/randomizer.js"
    >>> if shutil.which("node"):
    ...     encode = node_panel_encoders(panel, module)
    ...     print([a.exceeds for a in audit_epsilon(panel, n=5_000, encode=encode)])
    ... else:
    ...     print([False, False])
    [False, False]
    """
    path, fields, identity, instantaneous = _panel_fields(panel, module)

    def layer(columns: list[list[float]]) -> Encoder:
        def encode(truths: NDArray[Any], rng: Any) -> Any:
            if rng is not None:
                raise ValueError("rng must be None: the module draws from crypto.getRandomValues")
            return _draw(path, columns, truths, None, **fields)

        return encode

    return [layer(identity), layer(instantaneous)]


def node_panel_memo_check(panel: Any, module: str | Path, *, n: int = 4_096) -> MemoCheck:
    """Whether the page's ``panelReport`` keeps each owner's permanent report across
    waves and draws the instantaneous layer afresh.

    ``n`` owners, each with a secret of 32 bytes from ``os.urandom`` kept for two waves,
    answer ``x0`` and ``x1`` of the audit in turn: the permanent reports (instantaneous
    layer the identity) must agree wave to wave, and the reports through both layers
    must not (unless every instantaneous draw is certain).

    Parameters
    ----------
    panel : TwoLayerDesign
    module : str or Path
        The page's ``randomizer.js``.
    n : int, default 4,096
        Owners, 2..10^6.

    Returns
    -------
    MemoCheck

    Raises
    ------
    ValueError
        For ``n`` out of range, or a layer of more than 256 answers or reports.
    RuntimeError
        Without Node.js, or when the module fails.

    Examples
    --------
    >>> import shutil
    >>> from deniable import Warner
    >>> from deniable.mechanisms import TwoLayerDesign
    >>> panel = TwoLayerDesign(Warner(p=0.9), Warner(p=0.75))
    >>> module = "src/deniable/collection/respondent/web/randomizer.js"
    >>> not shutil.which("node") or node_panel_memo_check(panel, module, n=256).passes
    True
    """
    if not (isinstance(n, int) and 2 <= n <= 10**6):
        raise ValueError(f"n must be an integer in 2..10^6, got {n!r}")
    path, fields, identity, instantaneous = _panel_fields(panel, module)
    target = audit_targets(panel)[0]
    truths = np.where(np.arange(n) % 2 == 0, int(target.x0), int(target.x1))
    secrets = [base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode() for _ in range(n)]
    kept = [_draw(path, identity, truths, None, secrets=secrets, **fields) for _ in range(2)]
    waves = [_draw(path, instantaneous, truths, None, secrets=secrets, **fields) for _ in range(2)]
    name = f"panel of {panel.permanent!r} then {panel.instantaneous!r}, panelReport in Node"
    return MemoCheck(name, bool(np.array_equal(*kept)), not np.array_equal(*waves))

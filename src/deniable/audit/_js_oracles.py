"""The browser's frequency-oracle encoders (``web/oracles.js``: unary encoding, local
hashing, PEM, byte-PEM and RAPPOR) audited in Node, as the respondent's page runs them.

The page draws an oracle's report with ``deniableOracles.randomize*`` (its randomness
``crypto.getRandomValues``); ``node_oracles.mjs`` loads the same script the same way and
draws with ``oracle_draw.mjs``, packing each report in deniable's own report layout, so
that :func:`~deniable.audit.audit_epsilon`, :func:`~deniable.audit.fit_test` and the
source check read the browser's reports exactly as they read the Python encoder's. A
RAPPOR report is drawn with a fresh client secret, a new respondent each. Hadamard
response has no browser encoder.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..mechanisms import RapporReports
from ._fit import SourceCheck
from ._js import _PAGE_SEED, SEED, Evaluate, _node, _source_check
from ._targets import AuditTarget, Encoder, audit_targets

__all__ = [
    "ORACLE_HARNESS",
    "node_oracle_encoders",
    "node_oracle_source_checks",
    "page_oracle_encoders",
    "page_oracle_source_checks",
]

#: The harness Node runs for the oracle encoders (beside this module).
ORACLE_HARNESS = Path(__file__).with_name("node_oracles.mjs")
#: In the page: load the oracles' script (a module import runs it: it sets
#: ``globalThis.deniableOracles``), draw with oracle_draw.mjs's function, and return the
#: packed reports in base64.
_PAGE_ORACLE_DRAW = (
    "async ([url, kind, params, values]) => {\n"
    + ORACLE_HARNESS.with_name("oracle_draw.mjs").read_text(encoding="utf-8").split("export ", 1)[1]
    + """
  await import(url);
  const out = await drawOracleReports(globalThis.deniableOracles, kind, params, values);
  let text = "";
  for (let i = 0; i < out.length; i += 32768) {
    text += String.fromCharCode.apply(null, out.subarray(i, i + 32768));
  }
  return btoa(text);
}"""
)
#: The browser encoder of each oracle, by its spec name.
_KINDS = {"oue": "oue", "sue": "oue", "olh": "olh", "pem": "pem", "pem-bytes": "bytepem",
          "rappor": "rappor"}  # fmt: skip


def _kind(mechanism: Any) -> str:
    name = getattr(mechanism, "spec_name", None)
    if name not in _KINDS:
        raise TypeError(
            f"the browser has no encoder for {type(mechanism).__name__} ({name!r}): "
            f"it encodes {sorted(_KINDS)}"
        )
    return _KINDS[name]


def _reports(mechanism: Any, kind: str, raw: bytes, n: int) -> Any:
    """The harness's packed reports as the Python encoder's (oracle_draw.mjs's layout)."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    if kind == "oue":
        return buf.reshape(n, (int(mechanism.k) + 7) // 8)
    if kind == "rappor":
        rows = buf.reshape(n, 4 + (int(mechanism.n_bloom_bits) + 7) // 8)
        cohort = rows[:, :4].copy().view("<u4")[:, 0].astype(np.uint32)
        return RapporReports(cohort, rows[:, 4:].copy())
    if kind == "olh":
        layout = np.dtype([("a", "<u8"), ("b", "<u8"), ("y", "<u4")])
    elif kind == "pem":
        layout = np.dtype([("level", "u1"), ("a", "<u8"), ("b", "<u8"), ("y", "<u4")])
    else:
        layout = mechanism.dtype  # byte-PEM: level, a (r rows), y
    return mechanism.check_reports(np.frombuffer(raw, dtype=layout).copy())


def _draw(module: Path, mechanism: Any, values: NDArray[Any], seed: int | None) -> Any:
    kind = _kind(mechanism)
    items = _items(kind, values)
    header = {"module": str(module), "kind": kind, "params": mechanism.client_params(),
              "values": items, "seed": seed}  # fmt: skip
    done = subprocess.run(
        [_node(), str(ORACLE_HARNESS)],
        input=json.dumps(header).encode(),
        capture_output=True,
        check=False,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"node {module.name}: {done.stderr.decode(errors='replace')[-2000:]}")
    try:
        return _reports(mechanism, kind, done.stdout, len(items))
    except ValueError as exc:
        raise RuntimeError(f"node {module.name} gave malformed {kind} reports: {exc}") from exc


def _items(kind: str, values: NDArray[Any]) -> list[Any]:
    return [str(v) if kind in ("pem", "bytepem", "rappor") else int(v) for v in values]


def _encoder(target: AuditTarget, module: Path, seed: int | None) -> Encoder:
    def encode(values: NDArray[Any], rng: Any) -> Any:
        if rng is not None:
            raise ValueError("rng must be None: the module draws from crypto.getRandomValues")
        return _draw(module, target.mechanism, values, seed)

    return encode


def node_oracle_encoders(
    mechanism: Any, module: str | Path, *, seed: int | None = None
) -> list[Encoder]:
    """Encoders that draw ``mechanism``'s reports in Node with the browser's oracles.

    Parameters
    ----------
    mechanism : UnaryEncoding, LocalHashing, PrefixExtension, BytePrefixExtension or Rappor
        The claim; its ``client_params()`` are what the page hands the encoder.
    module : str or Path
        The page's ``collection/respondent/web/oracles.js`` (a classic script that sets
        ``globalThis.deniableOracles``).
    seed : int, optional
        Replace ``crypto.getRandomValues`` by a seeded stream (the source check only).

    Returns
    -------
    list of callable
        One per audit target (two for RAPPOR: its permanent layer, drawn with the
        instantaneous layer the identity, and one report), each ``(values, rng) ->
        reports`` in the Python encoder's layout; ``rng`` must be None. Give the list as
        ``encode=`` to :func:`~deniable.audit.audit_epsilon` or
        :func:`~deniable.audit.fit_test`.

    Raises
    ------
    TypeError
        For a mechanism the browser does not encode (Hadamard response), naming it.
    RuntimeError
        Without Node.js, or when the module fails or its reports are malformed.

    Examples
    --------
    >>> import shutil
    >>> from deniable.mechanisms import LocalHashing
    >>> from deniable.audit import audit_epsilon
    >>> module = "src/deniable/collection/respondent/web/oracles.js"
    >>> olh = LocalHashing(k=16, epsilon=2.0)
    >>> if shutil.which("node"):
    ...     encode = node_oracle_encoders(olh, module)
    ...     print(audit_epsilon(olh, n=20_000, encode=encode)[0].exceeds)
    ... else:
    ...     print(False)
    False
    """
    path = Path(module).resolve()
    targets = audit_targets(mechanism)
    for target in targets:
        _kind(target.mechanism)
    return [_encoder(target, path, seed) for target in targets]


def node_oracle_source_checks(
    mechanism: Any, module: str | Path, *, n: int = 8_192
) -> list[SourceCheck]:
    """Whether the browser oracle's reports come from ``crypto.getRandomValues`` alone,
    per audit target: two runs differ, and two with it replaced by one seeded stream
    agree.

    Parameters
    ----------
    mechanism : UnaryEncoding, LocalHashing, PrefixExtension, BytePrefixExtension or Rappor
    module : str or Path
        The page's ``oracles.js``.
    n : int, default 8,192
        Values per run (``x0`` and ``x1`` of the audit in turn).

    Returns
    -------
    list of SourceCheck

    Raises
    ------
    TypeError
        For a mechanism the browser does not encode.
    RuntimeError
        Without Node.js, or when the module fails.

    Examples
    --------
    >>> import shutil
    >>> from deniable.mechanisms import UnaryEncoding
    >>> module = "src/deniable/collection/respondent/web/oracles.js"
    >>> oue = UnaryEncoding(k=8, epsilon=1.0)
    >>> not shutil.which("node") or node_oracle_source_checks(oue, module, n=512)[0].passes
    True
    """
    targets = audit_targets(mechanism)
    fresh = node_oracle_encoders(mechanism, module)
    seeded = node_oracle_encoders(mechanism, module, seed=SEED)
    where = f"in Node ({Path(module).name})"
    return [
        _source_check(t, where, f, s, n) for t, f, s in zip(targets, fresh, seeded, strict=True)
    ]


def _page_encoder(evaluate: Evaluate, target: AuditTarget, url: str, seed: int | None) -> Encoder:
    import base64

    mechanism = target.mechanism
    kind = _kind(mechanism)

    def encode(values: NDArray[Any], rng: Any) -> Any:
        if rng is not None:
            raise ValueError("rng must be None: the page draws from crypto.getRandomValues")
        items = _items(kind, values)
        if seed is not None:
            evaluate(_PAGE_SEED, [seed])
        try:
            packed = evaluate(_PAGE_ORACLE_DRAW, [url, kind, mechanism.client_params(), items])
        finally:
            if seed is not None:
                evaluate(_PAGE_SEED, [None])
        return _reports(mechanism, kind, base64.b64decode(packed), len(items))

    return encode


def page_oracle_encoders(
    evaluate: Evaluate, mechanism: Any, url: str, *, seed: int | None = None
) -> list[Encoder]:
    """:func:`node_oracle_encoders` in a browser page, with the script at ``url`` (the
    page's ``oracles.js``, as the server serves it).

    Parameters
    ----------
    evaluate : callable
        ``evaluate(expression, argument)`` of a page at a secure origin (Playwright's
        ``page.evaluate``).
    mechanism : UnaryEncoding, LocalHashing, PrefixExtension, BytePrefixExtension or Rappor
    url : str
        The script's URL.
    seed : int, optional
        Replace ``crypto.getRandomValues`` by a seeded stream for each call (the source
        check only); it is restored after.

    Returns
    -------
    list of callable
        One per audit target, ``(values, rng) -> reports`` in the Python encoder's
        layout; ``rng`` must be None.

    Raises
    ------
    TypeError
        For a mechanism the browser does not encode.

    Examples
    --------
    >>> from deniable.mechanisms import LocalHashing
    >>> from deniable.audit import audit_epsilon
    >>> def audit_in(page, url):  # a Playwright page at a secure (loopback) origin
    ...     olh = LocalHashing(k=16, epsilon=2.0)
    ...     encode = page_oracle_encoders(page.evaluate, olh, url)
    ...     return audit_epsilon(olh, n=20_000, encode=encode)
    """
    targets = audit_targets(mechanism)
    return [_page_encoder(evaluate, target, url, seed) for target in targets]


def page_oracle_source_checks(
    evaluate: Evaluate, mechanism: Any, url: str, *, n: int = 4_096
) -> list[SourceCheck]:
    """:func:`node_oracle_source_checks` in a browser page.

    Parameters
    ----------
    evaluate : callable
        A page's ``evaluate(expression, argument)`` at a secure origin.
    mechanism : UnaryEncoding, LocalHashing, PrefixExtension, BytePrefixExtension or Rappor
    url : str
        The script's URL.
    n : int, default 4,096
        Values per run.

    Returns
    -------
    list of SourceCheck

    Raises
    ------
    TypeError
        For a mechanism the browser does not encode.

    Examples
    --------
    >>> from deniable.mechanisms import UnaryEncoding
    >>> def check_in(page, url):  # a Playwright page at a secure (loopback) origin
    ...     oue = UnaryEncoding(k=8, epsilon=1.0)
    ...     return page_oracle_source_checks(page.evaluate, oue, url)[0].passes
    """
    targets = audit_targets(mechanism)
    fresh = page_oracle_encoders(evaluate, mechanism, url)
    seeded = page_oracle_encoders(evaluate, mechanism, url, seed=SEED)
    where = f"in the page ({url.rsplit('/', 1)[-1]})"
    return [
        _source_check(t, where, f, s, n) for t, f, s in zip(targets, fresh, seeded, strict=True)
    ]

"""The browser's randomizer, audited where it runs: in Node (the npm package's or the
page's own ``randomizer.js``, through ``node_harness.mjs``) and in a browser page (the
module as the server serves it, through the page's ``evaluate``), drawing every report
as the page does, ``drawReport(column, uniform53())``.

The Python encoders and the browser's are written twice; a slip in one is invisible to
a proof about the other, so each is audited on its own draws. :func:`node_encoder` and
:func:`page_encoder` are encoders for :func:`~deniable.audit.audit_epsilon` and
:func:`~deniable.audit.fit_test`; the source checks replace ``crypto.getRandomValues``
by a seeded stream, as :func:`~deniable.audit.source_check` does the secure source in
Python; :func:`page_timing_check` times batches of calls in the page, as a script on the
host page could (a browser coarsens ``performance.now`` to 5-100 microseconds, so one
call cannot be timed there).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._fit import SourceCheck, _same, _varied
from ._targets import AuditTarget, Encoder, audit_targets
from ._timing import TimingCheck, paired_gap

__all__ = [
    "HARNESS",
    "SEEDED",
    "node_encoder",
    "node_source_check",
    "node_timing_check",
    "page_encoder",
    "page_source_check",
    "page_timing_check",
]

#: The harness Node runs (beside this module).
HARNESS = Path(__file__).with_name("node_harness.mjs")
#: The seeded stand-in for ``crypto.getRandomValues`` of the source checks, and its seed.
SEEDED = Path(__file__).with_name("seeded_random.mjs")
SEED = 20261207


def _node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("the node runtime needs Node.js 20 or later on the PATH")
    return found


def _draw(
    module: Path,
    columns: list[list[float]],
    truths: NDArray[Any],
    seed: int | None,
    time: bool = False,
    **panel: Any,
) -> Any:
    """Run the harness; ``panel`` adds its ``panel`` and ``secrets`` fields."""
    fields = {"module": str(module), "columns": columns, "seed": seed, "time": time}
    header = json.dumps(fields | panel)
    codes = np.asarray(truths, dtype=np.uint8)
    done = subprocess.run(
        [_node(), str(HARNESS)],
        input=header.encode() + b"\n" + codes.tobytes(),
        capture_output=True,
        check=False,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"node {module.name}: {done.stderr.decode(errors='replace')[-2000:]}")
    out = np.frombuffer(done.stdout, dtype="<f8" if time else np.uint8)
    if out.size != codes.size:
        raise RuntimeError(f"node {module.name} gave {out.size} reports for {codes.size} truths")
    return out


def node_encoder(design: Any, module: str | Path, *, seed: int | None = None) -> Encoder:
    """An encoder that draws ``design``'s reports in Node with a browser randomizer.

    Parameters
    ----------
    design : Design
        A finite design of at most 256 answers and reports (its matrix gives the
        columns the page hands the randomizer, ``Pr(report r | truth t)``).
    module : str or Path
        The ES module to draw with: the npm package's ``js/dist/randomizer.js`` or the
        page's ``collection/respondent/web/randomizer.js``; it must export
        ``drawReport(column, u)`` and ``uniform53()``.
    seed : int, optional
        Replace ``crypto.getRandomValues`` by a seeded stream (the source check only).

    Returns
    -------
    callable
        ``(truths, rng) -> reports`` (uint8, shape (n,)); ``rng`` must be None: the
        module draws from ``crypto.getRandomValues``.

    Raises
    ------
    ValueError
        For a design of more than 256 answers or reports, or an ``rng``.
    RuntimeError
        Without Node.js, or when the module fails.

    Examples
    --------
    >>> import shutil
    >>> from deniable import Warner
    >>> from deniable.audit import audit_epsilon
    >>> module = "src/deniable/collection/respondent/web/randomizer.js"
    >>> if shutil.which("node"):
    ...     encode = node_encoder(Warner(p=0.75), module)
    ...     print(audit_epsilon(Warner(p=0.75), n=20_000, encode=encode)[0].exceeds)
    ... else:
    ...     print(False)
    False
    """
    matrix = np.asarray(design.matrix, dtype=np.float64)
    if max(matrix.shape) > 256:
        raise ValueError(
            f"node_encoder takes designs of at most 256 answers and reports, got {matrix.shape}"
        )
    columns = matrix.T.tolist()
    path = Path(module).resolve()

    def encode(truths: NDArray[Any], rng: Any) -> Any:
        if rng is not None:
            raise ValueError("rng must be None: the module draws from crypto.getRandomValues")
        return _draw(path, columns, truths, seed)

    return encode


def node_source_check(design: Any, module: str | Path, *, n: int = 65_536) -> SourceCheck:
    """Whether the module's reports come from ``crypto.getRandomValues`` alone: two runs
    differ, and two runs with it replaced by one seeded stream agree (an encoder that
    also reads a non-cryptographic generator or the clock does not).

    Parameters
    ----------
    design : Design
    module : str or Path
    n : int, default 65,536
        Truths per run (``x0`` and ``x1`` of the audit in turn).

    Returns
    -------
    SourceCheck

    Raises
    ------
    RuntimeError
        Without Node.js, or when the module fails.

    Examples
    --------
    >>> import shutil
    >>> from deniable import Warner
    >>> module = "src/deniable/collection/respondent/web/randomizer.js"
    >>> not shutil.which("node") or node_source_check(Warner(p=0.75), module, n=1024).passes
    True
    """
    fresh = node_encoder(design, module)
    seeded = node_encoder(design, module, seed=SEED)
    (target,) = audit_targets(design)
    return _source_check(target, f"in Node ({Path(module).name})", fresh, seeded, n)


def node_timing_check(design: Any, module: str | Path, *, calls: int = 20_000) -> TimingCheck:
    """Whether single calls of the browser's randomizer in Node take a time that tells
    the answer: ``drawReport(column, uniform53())`` on ``x0`` and ``x1`` in a shuffled
    order, each call timed by ``process.hrtime`` (nanoseconds) in the same process, as a
    script beside the randomizer could; the AUC and medians as
    :func:`~deniable.audit.timing_check` gives them in Python.

    Parameters
    ----------
    design : Design
    module : str or Path
        The npm package's or the page's ``randomizer.js``.
    calls : int, default 20,000
        Calls per answer, 100..10^7 (the AUC's standard deviation under no leak is
        0.0029 at 20,000).

    Returns
    -------
    TimingCheck

    Raises
    ------
    ValueError
        For ``calls`` out of range.
    RuntimeError
        Without Node.js, or when the module fails.

    Examples
    --------
    >>> import shutil
    >>> from deniable import Warner
    >>> module = "src/deniable/collection/respondent/web/randomizer.js"
    >>> not shutil.which("node") or node_timing_check(Warner(p=0.75), module, calls=500).calls
    500
    """
    from scipy.stats import mannwhitneyu

    if not (isinstance(calls, int) and 100 <= calls <= 10**7):
        raise ValueError(f"calls must be an integer in 100..10^7, got {calls!r}")
    (target,) = audit_targets(design)
    columns = np.asarray(design.matrix, dtype=np.float64).T.tolist()
    order = np.random.default_rng(64).permutation(np.repeat([0, 1], calls))  # not secret
    truths = np.where(order == 0, int(target.x0), int(target.x1))
    times = _draw(Path(module).resolve(), columns, truths, None, time=True)
    t0, t1 = times[order == 0], times[order == 1]
    u = float(mannwhitneyu(t0, t1).statistic) / (t0.size * t1.size)
    medians = (float(np.median(t0)), float(np.median(t1)))
    name = f"{target.name} in Node ({Path(module).name}), single calls"
    return TimingCheck(name, max(u, 1 - u), medians, calls)


#: In the page: replace ``crypto.getRandomValues`` by the seeded stream of
#: ``seeded_random.mjs`` (the Node harness's), or restore it; ``[seed]`` (null restores).
_PAGE_SEED = (
    "([seed]) => {"
    + SEEDED.read_text(encoding="utf-8").split("export ", 1)[1]
    + """
  if (globalThis.__deniableGetRandomValues === undefined) {
    globalThis.__deniableGetRandomValues = crypto.getRandomValues.bind(crypto);
  }
  crypto.getRandomValues = seed === null
    ? globalThis.__deniableGetRandomValues
    : seededGetRandomValues(seed);
}"""
)

#: In the page: one report per truth, as the page draws it.
_PAGE_DRAW = """async ([url, columns, truths]) => {
  const R = await import(url);
  return truths.map((t) => R.drawReport(columns[t], R.uniform53()));
}"""

#: In the page: ``batches`` batches of ``size`` calls, each on truth ``order[i]``, timed.
_PAGE_TIME = """async ([url, columns, order, size]) => {
  const R = await import(url);
  const times = [];
  let sink = 0;
  for (const t of order) {
    const column = columns[t];
    const start = performance.now();
    for (let i = 0; i < size; i++) sink += R.drawReport(column, R.uniform53());
    times.push(performance.now() - start);
  }
  return [times, sink];
}"""

Evaluate = Any  # a page's ``evaluate(expression, argument)``, e.g. Playwright's


def page_encoder(evaluate: Evaluate, design: Any, url: str, *, seed: int | None = None) -> Encoder:
    """An encoder that draws ``design``'s reports in a browser page with the module at
    ``url`` (the page's own, as the server serves it).

    Parameters
    ----------
    evaluate : callable
        ``evaluate(expression, argument)`` of a page at a secure origin (Playwright's
        ``page.evaluate``); deniable needs no browser library itself.
    design : Design
        A finite design (its matrix gives the columns the page hands the randomizer).
    url : str
        The module's URL, exporting ``drawReport`` and ``uniform53``.
    seed : int, optional
        Replace ``crypto.getRandomValues`` by a seeded stream for each call (the source
        check only); it is restored after.

    Returns
    -------
    callable
        ``(truths, rng) -> reports`` (int64, shape (n,)); ``rng`` must be None.

    Raises
    ------
    ValueError
        For an ``rng``.

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.audit import audit_epsilon
    >>> def audit_in(page, url):  # a Playwright page at a secure (loopback) origin
    ...     encode = page_encoder(page.evaluate, Warner(p=0.75), url)
    ...     return audit_epsilon(Warner(p=0.75), n=20_000, encode=encode)[0]
    """
    columns = np.asarray(design.matrix, dtype=np.float64).T.tolist()

    def encode(truths: NDArray[Any], rng: Any) -> Any:
        if rng is not None:
            raise ValueError("rng must be None: the page draws from crypto.getRandomValues")
        if seed is not None:
            evaluate(_PAGE_SEED, [seed])
        try:
            codes = [int(t) for t in np.asarray(truths)]
            return np.asarray(evaluate(_PAGE_DRAW, [url, columns, codes]), dtype=np.int64)
        finally:
            if seed is not None:
                evaluate(_PAGE_SEED, [None])

    return encode


def page_source_check(evaluate: Evaluate, design: Any, url: str, *, n: int = 16_384) -> SourceCheck:
    """:func:`node_source_check` in a browser page (see :func:`page_encoder`).

    Parameters
    ----------
    evaluate : callable
        A page's ``evaluate(expression, argument)`` at a secure origin.
    design : Design
    url : str
        The module's URL.
    n : int, default 16,384
        Truths per run.

    Returns
    -------
    SourceCheck

    Raises
    ------
    Exception
        Whatever ``evaluate`` raises when the module fails in the page.

    Examples
    --------
    >>> from deniable import Warner
    >>> def check_in(page, url):  # a Playwright page at a secure (loopback) origin
    ...     return page_source_check(page.evaluate, Warner(p=0.75), url).passes
    """
    fresh = page_encoder(evaluate, design, url)
    seeded = page_encoder(evaluate, design, url, seed=SEED)
    (target,) = audit_targets(design)
    where = f"in the page ({url.rsplit('/', 1)[-1]})"
    return _source_check(target, where, fresh, seeded, n)


def _source_check(
    target: AuditTarget, where: str, fresh: Encoder, seeded: Encoder, n: int
) -> SourceCheck:
    """Two runs of ``fresh`` differ; two of ``seeded`` (the stand-in source) agree."""
    truths = _varied(target, n)
    return SourceCheck(
        f"{target.name} {where}",
        not _same(fresh(truths, None), fresh(truths, None)),
        _same(seeded(truths, None), seeded(truths, None)),
    )


def page_timing_check(
    evaluate: Evaluate, design: Any, url: str, *, pairs: int = 2_000, size: int = 1_000
) -> TimingCheck:
    """Whether batches of calls in a browser page take a time that tells the answer, as a
    script on the host page could time them (``performance.now``).

    ``pairs`` pairs of batches of ``size`` calls, one batch on each answer in a random
    order within the pair; the relative difference of a call's cost is the trimmed mean
    of the pairs' log ratios, with its interval (:func:`~deniable.audit.paired_gap`); a
    leak is confirmed when the interval lies beyond 1% (``TimingCheck.passes``). The AUC
    and medians of the batch times are reported beside it.

    Parameters
    ----------
    evaluate : callable
        A page's ``evaluate(expression, argument)`` at a secure origin.
    design : Design
    url : str
        The module's URL.
    pairs : int, default 2,000
        Pairs of batches, 20..10^5. In a quiet headless Chromium on 2 cores, 2,000 pairs
        of 1,000 calls (about 10 s) give a standard error of about 0.3% of a call's cost:
        a gap of 2.5% is confirmed with a chance of 95%, and none at no gap with a chance
        of 0.05%.
    size : int, default 1,000
        Calls a batch, 100..10^6: a batch of 1,000 lasts about 2 ms, 20 of the coarsest
        clock's ticks (0.1 ms), whose rounding is the same on both answers.

    Returns
    -------
    TimingCheck
        With ``calls`` the pairs and ``gap_interval`` set.

    Raises
    ------
    ValueError
        For ``pairs`` or ``size`` out of range.

    Examples
    --------
    >>> from deniable.mechanisms import KaryRR
    >>> def time_in(page, url):  # a Playwright page at a secure (loopback) origin
    ...     return page_timing_check(page.evaluate, KaryRR(k=4, epsilon=1.0), url).passes
    """
    from scipy.stats import mannwhitneyu

    if not (isinstance(pairs, int) and 20 <= pairs <= 10**5):
        raise ValueError(f"pairs must be an integer in 20..10^5, got {pairs!r}")
    if not (isinstance(size, int) and 100 <= size <= 10**6):
        raise ValueError(f"size must be an integer in 100..10^6, got {size!r}")
    (target,) = audit_targets(design)
    columns = np.asarray(design.matrix, dtype=np.float64).T.tolist()
    answer = (int(target.x0), int(target.x1))
    flips = np.random.default_rng(64).integers(0, 2, pairs)  # not secret: which goes first
    order = np.column_stack([flips, 1 - flips]).ravel()
    evaluate(_PAGE_TIME, [url, columns, [answer[i] for i in order[:100].tolist()], size])
    times, _ = evaluate(_PAGE_TIME, [url, columns, [answer[i] for i in order.tolist()], size])
    t = np.maximum(np.asarray(times, dtype=np.float64), 1e-3) * 1e6  # ms to ns, >= 1 us
    t0, t1 = t[order == 0], t[order == 1]  # pair by pair: each pair has one of each
    _, low, high = paired_gap(t0, t1)
    u = float(mannwhitneyu(t0, t1).statistic) / (t0.size * t1.size)
    medians = (float(np.median(t0)), float(np.median(t1)))
    name = f"{target.name} in the page, {pairs:,} pairs of {size:,} calls"
    return TimingCheck(name, max(u, 1 - u), medians, pairs, (low, high))

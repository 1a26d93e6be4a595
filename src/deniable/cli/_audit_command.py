"""``deniable audit SPEC``: a measured epsilon beside the claimed one, the encoder's fit
to its channel, and its source of randomness (:mod:`deniable.audit`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ._common import JsonOpt, app, console, emit_json, fail

__all__ = ["audit"]


@app.command()
def audit(
    spec: Annotated[
        str,
        typer.Argument(
            help='A design or oracle spec, e.g. "warner:p=0.75", "kary-rr:k=5,epsilon=1", '
            '"oue:k=16,epsilon=1", "olh:k=16,epsilon=2", "duchi:epsilon=1".'
        ),
    ],
    n: Annotated[int, typer.Option("--n", min=1, max=10**9, help="Draws per input.")] = 100_000,
    confidence: Annotated[
        float, typer.Option(min=0.5, max=0.999999, help="Of the lower bound.")
    ] = 0.99,
    runtime: Annotated[
        str | None,
        typer.Option(help="numpy or numba: the kernels to run (default: the machine's)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the shipped encoder of SPEC on two neighbouring inputs and bound its epsilon
    from below (Clopper-Pearson at --confidence; Jagielski, Ullman and Oprea 2020), test
    its output frequencies against its channel (level 1 - confidence; a rejection is
    confirmed on fresh draws), and check that it
    draws from the secure source. Exit 1 when a bound exceeds the claim, the fit is
    rejected or the source check fails; the secure source is used, as on a device."""
    from ..audit import RUNTIMES, audit_epsilon, fit_test, source_check

    if runtime is not None and runtime not in RUNTIMES:
        raise fail(f"--runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
    from ..mechanisms import mechanism_from_spec

    try:
        mechanism = mechanism_from_spec(spec)
    except ValueError as exc:
        raise fail(f"SPEC: {exc}") from None
    try:
        bounds = audit_epsilon(mechanism, n=n, confidence=confidence, runtime=runtime)
        fits = fit_test(mechanism, n=n, alpha=1 - confidence, runtime=runtime, confirm=True)
        sources = source_check(mechanism)
    except TypeError as exc:
        raise fail(str(exc)) from None
    rows: list[dict[str, Any]] = [
        b.to_dict() | {"fit": f.to_dict(), "source": {"fresh": s.fresh,
                                                      "from_secure_source": s.from_secure_source}}
        for b, f, s in zip(bounds, fits, sources, strict=True)
    ]  # fmt: skip
    failed = any(b.exceeds for b in bounds) or any(f.rejects for f in fits)
    failed = failed or not all(s.passes for s in sources)
    if as_json:
        emit_json({"audits": rows, "passed": not failed})
    else:
        _print(rows, confidence)
    if failed:
        raise typer.Exit(1)


def _print(rows: list[dict[str, Any]], confidence: float) -> None:
    for r in rows:
        fit, source = r["fit"], r["source"]
        secure = source["fresh"] and source["from_secure_source"]
        verdict = "[red]FAILS[/]" if r["exceeds"] or fit["rejects"] or not secure else "passes"
        console.print(f"[bold]{r['target']}[/]: {verdict}")
        console.print(
            f"  epsilon claimed {r['claimed']:.4f} nats; measured at least "
            f"{r['lower_bound']:.4f} ({r['tightness']:.1%} of the claim) at {confidence:.0%} "
            f"confidence, {r['n']:,} draws per input ({r['runtime']} kernels, "
            f"{r['seconds']:.2f} s); event: {r['event']}"
        )
        console.print(
            f"  fit to its channel: p = {fit['pvalue']:.3g} over {fit['cells']} cells; a "
            f"shift of {fit['detectable_shift']:.4f} in a report probability would show"
        )
        console.print(
            "  randomness: "
            + ("fresh on every run, from the secure source alone" if secure else
               f"fresh {source['fresh']}, secure source alone {source['from_secure_source']}")
        )  # fmt: skip
        if r["exceeds"]:
            console.print("  [red]the measured epsilon is above the claim[/]")
        if fit["rejects"]:
            console.print("  [red]the reports do not follow the channel[/]")

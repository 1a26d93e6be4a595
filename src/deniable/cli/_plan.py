"""``deniable plan`` and ``deniable fairness``: sample size, disclosure risk, a fairness
audit (``deniable audit`` is kept for the privacy auditor)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

if TYPE_CHECKING:
    from ..mechanisms import Design

import typer

from ._common import JsonOpt, SeedOpt, app, console, emit_json, fail, parse_design

__all__ = ["fairness", "plan"]


@app.command()
def fairness(
    epsilon: Annotated[
        float, typer.Option(min=1e-6, max=20.0, help="Epsilon (nats) of the private attribute.")
    ] = 1.0,
    confidence_level: Annotated[float, typer.Option(help="Confidence level in (0, 1).")] = 0.95,
    seed: SeedOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fairness audit on UCI Adult: parity of income >50K, clear and with private groups."""
    import numpy as np
    from rich.table import Table

    from ..analysis import adult_parity_audit

    rng = np.random.default_rng(seed)
    table_df = adult_parity_audit(epsilon, confidence_level=confidence_level, rng=rng)
    if as_json:
        emit_json(table_df.reset_index().to_dict(orient="records"))
        return
    table = Table(
        title=f"Statistical parity of income >50K (not in group - in group); group collected "
        f"by Warner at epsilon = {epsilon:g}"
    )
    for c in ("group", "members", "clear", "private", "SE", f"{confidence_level:.0%} CI", "covers"):
        table.add_column(c, justify="left" if c == "group" else "right")
    for g, row in table_df.iterrows():
        table.add_row(
            str(g),
            f"{int(row['members']):,}",
            f"{row['clear_difference']:+.4f}",
            f"{row['private_difference']:+.4f}",
            f"{row['private_std_error']:.4f}",
            f"{row['private_low']:+.4f} - {row['private_high']:+.4f}",
            "yes" if row["covers_clear"] else "no",
        )
    console.print(table)


#: ``plan``'s design: optional, since ``--compare`` plans without one.
PlanDesignOpt = Annotated[
    str | None,
    typer.Option(
        "--design", "-d", help='Design spec, e.g. "warner:p=0.7" (deniable analyze prevalence '
        "--help lists them); not with --compare."
    ),
]  # fmt: skip


@app.command()
def plan(
    design: PlanDesignOpt = None,
    margin: Annotated[float, typer.Option(help="Largest acceptable error, in (0, 1).")] = 0.05,
    confidence_level: Annotated[float, typer.Option(help="Confidence level in (0, 1).")] = 0.95,
    prior: Annotated[
        float, typer.Option(help='Prior prevalence of "yes" for the disclosure risk.')
    ] = 0.1,
    plot: Annotated[
        Path | None,
        typer.Option(
            help="Save a plot of margin against n, the margin and its n marked (PNG, SVG, PDF)."
        ),
    ] = None,
    direct_prevalence: Annotated[
        float | None,
        typer.Option(
            help="A validation study: the prevalence expected in a direct-questioning arm "
            "(with --rr-prevalence: the arm sizes for the one-sided test)."
        ),
    ] = None,
    rr_prevalence: Annotated[
        float | None, typer.Option(help="The prevalence expected in the design's arm.")
    ] = None,
    power: Annotated[float, typer.Option(help="Power of the arms' test, in (0.5, 1).")] = 0.8,
    alpha: Annotated[float, typer.Option(help="Level of the arms' test, in (0, 0.5).")] = 0.05,
    ratio: Annotated[float, typer.Option(help="Direct arm size / design arm size.")] = 1.0,
    ecwm: Annotated[
        bool,
        typer.Option(
            "--ecwm", help="A crosswise design: also the extended crosswise study's size."
        ),
    ] = False,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="Every binary design at each --epsilon (or at --promise), "
            "with the n each needs, best first.",
        ),
    ] = False,
    epsilon: Annotated[
        list[float] | None,
        typer.Option("--epsilon", help="With --compare: epsilon in nats (repeat for several)."),
    ] = None,
    promise: Annotated[
        float | None,
        typer.Option(
            help='With --compare: the highest belief in "yes" one report may cause, from --prior.'
        ),
    ] = None,
    min_release: Annotated[
        int | None,
        typer.Option(help="With --compare: the survey's min_release (default the server's, 30)."),
    ] = None,
    cells: Annotated[
        int,
        typer.Option(min=1, help="With --compare: key cells of direct answers (1 if none)."),
    ] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Sample size, epsilon and disclosure risk of a design; with --direct-prevalence
    and --rr-prevalence the arm sizes of a validation study (Lensvelt-Mulders et al.
    2005); with --ecwm the size of an extended crosswise study (Heck et al. 2018); with
    --compare every binary design at one epsilon or one disclosure promise."""
    if compare:
        if design is not None:
            raise fail("--compare plans every design: leave out --design")
        _compare(epsilon or [], promise, prior, margin, confidence_level, min_release, cells,
                 as_json)  # fmt: skip
        return
    if design is None:
        raise fail("give --design SPEC, or --compare with --epsilon or --promise")
    if epsilon or promise is not None:
        raise fail("--epsilon and --promise go with --compare")
    _plan_one(
        parse_design(design),
        margin=margin,
        confidence_level=confidence_level,
        prior=prior,
        plot=plot,
        direct_prevalence=direct_prevalence,
        rr_prevalence=rr_prevalence,
        power=power,
        alpha=alpha,
        ratio=ratio,
        ecwm=ecwm,
        as_json=as_json,
    )


def _plan_one(
    d: Design,
    *,
    margin: float,
    confidence_level: float,
    prior: float,
    plot: Path | None,
    direct_prevalence: float | None,
    rr_prevalence: float | None,
    power: float,
    alpha: float,
    ratio: float,
    ecwm: bool,
    as_json: bool,
) -> None:
    """``plan --design``: one design's sample sizes, disclosure risk, and on request a
    validation study's arms, the extended crosswise size and the plot."""
    import numpy as np

    from ..planning import arm_comparison_size, disclosure_risk, ecwm_size, sample_size

    if (direct_prevalence is None) != (rr_prevalence is None):
        raise fail("--direct-prevalence and --rr-prevalence go together")
    if ecwm and type(d).__name__ != "Crosswise":
        raise fail(f"--ecwm needs a crosswise design (crosswise:p=...), got {d!r}")
    try:
        sizes = {m: sample_size(d, margin, confidence_level, m) for m in ("normal", "chebyshev")}
        if d.n_reports == d.n_truths:
            sizes["exact"] = sample_size(d, margin, confidence_level, "exact")
        prior_vec = prior if d.n_truths == 2 else np.full(d.n_truths, 1.0 / d.n_truths)
        risk = disclosure_risk(d, prior_vec)
        arms = (
            arm_comparison_size(d, direct_prevalence, rr_prevalence, alpha, power, ratio)
            if direct_prevalence is not None and rr_prevalence is not None
            else None
        )
        ecwm_n = ecwm_size(d.params["p"], margin, confidence_level) if ecwm else None
    except ValueError as exc:
        raise fail(str(exc)) from None
    payload = {
        "design": d.to_dict(),
        "margin": margin,
        "confidence_level": confidence_level,
        "sample_size": sizes,
        "disclosure_risk": risk.to_dict(),
    }
    if arms is not None:
        payload["arms"] = {
            "direct_prevalence": direct_prevalence,
            "rr_prevalence": rr_prevalence,
            "alpha": alpha,
            "power": arms.power,
            "rr": arms.rr,
            "direct": arms.direct,
            "total": arms.total,
        }
    if ecwm_n is not None:
        payload["ecwm"] = {"total": ecwm_n, "per_group": ecwm_n // 2}
    if plot is not None:
        from ..plots import plot_sample_size

        plot_sample_size(d, margin=margin, confidence_level=confidence_level).savefig(plot)
        payload["plot"] = str(plot)
    if as_json:
        emit_json(payload)
        return
    console.print(f"[bold]{d!r}[/]  epsilon = {d.epsilon:.6g} nats")
    for m, n in sizes.items():
        console.print(f"  n for margin {margin} at {confidence_level:.0%} ({m}): {n:,}")
    for line in risk.describe():
        console.print(f"  {line}")
    if arms is not None:
        console.print(
            f"  validation study: {arms.rr:,} in the design's arm and {arms.direct:,} asked "
            f"directly ({arms.total:,} in all) detect {rr_prevalence:g} against "
            f"{direct_prevalence:g} with power {arms.power:.3f} (one-sided, level {alpha:g})"
        )
    if ecwm_n is not None:
        console.print(
            f"  extended crosswise: {ecwm_n:,} in all ({ecwm_n // 2:,} per group, p and "
            f"1 - p) for margin {margin} at {confidence_level:.0%}"
        )
    if plot is not None:
        console.print(f"  plot saved to {plot}")


def _compare(
    epsilons: list[float],
    promise: float | None,
    prior: float,
    margin: float,
    confidence_level: float,
    min_release: int | None,
    cells: int,
    as_json: bool,
) -> None:
    """``plan --compare``: a table of every binary design per target, best first."""
    from rich.table import Table

    from ..collection.model import MIN_RELEASE
    from ..planning import compare_designs

    if bool(epsilons) == (promise is not None):
        raise fail("--compare needs --epsilon (one or more) or --promise, not both")
    targets: list[dict[str, float]] = (
        [{"epsilon": e} for e in epsilons] if epsilons else [{"promise": float(promise or 0)}]
    )
    release = MIN_RELEASE if min_release is None else min_release
    try:
        tables = [
            (t, compare_designs(**t, prior=prior, margin=margin, confidence_level=confidence_level,
                                min_release=release, cells=cells))
            for t in targets
        ]  # fmt: skip
    except ValueError as exc:
        raise fail(str(exc)) from None
    if as_json:
        emit_json(
            [
                {**t, "prior": prior, "margin": margin, "confidence_level": confidence_level,
                 "min_release": release, "cells": cells, "designs": [r.to_dict() for r in rows]}
                for t, rows in tables
            ]
        )  # fmt: skip
        return
    for t, rows in tables:
        what = (
            f"epsilon = {t['epsilon']:g} nats"
            if "epsilon" in t
            else f'no report above {t["promise"]:.0%} belief in "yes" (prior {prior:.0%})'
        )
        table = Table(title=f"Every binary design at {what}: margin {margin} at "
                      f"{confidence_level:.0%}, best first")  # fmt: skip
        belief = f"belief in yes at most (prior {prior:.0%})"
        for c in ("design", "parameters", "epsilon (nats)", belief, "n", "n to collect"):
            table.add_column(c, justify="left" if c in ("design", "parameters") else "right")
        for r in rows:
            if r.design is not None:
                params = r.design.to_dict()["params"]
                assert isinstance(params, dict)
                shown = ", ".join(f"{k}={v:.4g}" for k, v in params.items() if isinstance(v, float))
                table.add_row(r.family, shown, f"{r.epsilon:.4g}", f"{r.posterior_yes:.1%}",
                              f"{r.n:,}", f"{r.n_to_collect:,}")  # fmt: skip
        console.print(table)
        for r in rows:
            if r.design is None:
                console.print(f"  {r.family}: {r.note}")
    console.print(
        f"n: released reports for the margin (normal); n to collect adds what the release "
        f"may withhold, up to {release - 1} responses in each of {cells} key cell(s) of "
        "direct answers. At one epsilon warner, forced-response, crosswise, kuk and the "
        "unrelated question (innocuous prevalence 1/2) are one channel: choose by what your "
        "respondents find credible."
    )

"""``deniable demo``: the private survey of UCI Adult, in process and live, and real surveys."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    from rich.table import Table

    from ..data import DemoRow

import typer

from ._common import JsonOpt, SeedOpt, app, console, emit_json, err, short_spec

__all__ = ["demo"]


def _demo_table(title: str, rows: list[DemoRow]) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("question", overflow="fold")
    table.add_column("design", overflow="fold")
    table.add_column("n", justify="right")
    table.add_column("estimate", justify="right")
    table.add_column("SE", justify="right")
    table.add_column("95% CI", justify="right", no_wrap=True)
    table.add_column("true rate", justify="right")
    table.add_column("covered", justify="center")
    for r in rows:
        label = r.question if r.category == "yes" else f"{r.question} [{r.category}]"
        if r.survey != "UCI Adult":
            label = f"{r.survey}: {label}"
        cells = [
            label,
            short_spec(r.design),
            f"{r.n:,}",
            f"{r.estimate:.4f}",
            f"{r.std_error:.4f}",
            f"{r.low:.4f} - {r.high:.4f}",
            "" if r.truth is None else f"{r.truth:.4f}",
            {True: "yes", False: "NO", None: ""}[r.covered],
        ]
        table.add_row(*cells)
    return table


@app.command()
def demo(
    seed: SeedOpt = None,
    as_json: JsonOpt = False,
    respondents: Annotated[
        int, typer.Option(min=10, max=48_842, help="Respondents in the live HTTP survey.")
    ] = 3000,
    keep_serving: Annotated[
        bool | None,
        typer.Option(
            "--keep-serving/--no-keep-serving",
            help="Keep the demo server running until Ctrl-C (default: only on a terminal).",
        ),
    ] = None,
) -> None:
    """The main job: a private survey of UCI Adult (in-process and live over HTTP), and real
    surveys analysed."""
    import numpy as np
    from rich.progress import Progress

    from ..collection.server import LiveDemoResult, live_demo
    from ..data import adult_survey, real_surveys

    rng = np.random.default_rng(seed) if seed is not None else None
    if not console.is_terminal:
        console.width = max(console.width, 150)
    stay = console.is_terminal and not as_json if keep_serving is None else keep_serving

    def report(live: LiveDemoResult) -> None:
        if as_json:
            emit_json(
                {
                    "adult": [r.to_dict() for r in adult],
                    "live": {
                        "respondents": live.respondents,
                        "seconds": live.seconds,
                        "rows": [asdict(r) | {"covered": r.covered} for r in live.rows],
                    },
                    "real_surveys": [r.to_dict() for r in real],
                    "study": [asdict(r) | {"covered": r.covered} for r in live.study],
                }
            )
            return
        console.print(
            "[bold]1. A private survey of 48,842 people (UCI Adult, 1994 US census extract).[/]\n"
            "Each answer is randomized on the respondent's device "
            + ("(seeded simulation)" if seed is not None else "(secure random source)")
            + "; the analyst sees only reports."
        )
        console.print(_demo_table("Estimate, 95% CI and the true rate", adult))
        covered = sum(bool(r.covered) for r in adult)
        console.print(f"{covered} of {len(adult)} intervals contain the true rate.\n")
        _print_live(live)
        console.print(
            "[bold]3. Real randomized-response surveys[/] "
            "(data from the R packages rr, RRTCS, GLMMRR).\n"
            "Estimates are the unbiased moment estimates (as RRreg::RRuni, rr and RRTCS report "
            "them); the MTURK dice game has a known truth."
        )
        console.print(_demo_table("Prevalence estimates", real))
        console.print(
            "In the MTURK validation study the crosswise model over-estimates and forced "
            "response under-estimates the observed cheating rate, as Hoeglinger & Jann (2018) "
            "report: the designs are unbiased only when respondents follow the instructions.\n"
        )
        _print_study(live)

    def hold(live: LiveDemoResult) -> None:
        """Runs while the demo server is up: report, then serve until Ctrl-C."""
        progress.stop()
        report(live)
        console.print(
            f"\nServing the results page at [bold]{live.results_url}[/] (log in with the "
            f"analyst token [bold]{live.analyst_token}[/]); press Ctrl-C to stop."
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass

    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("surveying", total=None)

        def step(message: str) -> None:
            progress.update(task, description=message)

        adult = adult_survey(rng, step)
        real = real_surveys(step)
        step("starting the collection server")
        live = live_demo(respondents, seed=seed, progress=step, keep_serving=hold if stay else None)
    if stay:
        return
    report(live)
    if not as_json:
        console.print(
            "\nThe demo server has stopped. To browse the results page, run "
            "[bold]deniable demo --keep-serving[/] and open the URL it prints, "
            f"like {live.results_url}, and log in with the analyst token it prints."
        )


def _print_live(live: Any) -> None:
    from rich.table import Table

    console.print(
        f"[bold]2. The same survey live over HTTP:[/] {live.respondents:,} people sampled from "
        f"UCI Adult answered through the collection server ({live.base_url}, SQLite). Each "
        "respondent's client randomized locally and sent only reports, one POST each "
        f"({live.respondents / live.seconds:,.0f} responses/s)."
    )
    table = Table(title="Live estimates from the server", title_justify="left")
    for name in ("question", "n", "estimate", "SE", "95% CI", "respondents' rate", "population"):
        table.add_column(name, justify="left" if name == "question" else "right")
    for r in live.rows:
        label = r.question if r.category == "yes" else f"{r.question} [{r.category}]"
        table.add_row(
            label,
            f"{r.n:,}",
            f"{r.estimate:.4f}",
            f"{r.std_error:.4f}",
            f"{r.low:.4f} - {r.high:.4f}",
            f"{r.respondents_rate:.4f}",
            f"{r.population_rate:.4f}",
        )
    console.print(table)
    covered = sum(r.covered for r in live.rows)
    console.print(
        f"{covered} of {len(live.rows)} intervals contain the respondents' true rate. "
        f"Results page (while the server runs): {live.results_url}\n"
    )


def _print_study(live: Any) -> None:
    from rich.table import Table

    console.print(
        f"[bold]4. A study on the same server:[/] the {live.respondents:,} respondents were "
        "asked their sex and age directly; each device drew an arm (a third answered the "
        "income question directly, the others by forced response) and a group of the "
        "extended crosswise question on divorce (simulated devices), and the responses "
        "went in by the batch API. The server randomized the direct arm's income answers "
        "before storing them (k-ary randomized response at the forced-response arm's "
        "epsilon, ln 3), and the direct arm's estimate undoes that; a release takes whole "
        "cells of sex x age with at least min_release responses, whatever their arm or "
        "answers, so each truth is that of the released respondents."
    )
    table = Table(title="Study estimates beside the respondents' truth", title_justify="left")
    for name in ("question", "estimate of", "n", "estimate", "SE", "95% CI", "truth", "note"):
        table.add_column(name, justify="right" if name in ("n", "estimate", "SE") else "left")
    for r in live.study:
        table.add_row(
            r.question,
            r.what,
            f"{r.n:,}" if r.n else "",
            f"{r.estimate:+.4f}" if r.n == 0 else f"{r.estimate:.4f}",
            f"{r.std_error:.4f}",
            f"{r.low:.4f} - {r.high:.4f}",
            f"{r.truth:+.4f}" if r.n == 0 else f"{r.truth:.4f}",
            r.note,
        )
    console.print(table)
    covered = sum(r.covered for r in live.study)
    console.print(f"{covered} of {len(live.study)} intervals contain the truth.")

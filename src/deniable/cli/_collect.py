"""``deniable survey check`` and ``serve``: the collection service."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    pass


from ..errors import DeniableError
from ._common import JsonOpt, app, console, emit_json, err, fail, short_spec

__all__ = ["serve", "survey_app", "survey_check"]

survey_app = typer.Typer(help="Survey definitions.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(survey_app, name="survey")


@survey_app.command("check")
def survey_check(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Survey definition (.yaml or .json); give every version of a survey to "
            "check its lifetime budget (the last is shown in detail)."
        ),
    ],
    prior: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help='Prior prevalence of "yes" for the disclosure risk (default: the file\'s '
            "disclosure_prior).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Validate a survey; print each question's cost, the total, the disclosure risk, and
    the lifetime-budget ledger across the versions given."""
    survey, ledger = _load_versions(files)
    if prior is None:
        prior = survey.disclosure_prior
    payload = _check_payload(survey, ledger, prior)
    if as_json:
        emit_json(payload)
        return
    _print_costs(survey, payload, prior)
    _print_notes(survey, payload)
    _print_ledger(survey, ledger)


def _load_versions(files: list[Path]) -> tuple[Any, Any]:
    """The latest version and its lifetime ledger over the versions given; a bad file
    prints every error (field and message) and exits with code 2."""
    from ..collection.model import check_lifetime, load_survey  # lazy: pydantic

    try:
        versions = sorted((load_survey(f) for f in files), key=lambda s: s.version)
        ledger = None
        for i, version in enumerate(versions):
            ledger = check_lifetime(versions[:i], version)
    except FileNotFoundError as exc:
        raise fail(f"no such file: {exc.filename}") from None
    except ValueError as exc:
        if not isinstance(exc, DeniableError):
            raise fail(str(exc)) from None
        for field, message in getattr(exc, "errors", [("survey", str(exc))]):
            err.print(f"[bold red]error:[/] {field}: {message}")
        raise typer.Exit(code=2) from None
    except DeniableError as exc:
        err.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(code=2) from None
    assert ledger is not None
    return versions[-1], ledger


def _check_payload(survey: Any, ledger: Any, prior: float) -> dict[str, Any]:
    """What ``survey check --json`` prints."""
    from ..collection.store import cell_warning, disclosure_report  # lazy: SQLAlchemy
    from ._check_rows import arm_rows, cost_rows

    return {
        "id": survey.id,
        "version": survey.version,
        "questions": cost_rows(survey, prior),
        "total_epsilon": survey.total_epsilon,
        "privacy_budget": survey.privacy_budget,
        "digest": survey.digest,
        "ledger": ledger.to_dict(),
        # sent as given: outside the accounting, listed apart
        "direct_questions": [
            {"id": q.id, "choices": q.choice_labels} for q in survey.direct_questions
        ],
        "direct_cells": survey.direct_cells(),
        # statistical disclosure control of the direct answers (planning figures only)
        "disclosure": disclosure_report(survey),
        # the sample-ratio test's power against a quarter of a control arm leaving
        "self_selection": _self_selection(survey),
        "arms": arm_rows(survey),
        "warnings": [w for w in [cell_warning(survey), _open_arms(survey)] if w],
        "untranslated": survey.untranslated(),
    }


def _open_arms(survey: Any) -> str | None:
    """What an open study with arms cannot hold: one arm per person."""
    if not survey.arms or survey.requires_invitation:
        return None
    return (
        "arms without invitations: each device draws its arm, so a respondent can draw "
        "again (cleared storage, another device) and a panel member can change arm "
        "between waves; to keep one arm per person in every wave and on every device, "
        "set requires_invitation: true and invite named recipients (survey invite "
        "--recipients)"
    )


def _print_costs(survey: Any, payload: dict[str, Any], prior: float) -> None:
    """Each randomized question's cost and disclosure risk, a panel's two epsilons, the
    version's total, the direct questions and each arm's cost."""
    from rich.table import Table

    rows = payload["questions"]
    table = Table(title=f"{survey.title} ({survey.id} v{survey.version})", title_justify="left")
    table.add_column("question")
    if survey.arms or any(r["group"] is not None for r in rows):
        table.add_column("arm / group")
    table.add_column("design", overflow="fold")
    table.add_column("epsilon (nats)", justify="right")
    table.add_column("cost (nats)", justify="right")
    table.add_column(f"disclosure risk (prior {prior:g})", overflow="fold")
    for r in rows:
        eps = r["epsilon"]
        where = [] if len(table.columns) == 5 else [_where(r)]
        table.add_row(
            r["id"],
            *where,
            short_spec(r["design"]),
            eps if isinstance(eps, str) else f"{eps:.4f}",
            f"{r['cost']:.4f}",
            "\n".join(r["disclosure"]),
        )
    console.print(table)
    for r in rows:
        if "epsilon_inf" in r:
            console.print(
                f"Panel {r['id']}: epsilon_1 {r['epsilon_1']:.4f} nats (what one wave's "
                f"report reveals), epsilon_inf {r['epsilon_inf']:.4f} nats (what every report "
                f"of one answer on one device reveals together): one device at most "
                f"{r['answers']} x {r['epsilon_inf']:.4f} = "
                f"{r['answers'] * r['epsilon_inf']:.4f} nats over any number of waves; the "
                "ledger charges each wave what a report from a new device costs"
            )
    console.print(
        f"Cost per respondent: {payload['total_epsilon']:.4f} nats of the version's budget "
        f"{survey.privacy_budget:g}. OK."
    )
    if survey.direct_questions:
        console.print(
            "Asked directly (sent as given, outside the budget; "
            f"{survey.direct_cells()} cells together): "
            + "; ".join(f"{q.id} ({', '.join(q.choice_labels)})" for q in survey.direct_questions)
        )
    for arm in payload["arms"]:
        directly = f"; asked directly: {', '.join(arm['direct'])}" if arm["direct"] else ""
        console.print(
            f"Arm {arm['id']} (drawn with chance {arm['share']:.3g}): {arm['cost']:.4f} nats"
            + directly
        )


def _print_notes(survey: Any, payload: dict[str, Any]) -> None:
    """The release rules, the self-selection test's power, warnings, translations."""
    disclosure = payload["disclosure"]
    if disclosure["keys"]:
        console.print(
            f"Release rule: every release adds 0 or at least {survey.min_release} responses "
            f"to each of the {disclosure['cells']} key cell(s) ({', '.join(disclosure['keys'])}"
            ", asked before treatment, the arms together); a response in a smaller cell "
            "waits, whole. Releases come every "
            f"{survey.release_every} s, at the close, and on `deniable survey release`."
        )
    if disclosure["after_treatment"]:
        console.print(
            "Asked directly after treatment, released as sent and never keys: "
            + ", ".join(disclosure["after_treatment"])
        )
    for arm, share in disclosure["released_share"].items():
        if disclosure["keys"]:
            console.print(
                f"Expected released by the close{f' in arm {arm}' if arm else ''}: "
                f"{share:.0%} of its responses (the same in every arm)"
            )
    for row in disclosure["channels"]:
        where = f" in arm {row['arm']}" if row["arm"] else ""
        cost = (
            f": the 95% interval is {row['width']:.3g} wide at the planned responses, "
            f"against {row['width_as_sent']:.3g} as sent"
            if row["width"] is not None
            else ""
        )
        console.print(
            f"Post-randomized before it is stored: {row['question']}{where} "
            f"({row['channel']}, epsilon {row['epsilon']:.4g} nats){cost}"
        )
    for qid in disclosure["unprotected"]:
        console.print(
            f"[yellow]unprotected:[/] {qid} is stored and released as sent "
            "(allow_unprotected_release): epsilon infinite, whoever reads the releases "
            "learns it"
        )
    for line in disclosure["wait"]:
        console.print(f"[yellow]note:[/] {line}")
    for line in disclosure["suggestions"]:
        console.print(f"  suggestion: {line}")
    for row in payload["self_selection"]:
        console.print(
            f"Self-selection: if {row['leave_share']:.0%} of arm {row['arm']!r} drew again, "
            f"the dashboard's sample-ratio test (p < 0.001) would flag it in "
            f"{row['power']:.0%} of studies of {row['n']:,}"
        )
    for warning in payload["warnings"]:
        err.print(f"[yellow]warning:[/] {warning}")
    for lang, names in payload["untranslated"].items():
        if names:
            console.print(f"Translation {lang} leaves as written: {', '.join(names)}")


def _print_ledger(survey: Any, ledger: Any) -> None:
    """The lifetime budget's ledger across the versions given."""
    from rich.table import Table

    book = Table(
        title=f"Lifetime budget of {survey.id}: {ledger.spent:.4f} of "
        f"{ledger.lifetime_budget:g} nats",
        title_justify="left",
    )
    book.add_column("version", justify="right")
    book.add_column("adds (nats)", justify="right")
    book.add_column("spent through it (nats)", justify="right")
    for number, added, spent in ledger.cumulative:
        book.add_row(str(number), f"{added:.4f}", f"{spent:.4f}")
    console.print(book)
    for entry in ledger.entries:
        if entry.panel_answers is not None:
            console.print(f"  {entry.in_words()}")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = 8000,
    database_url: Annotated[
        str | None,
        typer.Option(
            envvar="DENIABLE_DATABASE_URL",
            help="SQLAlchemy URL (sqlite:///file.sqlite or postgresql://user:pw@host/db); "
            "default: a SQLite file deniable.sqlite in the working directory.",
        ),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Worker processes.")] = 1,
    limit_concurrency: Annotated[
        int,
        typer.Option(
            min=1,
            max=1_000_000,
            help="Most connections and tasks served at once per worker; beyond it new "
            "requests get 503 at once.",
        ),
    ] = 1000,
    limit_per_client: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1_000_000,
            help="Most requests of one client (address; IPv6 /64) in flight at once per "
            "worker, so one client cannot fill --limit-concurrency; default a tenth of it "
            "(at least 10).",
        ),
    ] = None,
    forwarded_allow_ips: Annotated[
        str | None,
        typer.Option(
            help="Addresses of the reverse proxy whose X-Forwarded-For is trusted "
            "(comma-separated, e.g. 127.0.0.1). Without it the header is ignored and each "
            "client is the socket's peer.",
        ),
    ] = None,
) -> None:
    """Run the collection server (analyst token from DENIABLE_ANALYST_TOKEN)."""
    import os

    import uvicorn

    from ..collection.store import database_url as resolve

    url = resolve(database_url)
    os.environ["DENIABLE_DATABASE_URL"] = url
    per_client = limit_per_client or max(10, limit_concurrency // 10)
    os.environ["DENIABLE_LIMIT_PER_CLIENT"] = str(min(per_client, limit_concurrency))
    _analyst_token(workers)
    if forwarded_allow_ips:
        os.environ["DENIABLE_FORWARDED_ALLOW_IPS"] = forwarded_allow_ips
    else:
        os.environ.pop("DENIABLE_FORWARDED_ALLOW_IPS", None)
    _prepare_database(url)
    uvicorn.run(
        "deniable.collection.server:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,  # the application's own access log has no addresses or queries
        http="deniable.collection.server._http_protocol:HeaderDeadlineProtocol",
        limit_concurrency=limit_concurrency,
        # uvicorn trusts X-Forwarded-For from 127.0.0.1 by default: only when named
        proxy_headers=bool(forwarded_allow_ips),
        forwarded_allow_ips=forwarded_allow_ips or "",
    )


def _analyst_token(workers: int) -> None:
    """Check DENIABLE_ANALYST_TOKEN (long enough; required with several workers), or
    make one for this run and print it."""
    import os
    import secrets

    from ..collection.server import MIN_TOKEN_CHARS

    given = os.environ.get("DENIABLE_ANALYST_TOKEN", "")
    if given and len(given) < MIN_TOKEN_CHARS:
        raise fail(
            f"DENIABLE_ANALYST_TOKEN must be at least {MIN_TOKEN_CHARS} characters; make one "
            "with python -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    if workers > 1 and not given:
        raise fail(
            f"--workers {workers} needs DENIABLE_ANALYST_TOKEN: set it to a long random "
            "secret that all worker processes share"
        )
    if not given:
        os.environ["DENIABLE_ANALYST_TOKEN"] = secrets.token_urlsafe(24)
        err.print(
            "No DENIABLE_ANALYST_TOKEN set; the analyst token for this run is "
            f"[bold]{os.environ['DENIABLE_ANALYST_TOKEN']}[/]"
        )


def _prepare_database(url: str) -> None:
    """Create and migrate the database once, before the workers start; warn where
    PostgreSQL's row versions could order invitation spends against responses."""
    from ..collection.store import Store

    store = Store(url)
    invited = [
        sid for sid, version in store.survey_ids() if store.survey(sid, version).requires_invitation
    ]
    store.close()
    err.print(f"Database: {url.split('@')[-1]}")
    if invited and not url.startswith("sqlite"):
        err.print(
            "[yellow]warning:[/] PostgreSQL keeps each row version's transaction id (xmin), "
            "which increases with time: a database superuser can order invitation spends "
            f"against waiting responses of {', '.join(sorted(set(invited)))} (see the threat "
            "model in docs/collection.md); use SQLite where that matters"
        )


def _self_selection(survey: Any) -> list[dict[str, Any]]:
    """Per control arm, at ``expected_responses``: the sample-ratio test's power against
    a quarter of the arm's respondents drawing again
    (:func:`deniable.planning.sample_ratio_power`); empty without both."""
    from ..planning import sample_ratio_power

    if not survey.arms or survey.expected_responses is None:
        return []
    names = survey.arm_names
    weights = [survey.arms[a].weight for a in names]
    n = survey.expected_responses
    return [
        {
            "arm": arm,
            "n": n,
            "leave_share": 0.25,
            "power": sample_ratio_power(weights, n, names.index(arm), 0.25),
        }
        for arm in survey.control_arms
    ]


def _where(row: dict[str, Any]) -> str:
    parts = [row["arm"] or ""] + ([f"group {row['group']}"] if row["group"] is not None else [])
    return " ".join(p for p in parts if p)

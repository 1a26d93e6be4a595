"""``deniable survey check``, ``serve`` and ``respond``: the collection service."""

from __future__ import annotations

import bisect
import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from ..collection.model.i18n import catalog
from ..collection.model.survey import load_survey
from ..collection.store.disclosure import cell_warning, disclosure_report
from ..errors import DeniableError
from .common import JsonOpt, app, console, emit_json, err, fail, short_spec

__all__ = ["respond", "serve", "survey_app", "survey_check"]

survey_app = typer.Typer(help="Survey definitions.", no_args_is_help=True)
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
    from ..collection.model.budget import check_lifetime
    from .check_rows import arm_rows, cost_rows

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
    survey = versions[-1]
    assert ledger is not None
    if prior is None:
        prior = survey.disclosure_prior
    rows = cost_rows(survey, prior)
    arms = arm_rows(survey)
    total = survey.total_epsilon
    warnings = [w for w in [cell_warning(survey)] if w]
    untranslated = survey.untranslated()
    disclosure = disclosure_report(survey)
    self_selection = _self_selection(survey)
    payload = {
        "id": survey.id,
        "version": survey.version,
        "questions": rows,
        "total_epsilon": total,
        "privacy_budget": survey.privacy_budget,
        "digest": survey.digest,
        "ledger": ledger.to_dict(),
        # sent as given: outside the accounting, listed apart
        "direct_questions": [
            {"id": q.id, "choices": q.choice_labels} for q in survey.direct_questions
        ],
        "direct_cells": survey.direct_cells(),
        # statistical disclosure control of the direct answers (planning figures only)
        "disclosure": disclosure,
        # the sample-ratio test's power against a quarter of a control arm leaving
        "self_selection": self_selection,
        "arms": arms,
        "warnings": warnings,
        "untranslated": untranslated,
    }
    if as_json:
        emit_json(payload)
        return
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
                f"of one answer reveals together): at most {r['answers']} x "
                f"{r['epsilon_inf']:.4f} = {r['answers'] * r['epsilon_inf']:.4f} nats over "
                "any number of waves"
            )
    console.print(
        f"Cost per respondent: {total:.4f} nats of the version's budget "
        f"{survey.privacy_budget:g}. OK."
    )
    if survey.direct_questions:
        console.print(
            "Asked directly (sent as given, outside the budget; "
            f"{survey.direct_cells()} cells together): "
            + "; ".join(f"{q.id} ({', '.join(q.choice_labels)})" for q in survey.direct_questions)
        )
    for arm in arms:
        directly = f"; asked directly: {', '.join(arm['direct'])}" if arm["direct"] else ""
        console.print(
            f"Arm {arm['id']} (drawn with chance {arm['share']:.3g}): {arm['cost']:.4f} nats"
            + directly
        )
    if disclosure["keys"] or disclosure["sensitive"]:
        console.print(
            f"Release rules: every release adds 0 or at least {survey.min_release} responses "
            f"to each of the {disclosure['cells']} key cell(s) ({', '.join(disclosure['keys'])})"
            + (
                f", and to each answer of a question asked directly in an arm; those rows "
                f"need {survey.l_diversity} different answers per cell"
                if disclosure["sensitive"]
                else ""
            )
            + ". A response that would break a rule waits, whole."
        )
        for line in disclosure["wait"]:
            console.print(f"[yellow]note:[/] {line}")
        for line in disclosure["suggestions"]:
            console.print(f"  suggestion: {line}")
    for row in self_selection:
        console.print(
            f"Self-selection: if {row['leave_share']:.0%} of arm {row['arm']!r} drew again, "
            f"the dashboard's sample-ratio test (p < 0.001) would flag it in "
            f"{row['power']:.0%} of studies of {row['n']:,}"
        )
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {warning}")
    for lang, names in untranslated.items():
        if names:
            console.print(f"Translation {lang} leaves as written: {', '.join(names)}")
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

    from ..collection.store.storage import Store
    from ..collection.store.storage import database_url as resolve

    url = resolve(database_url)
    os.environ["DENIABLE_DATABASE_URL"] = url
    per_client = limit_per_client or max(10, limit_concurrency // 10)
    os.environ["DENIABLE_LIMIT_PER_CLIENT"] = str(min(per_client, limit_concurrency))
    from ..collection.server.app import MIN_TOKEN_CHARS

    given = os.environ.get("DENIABLE_ANALYST_TOKEN", "")
    if given and len(given) < MIN_TOKEN_CHARS:
        raise fail(
            f"DENIABLE_ANALYST_TOKEN must be at least {MIN_TOKEN_CHARS} characters; make one "
            "with python -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    if workers > 1 and not os.environ.get("DENIABLE_ANALYST_TOKEN"):
        raise fail(
            f"--workers {workers} needs DENIABLE_ANALYST_TOKEN: set it to a long random "
            "secret that all worker processes share"
        )
    if not os.environ.get("DENIABLE_ANALYST_TOKEN"):
        import secrets

        os.environ["DENIABLE_ANALYST_TOKEN"] = secrets.token_urlsafe(24)
        err.print(
            "No DENIABLE_ANALYST_TOKEN set; the analyst token for this run is "
            f"[bold]{os.environ['DENIABLE_ANALYST_TOKEN']}[/]"
        )
    if forwarded_allow_ips:
        os.environ["DENIABLE_FORWARDED_ALLOW_IPS"] = forwarded_allow_ips
    else:
        os.environ.pop("DENIABLE_FORWARDED_ALLOW_IPS", None)
    store = Store(url)  # create and migrate once, before the workers start
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
    uvicorn.run(
        "deniable.collection.server:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,  # the application's own access log has no addresses or queries
        http="deniable.collection.server.protocol:HeaderDeadlineProtocol",
        limit_concurrency=limit_concurrency,
        # uvicorn trusts X-Forwarded-For from 127.0.0.1 by default: only when named
        proxy_headers=bool(forwarded_allow_ips),
        forwarded_allow_ips=forwarded_allow_ips or "",
    )


@app.command()
def respond(
    url: Annotated[
        str | None,
        typer.Argument(help="Survey URL, e.g. http://127.0.0.1:8000/s/my-survey#token=..."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="Invitation token (default: the link's #token=...; else asked)."),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Send without asking.")] = False,
    forget: Annotated[
        bool,
        typer.Option("--forget", help="Remove this computer's memo of drawn reports, then stop."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Answer a survey in the terminal: randomize locally, show what is sent, submit.

    The invitation is checked (spent for an unlinkable credential) before any question
    is asked. Answers may be typed as numbers or as the answer's label; a numeric
    question takes a number in its range. A report drawn before on this computer for
    the same person and the same question (the memo, see
    :mod:`deniable.collection.respondent.memo`) is sent again instead of a new draw. The end of
    input (Ctrl-D) stops cleanly, with nothing sent. With ``--json`` the prompts go to
    standard error and standard output gets one JSON object: what was sent.
    """
    import httpx

    from ..collection.respondent.client import (
        assign,
        design_from_view,
        numeric_truth,
        panel_report,
        parse_survey_url,
        request_credential,
    )
    from ..collection.respondent.memo import ReportMemo, owner_of

    out = err if as_json else console
    memo = ReportMemo()
    if forget:
        removed = memo.forget()
        out.print("The memo of drawn reports was removed." if removed else "There was no memo.")
        return
    if url is None:
        raise fail("give the survey's URL (or --forget)")
    try:
        link = parse_survey_url(url)
    except ValueError as exc:
        raise fail(str(exc)) from None
    token = token or link.token
    try:
        with httpx.Client(base_url=link.base_url, timeout=30) as http:
            params = {"version": link.version} if link.version else {}
            r = http.get(f"/api/surveys/{link.survey_id}", params=params)
            if r.status_code != 200:
                raise fail(_server_message(r))
            view = r.json()
            for q in view["questions"]:
                design_from_view(q)  # checks the stated epsilon before anything is asked
            out.print(f"[bold]{view['title']}[/]")
            if view.get("description"):
                out.print(view["description"])
            if view.get("consent"):
                out.print(f"\n[bold]Consent and contact[/]\n{view['consent']}")
            out.print(catalog("en")["no_withdrawal"])
            if view.get("closed"):
                raise fail(f"survey {view['id']!r} is closed: it takes no responses")
            credential = None
            if view.get("requires_invitation"):
                if not token:
                    token = typer.prompt("Invitation token", hide_input=True, err=as_json)

                def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
                    for attempt in range(3):  # the same blinded message: the same signature
                        try:
                            answer = http.post(path, json=body)
                            break
                        except httpx.TransportError:
                            if attempt == 2:
                                raise
                    if answer.status_code != 201:
                        raise fail(f"invitation refused: {_server_message(answer)}")
                    result: dict[str, Any] = answer.json()
                    return result

                # first, so no one answers on an invitation that does not work; the
                # credential cannot be tied to the invitation it was obtained with
                credential = request_credential(view, token, post)
                out.print("Your invitation was accepted (exchanged for an anonymous credential).")
            owner = owner_of(link.owner, token if view.get("requires_invitation") else None)
            # only this arm's and group's questions; an invitation fixes the arm
            arm, groups = assign(view, memo, owner, token)
            if view.get("control_arm"):
                out.print(catalog("en")["control_arm"])
            direct = [q["id"] for q in view["questions"] if q.get("direct")]
            out.print(
                "Your true answers stay on this computer: each is randomized here with the "
                "operating system's secure random source, and only the randomized reports are "
                "sent"
                + (
                    f"; except the questions asked directly ({', '.join(direct)}), whose "
                    "answers are sent as given."
                    if direct
                    else "."
                )
            )
            reports: dict[str, int | None] = {}
            for i, q in enumerate(view["questions"], 1):
                if q.get("direct"):  # sent as given: never randomized, never memoized
                    out.print(f"\n[bold]{i}. {q['text']}[/]")
                    out.print(f"[yellow]{catalog('en')['direct_note']}[/]")
                    if q.get("bins"):  # a number, sent as the bin it falls in
                        value = _ask_number(q["numeric"], as_json, binned=True)
                        edges = q["bins"]
                        reports[q["id"]] = min(
                            bisect.bisect_right(edges, value) - 1, len(edges) - 2
                        )
                        continue
                    labels = list(q["choices"])
                    if q.get("allow_no_answer"):
                        labels.append(catalog("en")["no_answer"])
                    for j, label in enumerate(labels):
                        out.print(f"  {j + 1}) {label}")
                    code = _ask_choice(labels, as_json, direct=True)
                    reports[q["id"]] = None if code == len(q["choices"]) else code
                    continue
                eps = q["epsilon"]
                eps_text = "no limit" if eps == "inf" else f"{float(eps):.2f} nats"
                out.print(f"\n[bold]{i}. {q['text']}[/]  (epsilon {eps_text})")
                panel = q.get("panel")
                if panel:
                    out.print(f"[dim]{panel['note']}[/]")
                earlier = None if panel else memo.get(owner, q["memo_key"])
                if earlier is not None and 0 <= earlier < len(q["reports"]):
                    reports[q["id"]] = earlier
                    out.print(
                        f"Your report {q['reports'][earlier]!r} was drawn earlier on this "
                        "computer for this same question; it is sent again (a new draw would "
                        "reveal more)."
                    )
                    continue
                if q.get("innocuous_question"):
                    out.print(catalog("en")["innocuous"].format(question=q["innocuous_question"]))
                numeric = q.get("numeric")
                if numeric:
                    truth = numeric_truth(numeric, _ask_number(numeric, as_json))
                else:
                    factors = q["disclosure"]["max_odds_factor"]
                    for j, label in enumerate(q["choices"]):
                        exposed = factors[j] is None
                        note = (
                            f"  [bold red]({catalog('en')['answer_exposed']})[/]" if exposed else ""
                        )
                        out.print(f"  {j + 1}) {label}{note}")
                    truth = _ask_choice(q["choices"], as_json)
                if panel:  # a fresh draw from this answer's permanent report; none kept
                    drawn = panel_report(q, truth, memo.panel_secret(owner))
                else:
                    drawn = int(design_from_view(q).randomize(np.array([truth]))[0])
                    memo.put(owner, q["memo_key"], drawn)
                del truth
                reports[q["id"]] = drawn
            sent = {
                q["id"]: None if reports[q["id"]] is None else q["reports"][reports[q["id"]]]
                for q in view["questions"]
            }
            out.print("\nThe server will receive only these reports:")
            for qid, label in sent.items():
                out.print(f"  {qid}: {'no answer' if label is None else repr(label)}")
            if not yes and not typer.confirm("Send them?", default=True, err=as_json):
                out.print("Nothing was sent (the reports drawn are kept for next time).")
                raise typer.Exit(code=1)
            body: dict[str, Any] = {"version": view["version"], "reports": reports}
            if arm is not None:
                body["arm"] = arm
            if groups:
                body["groups"] = groups
            if credential is not None:
                body["credential"] = credential.to_json()
            r = http.post(f"/api/surveys/{link.survey_id}/responses", json=body)
            if r.status_code != 201:
                raise fail(f"not stored: {_server_message(r)}")
    except httpx.HTTPError as exc:
        raise fail(f"cannot reach {link.base_url}: {exc}") from None
    except typer.Abort:  # end of input: a clean stop
        out.print("\nEnd of input: nothing was sent.")
        raise typer.Exit(code=0) from None
    if as_json:
        emit_json(
            {
                "survey": view["id"],
                "version": view["version"],
                "sent": sent,  # each report's label
                # what the request held: report codes, the arm and the groups drawn here
                "reports": reports,
                "arm": arm,
                "groups": groups or {},
            }
        )
        return
    console.print("Stored. Thank you.")


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


def _server_message(r: Any) -> str:
    try:
        return str(r.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {r.status_code}"


def _ask_choice(labels: list[str], to_stderr: bool = False, direct: bool = False) -> int:
    """Prompt until the answer is a number 1..k or one of the labels (any case); return
    its code 0..k-1. ``direct``: the answer is sent as given, and the prompt says so."""
    k = len(labels)
    lowered = [label.casefold() for label in labels]
    ask = (
        f"Your answer (1-{k} or its label; sent as given)"
        if direct
        else f"Your true answer (1-{k} or its label; stays on this computer)"
    )
    while True:
        raw = typer.prompt(ask, err=to_stderr).strip()
        if raw.isdigit() and 1 <= int(raw) <= k:
            return int(raw) - 1
        if raw.casefold() in lowered:
            return lowered.index(raw.casefold())
        err.print(f"Please type a number from 1 to {k}, or one of: {', '.join(labels)}.")


def _ask_number(numeric: dict[str, Any], to_stderr: bool = False, binned: bool = False) -> float:
    """Prompt until the answer is a finite number in ``[low, high]``; return it.
    ``binned``: a direct question, whose bin is sent, and the prompt says so."""
    low, high = float(numeric["low"]), float(numeric["high"])
    unit = f" {numeric['unit']}" if numeric.get("unit") else ""
    where = "its range is sent as given" if binned else "stays on this computer"
    while True:
        raw = typer.prompt(
            f"Your {'' if binned else 'true '}answer, a number from {low:g} to {high:g}{unit} "
            f"({where})",
            err=to_stderr,
        ).strip()
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and low <= value <= high:
            return value
        err.print(f"Please type a number from {low:g} to {high:g}.")

"""``deniable respond``: answer a survey in the terminal, randomized on this computer."""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    pass

import typer

from ._common import JsonOpt, app, console, emit_json, err, fail


def _english() -> dict[str, str]:
    """The page's English texts (the survey model loaded only when a command prints one)."""
    from ..collection.model import catalog

    return catalog("en")


__all__ = ["respond"]

_UrlArg = Annotated[
    str | None,
    typer.Argument(help="Survey URL, e.g. http://127.0.0.1:8000/s/my-survey#token=..."),
]
_TokenOpt = Annotated[
    str | None,
    typer.Option(help="Invitation token (default: the link's #token=...; else asked)."),
]
_YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Send without asking.")]
_ForgetOpt = Annotated[
    bool, typer.Option("--forget", help="Remove this computer's memo of drawn reports, then stop.")
]


@app.command()
def respond(
    url: _UrlArg = None,
    token: _TokenOpt = None,
    yes: _YesOpt = False,
    forget: _ForgetOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Answer a survey in the terminal: randomize locally, show what is sent, submit.

    The invitation is checked (spent for an unlinkable credential) before any question
    is asked. Answers may be typed as numbers or as the answer's label; a numeric
    question takes a number in its range. A report drawn before on this computer for
    the same person and the same question (the memo kept in this user's data folder)
    is sent again instead of a new draw. The end of input (Ctrl-D) stops cleanly, with
    nothing sent. With --json the prompts go to standard error and standard output
    gets one JSON object: what was sent.
    """
    import httpx

    from ..collection.respondent import (
        ReportMemo,
        assign,
        design_from_view,
        owner_of,
        parse_survey_url,
    )

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
            _print_intro(out, view)
            credential = None
            if view.get("requires_invitation") and not token:
                token = typer.prompt("Invitation token", hide_input=True, err=as_json)
            owner = owner_of(link.owner, token if view.get("requires_invitation") else None)
            # only this arm's and group's questions; the owner tag (or invitation) fixes
            # the arm, and in a study with arms the invitation is bound to it
            arm, groups = assign(view, memo, owner, token)
            if view.get("requires_invitation"):
                # before any question, so no one answers on an invitation that does not
                # work; the credential cannot be tied to the invitation it came from
                credential = _credential(http, view, str(token), arm)
                out.print("Your invitation was accepted (exchanged for an anonymous credential).")
            if view.get("control_arm"):
                out.print(_english()["control_arm"])
            out.print(_stays_here(view))
            reports: dict[str, int | None] = {}
            for i, q in enumerate(view["questions"], 1):
                if q.get("direct"):  # sent as given: never randomized, never memoized
                    reports[q["id"]] = _ask_direct(out, i, q, as_json)
                else:
                    reports[q["id"]] = _ask_randomized(out, i, q, memo, owner, as_json)
            sent = _confirm(out, view, reports, yes, as_json)
            body: dict[str, Any] = {"version": view["version"], "reports": reports}
            body |= {"arm": arm} if arm is not None else {}
            body |= {"groups": groups} if groups else {}
            body |= {"credential": credential.to_json()} if credential is not None else {}
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


def _stays_here(view: dict[str, Any]) -> str:
    """What stays on this computer and what is sent, in plain words."""
    direct = [q["id"] for q in view["questions"] if q.get("direct")]
    tail = (
        f"; except the questions asked directly ({', '.join(direct)}), whose answers are "
        "sent as given."
        if direct
        else "."
    )
    return (
        "Your true answers stay on this computer: each is randomized here with the "
        "operating system's secure random source, and only the randomized reports are "
        "sent" + tail
    )


def _confirm(
    out: Any, view: dict[str, Any], reports: dict[str, int | None], yes: bool, to_stderr: bool
) -> dict[str, str | None]:
    """Show the reports as the server will receive them (labels) and ask before sending;
    a no stops with nothing sent."""
    sent = {
        q["id"]: None if reports[q["id"]] is None else q["reports"][reports[q["id"]]]
        for q in view["questions"]
    }
    out.print("\nThe server will receive only these reports:")
    for qid, label in sent.items():
        out.print(f"  {qid}: {'no answer' if label is None else repr(label)}")
    if not yes and not typer.confirm("Send them?", default=True, err=to_stderr):
        out.print("Nothing was sent (the reports drawn are kept for next time).")
        raise typer.Exit(code=1)
    return sent


def _print_intro(out: Any, view: dict[str, Any]) -> None:
    """The survey's title, description, consent and the no-withdrawal note; a closed
    survey stops here."""
    out.print(f"[bold]{view['title']}[/]")
    if view.get("description"):
        out.print(view["description"])
    if view.get("consent"):
        out.print(f"\n[bold]Consent and contact[/]\n{view['consent']}")
    out.print(_english()["no_withdrawal"])
    if view.get("closed"):
        raise fail(f"survey {view['id']!r} is closed: it takes no responses")


def _credential(http: Any, view: dict[str, Any], token: str, arm: str | None) -> Any:
    """Spend the invitation for an unlinkable credential (blind signature); a transport
    error is retried with the same blinded message (the same signature)."""
    import httpx

    from ..collection.respondent import request_credential

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(3):
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

    return request_credential(view, token, post, arm)


def _ask_direct(out: Any, i: int, q: dict[str, Any], to_stderr: bool) -> int | None:
    """A direct question's answer code, sent as given (a number as its bin; None for
    "no answer"; a list experiment's count, after its group's list)."""
    out.print(f"\n[bold]{i}. {q['text']}[/]")
    for item in q.get("items") or ():  # a list experiment: this group's list
        out.print(f"  - {item}", markup=False)
    release = q.get("release")  # the server randomizes it before storing it
    release_note = release and _english()["release_note"].format(
        eps=f"{float(release['epsilon']):.2f}"
    )
    out.print(f"[yellow]{q.get('list_note') or release_note or _english()['direct_note']}[/]")
    if q.get("list_note") and release_note:
        out.print(f"[yellow]{release_note}[/]")
    if q.get("bins"):  # a number, sent as the bin it falls in
        value = _ask_number(q["numeric"], to_stderr, binned=True)
        edges = q["bins"]
        return min(bisect.bisect_right(edges, value) - 1, len(edges) - 2)
    labels = list(q["choices"])
    if q.get("list"):  # a count: its labels are numbers, so the number typed is the count
        return _ask_count(len(labels) - 1, to_stderr)
    if q.get("allow_no_answer"):
        labels.append(_english()["no_answer"])
    for j, label in enumerate(labels):
        out.print(f"  {j + 1}) {label}")
    code = _ask_choice(labels, to_stderr, direct=True)
    return None if code == len(q["choices"]) else code


def _ask_randomized(
    out: Any, i: int, q: dict[str, Any], memo: Any, owner: str, to_stderr: bool
) -> int:
    """A randomized question's report, drawn on this computer (or the memo's earlier
    draw sent again; a panel question's from its permanent layer); the true answer is
    dropped once drawn."""
    import numpy as np

    from ..collection.respondent import design_from_view, numeric_truth, panel_report

    eps = q["epsilon"]
    eps_text = "no limit" if eps == "inf" else f"{float(eps):.2f} nats"
    out.print(f"\n[bold]{i}. {q['text']}[/]  (epsilon {eps_text})")
    panel = q.get("panel")
    if panel:
        out.print(f"[dim]{panel['note']}[/]")
    earlier = None if panel else memo.get(owner, q["memo_key"])
    if earlier is not None and 0 <= earlier < len(q["reports"]):
        out.print(
            f"Your report {q['reports'][earlier]!r} was drawn earlier on this "
            "computer for this same question; it is sent again (a new draw would "
            "reveal more)."
        )
        return int(earlier)
    if q.get("innocuous_question"):
        out.print(_english()["innocuous"].format(question=q["innocuous_question"]))
    numeric = q.get("numeric")
    if numeric:
        truth = numeric_truth(numeric, _ask_number(numeric, to_stderr))
    else:
        factors = q["disclosure"]["max_odds_factor"]
        for j, label in enumerate(q["choices"]):
            exposed = factors[j] is None
            note = f"  [bold red]({_english()['answer_exposed']})[/]" if exposed else ""
            out.print(f"  {j + 1}) {label}{note}")
        truth = _ask_choice(q["choices"], to_stderr)
    if panel:  # a fresh draw from this answer's permanent report; none kept
        drawn = panel_report(q, truth, memo.panel_secret(owner))
    else:
        drawn = int(design_from_view(q).randomize(np.array([truth]))[0])
        memo.put(owner, q["memo_key"], drawn)
    del truth
    return int(drawn)


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


def _ask_count(most: int, to_stderr: bool = False) -> int:
    """Prompt until the answer is a whole number 0..``most`` (a list experiment's count,
    sent as given); return it."""
    while True:
        raw = typer.prompt(f"How many apply (0-{most}; sent as given)", err=to_stderr).strip()
        if raw.isdigit() and int(raw) <= most:
            return int(raw)
        err.print(f"Please type a whole number from 0 to {most}.")


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

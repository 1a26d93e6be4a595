"""``deniable survey publish | invite | status | close | reopen | revoke | export``: a
survey's whole life, against a running server (``--server URL``, default
``DENIABLE_SERVER`` or ``http://127.0.0.1:8000``; the analyst token from
``DENIABLE_ANALYST_TOKEN``, sent only in the ``Authorization`` header)."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    pass


from ..collection.exports import CLI_FORMATS
from ._collect import survey_app
from ._common import JsonOpt, app, console, emit_json, err, fail

__all__ = [
    "FORMATS",
    "survey_audit",
    "survey_close",
    "survey_export",
    "survey_invite",
    "survey_publish",
    "survey_status",
]

_ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="The server's base URL (default: DENIABLE_SERVER or http://127.0.0.1:8000).",
    ),
]
FORMATS = CLI_FORMATS


def _version(value: bool) -> None:
    from .. import __version__

    if value:
        typer.echo(f"deniable {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Randomized response: simulate private surveys, analyze reports, plan sample sizes,
    and run a survey from publishing to export."""


def _client(server: str | None) -> Any:
    import httpx

    from .. import __version__

    token = os.environ.get("DENIABLE_ANALYST_TOKEN")
    if not token:
        raise fail("DENIABLE_ANALYST_TOKEN is not set: export the server's analyst token")
    base = server or os.environ.get("DENIABLE_SERVER") or "http://127.0.0.1:8000"
    return httpx.Client(
        base_url=base.rstrip("/"),
        timeout=60,
        headers={"Authorization": f"Bearer {token}", "User-Agent": f"deniable-cli/{__version__}"},
    )


def _call(server: str | None, method: str, path: str, **kwargs: Any) -> Any:
    """The server's answer, or exit 2 with its error message."""
    import httpx

    with _client(server) as http:
        try:
            r = http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise fail(f"cannot reach the server at {http.base_url}: {exc}") from None
    if r.status_code >= 400:
        try:
            message = r.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = r.text[:300]
        raise fail(f"{r.status_code}: {message}")
    return r


@survey_app.command("publish")
def survey_publish(
    file: Annotated[Path, typer.Argument(help="Survey definition (.yaml, .yml or .json).")],
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Publish a survey version (YAML or JSON, sent as it is)."""
    if not file.exists():
        raise fail(f"no such file: {file}")
    media = "application/json" if file.suffix.lower() == ".json" else "application/yaml"
    r = _call(
        server,
        "POST",
        "/api/surveys",
        content=file.read_bytes(),
        headers={"Content-Type": media},
    )
    out = r.json()
    if as_json:
        emit_json(out)
        return
    what = "published" if out["created"] else "already published (identical)"
    eps = out["total_epsilon"]
    eps_text = eps if isinstance(eps, str) else f"{eps:.2f}"
    console.print(f"{out['id']} version {out['version']} {what}; epsilon {eps_text} nats")
    for warning in out.get("warnings", []):
        err.print(f"[yellow]warning:[/] {warning}")


#: Header cells a recipients file may start with.
_ADDRESS_HEADERS = {"address", "addresses", "email", "e-mail", "recipient", "recipients", "mail"}


def _read_recipients(path: Path) -> list[str]:
    """The addresses of a recipients CSV: the first cell of each non-blank row, an
    optional header row (``address``, ``email``, ``recipient``) skipped. Exits with a
    message if the file cannot be read or lists none."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            rows = [row for row in csv.reader(fh) if row and row[0].strip()]
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}") from None
    if rows and rows[0][0].strip().lower() in _ADDRESS_HEADERS:
        rows = rows[1:]
    if not rows:
        raise fail(f"{path} lists no addresses")
    return [row[0] for row in rows]


@survey_app.command("invite")
def survey_invite(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    count: Annotated[
        int | None, typer.Option(min=1, max=100_000, help="Anonymous invitations to issue.")
    ] = None,
    recipients: Annotated[
        Path | None,
        typer.Option(
            help="CSV of named recipients, one address a row: each gets one invitation "
            "within the server's lifetime budget per person.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="CSV file for a mail merge (a link per row, beside its address)."
        ),
    ] = None,
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Issue one-time invitations bound to the survey's latest version: full links, the
    token in the fragment (never sent to the server by browsers). They are shown once;
    the server keeps only hashes. With --recipients, rows over a person's lifetime
    budget or already invited to this version are refused and listed; across anonymous
    --count links that budget cannot be enforced."""
    if (count is None) == (recipients is None):
        raise fail("give exactly one of --count N (anonymous links) and --recipients FILE")
    if recipients is not None:
        body: dict[str, Any] = {"recipients": _read_recipients(recipients)}
    else:
        body = {"count": count}
    out = _call(server, "POST", f"/api/surveys/{survey_id}/invitations", json=body).json()
    links = out["links"]
    named = out.get("invitations")
    if output is not None:
        _write_links(output, out)
    refused = out.get("refused", [])
    if as_json:
        emit_json(
            {
                "survey": survey_id,
                "version": out["version"],
                "links": links,
                "invitations": named,
                "refused": refused,
                "output": str(output or ""),
            }
        )
        return
    for item in refused:
        err.print(f"[yellow]refused:[/] row {item['row']} ({item['recipient']}): {item['message']}")
    if output is not None:
        console.print(
            f"{len(links)} invitation links to version {out['version']} written to {output}"
        )
    elif named is not None:
        for item in named:
            typer.echo(f"{item['recipient']},{item['link']}")
    else:
        for link in links:
            typer.echo(link)


def _write_links(output: Path, out: dict[str, Any]) -> None:
    """The mail-merge CSV of issued invitations: ``recipient,link`` rows (``link`` only
    for anonymous ones)."""
    named = out.get("invitations")
    with output.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        if named is not None:
            writer.writerow(["recipient", "link"])
            writer.writerows([item["recipient"], item["link"]] for item in named)
        else:
            writer.writerow(["link"])
            writer.writerows([link] for link in out["links"])


def _read_links(path: Path) -> list[dict[str, str]]:
    """The rows of a links file ``survey invite`` (or ``survey wave``) wrote:
    ``{"recipient", "link", "token"}`` (``recipient`` empty for anonymous links)."""
    from ..collection.respondent import parse_survey_url

    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}") from None
    out = []
    for i, row in enumerate(rows, 2):
        link = (row.get("link") or "").strip()
        try:
            token = parse_survey_url(link).token
        except ValueError:
            token = None
        if not token:
            raise fail(f"{path} line {i}: no invitation link (a link column with #token=...)")
        out.append(
            {"recipient": (row.get("recipient") or "").strip(), "link": link, "token": token}
        )
    if not out:
        raise fail(f"{path} lists no links")
    return out


@survey_app.command("wave")
def survey_wave(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    recipients: Annotated[
        Path | None,
        typer.Option(help="CSV of the recipients to invite, one address a row."),
    ] = None,
    links: Annotated[
        Path | None,
        typer.Option(help="A previous wave's links file (recipient,link): invite its recipients."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="CSV file for a mail merge (recipient,link)."),
    ] = None,
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Publish the next wave (the latest version's content, one version up) and invite
    its recipients. Refused if a randomized question has no panel (two layers): its
    devices would send the first wave's reports again and hide every change."""
    from ..collection.model import load_survey
    from ..collection.store import next_wave
    from ..errors import SurveyError

    if (recipients is None) == (links is None):
        raise fail("give exactly one of --recipients FILE and --links PREVIOUS_LINKS.csv")
    if recipients is not None:
        addresses = _read_recipients(recipients)
    else:
        assert links is not None
        addresses = [row["recipient"] for row in _read_links(links) if row["recipient"]]
    if not addresses:
        raise fail("no recipients to invite (anonymous links cannot be invited again by name)")
    exported = _call(server, "GET", f"/api/surveys/{survey_id}/export", params={"format": "survey"})
    versions = [load_survey(v) for v in exported.json()["versions"]]
    try:
        definition = next_wave(versions)
    except SurveyError as exc:
        raise fail(str(exc)) from None
    published = _call(server, "POST", "/api/surveys", json=definition).json()
    body = {"recipients": addresses}
    out = _call(server, "POST", f"/api/surveys/{survey_id}/invitations", json=body).json()
    if output is not None:
        _write_links(output, out)
    if as_json:
        emit_json(
            {
                "survey": survey_id,
                "wave": published["version"],
                "invitations": out.get("invitations"),
                "refused": out.get("refused", []),
                "output": str(output or ""),
            }
        )
        return
    console.print(
        f"{survey_id} wave {published['version']} published; "
        f"{len(out['links'])} recipient(s) invited"
        + (f", links written to {output}" if output is not None else "")
    )
    for item in out.get("refused", []):
        err.print(f"[yellow]refused:[/] row {item['row']} ({item['recipient']}): {item['message']}")
    if output is None:
        for item in out.get("invitations") or []:
            typer.echo(f"{item['recipient']},{item['link']}")


@survey_app.command("remind")
def survey_remind(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    links: Annotated[
        Path, typer.Option(help="Your links file (the CSV survey invite or survey wave wrote).")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="CSV of the rows to remind, for a mail merge.")
    ],
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write the rows of your links file whose invitation is unused (not started on any
    device), for a reminder. The server is asked about the tokens' hashes, which it
    already holds; it answers once per release period of the survey (at most 10,000
    links) and audits the look-up. Someone who started and did not send is not
    reminded: the server cannot tell them from someone who sent."""
    import hashlib

    rows = _read_links(links)
    if len(rows) > 10_000:  # the server answers one look-up per release period
        raise typer.BadParameter(
            f"the links file has {len(rows):,} rows; a reminder looks up at most 10,000 "
            "invitations per release period of the survey: split the file",
            param_hint="LINKS",
        )
    hashes = [hashlib.sha256(r["token"].encode()).hexdigest() for r in rows]
    body = {"token_hashes": hashes}
    answer = _call(server, "POST", f"/api/surveys/{survey_id}/invitations/unused", json=body)
    unused = set(answer.json()["unused"])
    chosen = [r for r, h in zip(rows, hashes, strict=True) if h in unused]
    with output.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["recipient", "link"])
        writer.writerows([r["recipient"], r["link"]] for r in chosen)
    if as_json:
        emit_json(
            {"survey": survey_id, "remind": len(chosen), "of": len(rows), "output": str(output)}
        )
        return
    console.print(f"{len(chosen)} of {len(rows)} invitation(s) unused: written to {output}")


@survey_app.command("status")
def survey_status(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Versions and responses, invitations issued and used, the budget ledger, open or
    closed."""
    from rich.table import Table

    out = _call(server, "GET", f"/api/surveys/{survey_id}/status").json()
    if as_json:
        emit_json(out)
        return
    state = "closed" if out["closed"] else "open"
    console.print(f"[bold]{out['title']}[/] ({out['id']}): {state}, {out['responses']} responses")
    table = Table("wave (version)", "title", "field period (UTC)", "invited", "responses", "RR1")
    for w in out["waves"]:
        table.add_row(
            str(w["wave"]),
            w["title"],
            w["period"],
            str(w["invited"]),
            str(w["responses"]),
            "" if w["rr1"] is None else f"{w['rr1']:.1%}",
        )
    console.print(table)
    inv = out["invitations"]
    if out["requires_invitation"]:
        console.print(
            f"invitations: {inv['issued']} issued, {inv['used']} used, {inv['unused']} unused, "
            f"{inv['revoked']} revoked"
        )
    ledger = out["ledger"]
    lifetime = ledger["lifetime_budget"]
    console.print(
        f"lifetime privacy budget: {ledger['spent']:.2f} of {lifetime:.2f} nats"
        if lifetime is not None
        else f"no lifetime privacy budget (a design can prove an answer); {ledger['spent']:.2f} "
        "nats counted"
    )
    person = out.get("per_person")
    if person and out["requires_invitation"]:
        console.print(
            f"per person across the server (at most {person['lifetime_budget']:g} nats): "
            f"{person['note']}"
        )


def _state(survey_id: str, action: str, server: str | None, as_json: bool) -> None:
    out = _call(server, "POST", f"/api/surveys/{survey_id}/{action}").json()
    if as_json:
        emit_json(out)
    elif action == "revoke":
        console.print(f"{out['revoked']} unused invitations of {survey_id} revoked")
    elif action == "release":
        console.print(f"{out['released']} responses of {survey_id} released")
    else:
        console.print(f"{survey_id} is {'closed' if out['closed'] else 'open'}")


@survey_app.command("close")
def survey_close(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Close the survey: the last release is made, what still waits is withheld for
    good, and from now on responses are refused and nothing is stored."""
    _state(survey_id, "close", server, as_json)


@survey_app.command("release")
def survey_release(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Release now every key cell with at least min_release responses waiting, as a
    scheduled release does (audited)."""
    _state(survey_id, "release", server, as_json)


@survey_app.command("reopen")
def survey_reopen(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Reopen a closed survey."""
    _state(survey_id, "reopen", server, as_json)


@survey_app.command("revoke")
def survey_revoke(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revoke every unused invitation; their links stop working."""
    _state(survey_id, "revoke", server, as_json)


@survey_app.command("export")
def survey_export(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    format: Annotated[str, typer.Option(help=f"One of {', '.join(FORMATS)}.")] = "csv",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (default: named by the server).")
    ] = (None),
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Download the reports, and beside them the survey file (FILE.survey.json) that
    'deniable analyze FILE --question ID' reads the designs from. --format bundle
    writes a folder (--output, default ID-bundle) with the wide CSV, the survey file
    and ID.R, an R script that fits what RRreg and GLMMRR can."""
    from ..collection.exports import sidecar_path

    if format not in FORMATS:
        raise fail(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    if format == "bundle":
        _bundle(survey_id, output or Path(f"{survey_id}-bundle"), server, as_json)
        return
    r = _call(server, "GET", f"/api/surveys/{survey_id}/export", params={"format": format})
    name = r.headers.get("content-disposition", "").split('filename="')[-1].rstrip('"')
    path = output or Path(name or f"{survey_id}.{format}")
    path.write_bytes(r.content)
    side = sidecar_path(path)
    survey = _call(server, "GET", f"/api/surveys/{survey_id}/export", params={"format": "survey"})
    side.write_bytes(survey.content)
    from ..collection.exports import not_exported

    note = not_exported(survey.json())
    if as_json:
        emit_json(
            {"survey": survey_id, "format": format, "file": str(path), "survey_file": str(side),
             "not_exported": note}
        )  # fmt: skip
        return
    console.print(f"{path} ({len(r.content):,} bytes) and its survey file {side}")
    if note:
        console.print(f"note: {note}", markup=False, highlight=False)


def _bundle(survey_id: str, folder: Path, server: str | None, as_json: bool) -> None:
    """The wide CSV, the survey file and the R script, in ``folder``."""
    from ..collection.exports import r_script
    from ..collection.model import load_survey

    folder.mkdir(parents=True, exist_ok=True)
    wide = _call(server, "GET", f"/api/surveys/{survey_id}/export", params={"format": "wide"})
    survey = _call(server, "GET", f"/api/surveys/{survey_id}/export", params={"format": "survey"})
    csv_name = f"{survey_id}.wide.csv"
    (folder / csv_name).write_bytes(wide.content)
    (folder / f"{survey_id}.survey.json").write_bytes(survey.content)
    versions = [load_survey(v) for v in survey.json()["versions"]]  # every wave
    script = folder / f"{survey_id}.R"
    script.write_text(r_script(versions, csv_name), encoding="utf-8")
    files = [str(folder / csv_name), str(folder / f"{survey_id}.survey.json"), str(script)]
    waves = _call(server, "GET", f"/api/surveys/{survey_id}/status").json()["waves"]
    if len(waves) > 1:  # a panel: each wave's field period and response rate
        path = folder / f"{survey_id}.waves.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            columns = ["wave", "period", "opened", "closed", "invited", "started", "responses"]
            writer = csv.writer(fh)
            writer.writerow([*columns, "rr1"])
            writer.writerows(
                [
                    *("" if w[c] is None else w[c] for c in columns),
                    "" if w["rr1"] is None else w["rr1"],
                ]
                for w in waves
            )
        files.append(str(path))
    if as_json:
        emit_json({"survey": survey_id, "format": "bundle", "folder": str(folder), "files": files})
        return
    console.print(f"{folder}: " + ", ".join(Path(f).name for f in files))


@survey_app.command("audit")
def survey_audit(
    survey_id: Annotated[str, typer.Argument(help="Survey id.")],
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Newest entries to show.")] = 50,
    server: _ServerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The audit log, newest first: every release of results, export, publish,
    invitations issued, close, reopen and revoke, with when and through which channel."""
    import datetime as dt

    from rich.table import Table

    entries = _call(
        server, "GET", f"/api/surveys/{survey_id}/audit", params={"limit": limit}
    ).json()
    if as_json:
        emit_json(entries)
        return
    table = Table("when (UTC)", "who", "action", "version", "detail")
    for e in entries:
        when = dt.datetime.fromtimestamp(e["at"], dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        version = "" if e["version"] is None else str(e["version"])
        detail = ", ".join(f"{k}={v}" for k, v in sorted(e["detail"].items()))
        table.add_row(when, e["actor"], e["action"], version, detail)
    console.print(table)

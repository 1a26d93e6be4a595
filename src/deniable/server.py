"""The collection server (FastAPI): publish surveys, collect randomized reports, analyse.

Run it with ``deniable serve``; the OpenAPI document is at ``/openapi.json``.

Public endpoints
    ``GET /api/surveys/{id}``            the survey as the respondent's device needs it
    ``GET /s/{id}``                      the respondent page (randomizes in the browser)
    ``POST /api/surveys/{id}/responses`` one response: a report code per question
    ``POST /api/surveys/{id}/batch``     many responses at once (telemetry clients)
Analyst endpoints (``Authorization: Bearer <DENIABLE_ANALYST_TOKEN>``)
    ``POST /api/surveys``                publish a survey version
    ``GET /api/surveys``                 list published surveys
    ``POST /api/surveys/{id}/invitations``  issue one-time invitation tokens
    ``GET /api/surveys/{id}/results``    estimate, SE and CI per question (SQL GROUP BY tallies)
    ``GET /api/surveys/{id}/export``     reports as CSV or Parquet
    ``GET /surveys/{id}/results``        results page with plots (token also as ``?key=``)

Every error has one JSON shape::

    {"error": {"status": 422, "code": "validation_error", "message": "...",
               "field": "body.reports.q1", "fields": [{"field": ..., "message": ...}]}}

A rejected request stores nothing: all validation happens before the one transaction
that stores a response, and the transaction is rolled back on any failure. A response is
acknowledged (201) only after that transaction has committed. Request bodies larger
than ``max_body_bytes`` are refused with 413 while they are read.
"""

from __future__ import annotations

import asyncio
import base64
import html
import io
import json
import logging
import math
import os
import re
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Annotated, Any, Literal

import numpy as np
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from .errors import (
    DeniableError,
    InvitationError,
    ReportValidationError,
    SurveyConflictError,
    SurveyError,
    SurveyNotFoundError,
)
from .estimate import estimate
from .storage import PendingResponse, Store
from .survey import SLUG_PATTERN, Survey

__all__ = ["MAX_BATCH", "app_from_environment", "create_app"]

log = logging.getLogger("deniable.server")

#: Largest number of responses in one batch request.
MAX_BATCH = 10_000
#: Default limit on a request body, bytes.
MAX_BODY_BYTES = 4 * 1024 * 1024

QuestionId = Annotated[str, Field(pattern=SLUG_PATTERN)]
SurveyId = Annotated[str, Field(pattern=SLUG_PATTERN)]


class ResponseIn(BaseModel):
    """One response: a report code for every question of the survey version."""

    model_config = ConfigDict(extra="forbid")
    version: StrictInt = Field(ge=1, le=1_000_000, description="Survey version answered.")
    token: str | None = Field(
        default=None, min_length=1, max_length=200, description="One-time invitation token."
    )
    reports: dict[QuestionId, StrictInt] = Field(
        description="Report code (0..m-1) per question id; never the true answer.",
        max_length=100,
    )


class BatchItem(BaseModel):
    """One response inside a batch."""

    model_config = ConfigDict(extra="forbid")
    reports: dict[QuestionId, StrictInt] = Field(max_length=100)


class BatchIn(BaseModel):
    """Many responses to one survey version (surveys without invitations only)."""

    model_config = ConfigDict(extra="forbid")
    version: StrictInt = Field(ge=1, le=1_000_000)
    responses: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH)


class InvitationsIn(BaseModel):
    """How many invitation tokens to issue."""

    model_config = ConfigDict(extra="forbid")
    count: StrictInt = Field(ge=1, le=100_000)


class Stored(BaseModel):
    """Acknowledgement: the responses are committed."""

    stored: int
    survey: str
    version: int


class Published(BaseModel):
    """Result of publishing a survey version."""

    id: str
    version: int
    digest: str
    created: bool
    total_epsilon: float | str


_bearer = HTTPBearer(auto_error=False, description="The analyst token.")
BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _error(
    status: int, code: str, message: str, fields: list[dict[str, str]] | None = None
) -> JSONResponse:
    body: dict[str, Any] = {"status": status, "code": code, "message": message}
    if fields:
        body["field"] = fields[0]["field"]
        body["fields"] = fields
    return JSONResponse({"error": body}, status_code=status)


_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
}


class _BodyLimit:
    """ASGI middleware: refuse bodies over ``max_bytes`` (413), declared or streamed."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0 or declared > self.max_bytes:
                    response = _error(
                        413 if declared > 0 else 400,
                        "payload_too_large" if declared > 0 else "bad_request",
                        f"request body must be at most {self.max_bytes} bytes"
                        if declared > 0
                        else "malformed Content-Length header",
                    )
                    await response(scope, receive, send)
                    return
        seen = 0

        async def limited() -> MutableMapping[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(413, f"request body must be at most {self.max_bytes} bytes")
            return message

        await self.app(scope, limited, send)


class GroupCommitter:
    """Group commit: responses arriving together are stored in one transaction.

    Each request enqueues its validated response and waits; one writer task takes
    everything queued (up to ``max_group``), commits it in a worker thread with
    :meth:`Store.commit_group`, then wakes each request with its own outcome. A
    response is therefore acknowledged only after a commit that contains it, and one
    fsync serves many respondents.
    """

    def __init__(self, store: Store, max_group: int = 2000) -> None:
        self.store = store
        self.max_group = max_group
        self._queue: asyncio.Queue[tuple[PendingResponse, asyncio.Future[None]]] | None = None
        self._task: asyncio.Task[None] | None = None

    async def submit(self, pending: PendingResponse) -> None:
        """Wait until ``pending`` is committed; raise its InvitationError if refused."""
        if self._queue is None or self._task is None or self._task.done():
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._run())
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((pending, future))
        await future

    async def _run(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            group = [await queue.get()]
            while not queue.empty() and len(group) < self.max_group:
                group.append(queue.get_nowait())
            try:
                outcomes = await run_in_threadpool(self.store.commit_group, [p for p, _ in group])
            except Exception as exc:  # nothing of this group was stored
                for _, future in group:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), outcome in zip(group, outcomes, strict=True):
                if future.done():  # the client went away; the response is stored anyway
                    continue
                if outcome is None:
                    future.set_result(None)
                else:
                    future.set_exception(outcome)


_RESPONSES_PATH = re.compile(r"/api/surveys/([^/]+)/responses")
#: The fast path takes bodies up to this size (a response is well under 1 KiB).
_FAST_MAX_BYTES = 64 * 1024


class _FastSubmit:
    """ASGI fast path for ``POST /api/surveys/{id}/responses`` (the respondents' hot path).

    For a well-formed JSON body (declared Content-Length, ``application/json``) that
    validates, names a published survey and is stored, it answers 201 itself, skipping the
    framework's routing, dependency and exception layers. Anything else (a malformed
    body, an unknown survey, a refused invitation, a storage error, a chunked or large
    body) is replayed, body included, to the full application, which produces the one
    error shape; a replayed response is validated and committed again from scratch (a
    refused or failed one stored nothing the first time), so the outcome is the same
    as without the fast path.
    """

    def __init__(self, app: Any, store: Store, committer: GroupCommitter, max_bytes: int) -> None:
        self.app = app
        self.store = store
        self.committer = committer
        self.max_bytes = min(max_bytes, _FAST_MAX_BYTES)

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        match = (
            _RESPONSES_PATH.fullmatch(scope["path"])
            if scope["type"] == "http" and scope["method"] == "POST"
            else None
        )
        declared = -1
        json_body = False
        for name, value in scope.get("headers", ()) if match else ():
            if name == b"content-length" and value.isdigit():
                declared = int(value)
            elif name == b"content-type":
                json_body = value.split(b";")[0].strip().lower() == b"application/json"
        if match is None or not json_body or not 0 < declared <= self.max_bytes:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body: nothing to do
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if not message.get("more_body", False) or size > declared:
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            if size != declared:
                raise ValueError("body length differs from Content-Length")
            parsed = ResponseIn.model_validate_json(body)
            survey = self.store.cached_survey(match.group(1), parsed.version)
            if survey is None:  # raises SurveyNotFoundError for an unknown survey
                survey = await run_in_threadpool(self.store.survey, match.group(1), parsed.version)
            await self.committer.submit(self.store.prepare(survey, parsed.reports, parsed.token))
        except Exception:  # the full application answers (and stores) it properly
            await self.app(scope, replay, send)
            return
        ack = Stored(stored=1, survey=survey.id, version=survey.version).model_dump_json().encode()
        await send(
            {
                "type": "http.response.start",
                "status": 201,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(ack)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": ack})


def create_app(
    store: Store | None = None,
    *,
    analyst_token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """Build the ASGI application.

    Parameters
    ----------
    store : Store, optional
        Storage (default ``Store()``: ``DENIABLE_DATABASE_URL`` or a SQLite file).
    analyst_token : str, optional
        Bearer token of the analyst endpoints (default ``DENIABLE_ANALYST_TOKEN``; if
        neither is set a random one is generated and logged once).
    max_body_bytes : int
        Largest accepted request body in bytes.
    """
    store = store or Store()
    token = analyst_token or os.environ.get("DENIABLE_ANALYST_TOKEN") or ""
    if not token:
        token = secrets.token_urlsafe(24)
        log.warning("no DENIABLE_ANALYST_TOKEN set; analyst token for this run: %s", token)
    app = FastAPI(
        title="deniable collection server",
        version="1",
        description="Collects randomized-response reports; never receives a true answer.",
    )
    app.state.store = store
    app.state.analyst_token = token
    app.add_middleware(_BodyLimit, max_bytes=max_body_bytes)

    def analyst(request: Request, credentials: BearerCredentials) -> None:
        given = credentials.credentials if credentials else request.query_params.get("key", "")
        if not secrets.compare_digest(given.encode(), token.encode()):
            raise HTTPException(401, "analyst endpoints need 'Authorization: Bearer <token>'")

    Analyst = Depends(analyst)

    # -- errors ------------------------------------------------------------------
    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [
            {
                "field": ".".join(str(p) for p in e.get("loc", ())) or "body",
                "message": str(e.get("msg", "invalid")).removeprefix("Value error, "),
            }
            for e in exc.errors()
        ]
        return _error(
            422,
            "validation_error",
            "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5]),
            fields,
        )

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        return _error(exc.status_code, _CODES.get(exc.status_code, "error"), str(exc.detail))

    @app.exception_handler(DeniableError)
    async def _deniable(_: Request, exc: DeniableError) -> JSONResponse:
        if isinstance(exc, SurveyError):
            fields = [{"field": f"body.{f}", "message": m} for f, m in exc.errors]
            return _error(422, "invalid_survey", str(exc), fields)
        status, code = {
            ReportValidationError: (422, "invalid_report"),
            InvitationError: (403, "invalid_invitation"),
            SurveyNotFoundError: (404, "not_found"),
            SurveyConflictError: (409, "conflict"),
        }.get(type(exc), (422, "invalid"))
        return _error(status, code, str(exc))

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:  # pragma: no cover
        log.exception("internal error", exc_info=exc)
        return _error(500, "internal_error", "internal error; nothing was stored")

    # -- public --------------------------------------------------------------------
    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/api/surveys/{survey_id}", tags=["public"])
    def get_survey(
        survey_id: SurveyId, version: Annotated[int | None, Query(ge=1, le=1_000_000)] = None
    ) -> dict[str, Any]:
        """The survey as the respondent's device needs it (matrices, labels, epsilons)."""
        return store.survey(survey_id, version).respondent_view()

    committer = GroupCommitter(store)
    app.state.committer = committer
    app.add_middleware(_FastSubmit, store=store, committer=committer, max_bytes=max_body_bytes)

    @app.post(
        "/api/surveys/{survey_id}/responses",
        status_code=201,
        tags=["public"],
        response_model=Stored,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ResponseIn.model_json_schema()}},
            }
        },
    )
    async def submit(survey_id: SurveyId, request: Request) -> Response:
        """Store one response. 201 only after it is committed; 403 for a bad invitation.

        Concurrent responses share one transaction (group commit); each is acknowledged
        only after that transaction has committed.
        """
        # hot path: pydantic-core parses and validates the raw JSON in one pass (the body
        # schema is still published through ``openapi_extra``)
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise RequestValidationError(
                [{"loc": ("body",), "msg": "request body must be JSON (application/json)"}]
            )
        try:
            body = ResponseIn.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(
                [e | {"loc": ("body", *e["loc"])} for e in exc.errors()]
            ) from None
        survey = store.cached_survey(survey_id, body.version)
        if survey is None:
            survey = await run_in_threadpool(store.survey, survey_id, body.version)
        await committer.submit(store.prepare(survey, body.reports, body.token))
        # hot path: the acknowledgement is serialized directly (same JSON as Stored)
        ack = Stored(stored=1, survey=survey.id, version=survey.version)
        return Response(ack.model_dump_json(), status_code=201, media_type="application/json")

    @app.post("/api/surveys/{survey_id}/batch", status_code=201, tags=["public"])
    def submit_batch(survey_id: SurveyId, body: BatchIn) -> Stored:
        """Store up to 10,000 responses in one transaction (all or none)."""
        survey = store.survey(survey_id, body.version)
        n = store.submit_batch(survey, [item.reports for item in body.responses])
        return Stored(stored=n, survey=survey.id, version=survey.version)

    @app.get("/s/{survey_id}", response_class=HTMLResponse, tags=["public"])
    def respondent_page(survey_id: SurveyId) -> HTMLResponse:
        """The respondent page: randomizes in the browser, sends only reports."""
        survey = store.survey(survey_id)
        return HTMLResponse(_page(survey), headers=_PAGE_HEADERS)

    # -- analyst -----------------------------------------------------------------
    @app.post("/api/surveys", tags=["analyst"], dependencies=[Analyst])
    def publish(definition: dict[str, Any], response: Response) -> Published:
        """Publish a survey version (201 if new, 200 if identical content exists)."""
        from .survey import load_survey

        survey = load_survey(definition)
        created = store.publish(survey)
        response.status_code = 201 if created else 200
        eps = survey.total_epsilon
        return Published(
            id=survey.id,
            version=survey.version,
            digest=survey.digest,
            created=created,
            total_epsilon=eps if math.isfinite(eps) else "inf",
        )

    @app.get("/api/surveys", tags=["analyst"], dependencies=[Analyst])
    def list_surveys() -> list[dict[str, Any]]:
        """Published surveys with their response counts."""
        return [
            {"id": sid, "version": v, "responses": store.response_count(sid, v)}
            for sid, v in store.survey_ids()
        ]

    @app.post(
        "/api/surveys/{survey_id}/invitations",
        status_code=201,
        tags=["analyst"],
        dependencies=[Analyst],
    )
    def invitations(survey_id: SurveyId, body: InvitationsIn) -> dict[str, list[str]]:
        """Issue one-time invitation tokens (shown once; only hashes are stored)."""
        return {"tokens": store.issue_tokens(survey_id, body.count)}

    @app.get("/api/surveys/{survey_id}/results", tags=["analyst"], dependencies=[Analyst])
    def results(
        survey_id: SurveyId,
        version: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
        confidence_level: Annotated[float, Query(gt=0, lt=1)] = 0.95,
    ) -> dict[str, Any]:
        """Estimate, standard error and confidence interval per question."""
        return _results(store, store.survey(survey_id, version), confidence_level)

    @app.get("/api/surveys/{survey_id}/export", tags=["analyst"], dependencies=[Analyst])
    def export(
        survey_id: SurveyId,
        format: Literal["csv", "parquet"] = "csv",
    ) -> Response:
        """All reports of the survey (one row per response and question)."""
        store.survey(survey_id)
        frame = store.export(survey_id)
        if format == "csv":
            return Response(
                frame.to_csv(index=False),
                media_type="text/csv",
                headers={"Content-Disposition": f'attachment; filename="{survey_id}.csv"'},
            )
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        return Response(
            buf.getvalue(),
            media_type="application/vnd.apache.parquet",
            headers={"Content-Disposition": f'attachment; filename="{survey_id}.parquet"'},
        )

    @app.get(
        "/surveys/{survey_id}/results",
        response_class=HTMLResponse,
        tags=["analyst"],
        dependencies=[Analyst],
    )
    def results_page(survey_id: SurveyId) -> HTMLResponse:
        """Results page: estimate with CI per question, responses over time."""
        survey = store.survey(survey_id)
        return HTMLResponse(_results_page(store, survey), headers={"Cache-Control": "no-store"})

    static = resources.files("deniable") / "web"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    return app


def app_from_environment() -> FastAPI:
    """App factory for ``uvicorn --factory`` (``deniable serve``): the database URL from
    ``DENIABLE_DATABASE_URL``, the analyst token from ``DENIABLE_ANALYST_TOKEN``."""
    return create_app(Store())


def _results(store: Store, survey: Survey, level: float) -> dict[str, Any]:
    tallies = store.tallies(survey)
    out: dict[str, Any] = {
        "survey": survey.id,
        "version": survey.version,
        "title": survey.title,
        "responses": store.response_count(survey.id, survey.version),
        "confidence_level": level,
        "questions": [],
    }
    for q in survey.questions:
        tally = tallies[q.id]
        item: dict[str, Any] = {
            "id": q.id,
            "text": q.text,
            "categories": q.choice_labels,
            "design": q.design.name,
            "epsilon": q.epsilon if math.isfinite(q.epsilon) else "inf",
            "n": tally.n,
            "counts": tally.counts.tolist(),
        }
        if tally.n > 0:
            est = estimate(q.randomizer, tally)
            ci = est.confidence_interval(level)
            item |= {
                "prevalence": est.prevalence.tolist(),
                "std_error": est.std_error.tolist(),
                "interval_method": est.default_interval_method,
                "ci_low": ci.low.tolist(),
                "ci_high": ci.high.tolist(),
            }
        out["questions"].append(item)
    return out


_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
}


def _page(survey: Survey) -> str:
    data = json.dumps(survey.respondent_view()).replace("<", "\\u003c")
    title = html.escape(survey.title)
    template = (resources.files("deniable") / "web" / "respond.html").read_text("utf-8")
    return template.replace("{{title}}", title).replace("{{survey_json}}", data)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _results_page(store: Store, survey: Survey) -> str:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    res = _results(store, survey, 0.95)
    rows = []
    labels, est, lo, hi = [], [], [], []
    for q in res["questions"]:
        for j, cat in enumerate(q["categories"]):
            if len(q["categories"]) == 2 and j == 0:
                continue  # binary: show "yes" only
            name = f"{q['id']}: {cat}"
            if "prevalence" in q:
                p, a, b = q["prevalence"][j], q["ci_low"][j], q["ci_high"][j]
                labels.append(name)
                est.append(p)
                lo.append(a)
                hi.append(b)
                cells = (
                    f"<td>{p:.4f}</td><td>{q['std_error'][j]:.4f}</td><td>{a:.4f} – {b:.4f}</td>"
                )
            else:
                cells = "<td colspan=3>no responses yet</td>"
            rows.append(
                f"<tr><th scope=row>{html.escape(name)}</th><td>{q['n']}</td>{cells}"
                f"<td>{html.escape(q['design'])}</td></tr>"
            )
    images = []
    if labels:
        fig = Figure(figsize=(7, 0.45 * len(labels) + 1.2))
        ax = fig.subplots()
        y = np.arange(len(labels))[::-1]
        e = np.array(est)
        # the unbiased estimate may fall outside [0, 1] while its interval is clipped to
        # it: draw the interval and the estimate separately (no negative error bars)
        ax.hlines(y, lo, hi, color="C0", lw=2)
        ax.plot(e, y, "o", color="C0")
        ax.set_yticks(y, labels)
        ax.set_xlim(min(-0.05, float(e.min()) - 0.05), max(1.05, float(e.max()) + 0.05))
        ax.axvline(0, color="0.8", lw=0.8)
        ax.set_xlabel("estimated prevalence with 95% confidence interval")
        images.append(("Estimates with 95% confidence intervals", _png(fig)))
    timeline = store.timeline(survey.id)
    if timeline:
        fig = Figure(figsize=(7, 2.6))
        ax = fig.subplots()
        xs = np.array([b for b, _ in timeline], dtype="datetime64[s]")
        width = np.timedelta64(store.bucket_seconds, "s")
        ax.bar(xs, [n for _, n in timeline], width=width * 0.9, align="edge", color="C1")
        ax.set_ylabel(f"responses per {store.bucket_seconds // 60} min")
        fig.autofmt_xdate()
        images.append(("Responses over time (coarse buckets)", _png(fig)))
    imgs = "".join(
        f'<figure><img src="{src}" alt="{html.escape(alt)}"><figcaption>{html.escape(alt)}'
        "</figcaption></figure>"
        for alt, src in images
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>Results: {html.escape(survey.title)}</title>"
        '<link rel=stylesheet href="/static/style.css"></head><body><main>'
        f"<h1>Results: {html.escape(survey.title)}</h1>"
        f"<p>Survey <code>{html.escape(survey.id)}</code> version {survey.version}: "
        f"{res['responses']} responses. Estimates are unbiased moment estimates from the "
        "randomized reports; the server never saw a true answer.</p>"
        "<table><thead><tr><th>question: answer</th><th>n</th><th>estimate</th><th>SE</th>"
        "<th>95% CI</th><th>design</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + imgs
        + "</main></body></html>"
    )

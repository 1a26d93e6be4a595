"""The collection server (FastAPI): publish surveys, collect randomized reports, analyse.

Run it with ``deniable serve``; the OpenAPI document is at ``/openapi.json``.

Public endpoints
    ``GET /api/surveys/{id}``            the survey as the respondent's device needs it
    ``GET /s/{id}``                      the respondent page (token in the fragment)
    ``POST /api/surveys/{id}/credentials``  spend an invitation for a blind signature
    ``POST /api/surveys/{id}/responses`` one response: a report code per question
    ``POST /api/surveys/{id}/batch``     many responses (``Bearer <ingestion key>``)
    ``GET|POST /login``                  the analyst's login form (session cookie)
Analyst endpoints (``Authorization: Bearer <DENIABLE_ANALYST_TOKEN>``, never a query)
    ``POST /api/surveys``                publish a survey version
    ``GET /api/surveys``                 list published surveys
    ``POST /api/surveys/{id}/invitations``  issue one-time invitations (links)
    ``POST /api/surveys/{id}/ingestion-keys``  issue a telemetry ingestion key
    ``GET /api/surveys/{id}/results``    estimate, SE and CI per question (SQL GROUP BY tallies)
    ``GET /api/surveys/{id}/export``     reports as CSV or Parquet
    ``GET /surveys/{id}/results``        results page with plots (session cookie)

Every error has one JSON shape::

    {"error": {"status": 422, "code": "validation_error", "message": "...",
               "field": "body.reports.q1", "fields": [{"field": ..., "message": ...}]}}

A rejected request stores nothing: all validation happens before the one transaction
that stores a response, and the transaction is rolled back on any failure. A response is
acknowledged (201) only after that transaction has committed. Request bodies larger
than ``max_body_bytes`` are refused with 413 while they are read, and a body whose next
is not complete ``body_timeout`` seconds after the request started with 408 and a
closed connection. A client that disconnects before its body is complete is logged in
one line, without a traceback.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import AsyncIterator
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from ...errors import DeniableError
from ..store import Store, lifetime_budget_from_environment
from ._http_errors import error_for
from ._ingestion import (
    BODY_TIMEOUT_SECONDS,
    MAX_BODY_BYTES,
    BodyLimit,
    FastSubmit,
    GroupCommitter,
    ReleaseSchedule,
)
from ._pages import error_page
from ._routes import analyst_router, public_router
from ._schemas import MAX_BATCH
from ._security import DEFAULT_PER_CLIENT, ClientConcurrency, RateLimiter, SecurityHeaders

__all__ = ["MAX_BATCH", "MAX_BODY_BYTES", "MIN_TOKEN_CHARS", "app_from_environment", "create_app"]

log = logging.getLogger("deniable.server")

#: Shortest analyst token accepted (characters).
MIN_TOKEN_CHARS = 16


async def _handle(request: Request, exc: Exception) -> Response:
    """The JSON error shape for the API; an HTML page for a browser asking for a page."""
    response = error_for(exc)
    if not request.url.path.startswith("/api/") and "text/html" in request.headers.get(
        "accept", ""
    ):
        message = json.loads(bytes(response.body))["error"]["message"]
        return HTMLResponse(error_page(response.status_code, message), response.status_code)
    return response


async def _disconnected(request: Request, exc: Exception) -> Response:
    """A client that went away mid-body: one log line (no one receives the answer)."""
    log.warning("client disconnected before its request body was complete: %s", request.url.path)
    return Response(status_code=400)


def create_app(
    store: Store | None = None,
    *,
    analyst_token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    body_timeout: float | None = None,
    limiter: RateLimiter | None = None,
    fast_path: bool | None = None,
    release_tick: float | None = 1.0,
) -> FastAPI:
    """Build the ASGI application.

    Parameters
    ----------
    store : Store, optional
        Storage (default ``Store()``: ``DENIABLE_DATABASE_URL`` or a SQLite file).
    analyst_token : str, optional
        Bearer token of the analyst endpoints (default ``DENIABLE_ANALYST_TOKEN``; if
        neither is set a random one is generated for this application object, readable
        as ``app.state.analyst_token`` and never logged); at least 16 characters.
    max_body_bytes : int
        Largest accepted request body in bytes.
    body_timeout : float, optional
        Seconds a client has to send a whole request body, counted from the request's
        start (> 0; default ``DENIABLE_BODY_TIMEOUT``, else 10).
    limiter : RateLimiter, optional
        Limits on responses to surveys without invitations (default:
        ``DENIABLE_RATE_PER_MINUTE`` per client, default 30, and
        ``DENIABLE_CAP_PER_BUCKET`` per survey and time bucket, default 100,000).
    fast_path : bool, optional
        Serve the respondents' two hot routes through :class:`FastSubmit` (default
        ``DENIABLE_FAST_PATH``, else on; ``0`` turns it off). Either way a response is
        parsed, stored and acknowledged by the same code; ``bench/ingest.py`` measures
        both.
    release_tick : float or None, default 1.0
        Seconds between the checks for scheduled releases (each survey is released once
        per period of its ``release_every``); ``None`` runs no schedule (releases then
        come only at the close and on ``POST /api/surveys/{id}/release``).

    Returns
    -------
    fastapi.FastAPI
        The application (serve it with uvicorn; ``deniable serve`` does).

    Raises
    ------
    ValueError
        For an analyst token shorter than :data:`MIN_TOKEN_CHARS` or a body timeout <= 0.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from fastapi.testclient import TestClient
    >>> from deniable.collection.server import create_app
    >>> from deniable.collection.store import Store
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> client = TestClient(create_app(store, analyst_token="t" * 32))
    >>> client.get("/api/surveys/nope").status_code
    404
    """
    store = store or Store()
    lifetime_budget_from_environment()  # a bad DENIABLE_LIFETIME_BUDGET fails at start
    if body_timeout is None:
        body_timeout = float(os.environ.get("DENIABLE_BODY_TIMEOUT", BODY_TIMEOUT_SECONDS))
    if not body_timeout > 0:
        raise ValueError(f"body_timeout must be > 0 seconds, got {body_timeout}")
    token = _analyst_token(analyst_token)
    limiter = limiter or _default_limiter(store)
    app = FastAPI(
        lifespan=_lifespan,
        title="deniable collection server",
        version="1",
        description="Collects randomized-response reports; never receives a true answer.",
        docs_url=None,  # Swagger UI loads scripts from a CDN, which the CSP forbids
        redoc_url=None,
    )
    committer = GroupCommitter(store)
    app.state.store = store
    app.state.analyst_token = token
    app.state.committer = committer
    app.state.schedule = None if release_tick is None else ReleaseSchedule(store, release_tick)
    app.state.limiter = limiter
    for exc_type in (RequestValidationError, HTTPException, DeniableError, Exception):
        app.add_exception_handler(exc_type, _handle)
    app.add_exception_handler(ClientDisconnect, _disconnected)
    _add_middleware(app, committer, max_body_bytes, body_timeout, fast_path)
    app.include_router(public_router)
    app.include_router(analyst_router)
    static = resources.files("deniable.collection.respondent") / "web"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """At start, the scheduled releases begin (:class:`ReleaseSchedule`); on shutdown
    they stop and the group committer is drained: what was accepted is committed and
    answered before the process ends, and its writer task is stopped."""
    if app.state.schedule is not None:
        app.state.schedule.start()
    yield
    if app.state.schedule is not None:
        await app.state.schedule.close()
    await app.state.committer.close()


def _analyst_token(analyst_token: str | None) -> str:
    """The analyst's token: the argument, ``DENIABLE_ANALYST_TOKEN`` or a fresh one."""
    token = analyst_token or os.environ.get("DENIABLE_ANALYST_TOKEN") or ""
    if not token:
        token = secrets.token_urlsafe(24)
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"DENIABLE_ANALYST_TOKEN must be at least {MIN_TOKEN_CHARS} characters (the "
            "login form and the API would otherwise be open to guessing); make one with "
            "python -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    return token


def _default_limiter(store: Store) -> RateLimiter:
    """Per-client rate and per-survey cap from the environment."""
    return RateLimiter(
        float(os.environ.get("DENIABLE_RATE_PER_MINUTE", "30")),
        int(os.environ.get("DENIABLE_CAP_PER_BUCKET", "100000")),
        store.bucket_seconds,
    )


def _add_middleware(
    app: FastAPI,
    committer: GroupCommitter,
    max_body_bytes: int,
    body_timeout: float,
    fast_path: bool | None,
) -> None:
    """The last added is the outermost: a client's share, security headers, then body
    limits, then the respondents' fast path, then the application."""
    if fast_path is None:
        fast_path = os.environ.get("DENIABLE_FAST_PATH", "1") != "0"
    if fast_path:
        app.add_middleware(
            FastSubmit,
            store=app.state.store,
            committer=committer,
            max_bytes=max_body_bytes,
            limiter=app.state.limiter,
        )
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, timeout=body_timeout)
    app.add_middleware(SecurityHeaders)
    per_client = int(os.environ.get("DENIABLE_LIMIT_PER_CLIENT", DEFAULT_PER_CLIENT))
    app.add_middleware(ClientConcurrency, per_client=per_client)


def app_from_environment() -> FastAPI:
    """App factory for ``uvicorn --factory`` (``deniable serve``): the database URL from
    ``DENIABLE_DATABASE_URL``, the analyst token from ``DENIABLE_ANALYST_TOKEN``.

    Raises
    ------
    RuntimeError
        Without ``DENIABLE_ANALYST_TOKEN``: each worker process would otherwise invent
        a token of its own (``deniable serve`` makes one for all its workers).

    Returns
    -------
    fastapi.FastAPI
        As :func:`create_app` over ``Store()``.

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> from deniable.collection.server import app_from_environment
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> os.environ["DENIABLE_DATABASE_URL"] = f"sqlite:///{folder / 'rr.sqlite'}"
    >>> os.environ["DENIABLE_ANALYST_TOKEN"] = "t" * 32
    >>> app_from_environment().state.analyst_token == "t" * 32
    True
    >>> for name in ("DENIABLE_DATABASE_URL", "DENIABLE_ANALYST_TOKEN"):
    ...     del os.environ[name]
    """
    if not os.environ.get("DENIABLE_ANALYST_TOKEN"):
        raise RuntimeError(
            "DENIABLE_ANALYST_TOKEN is not set: set it to a long random secret shared by "
            "all worker processes (or start the server with 'deniable serve')"
        )
    return create_app(Store())

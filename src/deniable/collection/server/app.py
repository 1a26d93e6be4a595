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

import logging
import os
import secrets
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from ...errors import DeniableError
from ..storage import Store
from .errors import error_for
from .ingestion import MAX_BODY_BYTES, BodyLimit, FastSubmit, GroupCommitter
from .routes import analyst_router, public_router
from .schemas import MAX_BATCH

__all__ = ["MAX_BATCH", "MAX_BODY_BYTES", "app_from_environment", "create_app"]

log = logging.getLogger("deniable.server")


async def _handle(_: Request, exc: Exception) -> JSONResponse:
    return error_for(exc)


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
    committer = GroupCommitter(store)
    app.state.store = store
    app.state.analyst_token = token
    app.state.committer = committer
    for exc_type in (RequestValidationError, HTTPException, DeniableError, Exception):
        app.add_exception_handler(exc_type, _handle)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(FastSubmit, store=store, committer=committer, max_bytes=max_body_bytes)
    app.include_router(public_router)
    app.include_router(analyst_router)
    static = resources.files("deniable.collection") / "web"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    return app


def app_from_environment() -> FastAPI:
    """App factory for ``uvicorn --factory`` (``deniable serve``): the database URL from
    ``DENIABLE_DATABASE_URL``, the analyst token from ``DENIABLE_ANALYST_TOKEN``."""
    return create_app(Store())

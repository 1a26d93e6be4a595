"""The API's routes: public (respondents, telemetry clients) and analyst (bearer token).

Each route is a thin adapter over :class:`~deniable.collection.storage.Store`, the survey
model and the estimators; the application's state holds the store, the analyst token
and the group committer (:func:`~deniable.collection.server.app.create_app`).
"""

from __future__ import annotations

import io
import math
import re
import secrets
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from ..credentials import VARIANT
from ..storage import Store
from ..survey import load_survey
from .ingestion import GroupCommitter, ingest_credential_request, ingest_response
from .pages import PAGE_HEADERS, login_page, respondent_page, results_page, survey_results
from .schemas import (
    BatchIn,
    CredentialOut,
    CredentialRequest,
    InvitationsIn,
    Published,
    ResponseIn,
    Stored,
    SurveyId,
)
from .security import SESSION_COOKIE, SESSION_SECONDS, check_analyst, new_session

__all__ = ["analyst_router", "public_router"]

_bearer = HTTPBearer(auto_error=False, description="The analyst token.")
BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
Version = Annotated[int | None, Query(ge=1, le=1_000_000)]


def get_store(request: Request) -> Store:
    """The application's store."""
    store: Store = request.app.state.store
    return store


def analyst(request: Request, credentials: BearerCredentials) -> None:
    """Require the analyst token in the ``Authorization`` header (or, for reading, the
    results page's session cookie); see :func:`~.security.check_analyst`.

    Raises
    ------
    HTTPException
        400 for a secret in the query string, 401 without the right token.
    """
    check_analyst(
        request.app.state.analyst_token,
        credentials.credentials if credentials else None,
        request.query_params,
        request.cookies.get(SESSION_COOKIE),
        request.method,
    )


StoreDep = Annotated[Store, Depends(get_store)]
public_router = APIRouter(tags=["public"])
analyst_router = APIRouter(tags=["analyst"], dependencies=[Depends(analyst)])


@public_router.get("/healthz", include_in_schema=False)
def healthz() -> dict[str, str]:
    """Liveness."""
    return {"status": "ok"}


def _json_body(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that parses ``model`` itself (one pass)."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }


def respondent_view(store: Store, survey_id: str, version: int | None = None) -> dict[str, Any]:
    """The survey as the respondent's device needs it, with the survey's credential key
    (base64 DER SubjectPublicKeyInfo) when it needs invitations."""
    survey = store.survey(survey_id, version)
    view = survey.respondent_view()
    if survey.requires_invitation:
        view["credential_key"] = store.credential_key(survey.id).public_spki_b64()
        view["credential_variant"] = VARIANT
    return view


@public_router.get("/api/surveys/{survey_id}")
def get_survey(survey_id: SurveyId, store: StoreDep, version: Version = None) -> dict[str, Any]:
    """The survey as the respondent's device needs it (matrices, labels, epsilons)."""
    return respondent_view(store, survey_id, version)


@public_router.post(
    "/api/surveys/{survey_id}/credentials",
    status_code=201,
    response_model=CredentialOut,
    openapi_extra=_json_body(CredentialRequest),
)
async def credential(survey_id: SurveyId, request: Request, store: StoreDep) -> Response:
    """Spend an invitation for a blind signature (RFC 9474, RSABSSA-SHA384-PSS-Randomized).

    The server signs the blinded message without seeing the message, so the credential
    the device unblinds cannot be tied to this invitation. 403 for an unknown or used
    invitation; the spend is committed before the signature is made and returned.
    """
    _require_json(request)
    committer: GroupCommitter = request.app.state.committer
    answer = await ingest_credential_request(store, committer, survey_id, await request.body())
    return Response(answer.model_dump_json(), status_code=201, media_type="application/json")


def _require_json(request: Request) -> None:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise RequestValidationError(
            [{"loc": ("body",), "msg": "request body must be JSON (application/json)"}]
        )


@public_router.post(
    "/api/surveys/{survey_id}/responses",
    status_code=201,
    response_model=Stored,
    openapi_extra=_json_body(ResponseIn),
)
async def submit(survey_id: SurveyId, request: Request, store: StoreDep) -> Response:
    """Store one response. 201 only after it is committed; 403 for a bad invitation.

    Concurrent responses share one transaction (group commit); each is acknowledged only
    after that transaction has committed. The body is parsed and validated by
    pydantic-core in one pass (its schema is published through ``openapi_extra``).
    """
    _require_json(request)
    committer: GroupCommitter = request.app.state.committer
    ack = await ingest_response(
        store,
        committer,
        survey_id,
        await request.body(),
        request.app.state.limiter,
        request.client.host if request.client else None,
    )
    return Response(ack.model_dump_json(), status_code=201, media_type="application/json")


@public_router.post("/api/surveys/{survey_id}/batch", status_code=201)
def submit_batch(
    survey_id: SurveyId, body: BatchIn, store: StoreDep, credentials: BearerCredentials
) -> Stored:
    """Store up to 10,000 responses in one transaction (all or none).

    Needs ``Authorization: Bearer <ingestion key>`` (issued by the analyst per survey):
    401 without it, and nothing is stored.
    """
    if credentials is None or not store.ingestion_key_valid(survey_id, credentials.credentials):
        raise HTTPException(
            401, "batches need 'Authorization: Bearer <ingestion key>' issued for this survey"
        )
    survey = store.survey(survey_id, body.version)
    n = store.submit_batch(survey, [item.reports for item in body.responses])
    return Stored(stored=n, survey=survey.id, version=survey.version)


@public_router.get("/s/{survey_id}", response_class=HTMLResponse)
def respondent(survey_id: SurveyId, store: StoreDep) -> HTMLResponse:
    """The respondent page: randomizes in the browser, sends only reports. An invitation
    link carries its token in the fragment (``/s/{id}#token=...``), which browsers never
    send to the server."""
    survey = store.survey(survey_id)
    page = respondent_page(survey, respondent_view(store, survey.id, survey.version))
    return HTMLResponse(page, headers=PAGE_HEADERS)


@public_router.get("/login", response_class=HTMLResponse)
def login_form(next: Annotated[str, Query(max_length=200)] = "/") -> HTMLResponse:
    """The analyst's login form (sets the results page's session cookie)."""
    return HTMLResponse(login_page(_safe_next(next)))


@public_router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    """Check the analyst token from the form; on success set an HttpOnly, SameSite=Strict
    session cookie and go to ``next``."""
    form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
    given = (form.get("token") or [""])[0]
    target = _safe_next((form.get("next") or ["/"])[0])
    token: str = request.app.state.analyst_token
    if not secrets.compare_digest(given.encode(), token.encode()):
        return HTMLResponse(login_page(target, failed=True), status_code=401)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        new_session(token),
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


def _safe_next(target: str) -> str:
    """Only the server's own results pages are redirect targets."""
    return target if re.fullmatch(r"/surveys/[a-z][a-z0-9_-]{0,63}/results", target) else "/"


@analyst_router.post("/api/surveys")
def publish(definition: dict[str, Any], response: Response, store: StoreDep) -> Published:
    """Publish a survey version (201 if new, 200 if identical content exists)."""
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


@analyst_router.get("/api/surveys")
def list_surveys(store: StoreDep) -> list[dict[str, Any]]:
    """Published surveys with their response counts."""
    return [
        {"id": sid, "version": v, "responses": store.response_count(sid, v)}
        for sid, v in store.survey_ids()
    ]


@analyst_router.post("/api/surveys/{survey_id}/invitations", status_code=201)
def invitations(
    survey_id: SurveyId, body: InvitationsIn, request: Request, store: StoreDep
) -> dict[str, list[str]]:
    """Issue one-time invitations (shown once; only hashes are stored): the tokens and
    the links that carry them in the fragment (``/s/{id}#token=...``)."""
    tokens = store.issue_tokens(survey_id, body.count)
    base = str(request.base_url).rstrip("/")
    return {"tokens": tokens, "links": [f"{base}/s/{survey_id}#token={t}" for t in tokens]}


@analyst_router.post("/api/surveys/{survey_id}/ingestion-keys", status_code=201)
def ingestion_key(survey_id: SurveyId, store: StoreDep) -> dict[str, str]:
    """Issue a key for telemetry batches to this survey (shown once; only its hash is
    stored). Send it as ``Authorization: Bearer <key>`` to ``/batch``."""
    return {"key": store.add_ingestion_key(survey_id)}


@analyst_router.get("/api/surveys/{survey_id}/results")
def results(
    survey_id: SurveyId,
    store: StoreDep,
    version: Version = None,
    confidence_level: Annotated[float, Query(gt=0, lt=1)] = 0.95,
) -> dict[str, Any]:
    """Estimate, standard error and confidence interval per question."""
    return survey_results(store, store.survey(survey_id, version), confidence_level)


@analyst_router.get("/api/surveys/{survey_id}/export")
def export(
    survey_id: SurveyId, store: StoreDep, format: Literal["csv", "parquet"] = "csv"
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


@public_router.get("/surveys/{survey_id}/results", response_class=HTMLResponse)
async def results_view(
    survey_id: SurveyId, request: Request, store: StoreDep, credentials: BearerCredentials
) -> Response:
    """Results page: estimate with CI per question, responses over time. Without a
    session (or bearer token) it sends the browser to the login form."""
    try:
        analyst(request, credentials)
    except HTTPException as exc:
        if exc.status_code != 401:
            raise
        return RedirectResponse(f"/login?next=/surveys/{survey_id}/results", status_code=303)
    survey = await run_in_threadpool(store.survey, survey_id)
    page = await run_in_threadpool(results_page, store, survey)
    return HTMLResponse(page)

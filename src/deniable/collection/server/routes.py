"""The API's routes: public (respondents, telemetry clients) and analyst (bearer token).

Each route is a thin adapter over :class:`~deniable.collection.storage.Store`, the survey
model and the estimators; the application's state holds the store, the analyst token
and the group committer (:func:`~deniable.collection.server.app.create_app`).
"""

from __future__ import annotations

import io
import math
import secrets
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from ..storage import Store
from ..survey import load_survey
from .ingestion import GroupCommitter, ingest_response
from .pages import PAGE_HEADERS, respondent_page, results_page, survey_results
from .schemas import BatchIn, InvitationsIn, Published, ResponseIn, Stored, SurveyId

__all__ = ["analyst_router", "public_router"]

_bearer = HTTPBearer(auto_error=False, description="The analyst token.")
BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
Version = Annotated[int | None, Query(ge=1, le=1_000_000)]


def get_store(request: Request) -> Store:
    """The application's store."""
    store: Store = request.app.state.store
    return store


def analyst(request: Request, credentials: BearerCredentials) -> None:
    """Require the analyst token (constant-time comparison).

    Raises
    ------
    HTTPException
        401 without the right token.
    """
    token: str = request.app.state.analyst_token
    given = credentials.credentials if credentials else request.query_params.get("key", "")
    if not secrets.compare_digest(given.encode(), token.encode()):
        raise HTTPException(401, "analyst endpoints need 'Authorization: Bearer <token>'")


StoreDep = Annotated[Store, Depends(get_store)]
public_router = APIRouter(tags=["public"])
analyst_router = APIRouter(tags=["analyst"], dependencies=[Depends(analyst)])


@public_router.get("/healthz", include_in_schema=False)
def healthz() -> dict[str, str]:
    """Liveness."""
    return {"status": "ok"}


@public_router.get("/api/surveys/{survey_id}")
def get_survey(survey_id: SurveyId, store: StoreDep, version: Version = None) -> dict[str, Any]:
    """The survey as the respondent's device needs it (matrices, labels, epsilons)."""
    return store.survey(survey_id, version).respondent_view()


@public_router.post(
    "/api/surveys/{survey_id}/responses",
    status_code=201,
    response_model=Stored,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": ResponseIn.model_json_schema()}},
        }
    },
)
async def submit(survey_id: SurveyId, request: Request, store: StoreDep) -> Response:
    """Store one response. 201 only after it is committed; 403 for a bad invitation.

    Concurrent responses share one transaction (group commit); each is acknowledged only
    after that transaction has committed. The body is parsed and validated by
    pydantic-core in one pass (its schema is published through ``openapi_extra``).
    """
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise RequestValidationError(
            [{"loc": ("body",), "msg": "request body must be JSON (application/json)"}]
        )
    committer: GroupCommitter = request.app.state.committer
    ack = await ingest_response(store, committer, survey_id, await request.body())
    return Response(ack.model_dump_json(), status_code=201, media_type="application/json")


@public_router.post("/api/surveys/{survey_id}/batch", status_code=201)
def submit_batch(survey_id: SurveyId, body: BatchIn, store: StoreDep) -> Stored:
    """Store up to 10,000 responses in one transaction (all or none)."""
    survey = store.survey(survey_id, body.version)
    n = store.submit_batch(survey, [item.reports for item in body.responses])
    return Stored(stored=n, survey=survey.id, version=survey.version)


@public_router.get("/s/{survey_id}", response_class=HTMLResponse)
def respondent(survey_id: SurveyId, store: StoreDep) -> HTMLResponse:
    """The respondent page: randomizes in the browser, sends only reports."""
    return HTMLResponse(respondent_page(store.survey(survey_id)), headers=PAGE_HEADERS)


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
def invitations(survey_id: SurveyId, body: InvitationsIn, store: StoreDep) -> dict[str, list[str]]:
    """Issue one-time invitation tokens (shown once; only hashes are stored)."""
    return {"tokens": store.issue_tokens(survey_id, body.count)}


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


@analyst_router.get("/surveys/{survey_id}/results", response_class=HTMLResponse)
async def results_view(survey_id: SurveyId, store: StoreDep) -> HTMLResponse:
    """Results page: estimate with CI per question, responses over time."""
    survey = await run_in_threadpool(store.survey, survey_id)
    page = await run_in_threadpool(results_page, store, survey)
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})

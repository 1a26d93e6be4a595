"""The API's routes: public (respondents, telemetry clients) and analyst (bearer token).

Each route is a thin adapter over :class:`~deniable.collection.store.Store`, the survey
model and the estimators; the application's state holds the store, the analyst token
and the group committer (:func:`~deniable.collection.server.create_app`).
"""

from __future__ import annotations

import logging
import math
import re
import secrets
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from ..credentials import VARIANT
from ..exports import FormatName, export_bytes
from ..model import choose_language, parse_survey
from ..store import Store
from ..study import refresh_results, survey_results
from ._ingestion import (
    GroupCommitter,
    acknowledgement,
    ingest_credential_request,
    ingest_response,
)
from ._pages import (
    PAGE_HEADERS,
    home_page,
    login_page,
    respondent_page,
    results_page,
)
from ._schemas import (
    BatchIn,
    CredentialOut,
    CredentialRequest,
    InvitationsIn,
    Published,
    QuestionId,
    ResponseIn,
    Stored,
    SurveyId,
    UnusedIn,
)
from ._security import (
    SESSION_COOKIE,
    SESSION_SECONDS,
    check_analyst,
    new_session,
    session_valid,
)

__all__ = [
    "XMIN_WARNING",
    "analyst_router",
    "public_router",
    "respondent_view",
]

log = logging.getLogger("deniable.server")

_bearer = HTTPBearer(auto_error=False, description="The analyst token.")
_BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
_Version = Annotated[int | None, Query(ge=1, le=1_000_000)]


def _get_store(request: Request) -> Store:
    """The application's store."""
    store: Store = request.app.state.store
    return store


def _analyst(request: Request, credentials: _BearerCredentials) -> None:
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


_StoreDep = Annotated[Store, Depends(_get_store)]
public_router = APIRouter(tags=["public"])
analyst_router = APIRouter(tags=["analyst"], dependencies=[Depends(_analyst)])


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


def respondent_view(
    store: Store, survey_id: str, version: int | None = None, lang: str = "en"
) -> dict[str, Any]:
    """The survey as the respondent's device needs it, in ``lang``, with the survey's
    credential key (base64 DER SubjectPublicKeyInfo) when it needs invitations, and with
    arms each arm's (``credential_keys``)."""
    survey = store.survey(survey_id, version)
    view = survey.respondent_view(lang)
    view["closed"] = store.is_closed(survey.id)
    if survey.requires_invitation:
        view["credential_key"] = store.invitations.credential_key(
            survey.id, survey.version
        ).public_spki_b64()
        if survey.arms:  # the invitation is bound to an arm: the credential to its key
            view["credential_keys"] = {
                name: store.invitations.credential_key(
                    survey.id, survey.version, i
                ).public_spki_b64()
                for i, name in enumerate(survey.arm_names)
            }
        view["credential_variant"] = VARIANT
    return view


_Lang = Annotated[Literal["en", "de"] | None, Query(description="Language of the texts.")]


@public_router.get("/api/surveys/{survey_id}")
def _get_survey(
    survey_id: SurveyId, store: _StoreDep, version: _Version = None, lang: _Lang = None
) -> dict[str, Any]:
    """The survey as the respondent's device needs it (matrices, labels, epsilons)."""
    return respondent_view(store, survey_id, version, lang or "en")


@public_router.post(
    "/api/surveys/{survey_id}/credentials",
    status_code=201,
    response_model=CredentialOut,
    openapi_extra=_json_body(CredentialRequest),
)
async def credential(survey_id: SurveyId, request: Request, store: _StoreDep) -> Response:
    """Spend an invitation for a blind signature (RFC 9474, RSABSSA-SHA384-PSS-Randomized).

    The server signs the blinded message without seeing the message, so the credential
    the device unblinds cannot be tied to this invitation. 403 for an unknown or used
    invitation; the spend is committed before the signature is made and returned.
    """
    _require_json(request)
    committer: GroupCommitter = request.app.state.committer
    answer = await ingest_credential_request(store, committer, survey_id, await request.body())
    return acknowledgement(answer)


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
async def submit(survey_id: SurveyId, request: Request, store: _StoreDep) -> Response:
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
    return acknowledgement(ack)


@public_router.post("/api/surveys/{survey_id}/batch", status_code=201)
def submit_batch(
    survey_id: SurveyId, body: BatchIn, store: _StoreDep, credentials: _BearerCredentials
) -> Stored:
    """Store up to 10,000 responses in one transaction (all or none).

    Needs ``Authorization: Bearer <ingestion key>`` (issued by the analyst per survey):
    401 without it, and nothing is stored.
    """
    if credentials is None or not store.invitations.ingestion_key_valid(
        survey_id, credentials.credentials
    ):
        raise HTTPException(
            401, "batches need 'Authorization: Bearer <ingestion key>' issued for this survey"
        )
    survey = store.survey(survey_id, body.version)
    n = store.submit_batch(
        survey,
        [item.reports for item in body.responses],
        [item.arm for item in body.responses],
        [item.groups for item in body.responses],
    )
    return Stored(stored=n, survey=survey.id, version=survey.version)


@public_router.get("/s/{survey_id}", response_class=HTMLResponse)
def respondent(
    survey_id: SurveyId,
    request: Request,
    store: _StoreDep,
    lang: _Lang = None,
    version: _Version = None,
) -> HTMLResponse:
    """The respondent page: randomizes in the browser, sends only reports. An invitation
    link carries its token in the fragment (``/s/{id}#token=...&v=N``), which browsers
    never send to the server; the page then asks for version ``N`` (the version the
    invitation is bound to) as ``?version=N``."""
    language = choose_language(lang, request.headers.get("accept-language"))
    survey = store.survey(survey_id, version)
    view = respondent_view(store, survey.id, survey.version, language)
    page = respondent_page(survey, view, language)
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


@public_router.post("/logout")
def logout() -> Response:
    """Sign out: the browser drops the session cookie and goes to the login form."""
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


def _safe_next(target: str) -> str:
    """Only the server's own results pages are redirect targets."""
    pattern = r"/surveys/[a-z][a-z0-9_-]{0,63}/results(\?version=[0-9]{1,7})?(&pooled=true)?"
    return target if re.fullmatch(pattern, target) else "/"


@analyst_router.post("/api/surveys")
async def publish(request: Request, response: Response, store: _StoreDep) -> Published:
    """Publish a survey version from a JSON or YAML body (``application/json``,
    ``application/yaml``): 201 if new, 200 if identical content exists."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in _SURVEY_MEDIA:
        raise HTTPException(
            415, f"a survey is sent as one of {', '.join(sorted(_SURVEY_MEDIA))}, got {media!r}"
        )
    text = (await request.body()).decode("utf-8", "replace")
    survey = parse_survey(text)
    created = await run_in_threadpool(store.publish, survey)
    if created:
        await run_in_threadpool(
            store.audit, _actor(request), "publish", survey.id, survey.version, {}
        )
    response.status_code = 201 if created else 200
    eps = survey.total_epsilon
    warnings = []
    if survey.requires_invitation and not store.is_sqlite:
        warnings.append(XMIN_WARNING.format(survey=survey.id))
        log.warning(warnings[-1])
    return Published(
        id=survey.id,
        version=survey.version,
        digest=survey.digest,
        created=created,
        total_epsilon=eps if math.isfinite(eps) else "inf",
        warnings=warnings,
    )


#: Said when a survey that requires invitations is published on PostgreSQL.
XMIN_WARNING = (
    "PostgreSQL keeps each row version's transaction id (xmin), which increases with "
    "time: a database superuser can order invitation spends against waiting responses of "
    "{survey} (see the threat model in docs/collection.md); use SQLite where that matters"
)


_SURVEY_MEDIA = {"application/json", "application/yaml", "application/x-yaml", "text/yaml"}


def _actor(request: Request) -> str:
    """Who is acting, for the audit log: ``cli`` (the deniable command), ``api`` (another
    bearer-token client) or ``session`` (the signed-in browser)."""
    if request.headers.get("authorization") is None:
        return "session"
    return "cli" if request.headers.get("user-agent", "").startswith("deniable-cli") else "api"


@analyst_router.get("/api/surveys")
def list_surveys(store: _StoreDep) -> list[dict[str, Any]]:
    """Published surveys with their response counts."""
    return [
        {"id": sid, "version": v, "responses": store.response_count(sid, v)}
        for sid, v in store.survey_ids()
    ]


@analyst_router.get("/api/surveys/{survey_id}/status")
def status(survey_id: SurveyId, store: _StoreDep) -> dict[str, Any]:
    """Versions and their responses, open or closed, invitations issued, used and
    revoked, and the lifetime budget ledger."""
    return store.status(survey_id)


@analyst_router.post("/api/surveys/{survey_id}/close")
def close(survey_id: SurveyId, request: Request, store: _StoreDep) -> dict[str, Any]:
    """Close the survey: responses and credential requests are refused (409) from now."""
    store.set_closed(survey_id, True, _actor(request))
    return {"id": survey_id, "closed": True}


@analyst_router.post("/api/surveys/{survey_id}/reopen")
def reopen(survey_id: SurveyId, request: Request, store: _StoreDep) -> dict[str, Any]:
    """Reopen a closed survey."""
    store.set_closed(survey_id, False, _actor(request))
    return {"id": survey_id, "closed": False}


@analyst_router.post("/api/surveys/{survey_id}/revoke")
def revoke(survey_id: SurveyId, request: Request, store: _StoreDep) -> dict[str, Any]:
    """Revoke every unused invitation of the survey; their links stop working."""
    return {"id": survey_id, "revoked": store.revoke_invitations(survey_id, _actor(request))}


@analyst_router.get("/api/surveys/{survey_id}/audit")
def audit(
    survey_id: SurveyId, store: _StoreDep, limit: Annotated[int, Query(ge=1, le=10_000)] = 1000
) -> list[dict[str, Any]]:
    """The audit log of the survey, newest first: each release of results, export,
    publish, invitations issued, close, reopen and revoke, with who and when."""
    store.survey(survey_id)
    return store.audit_log(survey_id, limit)


@analyst_router.post("/api/surveys/{survey_id}/invitations", status_code=201)
def invitations(
    survey_id: SurveyId, body: InvitationsIn, request: Request, store: _StoreDep
) -> dict[str, Any]:
    """Issue one-time invitations bound to the survey's latest version (shown once; only
    hashes are stored): the tokens and the links that carry them in the fragment
    (``/s/{id}#token=...&v=N``, and ``&owner=...`` for a named recipient).

    With ``recipients``, each address gets one invitation unless it was already invited
    to this version or the version's full cost would take it past the server's lifetime
    budget per person (``DENIABLE_LIFETIME_BUDGET``); those rows are listed in
    ``refused`` with the row, the address and the sums, and the others are issued
    (201). 422 when every row is refused; nothing is then stored.
    """
    base = str(request.base_url).rstrip("/")
    if body.recipients is not None:
        issued = store.invitations.invite_recipients(survey_id, body.recipients)
        links = [
            f"{base}/s/{survey_id}#token={t}&v={issued.version}&owner={o}"
            for t, o in zip(issued.tokens, issued.owners, strict=True)
        ]
        store.audit(
            _actor(request),
            "invite",
            survey_id,
            issued.version,
            {"recipients": len(issued.tokens), "refused": len(issued.refused)},
        )
        return {
            "version": issued.version,
            "tokens": issued.tokens,
            "links": links,
            "invitations": [
                {"row": r, "recipient": a, "link": link}
                for r, a, link in zip(issued.rows, issued.recipients, links, strict=True)
            ],
            "refused": [{"row": r, "recipient": a, "message": m} for r, a, m in issued.refused],
        }
    assert body.count is not None
    issued = store.invitations.issue_invitations(survey_id, body.count)
    store.audit(_actor(request), "invite", survey_id, issued.version, {"count": body.count})
    return {
        "version": issued.version,
        "tokens": issued.tokens,
        "links": [f"{base}/s/{survey_id}#token={t}&v={issued.version}" for t in issued.tokens],
        "anonymous": True,
    }


@analyst_router.post("/api/surveys/{survey_id}/invitations/unused")
def unused_invitations(
    survey_id: SurveyId, body: UnusedIn, request: Request, store: _StoreDep
) -> dict[str, Any]:
    """Which of these invitations (SHA-256 hex of each token) are issued and not yet
    started on any device (not exchanged for a credential): for a reminder. Answered
    once per release period of the survey (429 otherwise) and audited (who, the hour,
    how many hashes)."""
    store.survey(survey_id)
    unused = store.unused_invitations(survey_id, body.token_hashes, _actor(request))
    return {"id": survey_id, "unused": unused}


@analyst_router.post("/api/surveys/{survey_id}/release")
def release(
    survey_id: SurveyId, request: Request, store: _StoreDep, later: BackgroundTasks
) -> dict[str, Any]:
    """Release now every complete key cell of the survey's versions (as a scheduled
    release would; audited): ``{"id", "released"}``, how many responses. The results
    readers asked for are computed again after the answer (:func:`refresh_results`)."""
    released = store.release(survey_id, actor=_actor(request))
    if released:
        later.add_task(refresh_results, store)
    return {"id": survey_id, "released": released}


@analyst_router.post("/api/surveys/{survey_id}/ingestion-keys", status_code=201)
def ingestion_key(survey_id: SurveyId, store: _StoreDep) -> dict[str, str]:
    """Issue a key for telemetry batches to this survey (shown once; only its hash is
    stored). Send it as ``Authorization: Bearer <key>`` to ``/batch``."""
    return {"key": store.invitations.add_ingestion_key(survey_id)}


@analyst_router.get("/api/surveys/{survey_id}/results")
def results(
    survey_id: SurveyId,
    request: Request,
    store: _StoreDep,
    version: _Version = None,
    confidence_level: Annotated[float, Query(gt=0, lt=1)] = 0.95,
    pooled: bool = False,
    regress: Annotated[QuestionId | None, Query()] = None,
    on: Annotated[list[QuestionId] | None, Query(max_length=5)] = None,
) -> dict[str, Any]:
    """Estimate, standard error and confidence interval per question from the latest
    release: responses enter results only in crowds of at least ``min_release``
    (:mod:`deniable.collection.store`; each release is in the audit log), so a read
    creates no release; ``waiting`` counts those not yet released. ``regress=Q&on=A&on=B``
    adds the logistic regression of Q on the direct questions A, B (``regression``)."""
    survey = store.survey(survey_id, version)
    try:
        return survey_results(store, survey, confidence_level, pooled, regress, on)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


@analyst_router.get("/api/surveys/{survey_id}/export")
def export(
    survey_id: SurveyId,
    request: Request,
    store: _StoreDep,
    format: FormatName = "csv",
) -> Response:
    """All reports of the survey (see :mod:`deniable.collection.exports` for the formats;
    ``survey`` is the survey file the others are analysed with). Audited."""
    content, media, name = export_bytes(store, survey_id, format)
    store.audit(_actor(request), "export", survey_id, None, {"format": format})
    return Response(
        content, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )


@public_router.get("/surveys/{survey_id}/export")
def export_download(
    survey_id: SurveyId,
    request: Request,
    store: _StoreDep,
    credentials: _BearerCredentials,
    format: FormatName = "csv",
) -> Response:
    """The dashboard's download buttons (session cookie): as ``/api/.../export``."""
    _analyst(request, credentials)
    return export(survey_id, request, store, format)


@public_router.get("/", response_class=HTMLResponse)
def home(request: Request, store: _StoreDep, credentials: _BearerCredentials) -> HTMLResponse:
    """The landing page; signed in, the list of surveys."""
    try:
        _analyst(request, credentials)
    except HTTPException:
        return HTMLResponse(home_page(None))
    listed = []
    for sid in sorted({sid for sid, _ in store.survey_ids()}):
        latest = store.survey(sid)
        listed.append(
            {
                "id": sid,
                "title": latest.title,
                "latest_version": latest.version,
                "responses": store.response_count(sid),
                "closed": store.is_closed(sid),
            }
        )
    return HTMLResponse(home_page(listed))


@public_router.post("/surveys/{survey_id}/{action}")
async def close_from_page(
    survey_id: SurveyId, action: Literal["close", "reopen"], request: Request, store: _StoreDep
) -> Response:
    """The dashboard's close and reopen button (session cookie, which is SameSite=Strict;
    a request a browser marks as cross-site, or from another origin, is refused)."""
    origin = request.headers.get("origin", "null")  # "null" under no-referrer pages
    site = request.headers.get("sec-fetch-site", "same-origin")
    if site not in ("same-origin", "none") or origin not in ("null", _origin(request)):
        raise HTTPException(403, "cross-origin form refused")
    if not session_valid(request.app.state.analyst_token, request.cookies.get(SESSION_COOKIE)):
        return RedirectResponse(f"/login?next=/surveys/{survey_id}/results", status_code=303)
    await run_in_threadpool(store.set_closed, survey_id, action == "close", "session")
    return RedirectResponse(f"/surveys/{survey_id}/results", status_code=303)


def _origin(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@public_router.get("/surveys/{survey_id}/results", response_class=HTMLResponse)
async def results_view(
    survey_id: SurveyId,
    request: Request,
    store: _StoreDep,
    credentials: _BearerCredentials,
    version: _Version = None,
    pooled: bool = False,
    regress: Annotated[QuestionId | None, Query()] = None,
    on: Annotated[list[QuestionId] | None, Query(max_length=5)] = None,
) -> Response:
    """Results page: estimate with CI per question, responses over time. Without a
    session (or bearer token) it sends the browser to the login form."""
    try:
        _analyst(request, credentials)
    except HTTPException as exc:
        if exc.status_code != 401:
            raise
        return RedirectResponse(f"/login?next=/surveys/{survey_id}/results", status_code=303)
    survey = await run_in_threadpool(store.survey, survey_id, version)
    try:
        page, _ = await run_in_threadpool(results_page, store, survey, pooled, regress, on)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return HTMLResponse(page)

"""The collection server (FastAPI): survey JSON, respondent page, ingestion, analyst API.

``app`` builds the application; ``routes`` holds the endpoints; ``schemas`` the
request and response bodies; ``ingestion`` the one write path, group commit and the
body limit; ``errors`` the one error shape; ``pages`` the HTML pages (``templates/``).
"""

from ..._extras import require

require("fastapi", "server")
require("jinja2", "server")
require("sqlalchemy", "server")

from ._app import (
    MIN_TOKEN_CHARS,
    app_from_environment,
    create_app,
)
from ._http_errors import (
    CODES,
    body_validation_error,
    error_for,
    error_response,
)
from ._http_protocol import (
    HEADER_TIMEOUT_SECONDS,
    HeaderDeadlineProtocol,
    header_timeout,
)
from ._ingestion import (
    BODY_TIMEOUT_SECONDS,
    MAX_BODY_BYTES,
    RESPONSES_PATH,
    BodyLimit,
    FastSubmit,
    GroupCommitter,
    acknowledgement,
    ingest_credential_request,
    ingest_response,
)
from ._live import (
    DEMO_SURVEY,
    LiveDemoResult,
    LiveRow,
    free_port,
    live_demo,
    serve_in_thread,
)
from ._pages import (
    PAGE_HEADERS,
    dashboard_refresh,
    error_page,
    forest_labels,
    home_page,
    login_page,
    respondent_page,
    results_page,
)
from ._routes import (
    XMIN_WARNING,
    analyst_router,
    public_router,
    respondent_view,
)
from ._schemas import (
    MAX_BATCH,
    ArmName,
    BatchIn,
    BatchItem,
    CredentialIn,
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
    CSP,
    DEFAULT_PER_CLIENT,
    SESSION_COOKIE,
    SESSION_SECONDS,
    ClientConcurrency,
    RateLimiter,
    SecurityHeaders,
    access,
    check_analyst,
    new_session,
    session_valid,
)

__all__ = [
    "BODY_TIMEOUT_SECONDS",
    "CODES",
    "CSP",
    "DEFAULT_PER_CLIENT",
    "DEMO_SURVEY",
    "HEADER_TIMEOUT_SECONDS",
    "MAX_BATCH",
    "MAX_BODY_BYTES",
    "MIN_TOKEN_CHARS",
    "PAGE_HEADERS",
    "RESPONSES_PATH",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "XMIN_WARNING",
    "ArmName",
    "BatchIn",
    "BatchItem",
    "BodyLimit",
    "ClientConcurrency",
    "CredentialIn",
    "CredentialOut",
    "CredentialRequest",
    "FastSubmit",
    "GroupCommitter",
    "HeaderDeadlineProtocol",
    "InvitationsIn",
    "LiveDemoResult",
    "LiveRow",
    "Published",
    "QuestionId",
    "RateLimiter",
    "ResponseIn",
    "SecurityHeaders",
    "Stored",
    "SurveyId",
    "UnusedIn",
    "access",
    "acknowledgement",
    "analyst_router",
    "app_from_environment",
    "body_validation_error",
    "check_analyst",
    "create_app",
    "dashboard_refresh",
    "error_for",
    "error_page",
    "error_response",
    "forest_labels",
    "free_port",
    "header_timeout",
    "home_page",
    "ingest_credential_request",
    "ingest_response",
    "live_demo",
    "login_page",
    "new_session",
    "public_router",
    "respondent_page",
    "respondent_view",
    "results_page",
    "serve_in_thread",
    "session_valid",
]

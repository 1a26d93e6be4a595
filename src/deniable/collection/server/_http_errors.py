"""The one JSON error shape of the server, and the mapping of every exception to it.

``{"error": {"status", "code", "message", "field", "fields"}}``. Used by the
application's exception handlers and by the ingestion fast path alike, so a rejection
looks the same whichever path answered it.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from ...errors import (
    CredentialError,
    CredentialRejectedError,
    DeniableError,
    InvitationError,
    InvitationUsedError,
    InvitationVersionError,
    RateLimitedError,
    RecipientsRefusedError,
    ReportValidationError,
    SurveyClosedError,
    SurveyConflictError,
    SurveyError,
    SurveyNotFoundError,
)

__all__ = ["CODES", "body_validation_error", "error_for", "error_response"]

log = logging.getLogger("deniable.server")

#: The ``code`` of each HTTP status.
CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    408: "request_timeout",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
}

_DENIABLE = {
    CredentialError: (422, "invalid_credential_format"),
    CredentialRejectedError: (403, "invalid_credential"),
    ReportValidationError: (422, "invalid_report"),
    InvitationError: (403, "invalid_invitation"),
    InvitationUsedError: (403, "invitation_used"),
    InvitationVersionError: (403, "invitation_other_version"),
    SurveyClosedError: (409, "survey_closed"),
    SurveyNotFoundError: (404, "not_found"),
    SurveyConflictError: (409, "conflict"),
    RateLimitedError: (429, "rate_limited"),
}


def error_response(
    status: int, code: str, message: str, fields: list[dict[str, str]] | None = None
) -> JSONResponse:
    """The error envelope with ``status``, ``code``, ``message`` and the fields at fault."""
    body: dict[str, Any] = {"status": status, "code": code, "message": message}
    if fields:
        body["field"] = fields[0]["field"]
        body["fields"] = fields
    return JSONResponse({"error": body}, status_code=status)


def body_validation_error(exc: ValidationError) -> RequestValidationError:
    """A pydantic error on a request body, located under ``body``."""
    return RequestValidationError([e | {"loc": ("body", *e["loc"])} for e in exc.errors()])


def error_for(exc: BaseException) -> JSONResponse:
    """The error response for any exception raised while serving a request."""
    if isinstance(exc, ValidationError):
        exc = body_validation_error(exc)
    if isinstance(exc, RequestValidationError):
        fields = [
            {
                "field": ".".join(str(p) for p in e.get("loc", ())) or "body",
                "message": str(e.get("msg", "invalid")).removeprefix("Value error, "),
            }
            for e in exc.errors()
        ]
        message = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
        return error_response(422, "validation_error", message, fields)
    if isinstance(exc, HTTPException):
        response = error_response(
            exc.status_code, CODES.get(exc.status_code, "error"), str(exc.detail)
        )
        if exc.status_code == 408:  # the body will not come: free the connection
            response.headers["connection"] = "close"
        return response
    if isinstance(exc, RecipientsRefusedError):
        fields = [{"field": f"body.{f}", "message": m} for f, m in exc.errors]
        return error_response(422, "recipients_refused", str(exc), fields)
    if isinstance(exc, SurveyError):
        fields = [{"field": f"body.{f}", "message": m} for f, m in exc.errors]
        return error_response(422, "invalid_survey", str(exc), fields)
    if isinstance(exc, DeniableError):
        status, code = _DENIABLE.get(type(exc), (422, "invalid"))
        return error_response(status, code, str(exc))
    log.exception("internal error", exc_info=exc)
    return error_response(500, "internal_error", "internal error; nothing was stored")

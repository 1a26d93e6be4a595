"""Ingestion: the one write path of a response, group commit, and the body limit.

:func:`ingest_response` validates a raw JSON response, finds its survey version and waits
until it is committed; the route ``POST /api/surveys/{id}/responses`` and the ASGI fast
path :class:`FastSubmit` both call it, so a response is validated and stored by one
piece of code. :class:`GroupCommitter` stores responses arriving together in one
transaction and acknowledges each only after that commit. :class:`BodyLimit` refuses
bodies over the limit while they are read.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from ..credentials import VARIANT, Credential, b64url, b64url_decode
from ..store import PendingResponse, PendingSpend, Store
from ._http_errors import body_validation_error, error_for, error_response
from ._schemas import CredentialOut, CredentialRequest, ResponseIn, Stored
from ._security import RateLimiter

log = logging.getLogger("deniable.server")

__all__ = [
    "BODY_TIMEOUT_SECONDS",
    "MAX_BODY_BYTES",
    "RESPONSES_PATH",
    "BodyLimit",
    "FastSubmit",
    "GroupCommitter",
    "ReleaseSchedule",
    "acknowledgement",
    "ingest_credential_request",
    "ingest_response",
]

#: Default limit on a request body, bytes.
MAX_BODY_BYTES = 4 * 1024 * 1024
#: Default time a client has to send a whole request body, seconds.
BODY_TIMEOUT_SECONDS = 10.0


def acknowledgement(answer: Stored | CredentialOut) -> Response:
    """201 with ``answer`` as JSON: the one acknowledgement of a stored response, a
    batch or a blind signature, sent by the routes and by :class:`FastSubmit` alike."""
    return Response(answer.model_dump_json(), status_code=201, media_type="application/json")


async def ingest_response(
    store: Store,
    committer: GroupCommitter,
    survey_id: str,
    raw: bytes,
    limiter: RateLimiter | None = None,
    client: str | None = None,
) -> Stored:
    """Validate one raw JSON response and return once it is committed.

    A survey without invitations takes the response only within ``limiter``'s limits
    for ``client`` (an address used as an in-memory key only).

    Raises
    ------
    RequestValidationError
        For a body that is not a valid response (located under ``body``).
    SurveyNotFoundError, ReportValidationError, CredentialRejectedError
        For an unknown survey or version, a bad report code, or a refused credential;
        nothing is stored.
    HTTPException
        429 over a rate limit.
    """
    try:
        parsed = ResponseIn.model_validate_json(raw)
    except ValidationError as exc:
        raise body_validation_error(exc) from None
    survey = store.cached_survey(survey_id, parsed.version)
    if survey is None:  # raises SurveyNotFoundError for an unknown survey
        survey = await run_in_threadpool(store.survey, survey_id, parsed.version)
    if limiter is not None and not survey.requires_invitation:
        limiter.check(survey.id, client)
    credential = None
    if parsed.credential is not None:
        credential = Credential(
            b64url_decode(parsed.credential.message, "credential.message", 150),
            b64url_decode(parsed.credential.signature, "credential.signature", 512),
        )
    pending = store.prepare(survey, parsed.reports, credential, parsed.arm, parsed.groups)
    await committer.submit(pending)
    return Stored(stored=1, survey=survey.id, version=survey.version)


async def ingest_credential_request(
    store: Store, committer: GroupCommitter, survey_id: str, raw: bytes
) -> CredentialOut:
    """Validate a raw JSON credential request, spend its invitation, then blind-sign.

    The spend is committed (with the group) before the signature is made, so an
    invitation yields at most one signature; the signer never sees the message.

    Raises
    ------
    RequestValidationError
        For a body that is not a credential request.
    CredentialError, InvitationError, SurveyNotFoundError
        For a malformed blinded message, an unknown or spent invitation, or a survey
        without invitations; nothing is spent.
    """
    try:
        parsed = CredentialRequest.model_validate_json(raw)
    except ValidationError as exc:
        raise body_validation_error(exc) from None
    blinded = b64url_decode(parsed.blinded_msg, "blinded_msg", 512)
    survey = store.cached_survey(survey_id, parsed.version) if parsed.version else None
    if survey is None:  # a client that does not say: the latest version
        survey = await run_in_threadpool(store.survey, survey_id, parsed.version)
    version = survey.version
    arm = _arm_index(survey, parsed.arm)
    key = store.invitations.cached_credential_key(survey_id, version, arm)
    if key is None:  # a read, once per process and version
        key = await run_in_threadpool(store.invitations.credential_key, survey_id, version, arm)
    await committer.submit(
        store.invitations.prepare_spend(survey_id, parsed.token, blinded, version, arm)
    )
    # on the event loop (0.85 ms with OpenSSL, 1.1 ms with GMP): a thread hop costs more
    # CPU than it saves at one core; measured in bench/ingest.py (docs/collection.md)
    signature = key.blind_sign(blinded)
    return CredentialOut(blind_sig=b64url(signature), variant=VARIANT)


def _arm_index(survey: Any, arm: str | None) -> int | None:
    """The position of a credential request's ``arm`` in a study with arms.

    Raises
    ------
    RequestValidationError
        Naming the field and the allowed arms, for a study with arms and no or another
        arm, or an arm for a survey without arms.
    """
    names = list(survey.arm_names)
    if (arm is None) == (not names) and (arm is None or arm in names):
        return names.index(arm) if arm is not None else None
    allowed = f"one of {names}" if names else "absent (the survey has no arms)"
    error = {"loc": ("body", "arm"), "msg": f"arm must be {allowed}, got {arm!r}"}
    raise RequestValidationError([error | {"type": "value_error"}])


class BodyLimit:
    """ASGI middleware: refuse bodies over ``max_bytes`` (413), declared or streamed, and
    bodies not complete within ``timeout`` seconds of the request's start (408; the
    server then closes the connection). The deadline is for the whole body, not for each
    read, so a body that trickles one byte at a time cannot hold a connection either."""

    def __init__(self, app: Any, max_bytes: int, timeout: float = BODY_TIMEOUT_SECONDS) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
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
                    response = error_response(
                        413 if declared > 0 else 400,
                        "payload_too_large" if declared > 0 else "bad_request",
                        f"request body must be at most {self.max_bytes} bytes"
                        if declared > 0
                        else "malformed Content-Length header",
                    )
                    await response(scope, receive, send)
                    return
        seen = 0
        complete = False
        deadline = asyncio.get_running_loop().time() + self.timeout

        async def limited() -> Message:
            nonlocal seen, complete
            if complete:  # after the body: waiting for a disconnect is not bounded here
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):  # no task per read, as wait_for
                    message = await receive()
            except TimeoutError:
                raise HTTPException(
                    408, f"request body not received within {self.timeout:g} s"
                ) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(413, f"request body must be at most {self.max_bytes} bytes")
                complete = not message.get("more_body", False)
            return message

        await self.app(scope, limited, send)


class GroupCommitter:
    """Group commit: responses arriving together are stored in one transaction.

    Each request enqueues its validated response and waits; one writer task takes
    everything queued (up to ``max_group``), commits it in a worker thread with
    :meth:`Store.commit_group`, then wakes each request with its own outcome. A
    response is therefore acknowledged only after a commit that contains it, and one
    fsync serves many respondents. Invitation spends (:class:`PendingSpend`) share the
    same groups.

    Nothing is released here: releases happen at scheduled moments (:class:`ReleaseSchedule`),
    at the close or on the analyst's request, never inside an arrival's transaction.

    :meth:`close` (the application's shutdown) drains it: what is queued is committed
    and answered, a deferred release is made, and the writer task ends.
    """

    def __init__(self, store: Store, max_group: int = 2000) -> None:
        self.store = store
        self.max_group = max_group
        self._queue: (
            asyncio.Queue[tuple[PendingResponse | PendingSpend, asyncio.Future[None]]] | None
        ) = None
        self._task: asyncio.Task[None] | None = None

    async def submit(self, pending: PendingResponse | PendingSpend) -> None:
        """Wait until ``pending`` is committed; raise its InvitationError if refused."""
        loop = asyncio.get_running_loop()
        task = self._task
        if self._queue is None or task is None or task.done() or task.get_loop() is not loop:
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._run())
        future: asyncio.Future[None] = loop.create_future()
        self._queue.put_nowait((pending, future))
        await future

    async def close(self) -> None:
        """Drain and stop: every response queued before the call is committed and
        answered, then the writer task ends. A later
        :meth:`submit` starts a new one. Called by the application's shutdown."""
        queue, task = self._queue, self._task
        self._queue = self._task = None
        if queue is None or task is None or task.done():
            return
        if task.get_loop() is not asyncio.get_running_loop():  # its loop is gone
            return
        queue.put_nowait(_STOP)
        await task

    async def _run(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            first = await queue.get()
            if first is _STOP:
                return
            group = [first]
            while not queue.empty() and len(group) < self.max_group:
                item = queue.get_nowait()
                if item is _STOP:  # the last entry: commit this group, then stop
                    queue.put_nowait(item)
                    break
                group.append(item)
            try:
                outcomes = await run_in_threadpool(
                    functools.partial(self.store.commit_group, [p for p, _ in group], False)
                )
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


class ReleaseSchedule:
    """Scheduled releases: every ``tick_seconds`` the store makes the releases due
    (:meth:`Store.release_scheduled`: once per survey per period of its
    ``release_every``, periods counted from the epoch), in a task of its own, at moments
    no arrival chooses. :meth:`close` stops it (the application's shutdown)."""

    def __init__(self, store: Store, tick_seconds: float = 1.0) -> None:
        self.store = store
        self.tick_seconds = tick_seconds
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the task on the running loop (once)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        from ..study import refresh_results

        while True:
            await asyncio.sleep(self.tick_seconds)
            try:
                if await run_in_threadpool(self.store.release_scheduled):
                    # the results readers asked for, computed now rather than at a read
                    await run_in_threadpool(refresh_results, self.store)
            except Exception:  # the next tick retries  # pragma: no cover
                log.exception("could not make the scheduled releases")

    async def close(self) -> None:
        """Stop the task."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


#: The entry :meth:`GroupCommitter.close` queues: what is queued before it is committed,
#: then the writer ends.
_STOP: Any = object()

RESPONSES_PATH = re.compile(r"/api/surveys/([a-z][a-z0-9_-]{0,63})/(responses|credentials)")
#: The fast path takes bodies up to this size (a response is well under 1 KiB).
_FAST_MAX_BYTES = 64 * 1024


class FastSubmit:
    """ASGI fast path for ``POST /api/surveys/{id}/responses`` and ``.../credentials``
    (the respondents' hot paths).

    A JSON body with a declared Content-Length, for a survey id of the right shape, goes
    through :func:`ingest_response` or :func:`ingest_credential_request` (the one write
    path of each, which the application's routes use too) without the framework's
    routing, dependency and exception layers. It reads the body as the routes do
    (Starlette's ``Request.body``) and answers with the routes' own
    :func:`acknowledgement` or rejection (the one error shape, :func:`error_for`), so
    every report is validated once and answered alike on either path. Anything else
    (a chunked or large body, another media type, a malformed id) goes to the full
    application.
    """

    def __init__(
        self,
        app: Any,
        store: Store,
        committer: GroupCommitter,
        max_bytes: int,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.app = app
        self.store = store
        self.committer = committer
        self.max_bytes = min(max_bytes, _FAST_MAX_BYTES)
        self.limiter = limiter

    async def __call__(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        match = (
            RESPONSES_PATH.fullmatch(scope["path"])
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
        try:  # the body is read as the routes read it (bounded by BodyLimit)
            body = await Request(scope, receive).body()
        except ClientDisconnect:  # the client went away before sending its body
            return
        except HTTPException as exc:  # too slow or too large (BodyLimit)
            await error_for(exc)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        if len(body) != declared:  # a body that lied about its length: the full application
            await self.app(scope, replay, send)
            return
        try:
            answer: Stored | CredentialOut
            if match.group(2) == "credentials":
                answer = await ingest_credential_request(
                    self.store, self.committer, match.group(1), body
                )
            else:
                client = scope.get("client")
                answer = await ingest_response(
                    self.store,
                    self.committer,
                    match.group(1),
                    body,
                    self.limiter,
                    client[0] if client else None,
                )
        except Exception as exc:  # the same error shape as the application's handlers
            await error_for(exc)(scope, replay, send)
            return
        await acknowledgement(answer)(scope, replay, send)

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
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from ..storage import PendingResponse, Store
from .errors import body_validation_error, error_for, error_response
from .schemas import ResponseIn, Stored

__all__ = [
    "MAX_BODY_BYTES",
    "RESPONSES_PATH",
    "BodyLimit",
    "FastSubmit",
    "GroupCommitter",
    "ingest_response",
]

#: Default limit on a request body, bytes.
MAX_BODY_BYTES = 4 * 1024 * 1024


async def ingest_response(
    store: Store, committer: GroupCommitter, survey_id: str, raw: bytes
) -> Stored:
    """Validate one raw JSON response and return once it is committed.

    Raises
    ------
    RequestValidationError
        For a body that is not a valid response (located under ``body``).
    SurveyNotFoundError, ReportValidationError, InvitationError
        For an unknown survey or version, a bad report code, or a refused invitation;
        nothing is stored.
    """
    try:
        parsed = ResponseIn.model_validate_json(raw)
    except ValidationError as exc:
        raise body_validation_error(exc) from None
    survey = store.cached_survey(survey_id, parsed.version)
    if survey is None:  # raises SurveyNotFoundError for an unknown survey
        survey = await run_in_threadpool(store.survey, survey_id, parsed.version)
    await committer.submit(store.prepare(survey, parsed.reports, parsed.token))
    return Stored(stored=1, survey=survey.id, version=survey.version)


class BodyLimit:
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


RESPONSES_PATH = re.compile(r"/api/surveys/([a-z][a-z0-9_-]{0,63})/responses")
#: The fast path takes bodies up to this size (a response is well under 1 KiB).
_FAST_MAX_BYTES = 64 * 1024


class FastSubmit:
    """ASGI fast path for ``POST /api/surveys/{id}/responses`` (the respondents' hot path).

    A JSON body with a declared Content-Length, for a survey id of the right shape, goes
    through :func:`ingest_response` (the one write path, which the application's route
    uses too) without the framework's routing, dependency and exception layers; its
    acknowledgement or its rejection (in the one error shape, :func:`error_for`) is
    sent from here, so every report is validated once. Anything else (a chunked or
    large body, another media type, a malformed id) goes to the full application.
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

        if size != declared:  # a body that lied about its length: the full application
            await self.app(scope, replay, send)
            return
        try:
            stored = await ingest_response(self.store, self.committer, match.group(1), body)
        except Exception as exc:  # the same error shape as the application's handlers
            await error_for(exc)(scope, replay, send)
            return
        ack = stored.model_dump_json().encode()
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

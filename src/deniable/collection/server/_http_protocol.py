"""uvicorn's HTTP protocol with a deadline on request headers.

uvicorn cuts idle keep-alive connections, and :class:`~.ingestion.BodyLimit` cuts slow
bodies, but a client that opens a connection and sends its request line and headers a
byte at a time (slowloris; Hansen 2009) is held open by uvicorn for ever. This protocol
closes a connection whose request headers are not complete within ``timeout`` seconds
of the connection opening or of the request starting. ``deniable serve`` and the
in-process server use it; behind a reverse proxy, the proxy's header timeout (nginx's
``client_header_timeout``) does the same.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HEADER_TIMEOUT_SECONDS", "HeaderDeadlineProtocol", "header_timeout"]

#: Default seconds a client has to send a request's line and headers.
HEADER_TIMEOUT_SECONDS = 10.0


def header_timeout() -> float:
    """The deadline in seconds: ``DENIABLE_HEADER_TIMEOUT`` or 10.

    Raises
    ------
    ValueError
        If the variable is not a positive number.
    """
    value = float(os.environ.get("DENIABLE_HEADER_TIMEOUT", HEADER_TIMEOUT_SECONDS))
    if not value > 0:
        raise ValueError(f"DENIABLE_HEADER_TIMEOUT must be > 0 seconds, got {value}")
    return value


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that closes connections whose headers come too slowly."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._timeout = header_timeout()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self._timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

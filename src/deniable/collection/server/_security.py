"""Who may do what: the analyst token, the results page's session cookie, security
headers on every response, and the in-memory rate limits of open surveys.

- The analyst token travels only in ``Authorization: Bearer``; a token in a query string
  is refused (URLs end up in logs, histories and ``Referer`` headers).
- The results page has a login form that sets an HttpOnly, ``SameSite=Strict`` session
  cookie: ``<expiry>.<HMAC-SHA256(analyst token, expiry)>`` (``hmac`` from the standard
  library). It is stateless, so every worker that shares the analyst token accepts it,
  and it is honoured for reading (GET) only.
- :class:`SecurityHeaders` adds ``X-Content-Type-Options: nosniff`` and
  ``Referrer-Policy: no-referrer`` to every response, and a strict
  Content-Security-Policy and ``Cache-Control: no-store`` to every HTML page.
- :class:`RateLimiter` bounds responses to surveys without invitations, per client and
  per survey and time bucket. The client address is only a key of an in-memory map, as
  an HMAC under a per-process random key; it is never stored or logged. An IPv6 client
  is keyed by its /64 (one subscriber's prefix: its interface ids are free to choose).
- Proxy headers: ``deniable serve`` ignores ``X-Forwarded-For`` unless
  ``--forwarded-allow-ips`` names the proxy. Without it, a loopback peer that sends the
  header (a reverse proxy on the same host) gets one warning in the log: every client
  behind that proxy then shares one rate limit.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import MutableMapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import Message, Receive, Scope, Send

__all__ = [
    "CSP",
    "DEFAULT_PER_CLIENT",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "ClientConcurrency",
    "RateLimiter",
    "SecurityHeaders",
    "access",
    "check_analyst",
    "new_session",
    "session_valid",
]

access = logging.getLogger("deniable.access")
log = logging.getLogger("deniable.server")

#: Name of the results page's session cookie.
SESSION_COOKIE = "deniable_session"
#: Lifetime of a session, seconds.
SESSION_SECONDS = 8 * 3600
#: The Content-Security-Policy of every HTML page (the login form posts to itself).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_URL_SECRETS = ("key", "token", "access_token")


def _mac(token: str, expiry: int) -> str:
    return hmac.new(token.encode(), f"session|{expiry}".encode(), hashlib.sha256).hexdigest()


def new_session(token: str, now: float | None = None) -> str:
    """A session cookie value valid for :data:`SESSION_SECONDS`."""
    expiry = int(now if now is not None else time.time()) + SESSION_SECONDS
    return f"{expiry}.{_mac(token, expiry)}"


def session_valid(token: str, value: str | None, now: float | None = None) -> bool:
    """Whether a session cookie value was made with ``token`` and has not expired."""
    if not value or len(value) > 100 or "." not in value:
        return False
    expiry_text, _, mac = value.partition(".")
    if not expiry_text.isdigit():
        return False
    expiry = int(expiry_text)
    if expiry < (now if now is not None else time.time()):
        return False
    return hmac.compare_digest(mac.encode(), _mac(token, expiry).encode())


def check_analyst(
    token: str,
    bearer: str | None,
    query: MutableMapping[str, str] | Any,
    cookie: str | None,
    method: str,
) -> None:
    """Allow the analyst (constant-time comparison), or raise.

    Raises
    ------
    HTTPException
        400 if a secret is in the query string; 401 without a valid bearer token (or,
        for GET and HEAD, a valid session cookie).
    """
    for name in _URL_SECRETS:
        if name in query:
            raise HTTPException(
                400,
                f"query parameter {name!r} refused: secrets must not travel in URLs; send "
                "'Authorization: Bearer <token>'",
            )
    if bearer is not None:
        if hmac.compare_digest(bearer.encode(), token.encode()):
            return
    elif method in ("GET", "HEAD") and session_valid(token, cookie):
        return
    raise HTTPException(401, "analyst endpoints need 'Authorization: Bearer <token>'")


class SecurityHeaders:
    """ASGI middleware: nosniff and no-referrer on everything; CSP and no-store on HTML.

    It also writes the access log (logger ``deniable.access``): method, path and status
    only; never the query string, the client address or a header.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        # set by `deniable serve --forwarded-allow-ips`: uvicorn then trusts the proxy
        self.proxy_trusted = bool(os.environ.get("DENIABLE_FORWARDED_ALLOW_IPS"))
        self.warned = False

    def _check_proxy(self, scope: Scope) -> None:
        client = scope.get("client")
        if self.warned or self.proxy_trusted or not client:
            return
        if not any(name == b"x-forwarded-for" for name, _ in scope.get("headers", ())):
            return
        try:
            loopback = ipaddress.ip_address(client[0]).is_loopback
        except ValueError:
            return
        if loopback:
            self.warned = True
            log.warning(
                "a loopback peer sent X-Forwarded-For, which is ignored: behind a reverse "
                "proxy every client shares one rate limit; start 'deniable serve "
                "--forwarded-allow-ips 127.0.0.1' to take client addresses from the proxy"
            )

    async def __call__(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self._check_proxy(scope)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                access.info("%s %s %s", scope["method"], scope["path"], message["status"])
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                for name, value in (
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                ):
                    if name not in names:
                        headers.append((name, value))
                html = any(
                    n.lower() == b"content-type" and v.startswith(b"text/html") for n, v in headers
                )
                if html and b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", CSP.encode()))
                if html and b"cache-control" not in names:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


#: Requests one client may have in flight at once in one worker, by default.
DEFAULT_PER_CLIENT = 100


class ClientConcurrency:
    """ASGI middleware: at most ``per_client`` requests of one client in flight at once.

    ``--limit-concurrency`` is one pool for everyone: one client holding many slow
    requests (a body trickling a byte at a time until the body deadline) would fill it
    and hold the others out. A request past its client's share gets 503 with
    ``Connection: close`` at once, so the connection is dropped and counts no longer
    toward the server's pool. A client is its address (an IPv6 address's /64; behind a
    trusted proxy, the forwarded address), counted in memory only. A loopback peer is
    not limited: it is a reverse proxy on the same machine whose header is not trusted
    (every client would share one share; name it with ``--forwarded-allow-ips``) or a
    local tool. ``/healthz`` is never limited.
    """

    def __init__(self, app: Any, per_client: int = DEFAULT_PER_CLIENT) -> None:
        if per_client < 1:
            raise ValueError(f"per_client must be >= 1, got {per_client}")
        self.app = app
        self.per_client = per_client
        self.active: dict[bytes, int] = {}
        self._keys: dict[str, bytes | None] = {}  # address -> key (None: loopback)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client") if scope["type"] == "http" else None
        key = None
        if client and scope.get("path") != "/healthz":
            address = str(client[0])
            if address in self._keys:
                key = self._keys[address]
            else:
                if len(self._keys) >= 65_536:  # bounded: forget and start again
                    self._keys.clear()
                key = self._keys[address] = None if _loopback(address) else _client_key(address)
        if key is None:
            await self.app(scope, receive, send)
            return
        if self.active.get(key, 0) >= self.per_client:
            await _too_many(send, self.per_client)
            return
        self.active[key] = self.active.get(key, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self.active[key] - 1
            if left:
                self.active[key] = left
            else:
                del self.active[key]


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


async def _too_many(send: Send, limit: int) -> None:
    body = json.dumps(
        {
            "error": {
                "status": 503,
                "code": "service_unavailable",
                "message": f"at most {limit} requests of one client at once; retry later",
            }
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        (b"retry-after", b"1"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _client_key(address: str) -> bytes:
    """What the rate limit counts as one client: an IPv4 address, or an IPv6 address's
    /64 prefix (an IPv4-mapped IPv6 address counts as its IPv4 address); anything else
    (a Unix socket path) as given."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address.encode()
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped.packed
        return ipaddress.IPv6Network((ip, 64), strict=False).network_address.packed
    return ip.packed


class RateLimiter:
    """Token buckets per client, and a cap per survey and time bucket (memory only).

    Parameters
    ----------
    per_client_per_minute : float
        Sustained responses a minute from one client address (burst: the same number).
        0 disables the per-client limit.
    per_survey_per_bucket : int
        Responses one survey accepts per time bucket of ``bucket_seconds`` in this
        process. 0 disables the cap.
    bucket_seconds : int
        The bucket width (the store's report bucket).
    max_clients : int
        Clients remembered at once; the least recently seen are forgotten first.
    """

    def __init__(
        self,
        per_client_per_minute: float = 30.0,
        per_survey_per_bucket: int = 100_000,
        bucket_seconds: int = 3600,
        max_clients: int = 100_000,
    ) -> None:
        if per_client_per_minute < 0 or per_survey_per_bucket < 0:
            raise ValueError("rate limits must be >= 0 (0 disables a limit)")
        self.rate = per_client_per_minute / 60.0
        self.burst = per_client_per_minute
        self.cap = per_survey_per_bucket
        self.bucket_seconds = bucket_seconds
        self.max_clients = max_clients
        self._key = secrets.token_bytes(32)
        self._clients: OrderedDict[bytes, tuple[float, float]] = OrderedDict()
        self._surveys: dict[tuple[str, int], int] = {}

    def check(self, survey_id: str, client: str | None, now: float | None = None) -> None:
        """Take one response from ``client`` for ``survey_id``, or raise.

        Raises
        ------
        HTTPException
            429 when the client or the survey is over its limit.
        """
        now = time.monotonic() if now is None else now
        if self.rate > 0 and client:
            key = hmac.new(self._key, _client_key(client), hashlib.sha256).digest()[:16]
            tokens, last = self._clients.pop(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1:
                self._clients[key] = (tokens, now)
                raise HTTPException(429, "too many responses from this client; try later")
            self._clients[key] = (tokens - 1, now)
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)
        if self.cap > 0:
            bucket = int(time.time()) // self.bucket_seconds
            slot = (survey_id, bucket)
            count = self._surveys.get(slot, 0)
            if count >= self.cap:
                raise HTTPException(
                    429, f"this survey accepts at most {self.cap} responses per time bucket"
                )
            if count == 0:  # a new bucket: forget the old ones
                self._surveys = {k: v for k, v in self._surveys.items() if k[1] == bucket}
            self._surveys[slot] = count + 1

"""The collection server (FastAPI): survey JSON, respondent page, ingestion, analyst API.

:func:`create_app` builds the application (``_app``); ``_routes`` holds the endpoints,
``_schemas`` the request and response bodies, ``_ingestion`` the one write path, group
commit and the body limit, ``_http_errors`` the one error shape, ``_pages`` the HTML
pages (``templates/``), and ``_live`` a server in a thread (:func:`serve_in_thread`,
the live demo).
"""

from ..._extras import require

require("fastapi", "server")
require("jinja2", "server")
require("sqlalchemy", "server")

from ._app import MIN_TOKEN_CHARS as MIN_TOKEN_CHARS
from ._app import app_from_environment, create_app
from ._live import LiveDemoResult, live_demo, serve_in_thread
from ._schemas import MAX_BATCH

__all__ = [
    "MAX_BATCH",
    "LiveDemoResult",
    "app_from_environment",
    "create_app",
    "live_demo",
    "serve_in_thread",
]

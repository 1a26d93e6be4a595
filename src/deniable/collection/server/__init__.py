"""The collection server (FastAPI): survey JSON, respondent page, ingestion, analyst API.

``app`` builds the application; ``routes`` holds the endpoints; ``schemas`` the
request and response bodies; ``ingestion`` the one write path, group commit and the
body limit; ``errors`` the one error shape; ``pages`` the HTML pages (``templates/``).
"""

from ..._extras import require

require("fastapi", "server")
require("jinja2", "server")
require("sqlalchemy", "server")

from .app import MAX_BATCH, app_from_environment, create_app

__all__ = ["MAX_BATCH", "app_from_environment", "create_app"]

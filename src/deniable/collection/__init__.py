"""Collection: survey definitions, storage, the server, the respondent page and client.

``survey`` (pydantic survey files and the privacy budget), ``storage`` (SQLAlchemy
Core on SQLite or PostgreSQL), ``server`` (the FastAPI application), ``web`` (the
respondent page's HTML, CSS and JavaScript), ``client`` (a respondent in Python) and
``live`` (a collection server in a thread, for the demo and the tests). The client
needs NumPy only; the rest needs the ``server`` extra: ``pip install 'deniable[server]'``.
"""

__all__: list[str] = []

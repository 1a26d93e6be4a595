"""The collection store (SQLAlchemy Core on SQLite or PostgreSQL): the schema and its
migrations, the one write path of responses (staging slots released in crowds), the
release rules (disclosure control, central privacy), invitations and recipients, a
survey's life after publishing, its waves, and reading what it collected."""

from ._release_control import disclosure_plan, disclosure_report
from ._schema import database_url
from ._storage import Store
from ._wave_store import wave_analysis

__all__ = [
    "Store",
    "database_url",
    "disclosure_plan",
    "disclosure_report",
    "wave_analysis",
]

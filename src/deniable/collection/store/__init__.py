"""The collection store (SQLAlchemy Core on SQLite or PostgreSQL): the schema and its
migrations, the one write path of responses (staging slots released in crowds), the
release rules (disclosure control, central privacy), invitations and recipients, a
survey's life after publishing, its waves, and reading what it collected."""

from ._invitations import PendingSpend as PendingSpend
from ._recipients import MAX_RECIPIENTS as MAX_RECIPIENTS
from ._recipients import lifetime_budget_from_environment as lifetime_budget_from_environment
from ._release_control import cell_warning as cell_warning
from ._release_control import disclosure_plan, disclosure_report
from ._release_control import select_release as select_release
from ._schema import database_url
from ._staging import NO_ANSWER as NO_ANSWER
from ._storage import PendingResponse as PendingResponse
from ._storage import Store
from ._wave_store import next_wave as next_wave
from ._wave_store import wave_analysis

__all__ = [
    "Store",
    "database_url",
    "disclosure_plan",
    "disclosure_report",
    "wave_analysis",
]

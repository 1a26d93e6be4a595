"""The collection store (SQLAlchemy Core on SQLite or PostgreSQL): the schema and its
migrations, the one write path of responses (staging slots released in crowds), the
release rules (disclosure control, central privacy), invitations and recipients, a
survey's life after publishing, its waves, and reading what it collected."""

__all__: list[str] = []

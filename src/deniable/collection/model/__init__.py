"""The survey model: a survey file's questions, designs, arms, groups, panels and
translations, its privacy budget, and the respondent's view of it (what the page and
the clients draw from). Pure Python over the library's mechanisms; no database."""

__all__: list[str] = []

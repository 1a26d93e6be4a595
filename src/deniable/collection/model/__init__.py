"""The survey model: a survey file's questions, designs, arms, groups, panels and
translations, its privacy budget, and the respondent's view of it (what the page and
the clients draw from). Pure Python over the library's mechanisms; no database."""

from ._arms import Arm
from ._fields import Panel
from ._i18n import LANGUAGES
from ._questions import Question
from ._survey import Survey, load_survey, parse_survey

__all__ = [
    "LANGUAGES",
    "Arm",
    "Panel",
    "Question",
    "Survey",
    "load_survey",
    "parse_survey",
]

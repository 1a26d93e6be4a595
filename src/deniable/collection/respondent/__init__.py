"""The respondent's side: the page's JavaScript and the embeddable component
(``web/``), the terminal client that randomizes on the respondent's own machine, its
memo of reports, and the simulated devices of the demos and tests."""

from ._client import (
    SurveyLink,
    parse_survey_url,
    permanent_uniform,
    request_credential,
    respond_reports,
)
from ._devices import simulate_responses
from ._memo import ReportMemo

__all__ = [
    "ReportMemo",
    "SurveyLink",
    "parse_survey_url",
    "permanent_uniform",
    "request_credential",
    "respond_reports",
    "simulate_responses",
]

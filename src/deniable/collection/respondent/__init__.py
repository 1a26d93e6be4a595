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
from ._client import assign as assign
from ._client import design_from_view as design_from_view
from ._client import numeric_truth as numeric_truth
from ._client import panel_report as panel_report
from ._devices import simulate_responses
from ._memo import ReportMemo
from ._memo import owner_of as owner_of

__all__ = [
    "ReportMemo",
    "SurveyLink",
    "parse_survey_url",
    "permanent_uniform",
    "request_credential",
    "respond_reports",
    "simulate_responses",
]

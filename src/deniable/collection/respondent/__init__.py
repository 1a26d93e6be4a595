"""The respondent's side: the page's JavaScript and the embeddable component
(``web/``), the terminal client that randomizes on the respondent's own machine, its
memo of reports, and the simulated devices of the demos and tests."""

from ._client import (
    SurveyLink,
    assign,
    design_from_view,
    numeric_truth,
    panel_layers,
    panel_report,
    parse_survey_url,
    permanent_uniform,
    request_credential,
    respond_reports,
    token_uniform,
)
from ._devices import (
    simulate_responses,
)
from ._memo import (
    ReportMemo,
    owner_of,
)

__all__ = [
    "ReportMemo",
    "SurveyLink",
    "assign",
    "design_from_view",
    "numeric_truth",
    "owner_of",
    "panel_layers",
    "panel_report",
    "parse_survey_url",
    "permanent_uniform",
    "request_credential",
    "respond_reports",
    "simulate_responses",
    "token_uniform",
]

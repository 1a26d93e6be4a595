"""``deniable embed HOST SURVEY_FILE --output DIR``: a survey's randomized questions for
another survey tool (:mod:`deniable.collection.exports`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._common import JsonOpt, app, console, emit_json, err, fail

if TYPE_CHECKING:
    from ..collection.model import Survey

__all__ = ["embed"]


@app.command()
def embed(
    host: Annotated[str, typer.Argument(help="jspsych, limesurvey, otree or qualtrics.")],
    survey_file: Annotated[Path, typer.Argument(help="Survey definition (.yaml or .json).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write the files to.")],
    as_json: JsonOpt = False,
) -> None:
    """Write the files that put a survey's randomized questions into HOST, with a README:
    the browser component (the respondent page's own randomizer), the questions and
    messages in the survey's languages, and the host's own glue."""
    from ..collection.exports import embed as write
    from ..collection.model import load_survey
    from ..errors import SurveyError

    try:
        survey = load_survey(survey_file)
    except (OSError, SurveyError) as exc:
        raise fail(f"{survey_file}: {exc}") from None
    try:
        files = write(host, survey, output)
    except ValueError as exc:
        raise fail(str(exc)) from None
    warnings = _participant_warnings(host, survey)
    if as_json:
        emit_json(
            {"host": host, "survey": survey.id, "files": [str(f) for f in files]}
            | {"warnings": warnings}
        )
        return
    console.print(f"{host}: {len(files)} files in {output} (see its README.md)")
    for warning in warnings:
        err.print(f"[yellow]{warning}[/]")


#: How each host passes a participant's id to the component (oTree always does).
_HOW_AN_ID_IS_PASSED = {
    "jspsych": "open the experiment with ?participant=ID in its address",
    "qualtrics": "set the embedded data field deniable_participant in the survey flow",
    "limesurvey": "run the survey with participants (each a token)",
}


def _participant_warnings(host: str, survey: Survey) -> list[str]:
    """A list question keeps its group per participant only where the host passes an id:
    where it may not, say how to pass one (without one the group lives in the tab)."""
    how = _HOW_AN_ID_IS_PASSED.get(host)
    lists = [q.id for q in survey.questions if q.is_list]
    if how is None or not lists:
        return []
    return [
        f"list question {qid!r}: its group is kept for every tab of a participant only "
        f"where {host} passes the participant's id ({how}); without one it is kept in "
        "the tab, and a new tab draws the group again"
        for qid in lists
    ]

"""``deniable embed HOST SURVEY_FILE --output DIR``: a survey's randomized questions for
another survey tool (:mod:`deniable.collection.exports`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOpt, app, console, emit_json, fail

__all__ = ["embed"]


@app.command()
def embed(
    host: Annotated[str, typer.Argument(help="jspsych, limesurvey, otree or qualtrics.")],
    survey_file: Annotated[Path, typer.Argument(help="Survey definition (.yaml or .json).")],
    output: Annotated[Path, typer.Option(help="Folder to write the files to.")],
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
    if as_json:
        emit_json({"host": host, "survey": survey.id, "files": [str(f) for f in files]})
        return
    console.print(f"{host}: {len(files)} files in {output} (see its README.md)")

"""The options of ``deniable analyze``, one typed alias each (typer reads the
``Annotated`` metadata), so that the command's signature is one line an option."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._names import ESTIMATION_METHODS, INTERVAL_METHODS

__all__ = [
    "POST_PROCESSINGS",
    "AlphaOpt",
    "ArmsOpt",
    "BundleOpt",
    "ByOpt",
    "ClustersOpt",
    "ColumnOpt",
    "ConfidenceLevelOpt",
    "EncodingOpt",
    "FormulaOpt",
    "HostOpt",
    "IntervalOpt",
    "LabelsOpt",
    "MethodOpt",
    "PiOpt",
    "PooledOpt",
    "PopulationOpt",
    "PostprocessOpt",
    "QuestionOpt",
    "ReportsArg",
    "StrataOpt",
    "SurveyFileOpt",
    "TopOpt",
    "VarianceOpt",
    "VersionOpt",
    "WavesOpt",
]

#: The post-processings of ``--postprocess`` (docs/oracles.md).
POST_PROCESSINGS = ("projection", "norm-sub", "empirical-bayes", "mle")

ReportsArg = Annotated[
    Path, typer.Argument(help="Reports file (.csv or .parquet; .sav, .dta with --question).")
]

QuestionOpt = Annotated[
    str | None,
    typer.Option(
        help="A deniable export: the question id to analyse; its design comes from the "
        "export's survey file (Parquet metadata or FILE.survey.json)."
    ),
]

VersionOpt = Annotated[
    int | None,
    typer.Option(
        "--survey-version",
        "--version",
        min=1,
        help="With --question: the survey's version (default: the latest). --version is "
        "its old name.",
    ),
]

ArmsOpt = Annotated[
    bool,
    typer.Option(
        "--arms",
        help="A deniable export of a study: per question asked through several designs "
        "(arms, groups), the estimate in each arm, the differences to the reference "
        "arm, the pooled estimate and a group design's fit (as the dashboard).",
    ),
]

SurveyFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--survey",
        help="An export of a host (jsPsych, oTree, Qualtrics, LimeSurvey) of this survey "
        "file: each randomized question's reports, rows with a wrong design digest "
        "refused and counted; then as a deniable export (--question, --by, --formula, "
        "--arms).",
    ),
]

HostOpt = Annotated[
    str | None,
    typer.Option(
        help="With --survey: jspsych, otree, qualtrics or limesurvey (default: read from the file)."
    ),
]

BundleOpt = Annotated[
    Path | None,
    typer.Option(
        help="With --survey: write the wide CSV, the survey file and the R script "
        "for this export to this folder."
    ),
]

WavesOpt = Annotated[
    bool,
    typer.Option(
        "--waves",
        help="A deniable export of a panel: each wave's prevalence and the change from "
        "each wave to the next with its interval, per arm and pooled (as the dashboard).",
    ),
]

PooledOpt = Annotated[
    bool,
    typer.Option(
        "--pooled",
        help="With --question: pool every version that asks the question unchanged "
        "(as the dashboard's pooled view).",
    ),
]

ColumnOpt = Annotated[str, typer.Option(help="Column of report codes.")]

MethodOpt = Annotated[str, typer.Option(help=f"Estimator: {', '.join(ESTIMATION_METHODS)}.")]

IntervalOpt = Annotated[
    list[str] | None,
    typer.Option(
        help=f"Interval method(s), repeatable: {', '.join(INTERVAL_METHODS)} "
        "(default: the estimate's, feldman_cousins for binary designs and k-ary RR)."
    ),
]

ConfidenceLevelOpt = Annotated[float, typer.Option(help="Confidence level in (0, 1).")]

LabelsOpt = Annotated[
    Path | None, typer.Option(help="Oracles: file naming the values, one per line.")
]

AlphaOpt = Annotated[
    float, typer.Option(min=1e-12, max=0.5, help="Oracles: family-wise detection level.")
]

TopOpt = Annotated[int, typer.Option(min=1, help="Oracles: rows of the heavy-hitter table.")]

PostprocessOpt = Annotated[
    str | None,
    typer.Option(
        help="Oracles: also the frequencies as a distribution, by "
        f"{', '.join(POST_PROCESSINGS)} (docs/oracles.md says which lowers error where)."
    ),
]

FormulaOpt = Annotated[
    str | None,
    typer.Option(
        help='Logistic regression of the randomized answer, e.g. "report ~ age + female" '
        "(formulaic syntax; powers as **)."
    ),
]

ByOpt = Annotated[
    str | None,
    typer.Option(help="Clear column: prevalence per subgroup and a test of equality."),
]

PiOpt = Annotated[
    str | None,
    typer.Option(help="Complex sample: column of inclusion probabilities (Horvitz-Thompson)."),
]

PopulationOpt = Annotated[float | None, typer.Option(help="Complex sample: population size N.")]

StrataOpt = Annotated[str | None, typer.Option(help="Complex sample: stratum column.")]

ClustersOpt = Annotated[str | None, typer.Option(help="Complex sample: cluster column.")]

VarianceOpt = Annotated[
    str | None,
    typer.Option(help="Complex sample: deville, ultimate_cluster, jackknife, srswr or srswor."),
]

EncodingOpt = Annotated[
    str | None,
    typer.Option(
        "--encoding",
        help="A CSV's text encoding (utf-8, cp1252, latin-1, utf-16, ...); default: UTF-8, "
        "else Windows-1252, said when guessed.",
    ),
]

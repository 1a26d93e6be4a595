"""``deniable analyze`` as subcommands, one per analysis, each with its own options.

A reports file and its ``--design``: ``prevalence``, ``oracle``, ``regression``,
``subgroups``, ``complex``. A deniable export (or, with ``--survey``, a host's export)
whose survey file gives the designs: ``export``, ``arms``, ``waves``; ``regression`` and
``subgroups`` read one too (``--question``). Each builds one :class:`AnalyzeRequest` for
:func:`deniable.cli._analyze.analyze`'s engine, so the two forms compute the same thing.

The form without a subcommand (``deniable analyze FILE [OPTIONS]``, where the options
choose the analysis) still runs: a first argument that names no subcommand is read as
the file of that form (the hidden ``auto`` command).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from ._analyze import AnalyzeRequest, _run, analyze
from ._analyze_options import (
    AlphaOpt,
    BundleOpt,
    ByOpt,
    ClustersOpt,
    ColumnOpt,
    ConfidenceLevelOpt,
    EncodingOpt,
    FormulaOpt,
    HostOpt,
    IntervalOpt,
    LabelsOpt,
    MethodOpt,
    PiOpt,
    PooledOpt,
    PopulationOpt,
    PostprocessOpt,
    QuestionOpt,
    ReportsArg,
    StrataOpt,
    SurveyFileOpt,
    TopOpt,
    VarianceOpt,
    VersionOpt,
)
from ._common import DesignOpt, JsonOpt, app, fail

__all__ = ["SUBCOMMANDS", "analyze_app"]

#: The form without a subcommand, hidden from the listing.
_BARE = "auto"


class _AnalyzeGroup(TyperGroup):
    """Subcommands, and the form before them: a first argument that names no
    subcommand (a file, or an option) runs the hidden ``auto`` command."""

    # ctx is typer's own click Context (typer vendors click), which it does not export
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [_BARE, *args]
        return super().parse_args(ctx, args)


analyze_app = typer.Typer(
    cls=_AnalyzeGroup,
    help="Estimates from a reports file or an export, one subcommand per analysis. "
    "'deniable analyze FILE [OPTIONS]' without a subcommand still runs: its options "
    "choose the analysis ('deniable analyze auto --help' lists them).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(analyze_app, name="analyze")
analyze_app.command(_BARE, hidden=True)(analyze)


@analyze_app.command("prevalence")
def prevalence(
    reports: ReportsArg,
    design: DesignOpt,
    column: ColumnOpt = "report",
    method: MethodOpt = "moment",
    interval: IntervalOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    encoding: EncodingOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Each truth's prevalence from a column of report codes of a finite design (binary,
    k-ary, PRAM, numeric); a Parquet file or folder is read batch by batch."""
    _check_kind("prevalence", reports, design)
    _run(
        AnalyzeRequest(
            reports, design, column=column, method=method, interval=interval,
            confidence_level=confidence_level, encoding=encoding, as_json=as_json,
        )
    )  # fmt: skip


@analyze_app.command("oracle")
def oracle(
    reports: ReportsArg,
    design: DesignOpt,
    labels: LabelsOpt = None,
    alpha: AlphaOpt = 0.05,
    top: TopOpt = 20,
    postprocess: PostprocessOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """A frequency oracle's heavy hitters (oue, sue, olh, hadamard, rappor): the values
    whose estimate passes the detection threshold (Bonferroni at --alpha); for PEM and
    byte-PEM (pem:..., pem-bytes:...) the --top most frequent values, searched level by
    level. The report columns are those 'deniable simulate' writes."""
    _check_kind("oracle", reports, design)
    _run(
        AnalyzeRequest(
            reports, design, labels=labels, alpha=alpha, top=top, postprocess=postprocess,
            confidence_level=confidence_level, as_json=as_json,
        )
    )  # fmt: skip


@analyze_app.command("regression")
def regression(
    reports: ReportsArg,
    formula: FormulaOpt,
    design: DesignOpt = "",
    question: QuestionOpt = None,
    version: VersionOpt = None,
    survey_file: SurveyFileOpt = None,
    host: HostOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    encoding: EncodingOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Logistic regression of the randomized answer on clear covariates (van den Hout,
    van der Heijden and Gilchrist 2007): from a reports file and its --design, or from an
    export, whose question is the formula's left side or --question."""
    _export_or_design(design, question, survey_file)
    _check_kind("regression", reports, design)
    _run(
        AnalyzeRequest(
            reports, design, question=question, version=version, survey_file=survey_file,
            host=host, formula=formula, confidence_level=confidence_level,
            encoding=encoding, as_json=as_json,
        )
    )  # fmt: skip


@analyze_app.command("subgroups")
def subgroups(
    reports: ReportsArg,
    by: ByOpt,
    design: DesignOpt = "",
    column: ColumnOpt = "report",
    question: QuestionOpt = None,
    version: VersionOpt = None,
    survey_file: SurveyFileOpt = None,
    host: HostOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    encoding: EncodingOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The prevalence in each subgroup of a clear column, and the test that they are
    equal: from a reports file and its --design, or from an export (--question)."""
    _export_or_design(design, question, survey_file)
    _check_kind("subgroups", reports, design)
    _run(
        AnalyzeRequest(
            reports, design, question=question, version=version, survey_file=survey_file,
            host=host, column=column, by=by, confidence_level=confidence_level,
            encoding=encoding, as_json=as_json,
        )
    )  # fmt: skip


@analyze_app.command("complex")
def complex_sample(
    reports: ReportsArg,
    design: DesignOpt,
    column: ColumnOpt = "report",
    pi: PiOpt = None,
    population: PopulationOpt = None,
    strata: StrataOpt = None,
    clusters: ClustersOpt = None,
    variance: VarianceOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    encoding: EncodingOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A complex sample's design-based (Horvitz-Thompson) prevalence or total, with
    inclusion probabilities (--pi) or a population size (--population), strata and
    clusters."""
    if pi is None and population is None:
        raise fail("give --pi COLUMN (inclusion probabilities) or --population N")
    _check_kind("complex", reports, design)
    _run(
        AnalyzeRequest(
            reports, design, column=column, pi=pi, population=population, strata=strata,
            clusters=clusters, variance=variance, confidence_level=confidence_level,
            encoding=encoding, as_json=as_json,
        )
    )  # fmt: skip


@analyze_app.command("export")
def export(
    reports: ReportsArg,
    question: QuestionOpt = None,
    version: VersionOpt = None,
    pooled: PooledOpt = False,
    survey_file: SurveyFileOpt = None,
    host: HostOpt = None,
    bundle: BundleOpt = None,
    method: MethodOpt = "moment",
    interval: IntervalOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    encoding: EncodingOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One question of a deniable export (CSV, Excel, SPSS, Stata, Parquet), its design
    from the export's survey file; or a host's export (--survey): every randomized
    question, or --question's."""
    if question is None and survey_file is None:
        raise fail(
            "give --question QID (a deniable export), or --survey SURVEY_FILE (a host's "
            "export: every randomized question)"
        )
    _run(
        AnalyzeRequest(
            reports, question=question, version=version, pooled=pooled,
            survey_file=survey_file, host=host, bundle=bundle, method=method,
            interval=interval, confidence_level=confidence_level, encoding=encoding,
            as_json=as_json,
        )
    )  # fmt: skip


@analyze_app.command("arms")
def arms(
    reports: ReportsArg,
    question: QuestionOpt = None,
    version: VersionOpt = None,
    pooled: PooledOpt = False,
    survey_file: SurveyFileOpt = None,
    host: HostOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """A study's arms and groups (a question asked through several designs): the
    estimate in each arm, the differences to the reference arm, the pooled estimate and
    a group design's fit, as the dashboard shows them."""
    _run(
        AnalyzeRequest(
            reports, question=question, version=version, pooled=pooled, arms=True,
            survey_file=survey_file, host=host, confidence_level=confidence_level,
            as_json=as_json,
        )
    )  # fmt: skip


@analyze_app.command("waves")
def waves(
    reports: ReportsArg,
    question: QuestionOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """A panel's waves: each wave's prevalence and the change from each wave to the
    next with its interval, per arm and pooled, as the dashboard shows them."""
    _run(
        AnalyzeRequest(
            reports, question=question, waves=True, confidence_level=confidence_level,
            as_json=as_json,
        )
    )  # fmt: skip


def _check_kind(command: str, reports: Path, design: str) -> None:
    """A subcommand reads the designs it is for: ``oracle`` frequency oracles and prefix
    designs, the rest finite designs; exit 2 naming the one to use."""
    from ._common import is_oracle, parse_mechanism
    from ._heavy_command import is_prefix

    if not design:
        return
    mechanism = parse_mechanism(design)
    oracle = is_oracle(mechanism) or is_prefix(mechanism)
    if (command == "oracle") == oracle:
        return
    name = design.split(":", 1)[0]
    if oracle:
        raise fail(
            f"{name} is a frequency oracle: its heavy hitters are "
            f"'deniable analyze oracle {reports} --design {design}'"
        )
    raise fail(
        f"{name} is a finite design, not a frequency oracle: its prevalence is "
        f"'deniable analyze prevalence {reports} --design {design}'"
    )


def _export_or_design(design: str, question: str | None, survey_file: Path | None) -> None:
    """``regression`` and ``subgroups`` read a reports file (``--design``) or an export
    (``--question`` or ``--survey``), not both."""
    if design and (question is not None or survey_file is not None):
        raise fail(
            "--design reads a reports file; --question and --survey read an export, whose "
            "survey file gives the design: give one of them"
        )


#: The subcommands, by name (the hidden bare form left out).
SUBCOMMANDS: dict[str, Any] = {
    "prevalence": prevalence,
    "oracle": oracle,
    "regression": regression,
    "subgroups": subgroups,
    "complex": complex_sample,
    "export": export,
    "arms": arms,
    "waves": waves,
}

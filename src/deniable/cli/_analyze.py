"""``deniable analyze``: estimates from a reports file.

Finite designs, frequency oracles and RAPPOR, regression (``--formula``), subgroups
(``--by``) and complex samples (``--pi``, ``--strata``, ``--clusters``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ..mechanisms import Design
    from ..tallies import Tally


from ..errors import DeniableError
from ._analyze_options import (
    POST_PROCESSINGS,
    AlphaOpt,
    ArmsOpt,
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
    WavesOpt,
)
from ._common import (
    DesignOpt,
    JsonOpt,
    console,
    design_of,
    emit_json,
    fail,
    is_oracle,
    labels_path,
    needs_candidates,
    parse_mechanism,
    read_column,
    read_table,
    require_columns,
)
from ._export_models import (
    NumericQuestionMean,
    analyze_export_arms,
    analyze_export_model,
    analyze_export_waves,
    export_question,
    formula_question,
)
from ._fits import _analyze_by, _analyze_formula
from ._heavy_command import analyze_prefix, is_prefix
from ._stream import is_parquet, stream_design_tally, stream_tally

__all__ = [
    "MODES",
    "AnalyzeRequest",
    "analyze",
    "choose_mode",
]


def _post_processed(oracle: Any, reports: Any, result: Any, method: str) -> Any:
    """The oracle's frequencies as a distribution, by the named post-processing."""
    from ..estimation import empirical_bayes, norm_sub, oracle_em, project_simplex

    if method == "projection":
        return project_simplex(result.estimate)
    if method == "norm-sub":
        return norm_sub(result.estimate)
    if method == "empirical-bayes":
        return empirical_bayes(oracle, result.estimate, result.n)
    return oracle_em(oracle, reports).frequencies


def _analyze_oracle(
    oracle: Any,
    reports: Path,
    labels_file: Path | None,
    alpha: float,
    top: int,
    confidence_level: float,
    as_json: bool,
    postprocess: str | None = None,
) -> None:
    from rich.table import Table

    from ..estimation import estimate, heavy_hitters
    from ..tables.frames import reports_from_frame

    if postprocess is not None and postprocess not in POST_PROCESSINGS:
        allowed = ", ".join(POST_PROCESSINGS)
        raise fail(f"--postprocess must be one of {allowed}, got {postprocess!r}")
    if postprocess is not None and needs_candidates(oracle):
        raise fail("--postprocess applies to unary encoding, local hashing and Hadamard response")

    if not reports.exists():
        raise fail(f"file not found: {reports}")
    frame = None  # a Parquet file is streamed, but EM needs every report at once
    if not is_parquet(reports) or postprocess == "mle":
        from ..tables.frames import read_table_file

        try:
            frame = read_table_file(reports, dtype=str).frame
        except (ValueError, OSError) as exc:
            raise fail(f"cannot read {reports.name}: {exc}") from None
    path = labels_file or labels_path(reports)
    names = path.read_text().splitlines() if path.exists() else None
    if needs_candidates(oracle):
        if not names:
            raise fail("RAPPOR needs the candidate strings: --labels FILE (one per line)")
        oracle = oracle.with_candidates(names)
    elif names is not None and len(names) != oracle.k:
        raise fail(f"--labels names {len(names)} values but the oracle has k = {oracle.k}")
    try:
        data = stream_tally(oracle, reports) if frame is None else reports_from_frame(oracle, frame)
        result = estimate(oracle, data)
        hitters = heavy_hitters(result, alpha, names)
        distribution = (
            None if postprocess is None else _post_processed(oracle, data, result, postprocess)
        )
    except (ValueError, DeniableError) as exc:
        raise fail(str(exc)) from None
    frame = hitters.to_frame()
    if distribution is not None:
        index = {name: i for i, name in enumerate(names or result.labels)}
        frame[postprocess] = [float(distribution[index[v]]) for v in hitters.values]
    if as_json:
        # the one shape of an estimate (the values detected), and the table's rows
        payload = hitters.to_dict(1 - alpha) | {
            "design": oracle.to_dict(),
            "n": result.n,
            "alpha": alpha,
            "threshold_z": hitters.threshold_z,
            "heavy_hitters": frame.to_dict(orient="records"),
        }
        if distribution is not None:
            payload["distribution"] = {"method": postprocess, "frequencies": distribution.tolist()}
        emit_json(payload)
        return
    table = Table(
        title=f"{oracle!r}: n = {result.n:,} reports, epsilon {oracle.epsilon:.4g} nats; "
        f"{len(hitters)} values detected (estimate/SE > {hitters.threshold_z:.2f}, "
        f"alpha {alpha} over {result.estimate.size:,} values)"
    )
    columns = ["value", "estimate", "SE", f"{1 - alpha:.0%} CI"]
    for name in columns + ([postprocess] if postprocess else []):
        table.add_column(name, justify="left" if name == "value" else "right")
    for _, row in frame.head(top).iterrows():
        cells = [
            str(row["value"]),
            f"{row['estimate']:.4f}",
            f"{row['std_error']:.4f}",
            f"{row['low']:.4f} - {row['high']:.4f}",
        ]
        table.add_row(*cells, *([f"{row[postprocess]:.4f}"] if postprocess else []))
    console.print(table)


#: The modes of ``analyze``: the options that choose each, and those it also takes.
MODES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "oracle": ((), ("--labels", "--postprocess")),
    "formula": (("--formula",), ()),
    "subgroups": (("--by",), ()),
    "complex": (("--pi", "--population"), ("--strata", "--clusters", "--variance")),
    "prevalence": ((), ()),
}
_NAMES = {
    "oracle": "frequency oracles (oue, sue, olh, hadamard, rappor)",
    "formula": "regression (--formula)",
    "subgroups": "subgroup estimates (--by)",
    "complex": "complex samples (--pi, --population)",
    "prevalence": "a prevalence estimate",
}


def choose_mode(is_oracle: bool, given: dict[str, object]) -> str:
    """The one analysis the options ask for; exit 2 naming conflicting options.

    A frequency oracle's design chooses ``oracle``; otherwise ``--formula``, ``--by`` or
    ``--pi``/``--population`` choose theirs, and none of them ``prevalence``. Every
    option given must belong to the chosen mode.
    """
    chosen = [
        mode
        for mode, (triggers, _) in MODES.items()
        if any(given.get(t) is not None for t in triggers)
    ]
    if len(chosen) > 1:
        raise fail(f"choose one analysis: {' and '.join('/'.join(MODES[m][0]) for m in chosen)}")
    mode = "oracle" if is_oracle else (chosen[0] if chosen else "prevalence")
    if is_oracle and chosen:
        raise fail(
            f"{'/'.join(MODES[chosen[0]][0])} applies to finite designs, not to {_NAMES['oracle']}"
        )
    allowed = set(MODES[mode][0]) | set(MODES[mode][1])
    for option, value in given.items():
        if value is not None and option not in allowed:
            owner = next(m for m, (t, extra) in MODES.items() if option in t or option in extra)
            raise fail(f"{option} applies to {_NAMES[owner]}, not to {_NAMES[mode]}")
    return mode


def analyze(
    reports: ReportsArg,
    design: DesignOpt = "",
    question: QuestionOpt = None,
    version: VersionOpt = None,
    arms: ArmsOpt = False,
    survey_file: SurveyFileOpt = None,
    host: HostOpt = None,
    bundle: BundleOpt = None,
    waves: WavesOpt = False,
    pooled: PooledOpt = False,
    column: ColumnOpt = "report",
    method: MethodOpt = "moment",
    interval: IntervalOpt = None,
    confidence_level: ConfidenceLevelOpt = 0.95,
    labels: LabelsOpt = None,
    alpha: AlphaOpt = 0.05,
    top: TopOpt = 20,
    postprocess: PostprocessOpt = None,
    formula: FormulaOpt = None,
    by: ByOpt = None,
    pi: PiOpt = None,
    population: PopulationOpt = None,
    strata: StrataOpt = None,
    clusters: ClustersOpt = None,
    variance: VarianceOpt = None,
    encoding: EncodingOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Estimate from a reports file or an export; the options choose the analysis (the
    subcommands name it: deniable analyze prevalence|oracle|regression|subgroups|complex|
    export|arms|waves).

    For a frequency oracle the report columns are those 'deniable simulate' writes,
    the value names come from --labels (default: the .labels.txt file beside the
    reports), and the table lists the heavy hitters: values whose estimate passes the
    detection threshold (Bonferroni at --alpha), with their post-processed frequencies
    under --postprocess. PEM and byte-PEM reports (pem:..., pem-bytes:...) give their
    --top most frequent values, searched level by level. With --formula it fits a
    logistic regression of the randomized answer; with --by it estimates per subgroup;
    with --pi or --population it gives design-based (Horvitz-Thompson) estimates.
    """
    _run(
        AnalyzeRequest(
            reports=reports,
            design=design,
            question=question,
            version=version,
            arms=arms,
            survey_file=survey_file,
            host=host,
            bundle=bundle,
            waves=waves,
            pooled=pooled,
            column=column,
            method=method,
            interval=interval,
            confidence_level=confidence_level,
            labels=labels,
            alpha=alpha,
            top=top,
            postprocess=postprocess,
            formula=formula,
            by=by,
            pi=pi,
            population=population,
            strata=strata,
            clusters=clusters,
            variance=variance,
            encoding=encoding,
            as_json=as_json,
        )
    )


@dataclass(frozen=True)
class AnalyzeRequest:
    """What ``deniable analyze`` was asked (its options, as given; a subcommand gives
    its own and leaves the rest at these defaults)."""

    reports: Path
    design: str = ""
    question: str | None = None
    version: int | None = None
    arms: bool = False
    survey_file: Path | None = None
    host: str | None = None
    bundle: Path | None = None
    waves: bool = False
    pooled: bool = False
    column: str = "report"
    method: str = "moment"
    interval: list[str] | None = None
    confidence_level: float = 0.95
    labels: Path | None = None
    alpha: float = 0.05
    top: int = 20
    postprocess: str | None = None
    formula: str | None = None
    by: str | None = None
    pi: str | None = None
    population: float | None = None
    strata: str | None = None
    clusters: str | None = None
    variance: str | None = None
    encoding: str | None = None
    as_json: bool = False

    @property
    def mode_options(self) -> dict[str, object]:
        """The options that choose a mode, by their flags."""
        return {
            "--formula": self.formula,
            "--by": self.by,
            "--pi": self.pi,
            "--population": self.population,
            "--strata": self.strata,
            "--clusters": self.clusters,
            "--variance": self.variance,
            "--labels": self.labels,
            "--postprocess": self.postprocess,
        }


def _run(r: AnalyzeRequest) -> None:
    """A host's export read first (``--survey``); then a deniable export's modes
    (``--waves``, ``--arms``, ``--question``, a formula naming a question), else a
    reports file through ``--design``."""
    if r.survey_file is not None:
        from ._host_exports import host_estimates, host_wide_export

        reports, read = host_wide_export(r.reports, r.survey_file, r.host, r.bundle, r.as_json)
        r = replace(r, reports=reports)
        if r.question is None and not r.arms:  # every randomized question
            host_estimates(reports, read, r.confidence_level, r.as_json)
            return
    elif r.host is not None or r.bundle is not None:
        raise fail("--host and --bundle read a host's export: give --survey SURVEY_FILE")
    if r.question is None and r.formula and not r.design:
        r = replace(r, question=formula_question(r.formula, r.reports, r.survey_file is not None))
    if r.waves or r.arms or r.question is not None:
        _run_export(r)
    else:
        _run_design(r)


def _run_export(r: AnalyzeRequest) -> None:
    """``--waves``, ``--arms`` or ``--question`` on a deniable export."""
    given = [n for n, v in r.mode_options.items() if v]
    if r.waves:
        if r.design or given or r.arms or r.pooled or r.version:
            flags = {"--design": r.design, "--arms": r.arms, "--pooled": r.pooled}
            extra = [f for f, v in (flags | {"--version": r.version}).items() if v]
            raise fail(
                "--waves reads a deniable export's waves (with --question at most); drop "
                + ", ".join(given + extra)
            )
        analyze_export_waves(r.reports, r.question, r.confidence_level, r.as_json)
        return
    if r.arms:
        if r.design or given:
            raise fail(
                "--arms reads a deniable export's arms and groups (with --question, "
                "--version and --pooled at most); drop "
                + ", ".join(given + (["--design"] if r.design else []))
            )
        args = (r.reports, r.question, r.version, r.confidence_level, r.as_json, r.pooled)
        analyze_export_arms(*args)
        return
    assert r.question is not None
    if r.design:
        raise fail("--question takes the design from the export's survey file; drop --design")
    both = ["--formula", "--by"] if r.formula and r.by else []
    others = [n for n in given if n not in ("--formula", "--by")]
    if others or both:
        raise fail(
            f"--question takes at most one of --formula and --by; got {', '.join(others + both)}"
        )
    if r.pooled and (r.formula or r.by):
        raise fail("--pooled takes --question alone (--by and --formula read one version)")
    if r.formula or r.by:
        analyze_export_model(
            r.reports, r.question, r.version, r.formula, r.by, r.confidence_level, r.as_json,
            host_columns=r.survey_file is not None,
        )  # fmt: skip
        return
    d, values, missing = export_question(r.reports, r.question, r.version, r.pooled)
    if isinstance(d, NumericQuestionMean):
        _analyze_numeric(d, values, missing, r.confidence_level, r.as_json)
        return
    _analyze_codes(d, values, missing, r.method, r.interval, r.confidence_level, r.as_json)


def _run_design(r: AnalyzeRequest) -> None:
    """A reports file through ``--design``: an oracle's heavy hitters, a regression, a
    breakdown, a complex sample, or the prevalence (Parquet streamed in batches)."""
    import numpy as np

    if r.pooled:
        raise fail("--pooled needs --question (a file deniable exported)")
    if not r.design:
        raise fail("--design is required (or --question, for a file deniable exported)")
    mechanism = parse_mechanism(r.design)
    if is_prefix(mechanism):  # an open domain: the search, level by level
        analyze_prefix(mechanism, r.reports, r.top, r.confidence_level, r.as_json)
        return
    mode = choose_mode(is_oracle(mechanism), r.mode_options)
    level, as_json = r.confidence_level, r.as_json
    if is_oracle(mechanism):
        args = (r.labels, r.alpha, r.top, level, as_json, r.postprocess)
        _analyze_oracle(mechanism, r.reports, *args)
        return
    d = design_of(mechanism)
    if mode == "formula":
        assert r.formula is not None
        _analyze_formula(read_table(r.reports, r.encoding), d, r.formula, level, as_json)
        return
    if mode == "subgroups":
        assert r.by is not None
        _analyze_by(read_table(r.reports, r.encoding), d, r.column, r.by, level, as_json)
        return
    if mode == "complex":
        options = {"strata": r.strata, "clusters": r.clusters, "variance": r.variance,
                   "encoding": r.encoding}  # fmt: skip
        _analyze_complex(r.reports, d, r.column, r.pi, r.population, options, level, as_json)
        return
    if is_parquet(r.reports):  # out of core: batch by batch, bounded memory
        try:
            tally, missing = stream_design_tally(d, r.reports, r.column)
        except (ValueError, DeniableError) as exc:
            raise fail(str(exc)) from None
        _analyze_codes(d, tally, missing, r.method, r.interval, level, as_json)
        return
    raw = read_column(r.reports, r.column, r.encoding)
    missing = int(raw.isna().sum())
    kept = raw.dropna()
    if not np.all(np.isin(kept, np.arange(d.n_reports))):
        raise fail(f"column {r.column!r} must hold report codes 0..{d.n_reports - 1}")
    codes = kept.to_numpy(dtype=np.int64)
    _analyze_codes(d, codes, missing, r.method, r.interval, level, as_json)


def _analyze_numeric(
    d: NumericQuestionMean, values: np.ndarray, missing: int, level: float, as_json: bool
) -> None:
    """The mean of a numeric question (its units) from its report codes: the design's
    unbiased estimate and default interval, mapped to ``[low, high]``."""
    from ..estimation import estimate

    q = d.question
    try:
        est = estimate(d.design, values)
        mean = q.mean_from(est)
        payload = mean.to_dict(level)
    except (ValueError, DeniableError) as exc:
        raise fail(str(exc)) from None
    payload |= {
        "question": q.id,
        "mechanism": repr(q.numeric),
        "missing": missing,
    }
    if as_json:
        emit_json(payload)
        return
    unit = f" {q.range.unit}" if q.range.unit else ""
    console.print(
        f"{q.numeric!r}: mean of {q.id!r} over n = {est.n:,} reports ({missing} missing): "
        f"{mean.estimate:.4g}{unit}, SE {mean.std_error:.4g}, {level:.0%} CI "
        f"{payload['interval']['low']:.4g} - {payload['interval']['high']:.4g} "
        f"({mean.default_interval_method})"
    )


def _analyze_codes(
    d: Design,
    values: np.ndarray | Tally,
    missing: int,
    method: str,
    interval: list[str] | None,
    confidence_level: float,
    as_json: bool,
) -> None:
    from rich.table import Table

    from ..estimation import estimate

    try:
        est = estimate(d, values, method=method)
        intervals = tuple(interval or [est.default_interval_method])
        payload: dict[str, Any] = est.to_dict(confidence_level, methods=intervals)
    except (ValueError, DeniableError) as exc:
        raise fail(str(exc)) from None
    payload["missing"] = missing
    if as_json:
        emit_json(payload)
        return
    table = Table(title=f"{d!r}: n = {est.n:,} reports ({missing} missing), {method} estimate")
    table.add_column("truth")
    table.add_column("estimate", justify="right")
    table.add_column("SE", justify="right")
    for m in intervals:
        table.add_column(f"{confidence_level:.0%} CI ({m})", justify="right")
    shown = payload.get("intervals", [payload["interval"]])
    for j, label in enumerate(d.truth_labels):
        cells = [f"{ci['low'][j]:.4f} - {ci['high'][j]:.4f}" for ci in shown]
        table.add_row(label, f"{est.estimate[j]:.4f}", f"{est.std_error[j]:.4f}", *cells)
    console.print(table)
    for warning in est.warnings:
        console.print(f"[yellow]warning:[/] {warning}")


def _analyze_complex(
    reports: Path,
    d: Design,
    column: str,
    pi: str | None,
    population: float | None,
    options: dict[str, str | None],
    confidence_level: float,
    as_json: bool,
) -> None:

    import numpy as np

    from ..analysis import survey_estimate

    frame = read_table(reports, options.get("encoding"))
    require_columns(
        frame,
        {"--column": column, "--pi": pi}
        | {f"--{key}": options[key] for key in ("strata", "clusters")},
    )

    def col(name: str | None) -> Any:
        return None if name is None else frame[name].to_numpy()

    try:
        est = survey_estimate(
            d,
            frame[column].to_numpy(dtype=np.float64),
            pi=col(pi),
            N=population,
            strata=col(options["strata"]),
            clusters=col(options["clusters"]),
            variance=options["variance"],
        )
        low, high = est.confidence_interval(confidence_level)
    except (ValueError, TypeError, DeniableError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        emit_json(est.to_dict(confidence_level))
        return
    console.print(
        f"{d!r}, Horvitz-Thompson {est.kind} over {est.n:,} replies ({est.method} variance): "
        f"{est.estimate:.4f}, SE {est.std_error:.4f}, {confidence_level:.0%} CI "
        f"{low:.4f} - {high:.4f}"
    )

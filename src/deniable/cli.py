"""The ``deniable`` command: simulate, analyze, plan, survey check, serve, respond, demo.

A thin adapter over the library: every number it prints comes from
:mod:`deniable.estimate`, :mod:`deniable.planning` or :mod:`deniable.demo`.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from .datasets import RR_SURVEYS, load_adult, load_rr_survey
from .demo import DemoRow, adult_survey, real_surveys
from .designs import Design, design_from_spec
from .errors import DeniableError
from .estimate import ESTIMATION_METHODS, estimate
from .intervals import INTERVAL_METHODS
from .oracles import (
    ORACLE_NAMES,
    heavy_hitters,
    oracle_from_spec,
    reports_from_frame,
    reports_to_frame,
)
from .planning import disclosure_risk, sample_size
from .survey import load_survey

app = typer.Typer(
    help="Randomized response: simulate private surveys, analyze reports, plan sample sizes.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
err = Console(stderr=True)

DesignOpt = Annotated[
    str,
    typer.Option(
        "--design",
        "-d",
        help='Design spec "name:param=value,...", e.g. "forced-response:p_yes=0.25,p_no=0.25", '
        '"warner:p=0.7", "kary-rr:k=5,epsilon=1"; or a frequency oracle: "oue:k=1000,epsilon=1", '
        '"sue:...", "olh:k=10000,epsilon=2", "hadamard:k=1000000,epsilon=1", '
        '"rappor:k=128,h=2,m=64,f=0.5,p=0.5,q=0.75".',
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")
]
SeedOpt = Annotated[
    int | None,
    typer.Option(help="Seed a simulation generator (reproducible; never for real respondents)."),
]
_CHUNK = 1_000_000

_SECURE_LABEL = "secure (os.urandom; AES-256-CTR keyed from it for large draws)"


def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code=2)


def _design(spec: str) -> Design:
    try:
        return design_from_spec(spec)
    except ValueError as exc:
        raise _fail(f"--design: {exc}") from None


def _emit_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _read_table(path: Path) -> pd.DataFrame:
    if str(path) == "adult":
        return load_adult()
    if str(path) in RR_SURVEYS:  # a shipped survey by name, e.g. rr/nigeria
        return load_rr_survey(str(path))
    if not path.exists():
        raise _fail(f"file not found: {path}")
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    return pd.read_csv(path)


def _oracle(spec: str) -> Any | None:
    """The frequency oracle named by ``spec``, or None when it names a finite design."""
    name = spec.strip().partition(":")[0].strip().lower()
    if name not in ORACLE_NAMES:
        return None
    try:
        return oracle_from_spec(spec)
    except ValueError as exc:
        raise _fail(f"--design: {exc}") from None


def _labels_path(reports: Path) -> Path:
    return reports.with_name(reports.name + ".labels.txt")


def _require_columns(frame: pd.DataFrame, options: dict[str, str | None]) -> None:
    """Exit 2 naming the option whose column (None: not given) the file lacks."""
    for option, name in options.items():
        if name is not None and name not in frame.columns:
            names = ", ".join(map(str, frame.columns))
            raise _fail(f"{option} {name!r} not in the file; columns: {names}")


def _read_column(path: Path, column: str) -> pd.Series:
    frame = _read_table(path)
    _require_columns(frame, {"--column": column})
    return frame[column]


@app.command()
def simulate(
    population: Annotated[
        Path, typer.Argument(help='Population CSV with a header row, or "adult" for UCI Adult.')
    ],
    column: Annotated[str, typer.Option(help="Column holding the true answer.")],
    design: DesignOpt,
    yes: Annotated[
        str | None,
        typer.Option(help='Value of COLUMN that means "yes" (binary designs).'),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Reports file to write (.csv or .parquet).")
    ] = Path("reports.csv"),
    seed: SeedOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Randomize every person's true answer through DESIGN and write the reports."""
    oracle = _oracle(design)
    if oracle is not None:
        _simulate_oracle(oracle, population, column, output, seed, as_json)
        return
    d = _design(design)
    values = _read_column(population, column).dropna()
    if d.n_truths == 2:
        if yes is None:
            raise _fail("--yes is required for a binary design: the value that means yes")
        truths: np.ndarray = (values.astype(str).str.strip() == yes).to_numpy()
        labels = ["no", "yes"]
    else:
        labels = sorted(values.astype(str).str.strip().unique())
        if len(labels) > d.n_truths:
            raise _fail(
                f"column {column!r} has {len(labels)} values but the design has {d.n_truths} truths"
            )
        codes = {v: i for i, v in enumerate(labels)}
        truths = values.astype(str).str.strip().map(codes).to_numpy(dtype=np.int64)
    rng = np.random.default_rng(seed) if seed is not None else None
    reports = np.empty(truths.size, dtype=np.int64)
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("randomizing", total=truths.size)
        for start in range(0, truths.size, _CHUNK):
            part = truths[start : start + _CHUNK]
            reports[start : start + part.size] = d.randomize(part, rng)
            progress.advance(task, part.size)
    frame = pd.DataFrame({"report": reports})
    if output.suffix.lower() in (".parquet", ".pq"):
        frame.to_parquet(output, index=False)
    else:
        frame.to_csv(output, index=False)
    share = np.bincount(np.asarray(truths, dtype=np.int64), minlength=d.n_truths) / truths.size
    true_rate = dict(zip(labels, share.tolist(), strict=False))
    payload = {
        "population": str(population),
        "n": int(truths.size),
        "design": d.to_dict(),
        "output": str(output),
        "true_rate": true_rate,
        "randomness": "seeded simulation" if seed is not None else _SECURE_LABEL,
    }
    if as_json:
        _emit_json(payload)
        return
    console.print(
        f"Wrote {truths.size:,} reports to [bold]{output}[/] through {d!r} "
        f"(epsilon {d.epsilon:.4g} nats)."
    )
    for label, rate in true_rate.items():
        console.print(f"  true rate of {label!r}: {rate:.4f}")


def _simulate_oracle(
    oracle: Any, population: Path, column: str, output: Path, seed: int | None, as_json: bool
) -> None:
    from .rappor import Rappor

    values = _read_column(population, column).dropna().astype(str).str.strip()
    labels = sorted(values.unique())
    rng = np.random.default_rng(seed) if seed is not None else None
    parts = []
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("randomizing", total=len(values))
        if isinstance(oracle, Rappor):
            items = values.tolist()
            for start in range(0, len(items), _CHUNK):
                parts.append(
                    reports_to_frame(oracle, oracle.randomize(items[start : start + _CHUNK], rng))
                )
                progress.advance(task, min(_CHUNK, len(items) - start))
        else:
            if len(labels) > oracle.k:
                raise _fail(
                    f"column {column!r} has {len(labels)} values but the oracle has k = {oracle.k}"
                )
            codes = values.map({v: i for i, v in enumerate(labels)}).to_numpy(dtype=np.int64)
            for start in range(0, codes.size, _CHUNK):
                part = codes[start : start + _CHUNK]
                parts.append(reports_to_frame(oracle, oracle.randomize(part, rng)))
                progress.advance(task, part.size)
    frame = pd.concat(parts, ignore_index=True)
    if output.suffix.lower() in (".parquet", ".pq"):
        frame.to_parquet(output, index=False)
    else:
        frame.to_csv(output, index=False)
    names = (
        labels
        if isinstance(oracle, Rappor)
        else labels + [f"(unused {i})" for i in range(len(labels), oracle.k)]
    )
    _labels_path(output).write_text("\n".join(names) + "\n")
    payload = {
        "population": str(population),
        "n": len(values),
        "design": oracle.to_dict(),
        "output": str(output),
        "labels": str(_labels_path(output)),
        "randomness": "seeded simulation" if seed is not None else _SECURE_LABEL,
    }
    if as_json:
        _emit_json(payload)
        return
    console.print(
        f"Wrote {len(values):,} reports to [bold]{output}[/] through {oracle!r} "
        f"(epsilon {oracle.epsilon:.4g} nats per report) and the value names to "
        f"{_labels_path(output)}."
    )


POST_PROCESSINGS = ("projection", "norm-sub", "empirical-bayes", "mle")


def _post_processed(oracle: Any, reports: Any, result: Any, method: str) -> Any:
    """The oracle's frequencies as a distribution, by the named post-processing."""
    from .postprocess import empirical_bayes, norm_sub, oracle_em, project_simplex

    if method == "projection":
        return project_simplex(result.prevalence)
    if method == "norm-sub":
        return norm_sub(result.prevalence)
    if method == "empirical-bayes":
        return empirical_bayes(oracle, result.prevalence, result.n)
    return oracle_em(oracle, reports)[0]


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
    from .rappor import Rappor

    if postprocess is not None and postprocess not in POST_PROCESSINGS:
        allowed = ", ".join(POST_PROCESSINGS)
        raise _fail(f"--postprocess must be one of {allowed}, got {postprocess!r}")
    if postprocess is not None and isinstance(oracle, Rappor):
        raise _fail("--postprocess applies to unary encoding, local hashing and Hadamard response")

    if not reports.exists():
        raise _fail(f"file not found: {reports}")
    if reports.suffix.lower() in (".parquet", ".pq"):
        frame = pd.read_parquet(reports)
    else:
        frame = pd.read_csv(reports, dtype=str)
    path = labels_file or _labels_path(reports)
    names = path.read_text().splitlines() if path.exists() else None
    if isinstance(oracle, Rappor):
        if not names:
            raise _fail("RAPPOR needs the candidate strings: --labels FILE (one per line)")
        oracle = oracle.with_candidates(names)
    elif names is not None and len(names) != oracle.k:
        raise _fail(f"--labels names {len(names)} values but the oracle has k = {oracle.k}")
    try:
        data = reports_from_frame(oracle, frame)
        result = estimate(oracle, data)
        hitters = heavy_hitters(result, alpha, names)
        distribution = (
            None if postprocess is None else _post_processed(oracle, data, result, postprocess)
        )
    except (ValueError, DeniableError) as exc:
        raise _fail(str(exc)) from None
    if distribution is not None:
        index = {name: i for i, name in enumerate(names or result.design.truth_labels)}
        hitters[postprocess] = [float(distribution[index[v]]) for v in hitters["value"]]
    if as_json:
        payload = {
            "design": oracle.to_dict(),
            "n": result.n,
            "alpha": alpha,
            "threshold_z": hitters.attrs["threshold_z"],
            "heavy_hitters": hitters.to_dict(orient="records"),
        }
        if distribution is not None:
            payload["distribution"] = {"method": postprocess, "frequencies": distribution.tolist()}
        _emit_json(payload)
        return
    table = Table(
        title=f"{oracle!r}: n = {result.n:,} reports, epsilon {oracle.epsilon:.4g} nats; "
        f"{len(hitters)} values detected (estimate/SE > {hitters.attrs['threshold_z']:.2f}, "
        f"alpha {alpha} over {result.prevalence.size:,} values)"
    )
    columns = ["value", "estimate", "SE", f"{1 - alpha:.0%} CI"]
    for name in columns + ([postprocess] if postprocess else []):
        table.add_column(name, justify="left" if name == "value" else "right")
    for _, row in hitters.head(top).iterrows():
        cells = [
            str(row["value"]),
            f"{row['estimate']:.4f}",
            f"{row['std_error']:.4f}",
            f"{row['ci_low']:.4f} - {row['ci_high']:.4f}",
        ]
        table.add_row(*cells, *([f"{row[postprocess]:.4f}"] if postprocess else []))
    console.print(table)


@app.command()
def analyze(
    reports: Annotated[Path, typer.Argument(help="Reports file (.csv or .parquet).")],
    design: DesignOpt,
    column: Annotated[str, typer.Option(help="Column of report codes.")] = "report",
    method: Annotated[
        str, typer.Option(help=f"Estimator: {', '.join(ESTIMATION_METHODS)}.")
    ] = "moment",
    interval: Annotated[
        list[str] | None,
        typer.Option(help=f"Interval method(s), repeatable: {', '.join(INTERVAL_METHODS)}."),
    ] = None,
    confidence_level: Annotated[float, typer.Option(help="Confidence level in (0, 1).")] = 0.95,
    labels: Annotated[
        Path | None, typer.Option(help="Oracles: file naming the values, one per line.")
    ] = None,
    alpha: Annotated[
        float, typer.Option(min=1e-12, max=0.5, help="Oracles: family-wise detection level.")
    ] = 0.05,
    top: Annotated[int, typer.Option(min=1, help="Oracles: rows of the heavy-hitter table.")] = 20,
    postprocess: Annotated[
        str | None,
        typer.Option(
            help="Oracles: also the frequencies as a distribution, by "
            f"{', '.join(POST_PROCESSINGS)} (docs/oracles.md says which lowers error where)."
        ),
    ] = None,
    formula: Annotated[
        str | None,
        typer.Option(
            help='Logistic regression of the randomized answer, e.g. "report ~ age + female" '
            "(formulaic syntax; powers as **)."
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(help="Clear column: prevalence per subgroup and a test of equality."),
    ] = None,
    pi: Annotated[
        str | None,
        typer.Option(help="Complex sample: column of inclusion probabilities (Horvitz-Thompson)."),
    ] = None,
    population: Annotated[
        float | None, typer.Option(help="Complex sample: population size N.")
    ] = None,
    strata: Annotated[str | None, typer.Option(help="Complex sample: stratum column.")] = None,
    clusters: Annotated[str | None, typer.Option(help="Complex sample: cluster column.")] = None,
    variance: Annotated[
        str | None,
        typer.Option(help="Complex sample: deville, ultimate_cluster, jackknife, srswr or srswor."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Estimate the prevalence of each truth from a reports file.

    For a frequency oracle the report columns are those ``simulate`` writes, the value
    names come from ``--labels`` (default: the ``.labels.txt`` file beside the reports),
    and the table lists the heavy hitters: values whose estimate passes the detection
    threshold (Bonferroni at ``--alpha``), with their post-processed frequencies under
    ``--postprocess``. With ``--formula`` it fits a logistic
    regression of the randomized answer; with ``--by`` it estimates per subgroup; with
    ``--pi`` or ``--population`` it gives design-based (Horvitz-Thompson) estimates.
    """
    oracle = _oracle(design)
    if oracle is not None:
        _analyze_oracle(oracle, reports, labels, alpha, top, confidence_level, as_json, postprocess)
        return
    if postprocess is not None:
        raise _fail("--postprocess applies to frequency oracles (oue, olh, hadamard designs)")
    d = _design(design)
    if formula is not None:
        _analyze_formula(reports, d, formula, confidence_level, as_json)
        return
    if by is not None:
        _analyze_by(reports, d, column, by, confidence_level, as_json)
        return
    if pi is not None or population is not None:
        options = {"strata": strata, "clusters": clusters, "variance": variance}
        _analyze_complex(reports, d, column, pi, population, options, confidence_level, as_json)
        return
    raw = _read_column(reports, column)
    missing = int(raw.isna().sum())
    values = raw.dropna()
    if not np.all(np.isin(values, np.arange(d.n_reports))):
        raise _fail(f"column {column!r} must hold report codes 0..{d.n_reports - 1}")
    intervals = tuple(interval or ["normal", "wilson"])
    try:
        est = estimate(d, values.to_numpy(dtype=np.int64), method=method)
        payload = est.to_dict(confidence_level, intervals)
    except (ValueError, DeniableError) as exc:
        raise _fail(str(exc)) from None
    payload["missing"] = missing
    if as_json:
        _emit_json(payload)
        return
    table = Table(title=f"{d!r}: n = {est.n:,} reports ({missing} missing), {method} estimate")
    table.add_column("truth")
    table.add_column("estimate", justify="right")
    table.add_column("SE", justify="right")
    for m in intervals:
        table.add_column(f"{confidence_level:.0%} CI ({m})", justify="right")
    for j, label in enumerate(d.truth_labels):
        cells = [
            f"{payload['intervals'][m]['low'][j]:.4f} - {payload['intervals'][m]['high'][j]:.4f}"
            for m in intervals
        ]
        table.add_row(label, f"{est.prevalence[j]:.4f}", f"{est.std_error[j]:.4f}", *cells)
    console.print(table)


def _analyze_formula(
    reports: Path, d: Design, formula: str, confidence_level: float, as_json: bool
) -> None:
    from .analysis import rr_logit

    frame = _read_table(reports)
    try:
        fit = rr_logit(formula, frame, d)
        ci = fit.conf_int(confidence_level)
    except (ValueError, TypeError, DeniableError) as exc:
        raise _fail(f"--formula: {exc}") from None
    if as_json:
        payload = fit.to_dict()
        payload["conf_int"] = {t: [ci.loc[t, "lower"], ci.loc[t, "upper"]] for t in ci.index}
        _emit_json(payload)
        return
    table = Table(title=f"{formula}  ({d!r}; n = {fit.nobs:,}, log-likelihood {fit.llf:.3f})")
    for col in ("term", "coef", "SE", "z", "p", f"{confidence_level:.0%} CI"):
        table.add_column(col, justify="left" if col == "term" else "right")
    for t in fit.params.index:
        table.add_row(
            str(t),
            f"{fit.params[t]:.4f}",
            f"{fit.bse[t]:.4f}",
            f"{fit.tvalues[t]:.2f}",
            f"{fit.pvalues[t]:.3g}",
            f"{ci.loc[t, 'lower']:.4f} - {ci.loc[t, 'upper']:.4f}",
        )
    console.print(table)


def _analyze_by(
    reports: Path, d: Design, column: str, by: str, confidence_level: float, as_json: bool
) -> None:
    from .analysis import subgroup_prevalence

    frame = _read_table(reports)
    _require_columns(frame, {"--column": column, "--by": by})
    rows = frame[[column, by]].dropna()
    try:
        res = subgroup_prevalence(d, rows[column].to_numpy(dtype=np.int64), rows[by].to_numpy())
        table_df = res.table(confidence_level)
        test = res.test_equal()
    except (ValueError, TypeError, DeniableError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _emit_json(
            {
                "groups": table_df.reset_index().to_dict(orient="records"),
                "test_equal": asdict(test),
            }
        )
        return
    table = Table(title=f"{d!r}: prevalence of '{d.truth_labels[1]}' by {by}")
    for col in ("group", "n", "estimate", "SE", f"{confidence_level:.0%} CI"):
        table.add_column(col, justify="left" if col == "group" else "right")
    for g, row in table_df.iterrows():
        table.add_row(
            str(g),
            f"{int(row['n']):,}",
            f"{row['prevalence']:.4f}",
            f"{row['std_error']:.4f}",
            f"{row['ci_low']:.4f} - {row['ci_high']:.4f}",
        )
    console.print(table)
    console.print(f"equal prevalence: {test}")


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
    from .analysis import survey_estimate

    frame = _read_table(reports)
    _require_columns(
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
        raise _fail(str(exc)) from None
    if as_json:
        _emit_json({**est.to_dict(), "confidence_level": confidence_level, "ci": [low, high]})
        return
    console.print(
        f"{d!r}, Horvitz-Thompson {est.kind} over {est.n:,} replies ({est.method} variance): "
        f"{est.estimate:.4f}, SE {est.std_error:.4f}, {confidence_level:.0%} CI "
        f"{low:.4f} - {high:.4f}"
    )


@app.command()
def audit(
    epsilon: Annotated[
        float, typer.Option(min=1e-6, max=20.0, help="Epsilon (nats) of the private attribute.")
    ] = 1.0,
    confidence_level: Annotated[float, typer.Option(help="Confidence level in (0, 1).")] = 0.95,
    seed: SeedOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fairness audit on UCI Adult: parity of income >50K, clear and with private groups."""
    from .analysis import adult_parity_audit

    rng = np.random.default_rng(seed)
    table_df = adult_parity_audit(epsilon, confidence_level=confidence_level, rng=rng)
    if as_json:
        _emit_json(table_df.reset_index().to_dict(orient="records"))
        return
    table = Table(
        title=f"Statistical parity of income >50K (not in group - in group); group collected "
        f"by Warner at epsilon = {epsilon:g}"
    )
    for c in ("group", "members", "clear", "private", "SE", f"{confidence_level:.0%} CI", "covers"):
        table.add_column(c, justify="left" if c == "group" else "right")
    for g, row in table_df.iterrows():
        table.add_row(
            str(g),
            f"{int(row['members']):,}",
            f"{row['clear_difference']:+.4f}",
            f"{row['private_difference']:+.4f}",
            f"{row['private_std_error']:.4f}",
            f"{row['private_ci_low']:+.4f} - {row['private_ci_high']:+.4f}",
            "yes" if row["covers_clear"] else "no",
        )
    console.print(table)


@app.command()
def plan(
    design: DesignOpt,
    margin: Annotated[float, typer.Option(help="Largest acceptable error, in (0, 1).")] = 0.05,
    confidence_level: Annotated[float, typer.Option(help="Confidence level in (0, 1).")] = 0.95,
    prior: Annotated[
        float, typer.Option(help='Prior prevalence of "yes" for the disclosure risk.')
    ] = 0.1,
    plot: Annotated[
        Path | None, typer.Option(help="Save a plot of margin against n to this PNG.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Sample size, epsilon and disclosure risk of a design."""
    d = _design(design)
    try:
        sizes = {m: sample_size(d, margin, confidence_level, m) for m in ("normal", "chebyshev")}
        if d.n_reports == d.n_truths:
            sizes["exact"] = sample_size(d, margin, confidence_level, "exact")
        prior_vec = prior if d.n_truths == 2 else np.full(d.n_truths, 1.0 / d.n_truths)
        risk = disclosure_risk(d, prior_vec)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    payload = {
        "design": d.to_dict(),
        "margin": margin,
        "confidence_level": confidence_level,
        "sample_size": sizes,
        "disclosure_risk": risk.to_dict(),
    }
    if plot is not None:
        from .report import plot_margin

        plot_margin(d, confidence_level, plot)
        payload["plot"] = str(plot)
    if as_json:
        _emit_json(payload)
        return
    console.print(f"[bold]{d!r}[/]  epsilon = {d.epsilon:.6g} nats")
    for m, n in sizes.items():
        console.print(f"  n for margin {margin} at {confidence_level:.0%} ({m}): {n:,}")
    for line in risk.describe():
        console.print(f"  {line}")
    if plot is not None:
        console.print(f"  plot saved to {plot}")


def _short(design: str) -> str:
    """Compact design text for tables: 0.16666666666666666 -> 0.1667."""
    import re

    return re.sub(r"(\d\.\d{4})\d+", r"\1", design)


def _demo_table(title: str, rows: list[DemoRow]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("question", overflow="fold")
    table.add_column("design", overflow="fold")
    table.add_column("n", justify="right")
    table.add_column("estimate", justify="right")
    table.add_column("SE", justify="right")
    table.add_column("95% CI", justify="right", no_wrap=True)
    table.add_column("true rate", justify="right")
    table.add_column("covered", justify="center")
    for r in rows:
        label = r.question if r.category == "yes" else f"{r.question} [{r.category}]"
        if r.survey != "UCI Adult":
            label = f"{r.survey}: {label}"
        cells = [
            label,
            _short(r.design),
            f"{r.n:,}",
            f"{r.estimate:.4f}",
            f"{r.std_error:.4f}",
            f"{r.ci_low:.4f} - {r.ci_high:.4f}",
            "" if r.truth is None else f"{r.truth:.4f}",
            {True: "yes", False: "NO", None: ""}[r.covered],
        ]
        table.add_row(*cells)
    return table


@app.command()
def demo(
    seed: SeedOpt = None,
    as_json: JsonOpt = False,
    respondents: Annotated[
        int, typer.Option(min=10, max=48_842, help="Respondents in the live HTTP survey.")
    ] = 3000,
    keep_serving: Annotated[
        bool | None,
        typer.Option(
            "--keep-serving/--no-keep-serving",
            help="Keep the demo server running until Ctrl-C (default: only on a terminal).",
        ),
    ] = None,
) -> None:
    """The main job: a private survey of UCI Adult (in-process and live over HTTP), and real
    surveys analysed."""
    from .live import LiveDemoResult, live_demo

    rng = np.random.default_rng(seed) if seed is not None else None
    if not console.is_terminal:
        console.width = max(console.width, 150)
    stay = console.is_terminal and not as_json if keep_serving is None else keep_serving

    def report(live: LiveDemoResult) -> None:
        if as_json:
            _emit_json(
                {
                    "adult": [r.to_dict() for r in adult],
                    "live": {
                        "respondents": live.respondents,
                        "seconds": live.seconds,
                        "rows": [asdict(r) | {"covered": r.covered} for r in live.rows],
                    },
                    "real_surveys": [r.to_dict() for r in real],
                }
            )
            return
        console.print(
            "[bold]1. A private survey of 48,842 people (UCI Adult, 1994 US census extract).[/]\n"
            "Each answer is randomized on the respondent's device "
            + ("(seeded simulation)" if seed is not None else "(secure random source)")
            + "; the analyst sees only reports."
        )
        console.print(_demo_table("Estimate, 95% CI and the true rate", adult))
        covered = sum(bool(r.covered) for r in adult)
        console.print(f"{covered} of {len(adult)} intervals contain the true rate.\n")
        _print_live(live)
        console.print(
            "[bold]3. Real randomized-response surveys[/] "
            "(data from the R packages rr, RRTCS, GLMMRR).\n"
            "Estimates are the unbiased moment estimates (as RRreg::RRuni, rr and RRTCS report "
            "them); the MTURK dice game has a known truth."
        )
        console.print(_demo_table("Prevalence estimates", real))
        console.print(
            "In the MTURK validation study the crosswise model over-estimates and forced "
            "response under-estimates the observed cheating rate, as Hoeglinger & Jann (2018) "
            "report: the designs are unbiased only when respondents follow the instructions."
        )

    def hold(live: LiveDemoResult) -> None:
        """Runs while the demo server is up: report, then serve until Ctrl-C."""
        progress.stop()
        report(live)
        console.print(
            f"\nServing the results page at [bold]{live.results_url}[/]; press Ctrl-C to stop."
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass

    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("surveying", total=None)

        def step(message: str) -> None:
            progress.update(task, description=message)

        adult = adult_survey(rng, step)
        real = real_surveys(step)
        step("starting the collection server")
        live = live_demo(respondents, seed=seed, progress=step, keep_serving=hold if stay else None)
    if stay:
        return
    report(live)
    if not as_json:
        console.print(
            "\nThe demo server has stopped. To browse the results page, run "
            "[bold]deniable demo --keep-serving[/] and open the URL it prints, "
            f"like {live.results_url.split('?')[0]}?key=<printed key>."
        )


def _print_live(live: Any) -> None:
    console.print(
        f"[bold]2. The same survey live over HTTP:[/] {live.respondents:,} people sampled from "
        f"UCI Adult answered through the collection server ({live.base_url}, SQLite). Each "
        "respondent's client randomized locally and sent only reports, one POST each "
        f"({live.respondents / live.seconds:,.0f} responses/s)."
    )
    table = Table(title="Live estimates from the server", title_justify="left")
    for name in ("question", "n", "estimate", "SE", "95% CI", "respondents' rate", "population"):
        table.add_column(name, justify="left" if name == "question" else "right")
    for r in live.rows:
        label = r.question if r.category == "yes" else f"{r.question} [{r.category}]"
        table.add_row(
            label,
            f"{r.n:,}",
            f"{r.estimate:.4f}",
            f"{r.std_error:.4f}",
            f"{r.ci_low:.4f} - {r.ci_high:.4f}",
            f"{r.respondents_rate:.4f}",
            f"{r.population_rate:.4f}",
        )
    console.print(table)
    covered = sum(r.covered for r in live.rows)
    console.print(
        f"{covered} of {len(live.rows)} intervals contain the respondents' true rate. "
        f"Results page (while the server runs): {live.results_url}\n"
    )


survey_app = typer.Typer(help="Survey definitions.", no_args_is_help=True)
app.add_typer(survey_app, name="survey")


@survey_app.command("check")
def survey_check(
    file: Annotated[Path, typer.Argument(help="Survey definition (.yaml or .json).")],
    prior: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help='Prior prevalence of "yes" for the disclosure risk.'),
    ] = 0.1,
    as_json: JsonOpt = False,
) -> None:
    """Validate a survey; print each question's epsilon, the total, and the disclosure risk."""
    try:
        survey = load_survey(file)
    except FileNotFoundError:
        raise _fail(f"no such file: {file}") from None
    except DeniableError as exc:
        for field, message in getattr(exc, "errors", [("survey", str(exc))]):
            err.print(f"[bold red]error:[/] {field}: {message}")
        raise typer.Exit(code=2) from None
    rows = []
    for q in survey.questions:
        d = q.randomizer
        risk = q.disclosure_risk(prior)
        rows.append(
            {
                "id": q.id,
                "design": repr(d),
                "epsilon": q.epsilon if math.isfinite(q.epsilon) else "inf",
                "prior": q.prior(prior).tolist(),
                "posterior_after_report": {
                    q.report_labels[r]: None
                    if np.isnan(risk.posterior[r]).all()
                    else risk.posterior[r].tolist()
                    for r in range(d.n_reports)
                },
                "disclosure": risk.describe(),
            }
        )
    total = survey.total_epsilon
    payload = {
        "id": survey.id,
        "version": survey.version,
        "questions": rows,
        "total_epsilon": total if math.isfinite(total) else "inf",
        "finite_epsilon": survey.finite_epsilon,
        "privacy_budget": survey.privacy_budget,
        "digest": survey.digest,
    }
    if as_json:
        _emit_json(payload)
        return
    table = Table(title=f"{survey.title} ({survey.id} v{survey.version})", title_justify="left")
    table.add_column("question")
    table.add_column("design", overflow="fold")
    table.add_column("epsilon (nats)", justify="right")
    table.add_column(f"disclosure risk (prior {prior:g})", overflow="fold")
    for r in rows:
        eps = r["epsilon"]
        table.add_row(
            r["id"],
            _short(r["design"]),
            eps if isinstance(eps, str) else f"{eps:.4f}",
            "\n".join(r["disclosure"]),
        )
    console.print(table)
    total_text = "inf" if not math.isfinite(total) else f"{total:.4f}"
    console.print(
        f"Total epsilon per respondent: {total_text} nats "
        f"(finite part {survey.finite_epsilon:.4f} of budget {survey.privacy_budget:g}). OK."
    )


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = 8000,
    database_url: Annotated[
        str | None,
        typer.Option(
            envvar="DENIABLE_DATABASE_URL",
            help="SQLAlchemy URL (sqlite:///file.sqlite or postgresql://user:pw@host/db); "
            "default: a SQLite file deniable.sqlite in the working directory.",
        ),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Worker processes.")] = 1,
) -> None:
    """Run the collection server (analyst token from DENIABLE_ANALYST_TOKEN)."""
    import os

    import uvicorn

    from .storage import Store
    from .storage import database_url as resolve

    url = resolve(database_url)
    os.environ["DENIABLE_DATABASE_URL"] = url
    if not os.environ.get("DENIABLE_ANALYST_TOKEN"):
        import secrets

        os.environ["DENIABLE_ANALYST_TOKEN"] = secrets.token_urlsafe(24)
        err.print(
            "No DENIABLE_ANALYST_TOKEN set; the analyst token for this run is "
            f"[bold]{os.environ['DENIABLE_ANALYST_TOKEN']}[/]"
        )
    Store(url).close()  # create and migrate once, before the workers start
    err.print(f"Database: {url.split('@')[-1]}")
    uvicorn.run(
        "deniable.server:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,
    )


@app.command()
def respond(
    url: Annotated[str, typer.Argument(help="Survey URL, e.g. http://127.0.0.1:8000/s/my-survey")],
    token: Annotated[str | None, typer.Option(help="Invitation token.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Send without asking.")] = False,
) -> None:
    """Answer a survey in the terminal: randomize locally, show what is sent, submit."""
    import httpx

    from .live import design_from_view, parse_survey_url, respond_reports

    try:
        link = parse_survey_url(url)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    token = token or link.token
    try:
        with httpx.Client(base_url=link.base_url, timeout=30) as http:
            r = http.get(f"/api/surveys/{link.survey_id}")
            if r.status_code != 200:
                raise _fail(_server_message(r))
            view = r.json()
            for q in view["questions"]:
                design_from_view(q)  # checks the stated epsilon before anything is asked
            console.print(f"[bold]{view['title']}[/]")
            console.print(
                "Your true answers stay on this computer: each is randomized here with the "
                "operating system's secure random source, and only the randomized reports are "
                "sent."
            )
            answers: dict[str, int] = {}
            for i, q in enumerate(view["questions"], 1):
                console.print(f"\n[bold]{i}. {q['text']}[/]  (epsilon {q['epsilon']})")
                for j, label in enumerate(q["choices"]):
                    console.print(f"  {j + 1}) {label}")
                answers[q["id"]] = _ask_choice(len(q["choices"]))
            if view.get("requires_invitation") and not token:
                token = typer.prompt("Invitation token", hide_input=True)
            reports = respond_reports(view, answers)
            answers.clear()
            console.print("\nThe server will receive only these reports:")
            for q in view["questions"]:
                console.print(f"  {q['id']}: {q['reports'][reports[q['id']]]!r}")
            if not yes and not typer.confirm("Send them?", default=True):
                console.print("Nothing was sent.")
                raise typer.Exit(code=1)
            body: dict[str, Any] = {"version": view["version"], "reports": reports}
            if token:
                body["token"] = token
            r = http.post(f"/api/surveys/{link.survey_id}/responses", json=body)
            if r.status_code != 201:
                raise _fail(f"not stored: {_server_message(r)}")
    except httpx.HTTPError as exc:
        raise _fail(f"cannot reach {link.base_url}: {exc}") from None
    console.print("Stored. Thank you.")


def _server_message(r: Any) -> str:
    try:
        return str(r.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {r.status_code}"


def _ask_choice(k: int) -> int:
    """Prompt until the answer is a number 1..k; return it as a code 0..k-1."""
    while True:
        raw = typer.prompt(f"Your true answer (1-{k}; stays on this computer)")
        if raw.strip().isdigit() and 1 <= int(raw) <= k:
            return int(raw) - 1
        err.print(f"Please type a number from 1 to {k}.")


def main() -> None:  # pragma: no cover - console script entry
    app()

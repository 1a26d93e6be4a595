"""``deniable simulate``: randomize a population's true answers into reports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    import numpy as np


import typer

from ..errors import DeniableError
from ._common import (
    CHUNK,
    SECURE_LABEL,
    DesignOpt,
    JsonOpt,
    SeedOpt,
    app,
    console,
    design_of,
    emit_json,
    err,
    fail,
    is_oracle,
    labels_path,
    needs_candidates,
    parse_mechanism,
    read_column,
)

#: The most values a simulation's labels file names (one line each).
MAX_LABELS = 10_000_000

__all__ = ["simulate"]


@app.command()
def simulate(
    population: Annotated[
        Path, typer.Argument(help='Population CSV with a header row, or "adult" for UCI Adult.')
    ],
    column: Annotated[str, typer.Option(help="Column holding the true answer.")],
    design: DesignOpt,
    yes: Annotated[
        str | None,
        typer.Option("--yes-value", help='Value of COLUMN that means "yes" (binary designs).'),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Reports file to write (.csv or .parquet).")
    ] = Path("reports.csv"),
    seed: SeedOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Randomize every person's true answer through DESIGN and write the reports."""
    import numpy as np
    import pandas as pd
    from rich.progress import Progress

    mechanism = parse_mechanism(design)
    if is_oracle(mechanism):
        _simulate_oracle(mechanism, population, column, output, seed, as_json)
        return
    d = design_of(mechanism)
    values = read_column(population, column).dropna()
    if d.n_truths == 2:
        if yes is None:
            raise fail("--yes-value is required for a binary design: the value that means yes")
        truths: np.ndarray = (values.astype(str).str.strip() == yes).to_numpy()
        labels = ["no", "yes"]
    else:
        labels = sorted(values.astype(str).str.strip().unique())
        if len(labels) > d.n_truths:
            raise fail(
                f"column {column!r} has {len(labels)} values but the design has {d.n_truths} truths"
            )
        codes = {v: i for i, v in enumerate(labels)}
        truths = values.astype(str).str.strip().map(codes).to_numpy(dtype=np.int64)
    rng = np.random.default_rng(seed) if seed is not None else None
    reports = np.empty(truths.size, dtype=np.int64)
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("randomizing", total=truths.size)
        for start in range(0, truths.size, CHUNK):
            part = truths[start : start + CHUNK]
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
        "randomness": "seeded simulation" if seed is not None else SECURE_LABEL,
    }
    if as_json:
        emit_json(payload)
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
    import numpy as np
    import pandas as pd
    from rich.progress import Progress

    from ..tables.frames import reports_to_frame

    if not needs_candidates(oracle) and oracle.k > MAX_LABELS:
        raise fail(
            f"--design: k = {oracle.k:,} values is more than a simulation's labels file names "
            f"(k at most {MAX_LABELS:,}); the population's values are far fewer"
        )
    values = read_column(population, column).dropna().astype(str).str.strip()
    labels = sorted(values.unique())
    rng = np.random.default_rng(seed) if seed is not None else None
    parts = []
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("randomizing", total=len(values))
        if needs_candidates(oracle):
            items = values.tolist()
            for start in range(0, len(items), CHUNK):
                parts.append(
                    reports_to_frame(oracle, oracle.randomize(items[start : start + CHUNK], rng))
                )
                progress.advance(task, min(CHUNK, len(items) - start))
        else:
            if len(labels) > oracle.k:
                raise fail(
                    f"column {column!r} has {len(labels)} values but the oracle has k = {oracle.k}"
                )
            codes = values.map({v: i for i, v in enumerate(labels)}).to_numpy(dtype=np.int64)
            for start in range(0, codes.size, CHUNK):
                part = codes[start : start + CHUNK]
                try:
                    parts.append(reports_to_frame(oracle, oracle.randomize(part, rng)))
                except DeniableError as exc:  # a report over the memory limit
                    raise fail(f"--design: {exc}") from None
                progress.advance(task, part.size)
    frame = pd.concat(parts, ignore_index=True)
    if output.suffix.lower() in (".parquet", ".pq"):
        frame.to_parquet(output, index=False)
    else:
        frame.to_csv(output, index=False)
    names = (
        labels
        if needs_candidates(oracle)
        else labels + [f"(unused {i})" for i in range(len(labels), oracle.k)]
    )
    labels_path(output).write_text("\n".join(names) + "\n")
    payload = {
        "population": str(population),
        "n": len(values),
        "design": oracle.to_dict(),
        "output": str(output),
        "labels": str(labels_path(output)),
        "randomness": "seeded simulation" if seed is not None else SECURE_LABEL,
    }
    if as_json:
        emit_json(payload)
        return
    console.print(
        f"Wrote {len(values):,} reports to [bold]{output}[/] through {oracle!r} "
        f"(epsilon {oracle.epsilon:.4g} nats per report) and the value names to "
        f"{labels_path(output)}."
    )

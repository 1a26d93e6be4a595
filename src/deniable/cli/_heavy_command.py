"""``deniable analyze FILE --design pem:...``: heavy hitters over an open domain, found
level by level (PEM, byte-PEM) with a progress bar on stderr, one step a level."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    pass


from ..errors import DeniableError
from ._common import console, emit_json, fail

__all__ = ["analyze_prefix", "is_prefix"]


def is_prefix(mechanism: Any) -> bool:
    """True for PEM and byte-PEM (``pem``, ``pem-bytes``), whose values are searched."""
    return mechanism.spec_name in ("pem", "pem-bytes")


def analyze_prefix(
    pem: Any, reports: Path, top: int, confidence_level: float, as_json: bool
) -> None:
    """The ``top`` most frequent values of PEM or byte-PEM reports in a Parquet file (the
    columns of :func:`deniable.tables.arrow.report_columns`), by the prefix search in
    its top-k mode (:func:`~deniable.estimation.find_heavy_hitters`,
    :func:`~deniable.estimation.find_string_heavy_hitters`)."""
    import pyarrow.parquet as pq
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table

    from ..estimation import find_heavy_hitters, find_string_heavy_hitters
    from ..tables.arrow import report_columns, reports_from_batch

    if not reports.exists():
        raise fail(f"file not found: {reports}")
    if reports.suffix.lower() not in (".parquet", ".pq") and not reports.is_dir():
        raise fail(f"{pem.spec_name} reports are read from Parquet (columns "
                   f"{', '.join(report_columns(pem))}), got {reports.name}")  # fmt: skip
    search = find_string_heavy_hitters if pem.spec_name == "pem-bytes" else find_heavy_hitters
    columns = (TextColumn("searching level"), BarColumn(), MofNCompleteColumn())
    try:
        table = pq.read_table(reports, columns=report_columns(pem))
        data = reports_from_batch(pem, table)
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("levels", total=pem.levels)
            found = search(pem, data, top_k=top, progress=lambda k: bar.advance(task, k))
    except (ValueError, KeyError, DeniableError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        emit_json(found.to_dict(confidence_level) | {"design": pem.to_dict(), "n": len(data)})
        return
    ci = found.confidence_interval(confidence_level)
    out = Table(title=f"{pem!r}: n = {len(data):,} reports, epsilon {pem.epsilon:.4g} nats; "
                f"the {len(found)} most frequent values, found level by level")  # fmt: skip
    for name in ("value", "estimate", "SE", f"{confidence_level:.0%} CI", "p (frequency 0)"):
        out.add_column(name, justify="left" if name == "value" else "right")
    for i, value in enumerate(found.values):
        out.add_row(value, f"{found.estimate[i]:.4f}", f"{found.std_error[i]:.4f}",
                    f"{ci.low[i]:.4f} - {ci.high[i]:.4f}", f"{found.pvalue[i]:.2g}")  # fmt: skip
    console.print(out)

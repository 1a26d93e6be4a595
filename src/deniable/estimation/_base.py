"""The base of every estimate-like result and its interval (see :mod:`.results`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from html import escape
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from .._extras import require
from .._validation import JSON

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ConfidenceInterval",
    "EstimateResult",
    "Summary",
    "interval_dict",
    "plain",
    "summary_table",
]


BoundT = TypeVar("BoundT")


class ConfidenceInterval(NamedTuple, Generic[BoundT]):
    """Lower and upper bounds: ndarrays the shape of the estimate
    (``ConfidenceInterval[NDArray[np.float64]]``), floats for a scalar estimate
    (``ConfidenceInterval[float]``), or pandas Series for a labelled one.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> ci = estimate(Warner(p=0.8), np.array([1] * 70 + [0] * 30)).confidence_interval(0.95)
    >>> round(float(ci.low[1]), 3), round(float(ci.high[1]), 3)
    (0.669, 0.959)
    """

    low: BoundT
    high: BoundT


class Summary(str):
    """A result's summary: its plain-text table, which is a ``str`` (printed, compared and
    searched as one), shown as itself when typed bare, and as an HTML table in a
    notebook (``_repr_html_``), as statsmodels' ``Summary`` is.

    ``Summary(text, html=None)``: the plain-text table and its HTML (default the text in
    a ``<pre>`` block, escaped); either way each line of the text that starts
    ``warning:`` is set apart below it.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> summary = estimate(Warner(p=0.8), np.array([1] * 70 + [0] * 30)).summary()
    >>> isinstance(summary, str), "<table" in summary._repr_html_()
    (True, True)
    """

    _html: str | None

    def __new__(cls, text: str, html: str | None = None) -> Summary:
        out = super().__new__(cls, text)
        out._html = html
        return out

    def __repr__(self) -> str:
        return str(self)

    def with_lines(self, lines: Iterable[str]) -> Summary:
        """This summary with ``lines`` added below it (its HTML kept)."""
        return Summary("\n".join([str(self), *lines]), self._html)

    def _repr_html_(self) -> str:
        warned = [line for line in self.splitlines() if line.startswith("warning: ")]
        notes = "".join(
            f'<p style="color:#8a4b00"><strong>warning:</strong> {escape(w[9:])}</p>'
            for w in warned
        )
        if self._html is not None:
            return self._html + notes
        body = "\n".join(line for line in self.splitlines() if not line.startswith("warning: "))
        return f"<pre>{escape(body)}</pre>{notes}"


def summary_table(
    title: str, labels: list[str], columns: dict[str, NDArray[np.float64]], footer: str = ""
) -> Summary:
    """A plain-text table (one row per label, one column per entry of ``columns``) that
    renders as an HTML table in a notebook."""
    width = max([len(str(x)) for x in labels] + [8])
    head = f"{'':<{width}}" + "".join(f"{name:>12}" for name in columns)
    rows = [
        f"{label!s:<{width}}" + "".join(f"{float(col[i]):>12.4f}" for col in columns.values())
        for i, label in enumerate(labels)
    ]
    rule = "-" * len(head)
    text = "\n".join([title, rule, head, rule, *rows, rule] + ([footer] if footer else []))
    cells = "".join(f"<th>{escape(name)}</th>" for name in columns)
    body = "".join(
        f"<tr><th>{escape(str(label))}</th>"
        + "".join(f"<td>{float(col[i]):.4f}</td>" for col in columns.values())
        + "</tr>"
        for i, label in enumerate(labels)
    )
    html = (
        f'<table class="deniable-summary"><caption>{escape(title)}</caption>'
        f"<thead><tr><th></th>{cells}</tr></thead><tbody>{body}</tbody></table>"
        + (f"<p>{escape(footer)}</p>" if footer else "")
    )
    return Summary(text, html)


def plain(value: Any) -> Any:
    """A JSON-ready number or list from a float, a NumPy array or scalar, or a Series."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return float(value)


def interval_dict(
    ci: ConfidenceInterval[Any], method: str, confidence_level: float
) -> dict[str, Any]:
    """``{"method", "confidence_level", "low", "high"}``: an interval in the one JSON shape."""
    return {
        "method": method,
        "confidence_level": confidence_level,
        "low": plain(ci.low),
        "high": plain(ci.high),
    }


class EstimateResult(ABC):
    """The shared vocabulary: ``estimate``, ``std_error``, ``confidence_interval``, ...

    Subclasses give ``estimate``, ``std_error``, ``labels`` and ``confidence_interval``;
    ``summary`` and ``to_frame`` follow.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.estimation import EstimateResult
    >>> result = estimate(Warner(p=0.8), np.array([1] * 70 + [0] * 30))
    >>> isinstance(result, EstimateResult), sorted(result.to_dict())[:4]
    (True, ['counts', 'estimate', 'estimator', 'interval'])
    """

    if TYPE_CHECKING:  # given by every subclass, as a field or a property

        @property
        def estimate(self) -> Any:
            """Point estimate."""

        @property
        def std_error(self) -> Any:
            """Standard error of :attr:`estimate`, the same shape."""

        @property
        def labels(self) -> list[str]:
            """One label per entry of :attr:`estimate`."""

    @abstractmethod
    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[Any]:
        """Interval for every entry of :attr:`estimate`."""

    @property
    def default_interval_method(self) -> str:
        """The interval method used when none is named (``normal`` unless the result
        has a better one)."""
        return "normal"

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape of every estimate (the CLI's ``--json`` prints it).

        ``{"result": class name, "n": reports, "labels": [...], "estimate": ...,
        "std_error": ..., "interval": {"method", "confidence_level", "low", "high"},
        "warnings": [...]}``: numbers where the estimate is a number, lists where it is
        a vector; a subclass adds its own fields (the mechanism, the estimator, counts).
        """
        chosen = method or self.default_interval_method
        ci = self.confidence_interval(confidence_level, chosen)
        out: dict[str, Any] = {"result": type(self).__name__}
        n = getattr(self, "n", None)
        if n is not None:
            out["n"] = int(n)
        out |= {
            "labels": [str(label) for label in self.labels],
            "estimate": plain(self.estimate),
            "std_error": plain(self.std_error),
            "interval": interval_dict(ci, chosen, confidence_level),
            "warnings": [str(w) for w in getattr(self, "warnings", [])],
        }
        return out

    def _title(self) -> str:
        return type(self).__name__

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Plain-text table: estimate, standard error and interval per entry (a
        :class:`Summary`: a ``str`` that renders as an HTML table in a notebook)."""
        ci = self.confidence_interval(confidence_level, method)
        return summary_table(
            self._title(),
            self.labels,
            {
                "estimate": np.atleast_1d(self.estimate),
                "std_error": np.atleast_1d(self.std_error),
                "low": np.atleast_1d(ci.low),
                "high": np.atleast_1d(ci.high),
            },
            f"{confidence_level:.0%} intervals" + (f" ({method})" if method else ""),
        )

    def _repr_html_(self) -> str:
        """The summary as HTML, for a notebook (its warnings set apart)."""
        return self.summary()._repr_html_()

    def to_frame(self, confidence_level: float = 0.95, method: str | None = None) -> pd.DataFrame:
        """``pandas.DataFrame`` indexed by label: estimate, std_error, low, high.

        Raises
        ------
        ModuleNotFoundError
            Without pandas (``pip install 'deniable[analysis]'``).
        """
        require("pandas", "analysis")
        import pandas as pd

        ci = self.confidence_interval(confidence_level, method)
        return pd.DataFrame(
            {
                "estimate": np.atleast_1d(self.estimate),
                "std_error": np.atleast_1d(self.std_error),
                "low": np.atleast_1d(ci.low),
                "high": np.atleast_1d(ci.high),
            },
            index=pd.Index(self.labels, name="category"),
        )

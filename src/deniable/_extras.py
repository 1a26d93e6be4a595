"""Optional dependencies: import them by name, or fail with the extra that installs them."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["EXTRAS", "lazy_attributes", "require", "require_installed"]

#: The extras of ``pip install 'deniable[...]'`` and what each brings.
EXTRAS = {
    "analysis": "pandas, pyarrow and formulaic (regression, subgroups, complex samples, files)",
    "rappor": "scikit-learn (RAPPOR decoding by LASSO)",
    "plot": "matplotlib (plots of planning and results)",
    "server": "FastAPI, uvicorn, SQLAlchemy, psycopg, pydantic, PyYAML, Jinja2, httpx",
    "cli": "typer and rich (the deniable command)",
    "spark": "PySpark (tallies and estimates on Spark; needs Java 17 or newer)",
    "fast": "numba (compiled encoders, decoders and Feldman-Cousins intervals, 1-30x faster)",
}


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise ModuleNotFoundError naming the extra that installs it.

    Raises
    ------
    ModuleNotFoundError
        ``"... needs scikit-learn: pip install 'deniable[rappor]'"``.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"this part of deniable needs {module.split('.')[0]} ({EXTRAS[extra]}): "
            f"pip install 'deniable[{extra}]'",
            name=exc.name,
        ) from exc


def require_installed(module: str, extra: str) -> None:
    """Check that ``module`` is installed without importing it (a command's ``--help``
    stays fast), or raise what :func:`require` raises.

    Raises
    ------
    ModuleNotFoundError
        ``"... needs pandas: pip install 'deniable[analysis]'"``.
    """
    if importlib.util.find_spec(module) is None:
        raise ModuleNotFoundError(
            f"this part of deniable needs {module} ({EXTRAS[extra]}): "
            f"pip install 'deniable[{extra}]'",
            name=module,
        )


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A face's module ``__getattr__`` (PEP 562): each name of ``homes`` comes from its
    module (``homes[name]``, a module of ``package``) on first use, so that a face names
    what it offers without loading what a caller does not use.

    Raises
    ------
    AttributeError
        From the returned function, for a name not in ``homes``.
    """

    def attribute(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{homes[name]}"), name)

    return attribute

"""Input validation shared by the public entry points (private)."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from numbers import Real
from typing import ParamSpec, TypeAlias, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "JSON",
    "MEMORY_LIMIT",
    "as_codes",
    "check_confidence_level",
    "check_integer",
    "check_memory",
    "check_probability",
    "check_real",
    "renamed_keywords",
]

#: A JSON value: what every result's ``to_dict`` gives (``json.dumps`` writes it as is).
JSON: TypeAlias = Union[dict[str, "JSON"], list["JSON"], str, int, float, bool, None]  # noqa: UP007

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: Default ``memory_limit`` of allocations that grow with reports x candidates: 2 GiB.
MEMORY_LIMIT = 1 << 31


def check_memory(what: str, asked: int, memory_limit: int, advice: str = "") -> None:
    """Raise :class:`~deniable.errors.MemoryLimitError` before allocating ``asked`` bytes
    for ``what`` when that passes ``memory_limit`` (bytes, >= 1), naming both sizes."""
    from .errors import MemoryLimitError

    limit = check_integer("memory_limit", memory_limit, minimum=1)
    if asked > limit:
        raise MemoryLimitError(
            f"{what} would take {asked:,} bytes ({asked / 2**30:.2f} GiB), over "
            f"memory_limit = {limit:,} bytes ({limit / 2**30:.2f} GiB)"
            + (f"; {advice}" if advice else ""),
            int(asked),
            limit,
        )


def check_real(name: str, value: object) -> float:
    """Return ``value`` as a finite float, or raise TypeError/ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out!r}")
    return out


def check_probability(
    name: str,
    value: object,
    *,
    low_open: bool = False,
    high_open: bool = False,
    not_equal: float | None = None,
) -> float:
    """Check a probability, returning it as float.

    Raises ValueError naming ``name`` and the allowed range (``[0, 1]``, ``(0, 1]``, ...)
    when ``value`` is outside it, or equals ``not_equal``.
    """
    p = check_real(name, value)
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    allowed = f"{lo}0, 1{hi}" + (f" and != {not_equal:g}" if not_equal is not None else "")
    bad_low = p <= 0.0 if low_open else p < 0.0
    bad_high = p >= 1.0 if high_open else p > 1.0
    if bad_low or bad_high or (not_equal is not None and p == not_equal):
        raise ValueError(f"{name} must be a probability in {allowed}, got {p!r}")
    return p


def check_integer(
    name: str, value: object, *, minimum: int, maximum: int | None = None, why: str = ""
) -> int:
    """Return ``value`` as int in ``minimum..maximum`` or raise TypeError/ValueError naming
    ``name``, the allowed range and (``why``) the reason for the largest."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    out = int(value)
    if out < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {out}")
    if maximum is not None and out > maximum:
        reason = f" ({why})" if why else ""
        raise ValueError(
            f"{name} must be an integer in {minimum}..{maximum:,}{reason}, got {out:,}"
        )
    return out


def check_confidence_level(value: object) -> float:
    """Check ``confidence_level`` lies in the open interval (0, 1)."""
    return check_probability("confidence_level", value, low_open=True, high_open=True)


def as_codes(
    name: str, values: ArrayLike, size: int, *, error: type[ValueError] = ValueError
) -> NDArray[np.integer]:
    """Return a 1-D integer (or bool viewed as uint8) array with codes in ``[0, size)``.

    Raises TypeError for a non-integer dtype and ValueError for codes out of range.
    """
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    if arr.ndim != 1:
        raise error(f"{name} must be a 1-D array of shape (n,), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(
            f"{name} must be an integer or bool array of codes 0..{size - 1}, got dtype {arr.dtype}"
        )
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            raise error(f"{name} must hold codes in 0..{size - 1}, found {bad}")
    return arr


def renamed_keywords(**renamed: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A decorator keeping old keyword names for one release: ``old=value`` becomes
    ``new=value`` with a ``DeprecationWarning`` naming the function and both names
    (CHANGELOG.md). Type checkers see the new names only.

    Raises
    ------
    TypeError
        If a call passes both the old and the new name.

    Examples
    --------
    >>> import warnings
    >>> @renamed_keywords(level="confidence_level")
    ... def width(*, confidence_level: float = 0.95) -> float:
    ...     return confidence_level
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     width(level=0.9), caught[0].category.__name__
    (0.9, 'DeprecationWarning')
    """

    def decorate(func: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(func)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            for old, new in renamed.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{func.__qualname__}: give {new}= only ({old}= is its old name)"
                    )
                warnings.warn(
                    f"{func.__qualname__}: {old}= is renamed {new}= (the package's one name "
                    f"for it); {old}= goes in the next release",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper

    return decorate

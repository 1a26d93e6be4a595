"""Which public functions the fast loop never runs.

Usage::

    python -m uv run coverage run --source=deniable -m pytest -m "not slow"
    python -m uv run python bench/fast_loop_reach.py [--data-file .coverage]

Walks every module of ``src/deniable``: each public function, and each public method of
a public class (``__init__`` and ``__call__`` included), whose body (its docstring
aside) has no line that ``coverage`` measured as run. Bodies that are only ``...`` or a
``raise`` (protocol and abstract stubs) are not counted. Prints how many there are and
names those never run.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "deniable"


def module_name(path: Path) -> str:
    parts = ["deniable", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int] | None:
    """The lines of ``fn``'s body without its docstring; None for a stub."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body:
        return None
    if len(body) == 1 and (
        isinstance(body[0], ast.Raise)
        or (
            isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and body[0].value.value is Ellipsis
        )
    ):
        return None
    lines: set[int] = set()
    for statement in body:
        lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def public_functions(
    tree: ast.Module,
) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    exported: set[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                exported = set(ast.literal_eval(node.value))
            except ValueError:
                exported = None
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_") and (
                exported is None or node.name in exported or node.decorator_list
            ):
                out.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            if exported is not None and node.name not in exported:
                continue
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not sub.name.startswith("_") or sub.name in ("__init__", "__call__")
                ):
                    out.append((f"{node.name}.{sub.name}", sub))
    return out


def main() -> None:
    import coverage

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-file", default=".coverage")
    args = ap.parse_args()
    cov = coverage.Coverage(data_file=args.data_file)
    cov.load()
    data = cov.get_data()
    ran = {Path(f).resolve(): set(data.lines(f) or ()) for f in data.measured_files()}
    total, never = 0, []
    for path in sorted(SRC.rglob("*.py")):
        executed = ran.get(path.resolve(), set())
        for qual, fn in public_functions(ast.parse(path.read_text())):
            lines = body_lines(fn)
            if lines is None:
                continue
            total += 1
            if not lines & executed:
                never.append(f"{module_name(path)}.{qual}")
    print(f"{total} public functions and methods; {len(never)} never run")
    for name in never:
        print(f"  {name}")


if __name__ == "__main__":
    main()

"""CPU time of the command line's start-up: ``deniable --help`` and every subcommand's
``--help`` against ``python -c pass``, each the median of ``--runs`` fresh processes
(user + system time of the child, from ``resource.getrusage``), and the heavy modules a
``--help`` loads. Issue 63's goal: at most 0.5 s above ``python -c pass``.

    python -m uv run python bench/cli_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

#: What a ``--help`` must not load.
HEAVY = ("pandas", "numpy", "scipy", "sqlalchemy", "pydantic", "pyarrow", "matplotlib")


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of one run of ``argv`` (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def subcommands() -> list[list[str]]:
    """Every command path of the ``deniable`` app (``["survey", "export"]``, ...)."""
    import typer

    from deniable.cli import app

    found: list[list[str]] = []

    def walk(command: object, prefix: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            found.append([*prefix, name])
            walk(sub, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return found


def loaded_by_help(path: list[str]) -> list[str]:
    """The heavy modules a fresh process has loaded after ``deniable PATH --help``."""
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom deniable.cli import app\n"
        f"CliRunner().invoke(app, {path!r} + ['--help'])\n"
        f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    script = str(Path(sys.executable).with_name("deniable"))
    base = statistics.median(cpu_seconds([sys.executable, "-c", "pass"]) for _ in range(args.runs))
    goal = base + 0.5
    print(f"python -c pass: {base:.3f} s CPU (median of {args.runs}); goal: at most {goal:.3f} s")
    print(f"{'command':<28} {'CPU s':>7} {'above':>7}  heavy modules loaded")
    worst = 0.0
    for path in [[], *subcommands()]:
        cpu = statistics.median(cpu_seconds([script, *path, "--help"]) for _ in range(args.runs))
        worst = max(worst, cpu - base)
        heavy = " ".join(loaded_by_help(path)) or "-"
        shown = " ".join(["deniable", *path, "--help"])
        print(f"{shown:<28} {cpu:7.3f} {cpu - base:7.3f}  {heavy}")
    verdict = "within" if worst <= 0.5 else "over"
    print(f"worst: {worst:.3f} s above python -c pass ({verdict} 0.5 s)")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

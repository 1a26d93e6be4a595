"""Every code block of the README and the docs runs, in the order its page gives, or is
marked as a sketch with the reason; the three ways in (docs/start/) run end to end.

A page's blocks run in one fresh working directory, one after another: ``python``
blocks in one namespace (as one would paste them into one session), ``bash``/``sh``
blocks in ``bash -euo pipefail`` with the checkout's ``deniable`` on the PATH, each
starting with the variables the blocks before it exported (as in one terminal); a
process a block leaves running is stopped when the page ends. A comment
just before a fence says more about the block:

- ``<!-- sketch: REASON -->``: not run (a cluster, a server in another terminal, the
  setup commands themselves), and the reason is required;
- ``<!-- file: NAME -->``: the block is a file the next blocks use, written as ``NAME``;
- ``<!-- expect: TEXT -->``: the block's standard output holds ``TEXT`` (spaces and
  line breaks compared as one space).

``text`` blocks are pictures in characters, not code; a fence without a language is
refused, so no block escapes by omission.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")], key=lambda p: p.relative_to(ROOT)
)
#: The three ways in, each run end to end in well under the ten minutes the issue allows.
PATHS = ["docs/start/study.md", "docs/start/analyse.md", "docs/start/telemetry.md"]
RUNS = {"python", "bash", "sh"}
NOT_CODE = {"text"}
MARK = re.compile(r"<!--\s*(sketch|file|expect|exit):\s*(.*?)\s*-->")


@dataclass
class Block:
    page: str
    line: int
    language: str
    code: str
    marks: dict[str, list[str]] = field(default_factory=dict)


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path``, each with the marks in the comments just above it."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        marks: dict[str, list[str]] = {}
        j = i - 1
        while j >= 0 and MARK.search(lines[j]):  # the comments right above the fence
            for kind, text in MARK.findall(lines[j]):
                marks.setdefault(kind, []).insert(0, text)
            j -= 1
        end = next(k for k in range(i + 1, len(lines)) if lines[k].strip().startswith("```"))
        indent = len(fence.group(1))
        code = "\n".join(line[indent:] for line in lines[i + 1 : end])
        out.append(Block(str(path.relative_to(ROOT)), i + 1, fence.group(2), code, marks))
        i = end + 1
    return out


def _environment(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["DENIABLE_ROOT"] = str(ROOT)  # the checkout, for pages that read its examples
    env["HOME"] = str(work)  # the respondent's memo and caches stay in the test's folder
    env["MPLBACKEND"] = "Agg"
    return env


def run_page(page: str, work: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run every block of ``page`` in ``work``; return the blocks skipped as sketches."""
    env = _environment(work)
    for key in [k for k in os.environ if k.startswith("DENIABLE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("DENIABLE_ROOT", str(ROOT))
    monkeypatch.setenv("HOME", str(work))
    monkeypatch.chdir(work)
    (work / "examples").symlink_to(ROOT / "examples")  # as in the checkout the README is in
    namespace: dict[str, object] = {"__name__": "__docs__"}
    sketches: list[str] = []
    sessions: list[int] = []
    try:
        _run_blocks(page, work, env, namespace, sketches, sessions)
    finally:  # a server a block started and the page did not stop
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
    return sketches


def _run_blocks(
    page: str,
    work: Path,
    env: dict[str, str],
    namespace: dict[str, object],
    sketches: list[str],
    sessions: list[int],
) -> None:
    for b in blocks(ROOT / page):
        where = f"{b.page}:{b.line}"
        if "sketch" in b.marks:
            assert all(reason for reason in b.marks["sketch"]), f"{where}: a sketch says why"
            sketches.append(where)
            continue
        if "file" in b.marks:
            (work / b.marks["file"][0]).write_text(b.code + "\n", encoding="utf-8")
            continue
        assert b.language, f"{where}: a fence names its language (text for a picture)"
        if b.language in NOT_CODE:
            continue
        assert b.language in RUNS | {"yaml", "json"}, f"{where}: unknown language {b.language}"
        assert b.language in RUNS, f"{where}: a {b.language} block is a file or a sketch"
        if b.language == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(
                    compile(b.code, where, "exec"), namespace
                )  # our own docs, as a reader pastes them
            printed = out.getvalue()
        else:
            # "python -m uv run X" in the checkout is X in its environment, which runs this
            code = re.sub(r"python -m uv run (--locked )?", "", b.code)
            state = work / ".exported"  # one terminal: what a block exports, the next has
            script = f"[ -f {state} ] && source {state}\n{code}\nexport -p > {state}\n"
            shell = subprocess.Popen(
                ["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
            sessions.append(shell.pid)
            stdout, stderr = shell.communicate(timeout=600)
            done = subprocess.CompletedProcess(shell.args, shell.returncode, stdout, stderr)
            # a block may end in a command that refuses, and says why: <!-- exit: 2 -->
            wanted = int(b.marks.get("exit", ["0"])[0])
            assert done.returncode == wanted, (
                f"{where}: exit {done.returncode}, not {wanted}\n{done.stderr[-3000:]}"
            )
            printed = done.stdout + done.stderr  # what the reader sees in the terminal
        for text in b.marks.get("expect", []):  # rich wraps tables at the pipe's width
            assert " ".join(text.split()) in " ".join(printed.split()), (
                f"{where}: {text!r} not in its output:\n{printed[-3000:]}"
            )


def test_every_fence_names_its_language_and_every_sketch_says_why():
    for page in PAGES:
        for b in blocks(page):
            where = f"{b.page}:{b.line}"
            assert b.language, f"{where}: a fence without a language"
            if "sketch" in b.marks:
                assert all(len(r) >= 12 for r in b.marks["sketch"]), f"{where}: say why"
            elif "file" not in b.marks:
                assert b.language in RUNS | NOT_CODE, f"{where}: {b.language} is a file or a sketch"


def test_the_three_ways_in_exist_and_run_no_sketch():
    for page in PATHS:
        found = blocks(ROOT / page)
        assert [b for b in found if b.language in RUNS], page
        assert not [b for b in found if "sketch" in b.marks], f"{page} runs whole"


@pytest.mark.slow  # each page a minute or more: servers, respondents, fits
@pytest.mark.parametrize(
    "page", [str(p.relative_to(ROOT)) for p in PAGES if any(
        b.language in RUNS for b in blocks(p))]
)  # fmt: skip
def test_every_code_block_of_the_page_runs_in_order(page, tmp_path, monkeypatch):
    run_page(page, tmp_path, monkeypatch)

"""Ingestion throughput and latency of the collection server, against a plain FastAPI peer.

Usage::

    python -m uv run python bench/ingest.py [--seconds 10] [--rate 500] [--postgres URL]

Targets, each a real server process on loopback, measured in this one run:

- ``baseline``: a FastAPI endpoint that only parses the request body (no storage);
- ``sqlite``: ``deniable serve`` on a fresh SQLite file (WAL, synchronous=FULL);
- ``postgresql``: ``deniable serve`` on PostgreSQL (``--postgres`` or
  ``DENIABLE_TEST_POSTGRES_URL``; skipped when neither is given).

Measures: sustained responses/s with 50 concurrent keep-alive connections (closed loop;
by ``wrk`` when installed, and by this script's asyncio client), latency p50/p99 at a
fixed open-loop request rate (latency counted from each request's scheduled send time,
so queueing is not hidden), and responses/s through the batch endpoint (1,000 per
request). Every acknowledged response is checked to be stored. Goal on a 2-core
machine: >= 2,000 responses/s sustained, p99 < 50 ms at 500 requests/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

HERE = Path(__file__).resolve().parent
TOKEN = "bench-analyst-token"
SURVEY = {
    "format": 1,
    "id": "bench",
    "version": 1,
    "title": "Ingestion benchmark",
    "privacy_budget": 4.0,
    "questions": [
        {
            "id": "drugs",
            "text": "Have you used an illegal drug?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "status",
            "text": "Marital status?",
            "choices": ["single", "married", "divorced"],
            "design": {"name": "kary-rr", "params": {"epsilon": 2.0}},
        },
    ],
}
PATH = "/api/surveys/bench/responses"
WORKERS = 1
BODY = json.dumps({"version": 1, "reports": {"drugs": 1, "status": 2}}).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(kind: str, workdir: Path, pg_url: str | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = os.environ | {"DENIABLE_ANALYST_TOKEN": TOKEN}
    if kind == "baseline":
        cmd = [sys.executable, "-m", "uvicorn", "_baseline_app:app", "--app-dir", str(HERE)]
        cmd += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    else:
        url = f"sqlite:///{workdir / 'bench.sqlite'}" if kind == "sqlite" else str(pg_url)
        env["DENIABLE_DATABASE_URL"] = url
        cmd = [str(Path(sys.executable).parent / "deniable"), "serve", "--port", str(port)]
        cmd += ["--workers", str(WORKERS)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    if kind != "baseline":
        auth = {"Authorization": f"Bearer {TOKEN}"}
        httpx.post(
            f"http://127.0.0.1:{port}/api/surveys", json=SURVEY, headers=auth
        ).raise_for_status()
    return proc, port


def request_bytes(port: int, path: str = PATH, body: bytes = BODY) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    if m:
        await reader.readexactly(int(m.group(1)))
    return status


async def closed_loop(port: int, seconds: float, connections: int = 50) -> tuple[float, int]:
    """Responses/s with ``connections`` keep-alive connections each sending back to back."""
    req = request_bytes(port)
    ok = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal ok
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.perf_counter() < deadline:
            writer.write(req)
            if await _read_response(reader) == 201:
                ok += 1
        writer.close()

    start_t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return ok / (time.perf_counter() - start_t), ok


async def open_loop(port: int, rate: float, seconds: float) -> tuple[np.ndarray, int]:
    """Latencies (s) at a fixed request rate, from each request's scheduled send time."""
    req = request_bytes(port)
    idle: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for _ in range(64):
        idle.put_nowait(await asyncio.open_connection("127.0.0.1", port))
    latencies: list[float] = []
    ok = 0

    async def one(scheduled: float) -> None:
        nonlocal ok
        reader, writer = await idle.get()
        writer.write(req)
        status = await _read_response(reader)
        latencies.append(time.perf_counter() - scheduled)
        ok += status == 201
        idle.put_nowait((reader, writer))

    n = int(rate * seconds)
    t0 = time.perf_counter() + 0.05
    tasks = []
    for i in range(n):
        scheduled = t0 + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(scheduled)))
    await asyncio.gather(*tasks)
    return np.array(latencies), ok


def wrk(port: int, seconds: float, workdir: Path) -> float | None:
    if not shutil.which("wrk"):
        return None
    script = workdir / "post.lua"
    script.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = '{BODY.decode()}'\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
    )
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            "-c50",
            f"-d{int(seconds)}s",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}{PATH}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in out:
        raise RuntimeError(out)
    return float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))  # type: ignore[union-attr]


def batch_rate(port: int, seconds: float) -> float:
    body = json.dumps(
        {
            "version": 1,
            "responses": [{"reports": {"drugs": i % 2, "status": i % 3}} for i in range(1000)],
        }
    )
    n = 0
    t0 = time.perf_counter()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
        while time.perf_counter() - t0 < seconds:
            r = c.post(
                "/api/surveys/bench/batch",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            r.raise_for_status()
            n += 1000
    return n / (time.perf_counter() - t0)


def stored(port: int) -> int:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    return int(
        httpx.get(f"http://127.0.0.1:{port}/api/surveys/bench/results", headers=auth).json()[
            "responses"
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--postgres", default=os.environ.get("DENIABLE_TEST_POSTGRES_URL"))
    ap.add_argument("--workers", type=int, default=1, help="deniable serve --workers")
    args = ap.parse_args()
    global WORKERS
    WORKERS = args.workers
    kinds = ["baseline", "sqlite"] + (["postgresql"] if args.postgres else [])
    if args.postgres:
        from sqlalchemy import create_engine, text

        from deniable.collection.storage import database_url

        eng = create_engine(database_url(args.postgres))
        with eng.begin() as conn:
            conn.execute(
                text(
                    "DROP TABLE IF EXISTS reports, invitations, surveys, schema_migrations CASCADE"
                )
            )
        eng.dispose()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            proc, port = start(kind, Path(tmp), args.postgres)
            try:
                w = wrk(port, args.seconds, Path(tmp))
                py, acked_py = asyncio.run(closed_loop(port, args.seconds))
                lat, acked_lat = asyncio.run(open_loop(port, args.rate, args.seconds))
                b = None if kind == "baseline" else batch_rate(port, min(args.seconds, 5))
                if kind != "baseline":
                    total = stored(port)
                    acked = acked_py + acked_lat
                    print(
                        f"[{kind}] stored responses: {total:,} (python clients' acknowledged: "
                        f"{acked:,}; wrk's and the batches' on top)"
                    )
                    assert total >= acked
                rows.append(
                    (kind, w, py, np.percentile(lat, 50) * 1e3, np.percentile(lat, 99) * 1e3, b)
                )
            finally:
                proc.terminate()
                proc.wait()
    base_w = rows[0][1]
    base_py = rows[0][2]
    print(
        f"\nIngestion on {os.cpu_count()} cores, {args.seconds:g} s per measurement, "
        f"open loop at {args.rate:g} req/s, deniable serve --workers {args.workers}"
    )
    print(
        f"{'target':<11} {'wrk resp/s':>11} {'x peer':>7} {'py resp/s':>10} {'x peer':>7} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'batch resp/s':>13}"
    )
    for kind, w, py, p50, p99, b in rows:
        wtxt = "-" if w is None else f"{w:,.0f}"
        wr = "-" if w is None or base_w is None else f"{w / base_w:.2f}"
        print(
            f"{kind:<11} {wtxt:>11} {wr:>7} {py:>10,.0f} {py / base_py:>7.2f} "
            f"{p50:>7.2f} {p99:>7.2f} "
            f"{'-' if b is None else f'{b:,.0f}':>13}"
        )
    for kind, w, py, _, p99, _ in rows[1:]:
        best = max(x for x in (w, py) if x is not None)
        print(
            f"goal [{kind}]: >= 2,000 responses/s: {'met' if best >= 2000 else 'NOT met'} "
            f"({best:,.0f}); p99 < 50 ms at {args.rate:g}/s: "
            f"{'met' if p99 < 50 else 'NOT met'} ({p99:.1f} ms)"
        )


if __name__ == "__main__":
    main()

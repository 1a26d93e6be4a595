"""Ingestion throughput and latency of the collection server, against a plain FastAPI peer.

Usage::

    python -m uv run python bench/ingest.py [--seconds 10] [--rate 500] [--postgres URL]

Targets, each a real server process on loopback, measured in this one run:

- ``baseline``: a FastAPI endpoint that only parses the request body (no storage);
- ``sqlite``: ``deniable serve`` on a fresh SQLite file (rollback journal,
  synchronous=FULL; responses into random slots, released in crowds);
- ``sqlite-route``: the same without the respondents' fast path (``DENIABLE_FAST_PATH=0``:
  every response through FastAPI's route; both paths share parsing, storage and the
  acknowledgement);
- ``postgresql``: ``deniable serve`` on PostgreSQL (``--postgres`` or
  ``DENIABLE_TEST_POSTGRES_URL``; skipped when neither is given).

Measures: sustained responses/s with 50 concurrent keep-alive connections (closed loop;
by ``wrk`` when installed, and by this script's asyncio client), latency p50/p99 at a
fixed open-loop request rate (latency counted from each request's scheduled send time,
so queueing is not hidden) for the two-question survey and for the campus survey
(``examples/campus.yaml``: arms, direct questions, a group design, key cells; 256
simulated devices' bodies in turn), and responses/s through the batch endpoint (1,000 per
request, with an ingestion key). For a survey with invitations: credential issuance/s
(``POST .../credentials``: the server checks and spends an invitation and blind-signs,
RFC 9474 with a 2048-bit key; the blinded messages are made before the clock starts)
and responses/s carrying those credentials (the server verifies each signature and
records its nullifier). Every acknowledged response is checked to be stored. Goals on
a 2-core machine: >= 2,000 responses/s sustained, p99 < 50 ms at 500 requests/s,
issuance >= 500/s (the server process uses one core per worker). Then
``bench/ingest_waiting.py``: the store's commit rate with 0, 10^4 and 10^5 responses
waiting against a survey without direct questions, and one release's time at 10^5.
Last ``bench/results_reads.py``: ``GET .../results`` at 10^5 released responses for a
plain survey, one with arms and one with a panel and a list question (goal: 0.5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
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
import yaml

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
INVITED = SURVEY | {"id": "bench-inv", "requires_invitation": True}
CAMPUS_FILE = HERE.parent / "examples" / "campus.yaml"
PATH = "/api/surveys/bench/responses"
CAMPUS_PATH = "/api/surveys/campus/responses"
WORKERS = 1
BODY = json.dumps({"version": 1, "reports": {"drugs": 1, "status": 2}}).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(kind: str, workdir: Path, pg_url: str | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    # every request comes from one loopback address: no per-client limit here
    env = os.environ | {"DENIABLE_ANALYST_TOKEN": TOKEN, "DENIABLE_RATE_PER_MINUTE": "0"}
    if kind == "baseline":
        cmd = [sys.executable, "-m", "uvicorn", "_baseline_app:app", "--app-dir", str(HERE)]
        cmd += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    else:
        url = str(pg_url) if kind == "postgresql" else f"sqlite:///{workdir / kind}.sqlite"
        env["DENIABLE_DATABASE_URL"] = url
        env["DENIABLE_FAST_PATH"] = "0" if kind == "sqlite-route" else "1"
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
        for survey in (SURVEY, INVITED, yaml.safe_load(CAMPUS_FILE.read_text())):
            httpx.post(
                f"http://127.0.0.1:{port}/api/surveys", json=survey, headers=auth
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


def campus_requests(port: int, devices: int = 256) -> list[bytes]:
    """Requests of ``devices`` simulated respondents to the campus survey (each device's
    arm, groups and reports as the respondent page would send them)."""
    from deniable.collection.model import load_survey
    from deniable.collection.respondent import simulate_responses

    survey = load_survey(CAMPUS_FILE)
    rng = np.random.default_rng(0)
    truths = {q.id: rng.integers(0, 2, devices) for q in survey.questions}
    return [
        request_bytes(port, CAMPUS_PATH, json.dumps({"version": survey.version} | b).encode())
        for b in simulate_responses(survey, truths, rng)
    ]


async def open_loop(
    port: int, rate: float, seconds: float, requests: list[bytes] | None = None
) -> tuple[np.ndarray, int]:
    """Latencies (s) at a fixed request rate, from each request's scheduled send time
    (``requests`` sent in turn; the two-question survey's one body by default)."""
    reqs = requests or [request_bytes(port)]
    idle: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for _ in range(64):
        idle.put_nowait(await asyncio.open_connection("127.0.0.1", port))
    latencies: list[float] = []
    ok = 0

    async def one(scheduled: float, req: bytes) -> None:
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
        tasks.append(asyncio.create_task(one(scheduled, reqs[i % len(reqs)])))
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


async def _post_all(
    port: int, path: str, bodies: list[bytes], connections: int = 50
) -> list[bytes]:
    """POST every body over ``connections`` keep-alive connections; the answers in order."""
    answers: list[bytes] = [b""] * len(bodies)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(bodies)):
        queue.put_nowait(i)

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while not queue.empty():
            i = queue.get_nowait()
            writer.write(request_bytes(port, path, bodies[i]))
            head = await reader.readuntil(b"\r\n\r\n")
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            body = await reader.readexactly(int(m.group(1))) if m else b""
            if int(head[9:12]) not in (200, 201):
                raise RuntimeError(head + body)
            answers[i] = body
        writer.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    return answers


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and all its descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(times.get(p, 0.0) for p in tree)


def credential_rates(port: int, count: int, pid: int) -> tuple[float, float, float]:
    """(credentials issued/s, responses with credentials stored/s, issued per server CPU
    second) for ``count`` invitees; the last is the rate one core would sustain."""
    from deniable.collection.credentials import (
        Credential,
        b64url,
        b64url_decode,
        finalize,
        load_public_key,
        new_credential_request,
    )

    auth = {"Authorization": f"Bearer {TOKEN}"}
    base = f"http://127.0.0.1:{port}"
    tokens = httpx.post(
        f"{base}/api/surveys/bench-inv/invitations", json={"count": count}, headers=auth, timeout=60
    ).json()["tokens"]
    key = load_public_key(httpx.get(f"{base}/api/surveys/bench-inv").json()["credential_key"])
    requests = [new_credential_request(key) for _ in tokens]
    bodies = [  # as the page and the terminal client send it: with the link's version
        json.dumps({"token": t, "blinded_msg": b64url(blinded), "version": 1}).encode()
        for t, (blinded, _) in zip(tokens, requests, strict=True)
    ]
    t0 = time.perf_counter()
    cpu0 = cpu_seconds(pid)
    answers = asyncio.run(_post_all(port, "/api/surveys/bench-inv/credentials", bodies))
    issued = count / (time.perf_counter() - t0)
    per_core = count / (cpu_seconds(pid) - cpu0)
    responses = []
    for (_, state), answer in zip(requests, answers, strict=True):
        blind_sig = b64url_decode(json.loads(answer)["blind_sig"], "blind_sig", 512)
        credential = Credential(state.prepared, finalize(key, state, blind_sig)).to_json()
        body = {"version": 1, "credential": credential, "reports": {"drugs": 1, "status": 2}}
        responses.append(json.dumps(body).encode())
    t0 = time.perf_counter()
    asyncio.run(_post_all(port, "/api/surveys/bench-inv/responses", responses))
    stored_rate = count / (time.perf_counter() - t0)
    got = int(httpx.get(f"{base}/api/surveys/bench-inv/results", headers=auth).json()["responses"])
    assert got == count, (got, count)
    return issued, stored_rate, per_core


def batch_rate(port: int, seconds: float) -> float:
    body = json.dumps(
        {
            "version": 1,
            "responses": [{"reports": {"drugs": i % 2, "status": i % 3}} for i in range(1000)],
        }
    )
    n = 0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        key = c.post("/api/surveys/bench/ingestion-keys", headers=auth).json()["key"]
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            r = c.post("/api/surveys/bench/batch", content=body, headers=headers)
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
    ap.add_argument(
        "--invitees", type=int, default=3000, help="credentials issued and spent per target"
    )
    args = ap.parse_args()
    global WORKERS
    WORKERS = args.workers
    kinds = ["baseline", "sqlite", "sqlite-route"] + (["postgresql"] if args.postgres else [])
    if args.postgres:
        from sqlalchemy import create_engine, text

        from deniable.collection.store._storage import database_url

        eng = create_engine(database_url(args.postgres))
        with eng.begin() as conn:  # every table, whatever the schema grows to
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        eng.dispose()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            proc, port = start(kind, Path(tmp), args.postgres)
            try:
                w = wrk(port, args.seconds, Path(tmp))
                py, acked_py = asyncio.run(closed_loop(port, args.seconds))
                lat, acked_lat = asyncio.run(open_loop(port, args.rate, args.seconds))
                arms_p99 = None
                if kind != "baseline":  # the campus survey: arms, direct answers, key cells
                    campus = campus_requests(port)
                    lat_arms, acked_arms = asyncio.run(
                        open_loop(port, args.rate, args.seconds, campus)
                    )
                    assert acked_arms == len(lat_arms), f"{kind}: campus responses refused"
                    arms_p99 = np.percentile(lat_arms, 99) * 1e3
                b = None if kind == "baseline" else batch_rate(port, min(args.seconds, 5))
                cred = (
                    (None, None, None)
                    if kind == "baseline"
                    else credential_rates(port, args.invitees, proc.pid)
                )
                if kind != "baseline":
                    total = stored(port)
                    acked = acked_py + acked_lat
                    print(
                        f"[{kind}] stored responses: {total:,} (python clients' acknowledged: "
                        f"{acked:,}; wrk's and the batches' on top)"
                    )
                    assert total >= acked
                rows.append(
                    (
                        kind,
                        w,
                        py,
                        np.percentile(lat, 50) * 1e3,
                        np.percentile(lat, 99) * 1e3,
                        arms_p99,
                        b,
                        *cred,
                    )
                )
            finally:
                proc.terminate()
                proc.wait()
    base_w = rows[0][1]
    base_py = rows[0][2]
    print(
        f"\nIngestion on {os.cpu_count()} cores ({platform.machine()}, load "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end), {args.seconds:g} s "
        f"per measurement, open loop at {args.rate:g} req/s, deniable serve --workers "
        f"{args.workers}"
    )
    print(
        f"{'target':<12} {'wrk resp/s':>11} {'x peer':>7} {'py resp/s':>10} {'x peer':>7} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'p99 arms':>8} {'batch resp/s':>13} {'issued/s':>9} "
        f"{'cred resp/s':>12} {'x peer':>7} {'issued/core-s':>14}"
    )
    for kind, w, py, p50, p99, p99_arms, b, issued, cred, core in rows:
        wtxt = "-" if w is None else f"{w:,.0f}"
        wr = "-" if w is None or base_w is None else f"{w / base_w:.2f}"
        print(
            f"{kind:<12} {wtxt:>11} {wr:>7} {py:>10,.0f} {py / base_py:>7.2f} "
            f"{p50:>7.2f} {p99:>7.2f} {'-' if p99_arms is None else f'{p99_arms:.2f}':>8} "
            f"{'-' if b is None else f'{b:,.0f}':>13} "
            f"{'-' if issued is None else f'{issued:,.0f}':>9} "
            f"{'-' if cred is None else f'{cred:,.0f}':>12} "
            f"{'-' if cred is None else f'{cred / base_py:.2f}':>7} "
            f"{'-' if core is None else f'{core:,.0f}':>14}"
        )
    for kind, w, py, _, p99, p99_arms, _, issued, cred, core in rows[1:]:
        best = max(x for x in (w, py) if x is not None)
        worst = max(p99, p99_arms)
        print(
            f"goal [{kind}]: >= 2,000 responses/s: {'met' if best >= 2000 else 'NOT met'} "
            f"({best:,.0f}; with credentials {cred:,.0f}); p99 < 50 ms at {args.rate:g}/s: "
            f"{'met' if worst < 50 else 'NOT met'} ({p99:.1f} ms; campus {p99_arms:.1f} ms); "
            "issuance >= 500/s on one "
            f"core: {'met' if core >= 500 else 'NOT met'} ({core:,.0f} per server CPU second; "
            f"{issued:,.0f}/s with the load generator on the same cores)"
        )
    # the store's rates and one release's time with 0, 10^4 and 10^5 responses waiting
    sys.path.insert(0, str(HERE))
    import ingest_waiting

    ingest_waiting.main(commits=1000)
    # the results' reads at 10^5 released responses: plain, with arms, panel and list
    import results_reads

    results_reads.main([])


if __name__ == "__main__":
    main()

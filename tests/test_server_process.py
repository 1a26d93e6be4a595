"""A real `deniable serve` process on loopback: concurrency, SIGKILL mid-load, the
terminal respondent client. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from deniable.collection.server._live import free_port

from .conftest import ANALYST, AUTH, SURVEY, http_credential

DEANIABLE = str(Path(sys.executable).parent / "deniable")

#: Four 10-choice questions: a response's reports spell a number 0..9999, so every
#: stored response can be matched to the request that sent it.
DIGITS = {
    "format": 1,
    "id": "digits",
    "version": 1,
    "title": "Load test",
    "privacy_budget": 4.0,
    "questions": [
        {
            "id": f"d{i}",
            "text": f"digit {i}",
            "choices": [str(j) for j in range(10)],
            "design": {"name": "kary-rr", "params": {"epsilon": 1.0}},
        }
        for i in range(4)
    ],
}


def encode(n: int) -> dict:
    return {"version": 1, "reports": {f"d{i}": (n // 10**i) % 10 for i in range(4)}}


class Server:
    def __init__(
        self, url: str, tmp: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
    ) -> None:
        self.url, self.tmp = url, tmp
        self.extra_env, self.args = env or {}, args
        self.proc: subprocess.Popen | None = None
        self.base = ""

    def start(self) -> None:
        port = free_port()
        env = (
            os.environ
            | {
                "DENIABLE_ANALYST_TOKEN": ANALYST,
                "DENIABLE_DATABASE_URL": self.url,
                # the load tests send thousands of responses from one loopback address
                "DENIABLE_RATE_PER_MINUTE": "0",
            }
            | self.extra_env
        )
        self.proc = subprocess.Popen(
            [DEANIABLE, "serve", "--port", str(port), *self.args],
            cwd=self.tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.tmp / "server.log", "ab"),  # noqa: SIM115
        )
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError((self.tmp / "server.log").read_text())

    def kill(self) -> None:
        assert self.proc
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        log = self.tmp / "server.log"
        if log.exists():  # pytest shows it beside a failure
            print("server log (last 40 lines):", *log.read_text().splitlines()[-40:], sep="\n")


@pytest.fixture
def server(database_url, tmp_path):
    s = Server(database_url, tmp_path)
    s.start()
    yield s
    s.stop()


def stored_numbers(server: Server) -> list[int]:
    """Every stored response's number: those released (the export) and those waiting in
    their slots for a crowd (read from the database, as only a test may).

    The server releases waiting responses on its own (after a pause in arrivals), so the
    export is read between two reads of the waiting slots and the whole read is repeated
    until both agree: no release ran in between, and nothing is counted twice or missed."""
    import io

    import pandas as pd

    for _ in range(50):
        before = waiting_numbers(server)
        frame = httpx.get(f"{server.base}/api/surveys/digits/export", headers=AUTH, timeout=60)
        after = waiting_numbers(server)
        if before == after:
            df = pd.read_csv(io.StringIO(frame.text))
            wide = df.pivot(index="response_id", columns="question_id", values="report")
            released = [
                int(sum(int(row[f"d{i}"]) * 10**i for i in range(4))) for _, row in wide.iterrows()
            ]
            return sorted(released + after)
        time.sleep(0.3)
    raise AssertionError("the waiting slots kept changing while no response was sent")


def waiting_numbers(server: Server) -> list[int]:
    """The numbers of the responses waiting in their slots for a crowd, sorted."""
    from sqlalchemy import select

    from deniable.collection.store._schema import staging
    from deniable.collection.store._staging import unpack
    from deniable.collection.store._storage import Store

    store = Store(server.url)
    try:
        with store.connection() as conn:
            payloads = conn.execute(
                select(staging.c.payload).where(staging.c.filled.is_(True))
            ).scalars()
            waiting = [unpack(bytes(p)) for p in payloads]
    finally:
        store.close()
    return sorted(
        sum(c * 10**i for i, c in enumerate(w.codes)) for w in waiting if w.survey_id == "digits"
    )


async def load(base: str, numbers: list[list[int]], acked: list[int], stop_on_error: bool) -> None:
    """One client (one keep-alive connection) per list of ``numbers``, each sending its
    numbers one after another. Separate clients, as separate respondents are: a shared
    pool would hand a worker a connection another left idle, and uvicorn closes a
    connection idle for 5 s, a race that loses the request in the client (httpx
    ReadError) before the server reads it."""

    async def worker(mine: list[int]) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            for n in mine:
                try:
                    r = await client.post("/api/surveys/digits/responses", json=encode(n))
                except httpx.HTTPError:
                    if stop_on_error:
                        return
                    raise
                if r.status_code == 201:
                    acked.append(n)
                else:
                    assert stop_on_error, r.text

    await asyncio.gather(*(worker(m) for m in numbers))


def test_openapi_and_flow_on_a_real_process(server):
    doc = httpx.get(f"{server.base}/openapi.json").json()
    assert doc["info"]["title"] == "deniable collection server"
    assert httpx.post(f"{server.base}/api/surveys", json=SURVEY, headers=AUTH).status_code == 201
    r = httpx.post(
        f"{server.base}/api/surveys/health/responses",
        json={"version": 1, "reports": {"drugs": 1, "status": 1}},
    )
    assert r.status_code == 201
    assert httpx.get(f"{server.base}/s/health").status_code == 200


@pytest.mark.slow
def test_fifty_concurrent_clients_two_hundred_responses_each(server):
    assert httpx.post(f"{server.base}/api/surveys", json=DIGITS, headers=AUTH).status_code == 201
    numbers = [list(range(c * 200, (c + 1) * 200)) for c in range(50)]
    acked: list[int] = []
    asyncio.run(load(server.base, numbers, acked, stop_on_error=False))
    assert len(acked) == 10_000
    assert stored_numbers(server) == list(range(10_000))  # each exactly once


@pytest.mark.slow
def test_sigkill_mid_load_loses_no_acknowledged_response(server):
    """Three SIGKILLs, each after 300 more acknowledged responses from 20 clients: every
    acknowledged response is stored once (released, or waiting for its crowd)."""
    assert httpx.post(f"{server.base}/api/surveys", json=DIGITS, headers=AUTH).status_code == 201
    acked: list[int] = []
    sent: set[int] = set()
    in_flight = 0
    for kill in range(3):
        # disjoint numbers per round (a response spells a number below 10,000)
        numbers = [
            list(range(kill * 3000 + c * 150, kill * 3000 + (c + 1) * 150)) for c in range(20)
        ]
        sent |= {n for m in numbers for n in m}
        in_flight += len(numbers)
        before = len(acked)

        async def scenario(numbers=numbers, before=before) -> None:
            task = asyncio.create_task(load(server.base, numbers, acked, stop_on_error=True))
            while len(acked) < before + 300:
                await asyncio.sleep(0.01)
            server.kill()
            await task

        asyncio.run(scenario())
        assert before + 300 <= len(acked) < before + 3000  # killed in the middle
        server.start()
        stored = stored_numbers(server)
        assert len(stored) == len(set(stored))  # nothing duplicated
        assert set(acked) <= set(stored)  # every acknowledged response survived
        assert set(stored) <= sent
        # at most one in-flight request per client was committed without its acknowledgement
        assert len(stored) - len(acked) <= in_flight


@pytest.mark.slow
def test_terminal_respondent_client(server):
    invited = SURVEY | {"requires_invitation": True}
    httpx.post(f"{server.base}/api/surveys", json=invited, headers=AUTH).raise_for_status()
    tokens = httpx.post(
        f"{server.base}/api/surveys/health/invitations", json={"count": 3}, headers=AUTH
    ).json()["tokens"]
    url = f"{server.base}/s/health#token={tokens[0]}"
    # answers by number and by label (any case); a wrong one is asked again
    out = subprocess.run(
        [DEANIABLE, "respond", url],
        input="2\nwed\nMarried\ny\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr + out.stdout
    assert "The server will receive only these reports" in out.stdout and "Stored" in out.stdout
    assert "(epsilon 1.10 nats)" in out.stdout and "or one of: single, married" in out.stderr
    res = httpx.get(f"{server.base}/api/surveys/health/results", headers=AUTH).json()
    assert res["responses"] == 1
    # a used invitation is refused before any question is asked
    again = subprocess.run(
        [DEANIABLE, "respond", url, "--yes"],
        input="1\n1\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2 and "already been used" in again.stderr
    assert "1. Have you used" not in again.stdout
    # the end of input stops cleanly; nothing is sent
    eof = subprocess.run(
        [DEANIABLE, "respond", f"{server.base}/s/health#token={tokens[1]}"],
        input="1\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert eof.returncode == 0 and "nothing was sent" in eof.stdout
    # --json: prompts on stderr, one JSON object on stdout
    as_json = subprocess.run(
        [DEANIABLE, "respond", f"{server.base}/s/health#token={tokens[2]}", "--yes", "--json"],
        input="no\nsingle\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert as_json.returncode == 0, as_json.stderr
    sent = json.loads(as_json.stdout)
    assert sent["survey"] == "health" and set(sent["sent"]) == {"drugs", "status"}
    res = httpx.get(f"{server.base}/api/surveys/health/results", headers=AUTH).json()
    assert res["responses"] == 2


def test_one_credential_fifty_concurrent_submissions_stores_once(server):
    invited = SURVEY | {"requires_invitation": True}
    httpx.post(f"{server.base}/api/surveys", json=invited, headers=AUTH).raise_for_status()
    (token,) = httpx.post(
        f"{server.base}/api/surveys/health/invitations", json={"count": 1}, headers=AUTH
    ).json()["tokens"]
    with httpx.Client(base_url=server.base, timeout=60) as http:
        credential = http_credential(http, "health", token)
    body = {"version": 1, "credential": credential, "reports": {"drugs": 1, "status": 0}}

    async def race() -> list[int]:
        async with httpx.AsyncClient(base_url=server.base, timeout=60) as client:
            answers = await asyncio.gather(
                *(client.post("/api/surveys/health/responses", json=body) for _ in range(50))
            )
        return [a.status_code for a in answers]

    codes = asyncio.run(race())
    assert sorted(codes) == [201] + [403] * 49
    res = httpx.get(f"{server.base}/api/surveys/health/results", headers=AUTH).json()
    assert res["responses"] == 1

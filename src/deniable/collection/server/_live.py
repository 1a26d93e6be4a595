"""Running the collection server in-process, and the live demo.

:func:`serve_in_thread` starts the real server (uvicorn) on a loopback port inside the
current process; :func:`live_demo` publishes a
survey to a fresh server on a temporary SQLite database, drives simulated respondents
drawn from the UCI Adult population through the HTTP API, and reads back the live
estimates. Each simulated respondent follows the real protocol: it exchanges its own
invitation for a blind-signature credential
(:func:`~deniable.collection.respondent.request_credential`), randomizes on its device, and
sends the reports with the credential.
"""

from __future__ import annotations

import functools
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import uvicorn

from ...data import load_adult
from ..respondent import design_from_view, request_credential
from ..store import Store
from ..study import StudyRow, run_study
from ._app import create_app
from ._http_protocol import HeaderDeadlineProtocol

__all__ = ["DEMO_SURVEY", "LiveDemoResult", "LiveRow", "free_port", "live_demo", "serve_in_thread"]

#: The survey the live demo publishes (UCI Adult attributes as sensitive questions).
DEMO_SURVEY: dict[str, Any] = {
    "format": 1,
    "id": "adult-demo",
    "version": 1,
    "title": "A private survey of the UCI Adult population",
    "description": "Simulated respondents from the 1994 US census extract.",
    "privacy_budget": 4.5,
    "requires_invitation": True,
    "questions": [
        {
            "id": "income",
            "text": "Is your income over $50K a year?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "divorced",
            "text": "Are you divorced?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "marital",
            "text": "What is your marital status?",
            "choices": [
                "Divorced",
                "Married-AF-spouse",
                "Married-civ-spouse",
                "Married-spouse-absent",
                "Never-married",
                "Separated",
                "Widowed",
            ],
            "design": {"name": "kary-rr", "params": {"epsilon": 2.0}},
        },
    ],
}


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_in_thread(
    store: Store, analyst_token: str, host: str = "127.0.0.1", port: int | None = None
) -> Iterator[str]:
    """Run the server in a background thread; yield its base URL; stop it on exit.

    Parameters
    ----------
    store : Store
    analyst_token : str
        At least :data:`MIN_TOKEN_CHARS` characters.
    host : str, default "127.0.0.1"
    port : int, optional
        Default: a free port.

    Returns
    -------
    contextlib context manager of str
        The base URL (``http://host:port``) while the server runs.

    Raises
    ------
    RuntimeError
        If the server does not start within its deadline.

    Examples
    --------
    >>> import tempfile, pathlib, httpx
    >>> from deniable.collection.server import serve_in_thread
    >>> from deniable.collection.store import Store
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> with serve_in_thread(store, "t" * 32) as base:
    ...     status = httpx.get(f"{base}/api/surveys/nope").status_code
    >>> status
    404
    """
    port = port or free_port()
    config = uvicorn.Config(
        create_app(store, analyst_token=analyst_token),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        http=HeaderDeadlineProtocol,
        proxy_headers=False,  # as `deniable serve` without --forwarded-allow-ips
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@dataclass(frozen=True)
class LiveRow:
    """One live estimate beside the truth."""

    question: str
    category: str
    n: int
    estimate: float
    std_error: float
    low: float
    high: float
    respondents_rate: float
    population_rate: float

    @property
    def covered(self) -> bool:
        """Whether the interval contains the respondents' true rate."""
        return self.low <= self.respondents_rate <= self.high


@dataclass(frozen=True)
class LiveDemoResult:
    """What the live demo measured: the server's address and database, the time the
    respondents took, each question's live estimate beside the population's truth
    (``rows``) and the study's (``study``).

    Examples
    --------
    See :func:`live_demo`.
    """

    base_url: str
    results_url: str
    database: str
    respondents: int
    seconds: float
    rows: list[LiveRow]
    #: the analyst token of this demo server (for the results page's login form)
    analyst_token: str = ""
    #: the study's estimates beside the truths (:mod:`deniable.collection.study`)
    study: list[StudyRow] = field(default_factory=list)


def _truth_codes(view: dict[str, Any], people: Any) -> dict[str, np.ndarray]:
    marital = view["questions"][2]["choices"]
    return {
        "income": (people["income"] == ">50K").to_numpy(dtype=np.int64),
        "divorced": (people["marital-status"] == "Divorced").to_numpy(dtype=np.int64),
        "marital": people["marital-status"].map({v: i for i, v in enumerate(marital)}).to_numpy(),
    }


def live_demo(
    respondents: int = 3000,
    *,
    seed: int | None = None,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    keep_serving: Callable[[LiveDemoResult], None] | None = None,
    clients: int = 8,
) -> LiveDemoResult:
    """Collect a survey over HTTP from simulated UCI Adult respondents.

    Starts the server on a SQLite database, publishes :data:`DEMO_SURVEY`, randomizes
    each sampled person's answers client-side, submits each response with its own POST,
    and reads the live results back.

    Parameters
    ----------
    respondents : int, default 3000
        People sampled from UCI Adult, each answering with a POST of their own.
    seed : int, optional
        Seeds the simulated devices (default: the secure source).
    workdir : pathlib.Path, optional
        Where the SQLite database goes (default: a temporary folder).
    progress : callable, optional
        Called with a line of text at each step.
    keep_serving : callable, optional
        Called with the result while the server still runs (for example to wait until
        the user presses Ctrl-C); the server stops when it returns.
    clients : int, default 8
        Concurrent HTTP clients.

    Returns
    -------
    LiveDemoResult

    Examples
    --------
    >>> from deniable.collection.server import live_demo
    >>> result = live_demo(40, seed=0, clients=1)
    >>> result.respondents, result.rows[0].question
    (40, 'Is your income over $50K a year?')
    """
    people_all = load_adult()
    sampler = np.random.default_rng(seed)
    rng = np.random.default_rng(seed + 1) if seed is not None else None
    idx = sampler.choice(len(people_all), size=respondents, replace=False)
    people = people_all.iloc[idx]
    tmp = tempfile.TemporaryDirectory(prefix="deniable-demo-") if workdir is None else None
    folder = Path(tmp.name) if tmp else Path(workdir or ".")
    db = folder / "demo.sqlite"
    token = secrets.token_urlsafe(24)
    store = Store(f"sqlite:///{db}")
    try:
        with serve_in_thread(store, token) as base, httpx.Client(base_url=base, timeout=30) as http:
            auth = {"Authorization": f"Bearer {token}"}
            http.post("/api/surveys", json=DEMO_SURVEY, headers=auth).raise_for_status()
            view = http.get(f"/api/surveys/{DEMO_SURVEY['id']}").json()
            truths = _truth_codes(view, people)
            population = _truth_codes(view, people_all)
            # every simulated device randomizes its own answers (vectorised here)
            reports = {
                q["id"]: design_from_view(q).randomize(truths[q["id"]], rng)
                for q in view["questions"]
            }
            if progress:
                progress(f"{respondents} respondents answering over HTTP")
            start = time.perf_counter()

            _answer_over_http(http, auth, view, reports, respondents, clients)
            seconds = time.perf_counter() - start
            http.post(f"/api/surveys/{DEMO_SURVEY['id']}/close", headers=auth).raise_for_status()
            res = http.get(f"/api/surveys/{DEMO_SURVEY['id']}/results", headers=auth).json()
            rows = _live_rows(res, truths, population)
            if progress:
                progress("a study in two arms and two groups")

            call = functools.partial(_call, http, auth)
            study = run_study(
                call,
                lambda path: call(path, None, None),
                people,
                rng if rng is not None else np.random.default_rng(),
            )
            result = LiveDemoResult(
                base_url=base,
                results_url=f"{base}/surveys/{DEMO_SURVEY['id']}/results",
                analyst_token=token,
                database=str(db),
                respondents=respondents,
                seconds=seconds,
                rows=rows,
                study=study,
            )
            if keep_serving:
                keep_serving(result)
            return result
    finally:
        store.close()
        if tmp:
            tmp.cleanup()


def _call(
    http: httpx.Client, auth: dict[str, str], path: str, body: dict[str, Any] | None,
    key: str | None,
) -> Any:  # fmt: skip
    """POST ``body`` (GET without one) as the analyst, or with an ingestion ``key``."""
    headers = {"Authorization": f"Bearer {key}"} if key else auth
    r = (
        http.post(path, json=body, headers=headers)
        if body is not None
        else http.get(path, headers=headers)
    )
    r.raise_for_status()
    return r.json()


def _answer_over_http(
    http: Any,
    auth: dict[str, str],
    view: dict[str, Any],
    reports: dict[str, Any],
    respondents: int,
    clients: int,
) -> None:
    """Invite every respondent, then send each response with its own POST (after
    spending its invitation for a blind-signed credential) from ``clients`` threads.
    The live demo then closes the survey (the field period ends): the close makes the
    last release and withholds what still waits."""
    invitations = http.post(
        f"/api/surveys/{DEMO_SURVEY['id']}/invitations",
        json={"count": respondents},
        headers=auth,
    )
    invitations.raise_for_status()
    tokens = invitations.json()["tokens"]

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = http.post(path, json=body)
        r.raise_for_status()
        answer: dict[str, Any] = r.json()
        return answer

    def send(i: int) -> None:
        credential = request_credential(view, tokens[i], post)
        body = {
            "version": 1,
            "credential": credential.to_json(),
            "reports": {k: int(v[i]) for k, v in reports.items()},
        }
        post(f"/api/surveys/{DEMO_SURVEY['id']}/responses", body)

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(send, range(respondents)))


def _live_rows(
    res: dict[str, Any], truths: dict[str, Any], population: dict[str, Any]
) -> list[LiveRow]:
    """A row per category ("yes" only for a binary question): the server's estimate and
    interval beside the respondents' and the population's true rates."""
    rows: list[LiveRow] = []
    for q in res["questions"]:
        k = len(q["categories"])
        for j in range(1 if k == 2 else 0, k):
            rows.append(
                LiveRow(
                    question=q["text"],
                    category=q["categories"][j],
                    n=q["n"],
                    estimate=q["estimate"][j],
                    std_error=q["std_error"][j],
                    low=q["interval"]["low"][j],
                    high=q["interval"]["high"][j],
                    respondents_rate=float(np.mean(truths[q["id"]] == j)),
                    population_rate=float(np.mean(population[q["id"]] == j)),
                )
            )
    return rows

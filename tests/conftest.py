"""Shared fixtures. Every simulation uses a fixed seed; tolerances come from exact variances."""

from __future__ import annotations

import ast
import gc
import os

import anyio
import numpy as np
import pytest

# pytest-xdist's workers start with COLUMNS=80, and rich's consoles (the CLI's are made
# at import) keep a COLUMNS they find at creation for good: without it they read the
# width at each use, so a test's ``env={"COLUMNS": ...}`` holds under -n as without.
os.environ.pop("COLUMNS", None)

#: Two-sided z for a false-failure rate of about 6e-5 per assertion (4 sigma).
Z4 = 4.0


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)


def parse_python(source: str) -> ast.Module:
    """``ast.parse`` with the garbage collector paused. CPython before 3.11.8 raises
    ``SystemError: AST constructor recursion depth mismatch`` when a finalizer runs
    during the parse (python/cpython#106905): here, a collection server task an earlier
    test's event loop left pending, destroyed by a collection mid-parse. (No
    collection first: a full one per file cost 90 s of the fast loop, and with the
    collector off nothing else runs a finalizer during the parse.)"""
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        gc.enable()


def numeric_gradient(value, theta: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar function ``value`` at ``theta``, shape of theta."""
    out = np.empty_like(theta)
    for i in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[i] += step
        down[i] -= step
        out[i] = (value(up) - value(down)) / (2 * step)
    return out


# -- collection service --------------------------------------------------------------
import shutil  # noqa: E402
import tempfile  # noqa: E402

# `deniable respond` keeps its memo of reports in the user's data directory: the tests
# (and the server and client processes they start) use a directory of their own
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="deniable-test-data-")

from sqlalchemy import create_engine, text  # noqa: E402


def _database_of_this_worker(url: str) -> str:
    """``url`` itself, or under pytest-xdist (``-n 2``) a database of this worker's own
    beside it (``deniable_test_gw0``, created if missing): two workers resetting one
    database's schema would drop each other's tables mid-test."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not url or not worker:
        return url
    from sqlalchemy.engine import make_url

    from deniable.collection.store._storage import database_url

    own = make_url(url).set(database=f"{make_url(url).database}_{worker}")
    engine = create_engine(database_url(url), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        known = conn.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": own.database}
        ).first()
        if known is None:
            conn.execute(text(f'CREATE DATABASE "{own.database}"'))
    engine.dispose()
    return own.render_as_string(hide_password=False)


#: PostgreSQL for the storage and API suites; `.ci/run` installs and starts a server
#: from Debian's packages and sets this (the role may create databases: each worker of
#: ``-n 2`` has its own). Without it those parametrizations are skipped.
POSTGRES_URL = _database_of_this_worker(os.environ.get("DENIABLE_TEST_POSTGRES_URL", ""))

SURVEY: dict = {
    "format": 1,
    "id": "health",
    "version": 1,
    "title": "Health survey",
    "privacy_budget": 4.0,
    "questions": [
        {
            "id": "drugs",
            "text": "Have you used an illegal drug in the last 12 months?",
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


def reset_postgres(url: str) -> None:
    from deniable.collection.store._storage import database_url

    engine = create_engine(database_url(url))
    # every table, whatever the schema grows to (a table left out here kept one test's
    # rows for the next)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


#: Scripts that mypy checks (test_quality) and nothing runs.
collect_ignore = ["typing"]

#: Suites that start a browser, a server process or Spark: every case is slow but the
#: ones marked ``smoke``. The fast loop (``-m "not slow"``) keeps one browser case; a
#: server process (6-10 s to import the app and start) and Spark (11 s to start a JVM)
#: are over the 5 s of a fast test, so their suites run in the whole suite only.
SERVICE_SUITES = {
    "test_browser.py",
    "test_server_process.py",
    "test_spark.py",
    "test_abuse.py",
    "test_survey_cli.py",
}


#: Modules whose docstring examples run Spark (their doctests are service cases).
SPARK_EXAMPLES = {"spark.py", "_spark_search.py"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every case of :data:`SERVICE_SUITES` and every PostgreSQL case but
    those marked ``smoke``, a service suite's smoke case on SQLite only: the fast loop
    keeps one browser and one PostgreSQL case."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        postgres = "postgresql" in params.values()
        smoke = item.get_closest_marker("smoke") is not None
        service = item.path.name in SERVICE_SUITES
        if (service and (not smoke or postgres)) or (postgres and not smoke):
            item.add_marker(pytest.mark.slow)
        if item.path.name in SPARK_EXAMPLES and item.path.parent.name == "tables":
            # the Spark faces' examples start a JVM: the whole suite runs them
            item.add_marker(pytest.mark.slow)
            if shutil.which("java") is None:
                item.add_marker(pytest.mark.skip(reason="Spark needs a Java runtime"))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh, empty database: a SQLite file, or the test PostgreSQL database (reset)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.sqlite'}"
    if not POSTGRES_URL:
        pytest.skip("DENIABLE_TEST_POSTGRES_URL is not set (.ci/run starts PostgreSQL)")
    reset_postgres(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture
async def client(database_url):
    """The API in process (httpx.ASGITransport) on a fresh database; ``client.store``
    is its store. Rate limits off; bodies up to 256 KiB.

    No release schedule runs (its moments would depend on the test's speed). Instead,
    while ``client.release_before_reads`` is true (the default), every analyst read (a
    GET of results, exports, pages) is preceded by a release, as if a scheduled release
    had come between the last response and the read; the release rule is the server's
    own (whole key cells of at least ``min_release``). Tests of the release moments
    turn it off and release explicitly."""
    import httpx

    from deniable.collection.server._app import create_app
    from deniable.collection.server._security import RateLimiter
    from deniable.collection.store._storage import Store

    store = Store(database_url)
    app = create_app(
        store,
        analyst_token=ANALYST,
        max_body_bytes=256 * 1024,
        limiter=RateLimiter(0, 0),
        release_tick=None,
    )
    transport = httpx.ASGITransport(app=app)
    state = {"on": True}

    async def release_before_read(request) -> None:
        path = request.url.path
        reads = path.startswith(("/api/surveys/", "/surveys/")) and "/s/" not in path
        if state["on"] and request.method == "GET" and reads:
            await anyio.to_thread.run_sync(store.release)

    async with (
        app.router.lifespan_context(app),  # its shutdown stops the group committer
        httpx.AsyncClient(
            transport=transport,
            base_url="http://test",
            event_hooks={"request": [release_before_read]},
        ) as c,
    ):
        c.store = store  # type: ignore[attr-defined]
        c.release_state = state  # type: ignore[attr-defined]
        yield c
    store.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


ANALYST = "test-analyst-token"
AUTH = {"Authorization": f"Bearer {ANALYST}"}


def assert_error_shape(response, status: int | None = None) -> dict:
    """Every rejection carries {"error": {"status", "code", "message"}}."""
    if status is not None:
        assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert err["status"] == response.status_code
    assert isinstance(err["code"], str) and isinstance(err["message"], str) and err["message"]
    return err


def token_arm(view: dict, token: str) -> str | None:
    """The arm an anonymous invitation's device draws (and the invitation is bound to)."""
    from deniable.collection.respondent._client import arm_index, token_uniform

    arms = view.get("arms") or []
    if not arms:
        return None
    u = token_uniform(token, view["id"])
    return arms[arm_index([float(a["weight"]) for a in arms], u)]["id"]


def store_credential(store, survey_id: str, token: str):
    """The respondent's side of RFC 9474 against a store: blind, spend, finalize (in a
    study with arms, under the key of the arm the invitation is bound to)."""
    from deniable.collection.credentials import Credential, finalize, new_credential_request

    survey = store.survey(survey_id)
    arm = token_arm(survey.respondent_view(), token)
    index = survey.arm_names.index(arm) if arm is not None else None
    key = store.invitations.credential_key(survey_id, None, index)
    blinded, state = new_credential_request(key.public_key)
    signature = finalize(
        key.public_key,
        state,
        store.invitations.issue_credential(survey_id, token, blinded, None, index),
    )
    return Credential(state.prepared, signature)


def http_credential(client, survey_id: str, token: str) -> dict:
    """The respondent's side of RFC 9474 over HTTP (any httpx-like client): the
    ``credential`` object of a response."""
    from deniable.collection.respondent._client import request_credential

    view = client.get(f"/api/surveys/{survey_id}").json()

    def post(path: str, body: dict) -> dict:
        r = client.post(path, json=body)
        assert r.status_code == 201, r.text
        return r.json()

    return request_credential(view, token, post, token_arm(view, token)).to_json()


async def async_http_credential(client, survey_id: str, token: str) -> dict:
    """:func:`http_credential` for an async httpx client."""
    from deniable.collection.credentials import (
        Credential,
        b64url,
        b64url_decode,
        finalize,
        load_public_key,
        new_credential_request,
    )

    view = (await client.get(f"/api/surveys/{survey_id}")).json()
    arm = token_arm(view, token)
    key = load_public_key(view["credential_keys"][arm] if arm else view["credential_key"])
    blinded, state = new_credential_request(key)
    body = {"token": token, "blinded_msg": b64url(blinded)} | ({"arm": arm} if arm else {})
    r = await client.post(f"/api/surveys/{survey_id}/credentials", json=body)
    assert r.status_code == 201, r.text
    signature = finalize(key, state, b64url_decode(r.json()["blind_sig"], "blind_sig", 512))
    return Credential(state.prepared, signature).to_json()

"""The HTTP API in process (httpx.ASGITransport), on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import io
import json
import math

import httpx
import numpy as np
import pandas as pd
import pytest

from deniable.collection.server._app import create_app
from deniable.collection.server._security import RateLimiter
from deniable.collection.store._storage import Store
from deniable.estimation._estimators import estimate
from deniable.mechanisms._binary import ForcedResponse

from .conftest import ANALYST, AUTH, SURVEY, Z4, assert_error_shape, async_http_credential

pytestmark = pytest.mark.anyio


async def publish(client, **changes) -> dict:
    r = await client.post("/api/surveys", json=copy.deepcopy(SURVEY) | changes, headers=AUTH)
    assert r.status_code in (200, 201), r.text
    return r.json()


async def test_publish_is_idempotent_and_immutable(client):
    first = await publish(client)
    assert first["created"] is True and first["total_epsilon"] == pytest.approx(math.log(3) + 2)
    r = await client.post("/api/surveys", json=SURVEY, headers=AUTH)
    assert r.status_code == 200 and r.json()["created"] is False
    changed = copy.deepcopy(SURVEY) | {"title": "Other"}
    err = assert_error_shape(await client.post("/api/surveys", json=changed, headers=AUTH), 409)
    assert "new version" in err["message"]
    r = await client.get("/api/surveys", headers=AUTH)
    assert r.json() == [{"id": "health", "version": 1, "responses": 0}]


async def test_bad_survey_names_the_field(client):
    bad = copy.deepcopy(SURVEY)
    bad["questions"][0]["design"]["params"]["p_yes"] = 1.3
    err = assert_error_shape(await client.post("/api/surveys", json=bad, headers=AUTH), 422)
    assert err["field"] == "body.questions.0"
    assert "p_yes must be a probability in [0, 1]" in err["message"]
    over = copy.deepcopy(SURVEY) | {"privacy_budget": 1.0}
    err = assert_error_shape(await client.post("/api/surveys", json=over, headers=AUTH), 422)
    assert err["field"] == "body.privacy_budget"
    assert client.store.survey_ids() == []


async def test_analyst_endpoints_need_the_token(client):
    await publish(client)
    for method, url in [
        ("POST", "/api/surveys"),
        ("GET", "/api/surveys"),
        ("POST", "/api/surveys/health/invitations"),
        ("GET", "/api/surveys/health/results"),
        ("GET", "/api/surveys/health/export"),
        ("POST", "/api/surveys/health/ingestion-keys"),
    ]:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic eDp5"}):
            r = await client.request(method, url, headers=headers, json={})
            assert_error_shape(r, 401)
        # the analyst token in a query string is refused, even when it is right
        r = await client.request(method, url, params={"key": ANALYST}, json={})
        assert "secrets must not travel in URLs" in assert_error_shape(r, 400)["message"]
    # the results page sends a browser without a session to the login form
    page = await client.get("/surveys/health/results")
    assert page.status_code == 303 and page.headers["location"].startswith("/login?next=")
    assert (await client.get("/surveys/health/results", params={"key": ANALYST})).status_code == 400


async def test_login_sets_a_strict_http_only_session_for_reading_only(client):
    await publish(client)
    form = await client.get("/login", params={"next": "/surveys/health/results"})
    assert form.status_code == 200 and 'name="token"' in form.text
    assert "form-action 'self'" in form.headers["content-security-policy"]
    bad = await client.post("/login", data={"token": "wrong", "next": "/surveys/health/results"})
    assert bad.status_code == 401 and "not right" in bad.text and "set-cookie" not in bad.headers
    good = await client.post(
        "/login", data={"token": ANALYST, "next": "https://evil.example/surveys/health/results"}
    )
    assert good.status_code == 303 and good.headers["location"] == "/"  # no open redirect
    cookie = good.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and ANALYST.lower() not in cookie
    page = await client.get("/surveys/health/results")  # the client keeps the cookie
    assert page.status_code == 200 and "Results: Health survey" in page.text
    for name in ("content-security-policy", "x-content-type-options", "referrer-policy"):
        assert name in page.headers
    assert (await client.get("/api/surveys/health/results")).status_code == 200
    # the cookie never authorizes a write
    r = await client.post("/api/surveys/health/invitations", json={"count": 1})
    assert_error_shape(r, 401)


@pytest.mark.slow  # over 5 s on 2 cores
async def test_responses_results_and_estimates(client, rng):
    await publish(client, min_release=20)  # 400 responses: 20 crowds of 20
    view = (await client.get("/api/surveys/health")).json()
    assert view["questions"][0]["columns"] == [[0.75, 0.25], [0.25, 0.75]]
    design = ForcedResponse(p_yes=0.25, p_no=0.25)
    truths = rng.random(400) < 0.3
    reports = design.randomize(truths, rng)
    for i, rep in enumerate(reports):
        body = {"version": 1, "reports": {"drugs": int(rep), "status": i % 3}}
        r = await client.post("/api/surveys/health/responses", json=body)
        assert r.status_code == 201 and r.json() == {"stored": 1, "survey": "health", "version": 1}
    res = (await client.get("/api/surveys/health/results", headers=AUTH)).json()
    assert res["responses"] == 400
    drugs = res["questions"][0]
    expected = estimate(design, reports)
    assert drugs["estimate"] == pytest.approx(expected.estimate.tolist(), abs=1e-12)
    assert drugs["std_error"] == pytest.approx(expected.std_error.tolist(), abs=1e-12)
    # the library's one JSON shape, printed unchanged (the interval adds a name for readers)
    shape = json.loads(json.dumps(expected.to_dict(0.95)))
    assert drugs["interval"].pop("name").startswith("Feldman-Cousins")
    assert set(shape) <= set(drugs) and drugs["interval"].keys() == shape["interval"].keys()
    for key, value in shape.items():
        if key == "interval":
            for part in ("low", "high"):
                assert drugs[key][part] == pytest.approx(value[part], abs=1e-12)
            assert drugs[key]["method"] == value["method"] == "feldman_cousins"
        elif isinstance(value, list) and value and isinstance(value[0], float):
            assert drugs[key] == pytest.approx(value, abs=1e-12), key
        else:
            assert drugs[key] == value, key
    assert drugs["interval"]["low"][1] <= drugs["estimate"][1] <= drugs["interval"]["high"][1]
    # the true prevalence 0.3 within 4 standard errors
    assert abs(drugs["estimate"][1] - 0.3) < Z4 * drugs["std_error"][1]
    page = await client.get("/surveys/health/results", headers=AUTH)
    assert page.status_code == 200 and "data:image/png;base64," in page.text
    assert "400 responses" in page.text


async def test_results_page_with_an_estimate_outside_its_clipped_interval(client):
    """All "no" reports through the two coins: the unbiased estimate is -0.5 while its
    interval is clipped to [0, 1]; the page still renders (it once drew negative bars),
    says what the estimate and the SE of 0 mean, and shows the constrained MLE."""
    await publish(client, min_release=3, allow_small_release=True)
    for i in range(3):
        body = {"version": 1, "reports": {"drugs": 0, "status": i}}
        assert (await client.post("/api/surveys/health/responses", json=body)).status_code == 201
    res = (await client.get("/api/surveys/health/results", headers=AUTH)).json()
    drugs = res["questions"][0]
    assert drugs["estimate"][1] == pytest.approx(-0.5)
    assert drugs["interval"]["low"][1] == 0.0
    assert drugs["mle"][1] == pytest.approx(0.0, abs=1e-6) and min(drugs["mle"]) >= 0
    assert drugs["interval"]["method"] == "feldman_cousins"
    assert "Feldman-Cousins" in drugs["interval"]["name"] and drugs["interval"]["high"][1] > 0.5
    # -0.5, and the standard error at prevalence 0 is 0.5: within 3.29 of them, not flagged
    said = " ".join(drugs["warnings"])
    assert "flooding" not in said
    assert "1 standard error below 0" in said and "method='mle'" in said
    assert "standard error of 0" in said
    page = await client.get("/surveys/health/results", headers=AUTH)
    assert page.status_code == 200 and "data:image/png;base64," in page.text
    assert "Feldman-Cousins unified interval" in page.text and "constrained (MLE)" in page.text


async def test_an_estimate_far_outside_the_unit_interval_is_flagged(client):
    """300 "no" reports: the estimate -0.5; at prevalence 0 the standard error is
    sqrt(0.25 * 0.75 / 300) / 0.5 = 0.05, so it lies 10 of them below 0: flagged."""
    await publish(client)
    key = (await client.post("/api/surveys/health/ingestion-keys", headers=AUTH)).json()["key"]
    batch = {"version": 1, "responses": [{"reports": {"drugs": 0, "status": 0}}] * 300}
    r = await client.post(
        "/api/surveys/health/batch", json=batch, headers={"Authorization": f"Bearer {key}"}
    )
    assert r.status_code == 201
    res = (await client.get("/api/surveys/health/results", headers=AUTH)).json()
    assert "flooding" in " ".join(res["questions"][0]["warnings"])
    page = await client.get("/surveys/health/results", headers=AUTH)
    assert "check for flooding" in page.text


async def test_export_csv_and_parquet(client):
    await publish(client)
    batch = {
        "version": 1,
        "responses": [{"reports": {"drugs": i % 2, "status": i % 3}} for i in range(30)],
    }
    key = (await client.post("/api/surveys/health/ingestion-keys", headers=AUTH)).json()["key"]
    r = await client.post(
        "/api/surveys/health/batch", json=batch, headers={"Authorization": f"Bearer {key}"}
    )
    assert r.status_code == 201
    csv = await client.get("/api/surveys/health/export", headers=AUTH)
    frame = pd.read_csv(io.StringIO(csv.text))
    assert len(frame) == 60 and set(frame["question_id"]) == {"drugs", "status"}
    pq = await client.get("/api/surveys/health/export", params={"format": "parquet"}, headers=AUTH)
    pframe = pd.read_parquet(io.BytesIO(pq.content))
    assert pframe.shape == (30, 7)  # wide: one row per response
    assert set(pframe["survey"]) == {"health"} and set(frame["survey"]) == {"health"}
    assert list(pframe.columns) == [
        "survey",
        "response_id",
        "version",
        "designs_digest",
        "release",
        "drugs",
        "status",
    ]
    assert np.bincount(pframe["status"]).tolist() == [10, 10, 10]
    assert_error_shape(await client.get("/api/surveys/health/export?format=xml", headers=AUTH), 422)


async def test_invitations_give_one_unlinkable_credential_each(client):
    await publish(client, requires_invitation=True)
    r = await client.post("/api/surveys/health/invitations", json={"count": 2}, headers=AUTH)
    tokens = r.json()["tokens"]
    assert r.json()["links"][0] == f"http://test/s/health#token={tokens[0]}&v=1"  # fragment
    credential = await async_http_credential(client, "health", tokens[0])
    body = {"version": 1, "reports": {"drugs": 1, "status": 0}}
    r = await client.post("/api/surveys/health/responses", json=body | {"credential": credential})
    assert r.status_code == 201
    # the credential is spent; the invitation cannot get a second one
    err = assert_error_shape(
        await client.post("/api/surveys/health/responses", json=body | {"credential": credential}),
        403,
    )
    assert err["code"] == "invalid_credential" and "already used" in err["message"]
    blinded = {"token": tokens[0], "blinded_msg": "A" * 342}
    err = assert_error_shape(
        await client.post("/api/surveys/health/credentials", json=blinded), 403
    )
    assert "already been used" in err["message"]
    blinded["token"] = "x" * 32
    err = assert_error_shape(
        await client.post("/api/surveys/health/credentials", json=blinded), 403
    )
    assert "not valid" in err["message"]
    # no credential, a forged one, a token where a credential belongs: refused
    assert_error_shape(await client.post("/api/surveys/health/responses", json=body), 403)
    forged = credential | {"message": credential["message"][:-2] + "AA"}
    assert_error_shape(
        await client.post("/api/surveys/health/responses", json=body | {"credential": forged}), 403
    )
    assert_error_shape(
        await client.post("/api/surveys/health/responses", json=body | {"token": tokens[1]}), 422
    )
    batch = {"version": 1, "responses": [{"reports": {"drugs": 1, "status": 0}}]}
    assert_error_shape(await client.post("/api/surveys/health/batch", json=batch), 401)
    assert client.store.response_count("health") == 1


async def test_anonymous_batches_are_refused_and_store_nothing(client):
    await publish(client)
    batch = {"version": 1, "responses": [{"reports": {"drugs": 1, "status": 0}}] * 10}
    for headers in ({}, {"Authorization": "Bearer guessed"}, AUTH):
        r = await client.post("/api/surveys/health/batch", json=batch, headers=headers)
        assert "ingestion key" in assert_error_shape(r, 401)["message"]
    assert client.store.response_count("health") == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"version": 1, "reports": {"drugs": 2, "status": 0}}, None),
        ({"version": 1, "reports": {"drugs": 1}}, None),
        ({"version": 1, "reports": {"drugs": 1, "status": 0, "x": 0}}, None),
        ({"version": 1, "reports": {"drugs": "1", "status": 0}}, "body.reports.drugs"),
        ({"version": 1, "reports": {"drugs": 1.5, "status": 0}}, "body.reports.drugs"),
        ({"version": 1, "reports": {"drugs": True, "status": 0}}, "body.reports.drugs"),
        ({"version": 1, "reports": {"drugs": 1, "status": 0}, "truth": 1}, "body.truth"),
        ({"version": "1", "reports": {"drugs": 1, "status": 0}}, "body.version"),
        ({"reports": {"drugs": 1, "status": 0}}, "body.version"),
        ({"version": 1, "reports": {"Bad Id": 1}}, "body.reports.Bad Id.[key]"),
        ({"version": 1, "reports": []}, "body.reports"),
        ([1, 2], "body"),
    ],
)
async def test_malformed_responses_are_rejected_and_nothing_stored(client, body, field):
    await publish(client)
    err = assert_error_shape(await client.post("/api/surveys/health/responses", json=body), 422)
    if field:
        assert err["field"] == field
    assert client.store.released.report_count() == 0


async def test_unknown_survey_version_media_and_size(client):
    await publish(client)
    body = {"version": 1, "reports": {"drugs": 1, "status": 0}}
    assert_error_shape(await client.post("/api/surveys/nope/responses", json=body), 404)
    assert_error_shape(
        await client.post("/api/surveys/health/responses", json=body | {"version": 9}), 404
    )
    assert_error_shape(await client.get("/api/surveys/NOT%20A%20SLUG"), 422)
    assert_error_shape(
        await client.post(
            "/api/surveys/health/responses",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        ),
        422,
    )
    huge = b'{"version": 1, "reports": {"drugs": 1, "status": 0}, "pad": "' + b"x" * 300_000 + b'"}'
    assert_error_shape(
        await client.post(
            "/api/surveys/health/responses",
            content=huge,
            headers={"Content-Type": "application/json"},
        ),
        413,
    )

    async def chunks():
        for _ in range(40):
            yield b" " * 10_000

    # no Content-Length (chunked): the limit applies while reading
    assert_error_shape(
        await client.post(
            "/api/surveys/health/responses",
            content=chunks(),
            headers={"Content-Type": "application/json"},
        ),
        413,
    )
    plain = await client.post(
        "/api/surveys/health/responses",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "text/plain"},
    )
    assert assert_error_shape(plain, 422)["field"] == "body"
    assert_error_shape(await client.delete("/api/surveys/health"), 405)
    assert_error_shape(await client.get("/no/such/path"), 404)
    assert client.store.released.report_count() == 0


async def test_respondent_page_and_openapi(client):
    await publish(client)
    page = await client.get("/s/health")
    assert page.status_code == 200
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert '<script src="/static/respond.js"' in page.text
    assert "http://" not in page.text and "https://" not in page.text  # no CDN, no third party
    js = (await client.get("/static/respond.js")).text
    assert "crypto.getRandomValues" in js and "Math.random" not in js
    doc = (await client.get("/openapi.json")).json()
    assert "/api/surveys/{survey_id}/responses" in doc["paths"]
    assert "/api/surveys/{survey_id}/batch" in doc["paths"]
    # the hot path parses the body itself; its schema is still published
    post = doc["paths"]["/api/surveys/{survey_id}/responses"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["version", "reports"]
    assert schema["additionalProperties"] is False


async def test_fast_path_answers_responses_and_rejections_once(client, monkeypatch):
    """The respondents' hot path answers what it reads (stored, or rejected in the one
    error shape, validated once); chunked bodies reach the full application intact."""
    from fastapi.routing import APIRoute

    calls: list[str] = []
    original = APIRoute.handle

    async def counting(self, scope, receive, send):  # type: ignore[no-untyped-def]
        calls.append(scope["path"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(APIRoute, "handle", counting)
    await publish(client)
    calls.clear()
    body = {"version": 1, "reports": {"drugs": 1, "status": 0}}
    fast = await client.post("/api/surveys/health/responses", json=body)
    assert fast.status_code == 201 and calls == []  # answered by the fast path
    assert fast.json() == {"stored": 1, "survey": "health", "version": 1}
    assert fast.headers["content-type"] == "application/json"

    async def chunked():  # no Content-Length: the full application stores it
        yield json.dumps(body).encode()

    slow = await client.post(
        "/api/surveys/health/responses",
        content=chunked(),
        headers={"content-type": "application/json"},
    )
    assert slow.status_code == 201 and slow.json() == fast.json()
    assert calls == ["/api/surveys/health/responses"]
    bad = {"version": 1, "reports": {"drugs": 7, "status": 0}}
    assert_error_shape(await client.post("/api/surveys/health/responses", json=bad), 422)
    assert_error_shape(await client.post("/api/surveys/nope/responses", json=body), 404)
    assert len(calls) == 1  # both rejections were answered by the one write path
    assert client.store.response_count("health") == 2


async def test_the_route_and_the_fast_path_answer_byte_for_byte_alike(tmp_path):
    """With the fast path off (``fast_path=False``, ``DENIABLE_FAST_PATH=0``) every
    response goes through FastAPI's route; its acknowledgement and its rejections are
    the same bytes as the fast path's (one parsing, one acknowledgement, one insert)."""
    answers = []
    for fast in (True, False):
        store = Store(f"sqlite:///{tmp_path}/fast-{fast}.sqlite")
        app = create_app(store, analyst_token=ANALYST, limiter=RateLimiter(0, 0), fast_path=fast)
        try:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                await c.post("/api/surveys", json=SURVEY, headers=AUTH)
                got = []
                for body in (
                    {"version": 1, "reports": {"drugs": 1, "status": 0}},
                    {"version": 1, "reports": {"drugs": 7, "status": 0}},
                    {"version": 9, "reports": {"drugs": 1, "status": 0}},
                ):
                    r = await c.post("/api/surveys/health/responses", json=body)
                    got.append((r.status_code, r.headers["content-type"], r.content))
                answers.append(got)
                assert store.response_count("health") == 1
        finally:
            store.close()
    assert answers[0] == answers[1] and [a[0] for a in answers[0]] == [201, 422, 404]


async def test_open_surveys_are_rate_limited_per_client_and_per_bucket(database_url):
    """A client may send 3 responses (burst) to an open survey, then gets 429; the
    survey's cap per bucket stops everyone at 5. Nothing past a limit is stored."""
    store = Store(database_url)
    app = create_app(store, analyst_token=ANALYST, limiter=RateLimiter(3, 5))
    body = {"version": 1, "reports": {"drugs": 1, "status": 0}}
    try:
        codes = []
        for host in ("10.0.0.1", "10.0.0.2"):
            transport = httpx.ASGITransport(app=app, client=(host, 1234))
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                if host == "10.0.0.1":
                    await c.post("/api/surveys", json=SURVEY, headers=AUTH)
                for _ in range(4):
                    r = await c.post("/api/surveys/health/responses", json=body)
                    codes.append(r.status_code)
                    if r.status_code == 429:
                        assert_error_shape(r, 429)
        assert codes == [201, 201, 201, 429, 201, 201, 429, 429]
        assert store.response_count("health") == 5
    finally:
        store.close()


def test_rate_limiter_refills_and_forgets_old_clients():
    limiter = RateLimiter(60, 0, max_clients=2)  # one a second, burst 60
    for _ in range(60):
        limiter.check("s", "a", now=0.0)
    with pytest.raises(Exception, match="too many"):
        limiter.check("s", "a", now=0.5)
    limiter.check("s", "a", now=1.6)  # refilled by one
    limiter.check("s", "b", now=2.0)
    limiter.check("s", "c", now=2.0)  # "a" is forgotten: at most 2 clients in memory
    assert len(limiter._clients) == 2
    assert all(len(k) == 16 for k in limiter._clients)  # keyed by an HMAC, not the address


def test_rate_limiter_keys_ipv6_clients_by_their_64_prefix():
    """Every address of one /64 is one client (a subscriber picks its interface ids);
    another /64, an IPv4 address and its IPv4-mapped form are keyed as expected."""
    limiter = RateLimiter(60, 0)
    for i in range(60):
        limiter.check("s", f"2001:db8:1:2:{i:x}::{i + 1:x}", now=0.0)
    with pytest.raises(Exception, match="too many"):
        limiter.check("s", "2001:db8:1:2:ffff:ffff:ffff:ffff", now=0.0)
    limiter.check("s", "2001:db8:1:3::1", now=0.0)  # the next /64 is another client
    for _ in range(60):
        limiter.check("s", "192.0.2.7", now=0.0)
    with pytest.raises(Exception, match="too many"):
        limiter.check("s", "::ffff:192.0.2.7", now=0.0)


def test_short_analyst_tokens_and_worker_processes_without_a_token_are_refused(
    tmp_path, monkeypatch
):
    from typer.testing import CliRunner

    from deniable.cli import app as cli

    store = Store(f"sqlite:///{tmp_path / 'short.sqlite'}")
    with pytest.raises(ValueError, match="at least 16 characters"):
        create_app(store, analyst_token="secret")
    store.close()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DENIABLE_ANALYST_TOKEN", "secret")
    out = CliRunner().invoke(cli, ["serve", "--port", "0"])
    assert out.exit_code == 2 and "at least 16 characters" in out.output
    monkeypatch.delenv("DENIABLE_ANALYST_TOKEN")
    out = CliRunner().invoke(cli, ["serve", "--port", "0", "--workers", "2"])
    assert out.exit_code == 2 and "needs DENIABLE_ANALYST_TOKEN" in out.output
    from deniable.collection.server._app import app_from_environment

    with pytest.raises(RuntimeError, match="DENIABLE_ANALYST_TOKEN is not set"):
        app_from_environment()


async def test_publishing_a_survey_with_invitations_on_postgresql_warns_of_xmin(client):
    """The warning comes when such a survey is published, not only at the server's
    start (a survey published later would otherwise go unwarned)."""
    out = await publish(client, requires_invitation=True)
    if client.store.is_sqlite:
        assert out["warnings"] == []
    else:
        (warning,) = out["warnings"]
        assert "xmin" in warning and "health" in warning
    assert (await publish(client, id="open", requires_invitation=False))["warnings"] == []

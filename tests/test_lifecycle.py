"""A survey's life through the API, in process: publish (YAML), close and reopen, revoke,
status, the release threshold, the audit log, HTML pages and every export format read
back with the estimates the server gives."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from deniable.collection.exports._export import read_export, sidecar_path
from deniable.collection.exports._formats import FORMATS
from deniable.estimation._estimators import estimate

from .conftest import AUTH, SURVEY, assert_error_shape, async_http_credential

pytestmark = pytest.mark.anyio
YAML = {**AUTH, "Content-Type": "application/yaml"}


async def _publish_yaml(client, **changes) -> dict:
    body = yaml.safe_dump(copy.deepcopy(SURVEY) | changes)
    r = await client.post("/api/surveys", content=body, headers=YAML)
    assert r.status_code in (200, 201), r.text
    return r.json()


async def _batch(client, responses: list[dict]) -> None:
    key = (await client.post("/api/surveys/health/ingestion-keys", headers=AUTH)).json()["key"]
    r = await client.post(
        "/api/surveys/health/batch",
        json={"version": 1, "responses": [{"reports": x} for x in responses]},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 201, r.text


async def test_publish_accepts_yaml_and_json_only(client):
    assert (await _publish_yaml(client))["created"] is True
    again = await client.post("/api/surveys", content=yaml.safe_dump(SURVEY), headers=YAML)
    assert again.status_code == 200 and again.json()["created"] is False
    err = assert_error_shape(
        await client.post(
            "/api/surveys", content="x", headers={**AUTH, "Content-Type": "text/plain"}
        ),
        415,
    )
    assert "application/yaml" in err["message"]
    err = assert_error_shape(
        await client.post("/api/surveys", content="id: [unclosed", headers=YAML), 422
    )
    assert "not valid YAML" in err["message"]


async def test_close_refuses_responses_and_credentials_until_reopened(client):
    await _publish_yaml(client, requires_invitation=True)
    tokens = (
        await client.post("/api/surveys/health/invitations", json={"count": 3}, headers=AUTH)
    ).json()["tokens"]
    credential = await async_http_credential(client, "health", tokens[0])
    assert (await client.post("/api/surveys/health/close", headers=AUTH)).json()["closed"]
    body = {"version": 1, "credential": credential, "reports": {"drugs": 1, "status": 0}}
    err = assert_error_shape(await client.post("/api/surveys/health/responses", json=body), 409)
    assert err["code"] == "survey_closed" and "closed" in err["message"]
    with pytest.raises(AssertionError, match="survey_closed"):
        await async_http_credential(client, "health", tokens[1])
    assert client.store.response_count("health") == 0
    status = (await client.get("/api/surveys/health/status", headers=AUTH)).json()
    assert status["closed"] is True and status["invitations"]["used"] == 1
    await client.post("/api/surveys/health/reopen", headers=AUTH)
    r = await client.post("/api/surveys/health/responses", json=body)
    assert r.status_code == 201, r.text
    # the credential of tokens[1] was refused while closed: its invitation is unspent
    await async_http_credential(client, "health", tokens[1])
    err = assert_error_shape(await client.post("/api/surveys/health/responses", json=body), 403)
    assert "already" in err["message"]


async def test_revoke_stops_unused_invitations_and_used_ones_say_so(client):
    await _publish_yaml(client, requires_invitation=True)
    links = (
        await client.post("/api/surveys/health/invitations", json={"count": 4}, headers=AUTH)
    ).json()
    assert all(link.startswith("http://test/s/health#token=") for link in links["links"])
    tokens = links["tokens"]
    await async_http_credential(client, "health", tokens[0])
    with pytest.raises(AssertionError, match="invitation_used"):
        await async_http_credential(client, "health", tokens[0])
    revoked = await client.post("/api/surveys/health/revoke", headers=AUTH)
    assert revoked.json()["revoked"] == 3
    with pytest.raises(AssertionError, match="invalid_invitation"):
        await async_http_credential(client, "health", tokens[1])
    status = (await client.get("/api/surveys/health/status", headers=AUTH)).json()
    assert status["invitations"] == {
        "issued": 4,
        "used": 1,
        "unused": 0,
        "revoked": 3,
        "named": 0,
        "anonymous": 4,
    }
    assert status["per_person"]["enforced"] is False


async def test_a_closed_surveys_page_asks_for_no_more_responses(client):
    """Closed with 4 responses waiting for a crowd of 5: the dashboard says they are
    withheld, and why, instead of asking for 1 more response it can no longer take."""
    await _publish_yaml(client, min_release=5, allow_small_release=True)
    await _batch(client, [{"drugs": 1, "status": 0}] * 4)
    assert (await client.post("/api/surveys/health/close", headers=AUTH)).status_code == 200
    page = (await client.get("/surveys/health/results", headers=AUTH)).text
    assert "more responses needed" not in page
    assert "the survey is closed, and a release adds at least 5 to each cell" in page
    assert "what waits is withheld" in page


async def test_nothing_is_released_below_min_release_and_releases_are_audited(client):
    await _publish_yaml(client, min_release=5, allow_small_release=True)
    await _batch(client, [{"drugs": 1, "status": 0}] * 4)
    res = (await client.get("/api/surveys/health/results", headers=AUTH)).json()
    for q in res["questions"]:
        assert q["released"] is False and q["missing"] == 1
        assert not {"estimate", "counts", "mle", "interval", "std_error"} & set(q)
    page = (await client.get("/surveys/health/results", headers=AUTH)).text
    assert "not released: 1 more responses needed" in page and "confidence intervals" not in page
    assert res["waiting"] == 4 and res["released"] == 0
    await _batch(client, [{"drugs": 0, "status": 1}])
    res = (await client.get("/api/surveys/health/results", headers=AUTH)).json()
    assert all(q["released"] for q in res["questions"]) and res["released"] == 5
    # reading results creates no release; the crowd of 5 was released once, by the server
    await client.get("/api/surveys/health/results", headers=AUTH)
    log = (await client.get("/api/surveys/health/audit", headers=AUTH)).json()
    releases = [e for e in log if e["action"] == "release"]
    assert len(releases) == 1 and releases[0]["detail"] == {"responses": 5, "released": 5}
    assert releases[0]["actor"] == "server" and releases[0]["version"] == 1
    assert {e["action"] for e in log} == {"publish", "release"}
    assert all(e["at"] % 3600 == 0 for e in log)  # the hour, not the second


async def test_pages_for_browsers(client):
    html = {"Accept": "text/html"}
    home = await client.get("/", headers=html)
    assert home.status_code == 200 and "Sign in" in home.text
    missing = await client.get("/s/nosuch", headers=html)
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert "no published survey" in missing.text
    api = await client.get("/api/surveys/nosuch")
    assert api.headers["content-type"] == "application/json"
    await _publish_yaml(client)
    listed = await client.get("/", headers=AUTH)
    assert "Health survey" in listed.text and "/surveys/health/results" in listed.text


async def test_version_picker_shows_each_version(client):
    await _publish_yaml(client, min_release=1, allow_small_release=True)
    await _batch(client, [{"drugs": 1, "status": 0}] * 2)
    await _publish_yaml(
        client,
        min_release=1,
        allow_small_release=True,
        version=2,
        title="Health survey, second wave",
    )
    v1 = await client.get("/surveys/health/results?version=1", headers=AUTH)
    assert "version 1" in v1.text and "2 responses to this version" in v1.text
    v2 = await client.get("/surveys/health/results", headers=AUTH)
    assert "second wave" in v2.text and 'href="/surveys/health/results?version=1"' in v2.text
    # version 2 changed only the title: pooled, its questions count version 1's reports
    key = (await client.post("/api/surveys/health/ingestion-keys", headers=AUTH)).json()["key"]
    batch = {"version": 2, "responses": [{"reports": {"drugs": 0, "status": 2}}] * 3}
    r = await client.post(
        "/api/surveys/health/batch", json=batch, headers={"Authorization": f"Bearer {key}"}
    )
    assert r.status_code == 201
    alone = (await client.get("/api/surveys/health/results", headers=AUTH)).json()
    pooled = (await client.get("/api/surveys/health/results?pooled=true", headers=AUTH)).json()
    assert [q["n"] for q in alone["questions"]] == [3, 3]
    assert [q["n"] for q in pooled["questions"]] == [5, 5] and pooled["pooled"] is True
    assert pooled["questions"][0]["counts"] == [3, 2]
    page = await client.get("/surveys/health/results?version=2&pooled=true", headers=AUTH)
    assert "<strong>pooled</strong>" in page.text


@pytest.mark.parametrize("fmt", [f.name for f in FORMATS if f.server and f.name != "survey"])
async def test_every_export_reads_back_with_the_servers_estimates(client, tmp_path, fmt):
    await _publish_yaml(client, min_release=1, allow_small_release=True)
    rng = np.random.default_rng(20261123)
    drugs, status = rng.integers(0, 2, 200), rng.integers(0, 3, 200)
    await _batch(
        client, [{"drugs": int(a), "status": int(b)} for a, b in zip(drugs, status, strict=True)]
    )
    res = (await client.get("/api/surveys/health/results", headers=AUTH)).json()
    r = await client.get(f"/api/surveys/health/export?format={fmt}", headers=AUTH)
    assert r.status_code == 200
    name = r.headers["content-disposition"].split('filename="')[1].rstrip('"')
    path = tmp_path / name
    path.write_bytes(r.content)
    side = await client.get("/api/surveys/health/export?format=survey", headers=AUTH)
    sidecar_path(path).write_bytes(side.content)
    frame, versions = read_export(path)
    assert len(frame) == 200 and [v.version for v in versions] == [1]
    for q, served in zip(versions[0].questions, res["questions"], strict=True):
        codes = frame[q.id].to_numpy(dtype=np.int64)
        again = estimate(q.mechanism, codes)
        assert again.estimate.tolist() == pytest.approx(served["estimate"], abs=1e-12)
        assert again.std_error.tolist() == pytest.approx(served["std_error"], abs=1e-12)
    log = (await client.get("/api/surveys/health/audit", headers=AUTH)).json()
    assert {"format": fmt} in [e["detail"] for e in log if e["action"] == "export"]

"""A study at every moment of its life, and an attacker who keeps every release.

The threat model (docs/collection.md, "What a release shows") says: every key cell of
direct answers, every (key cell, sensitive answer) and every (key cell, arm, sensitive
answer) grows by 0 or by at least ``min_release`` between any two releases; a key
cell's directly asked sensitive answers are never homogeneous; no export carries a
time; two exports of one release cannot be lined up by id or order. These tests attack
the released bytes (every export format read back, the results API, ``analyze``) as
someone who downloads everything after every crowd would.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._export import read_export
from deniable.collection.model._survey import load_survey
from deniable.collection.store._release_control import disclosure_plan, select_release

from .conftest import AUTH

pytestmark = pytest.mark.anyio


CAMPUS = yaml.safe_load((Path(__file__).parents[1] / "examples" / "campus.yaml").read_text())
FORMATS = ("csv", "wide", "parquet", "sav", "dta")
M = 10  # min_release of the attacked study


def campus(**changes) -> dict:
    # two versions: dq's post-randomized cheat is charged in each (lifetime 8 nats)
    return copy.deepcopy(CAMPUS) | {"min_release": M, "lifetime_budget": 8.0} | changes


def response(rng, faculty: int | None, year: int, arm: str, cheat: int) -> dict:
    """A device's body: direct answers as given, cheat as given in arm dq (its
    randomized report in arm rr), the other questions' reports at random."""
    return {
        "reports": {
            "faculty": faculty,
            "year": year,
            "cheat": cheat,
            "plagiarism": int(rng.integers(2)),
            "transplant": int(rng.integers(2)),
        },
        "arm": arm,
        "groups": {"plagiarism": int(rng.integers(2))},
    }


def crowd(rng, n: int) -> list[dict]:
    """``n`` responses of a lopsided campus: most in law and science, first and second
    years; a third in the direct arm; one in ten skips the faculty."""
    faculty = rng.choice([0, 1, 2, 3, -1], size=n, p=[0.45, 0.05, 0.3, 0.1, 0.1])
    year = rng.choice(5, size=n, p=[0.5, 0.3, 0.1, 0.05, 0.05])
    arm = rng.choice(["dq", "rr"], size=n, p=[1 / 3, 2 / 3])
    cheat = rng.random(n) < 0.3
    return [
        response(rng, None if f < 0 else int(f), int(y), str(a), int(c))
        for f, y, a, c in zip(faculty, year, arm, cheat, strict=True)
    ]


async def send(client, version: int, responses: list[dict], key: str) -> None:
    r = await client.post(
        "/api/surveys/campus/batch",
        json={"version": version, "responses": responses},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 201, r.text


async def ingestion_key(client) -> str:
    r = await client.post("/api/surveys/campus/ingestion-keys", headers=AUTH)
    assert r.status_code == 201, r.text
    return r.json()["key"]


async def walk(client) -> dict[str, int]:
    """Every page, API route and export of the study: the status of each."""
    base = "/api/surveys/campus"
    paths = [
        "/",
        "/s/campus",
        "/api/surveys/campus",
        f"{base}/status",
        f"{base}/audit",
        f"{base}/results",
        f"{base}/results?pooled=true",
        f"{base}/results?version=1",
        f"{base}/results?regress=cheat&on=faculty&on=year",
        f"{base}/results?regress=plagiarism&on=faculty",
        "/surveys/campus/results",
        "/surveys/campus/results?pooled=true",
        "/surveys/campus/results?version=1",
        "/surveys/campus/results?regress=cheat&on=faculty&on=year",
        *(f"{base}/export?format={f}" for f in (*FORMATS, "survey")),
        *(f"/surveys/campus/export?format={f}" for f in FORMATS),
    ]
    out = {}
    for path in paths:
        r = await client.get(path, headers=AUTH)
        out[path] = r.status_code
    return out


@pytest.mark.slow
async def test_every_page_route_and_export_answers_at_every_moment_of_a_study(client):
    """Publish examples/campus.yaml, first responses (waiting), a crowd that releases
    nothing (every cell small), the first release, version 2 (nothing of its own
    released), its first responses, the close with responses withheld, and a
    regression on a faculty whose every response waits: no 5xx anywhere, and the
    results say how many wait in one total, never per cell."""
    rng = np.random.default_rng(39)
    seen: dict[str, dict[str, int]] = {}
    r = await client.post("/api/surveys", json=campus(), headers=AUTH)
    assert r.status_code == 201, r.text
    seen["published"] = await walk(client)
    key = await ingestion_key(client)
    await send(client, 1, crowd(rng, 5), key)
    seen["first responses"] = await walk(client)
    res = (await client.get("/api/surveys/campus/results", headers=AUTH)).json()
    assert res["released"] == 0 and res["waiting"] == 5
    assert res["note"] == f"results come with the first release that has a key cell of {M}; 5 wait"
    # fourteen responses, each in a cell of its own (or too few to a cell): none released
    scattered = [response(rng, f % 4, f // 4, "rr", 1) for f in range(14)]
    await send(client, 1, scattered, key)
    seen["waiting, nothing releasable"] = await walk(client)
    res = (await client.get("/api/surveys/campus/results", headers=AUTH)).json()
    assert res["released"] == 0 and res["waiting"] == 19
    assert "wait" in res["note"] and "per cell" not in json.dumps(res["questions"])
    assert all("missing" in q and "counts" not in q for q in res["questions"])
    # law/first: 10 in arm rr, 10 "yes" and 10 "no" in arm dq: one release of 30
    first = [response(rng, 0, 0, "rr", i % 2) for i in range(10)]
    first += [response(rng, 0, 0, "dq", i % 2) for i in range(20)]
    await send(client, 1, first, key)
    seen["first release"] = await walk(client)
    res = (await client.get("/api/surveys/campus/results", headers=AUTH)).json()
    assert res["released"] >= 30 and "wait for a later release" in res["note"]
    report = res["disclosure"]  # released cells only, never a count of what waits
    assert report["keys"] == ["faculty", "year"]
    assert [(c["question"], c["arm"]) for c in report["channels"]] == [("cheat", "dq")]
    assert report["released_cells"] == 1 and report["released_responses"] == res["released"]
    assert report["cells"] == 25  # 5 x 5 (skipping is a category)
    assert len(set(report["released_share"].values())) == 1  # the same in every arm
    regression = res.get("regression", None)
    assert regression is None
    fit = (
        await client.get("/api/surveys/campus/results?regress=cheat&on=faculty", headers=AUTH)
    ).json()["regression"]
    assert any("medicine" in note for note in fit["notes"])  # no released medicine row
    assert not any("medicine" in term for term in fit["labels"])
    r = await client.post(
        "/api/surveys", json=campus(version=2, title="Campus, wave 2"), headers=AUTH
    )
    assert r.status_code == 201, r.text
    seen["version 2 published"] = await walk(client)
    await send(client, 2, crowd(rng, 8), key)
    seen["version 2 waiting"] = await walk(client)
    r = await client.post("/api/surveys/campus/close", headers=AUTH)
    assert r.status_code == 200, r.text
    seen["closed"] = await walk(client)
    res = (await client.get("/api/surveys/campus/results?version=1", headers=AUTH)).json()
    # the close withheld what waited, for good: nothing waits any more
    assert res["withheld"] > 0 and res["waiting"] == 0 and "withheld" in res["note"]
    failures = {
        moment: {path: code for path, code in codes.items() if code >= 500}
        for moment, codes in seen.items()
    }
    assert failures == {moment: {} for moment in seen}
    # regressions before a release are refused (422) with a reason, not a 5xx
    assert seen["published"]["/api/surveys/campus/results?regress=cheat&on=faculty&on=year"] == 422
    page = await client.get("/surveys/campus/results?version=1", headers=AUTH)
    assert "withheld" in page.text


# -- the attacker ----------------------------------------------------------------------


def released_rows(frame: pd.DataFrame) -> list[tuple]:
    """What an attacker lines up: (version, faculty, year, arm, the direct answer to
    cheat in arm dq or None in arm rr) per released row of a wide export."""
    faculty = frame["faculty"].astype("float64").fillna(-1).astype(int)
    year = frame["year"].astype("float64").fillna(-1).astype(int)
    cheat = frame["cheat"].astype("float64").astype(int)
    return [
        (int(v), f, y, str(a), c if a == "dq" else None)
        for v, f, y, a, c in zip(frame["version"], faculty, year, frame["arm"], cheat, strict=True)
    ]


def groupings(rows: list[tuple]) -> dict[str, Counter]:
    """What a release rule controls: the key cells (the arms together). The (key cell,
    sensitive answer) and (key cell, direct arm, answer) groupings of the withholding
    rule are retired: the answers are randomized by the server, and the arm is a draw
    the analyst can compute from the links (tests/test_pram.py attacks those)."""
    return {"key cell": Counter(r[:3] for r in rows)}


def singled_out(before: Counter, after: Counter) -> dict:
    """Groups whose difference is 1 to M - 1, or negative (a count that decreased)."""
    out = {}
    for group in set(before) | set(after):
        d = after[group] - before[group]
        if d < 0 or 0 < d < M:
            out[group] = d
    return out


async def snapshot(client, tmp_path: Path, label: str) -> dict:
    """Every channel after a crowd: each export format read back, the results API's
    counts and breakdowns, ``analyze --by`` on the csv export."""
    folder = tmp_path / label
    folder.mkdir()
    survey = await client.get("/api/surveys/campus/export?format=survey", headers=AUTH)
    (folder / "campus.survey.json").write_bytes(survey.content)
    out: dict = {"rows": {}, "counts": {}, "columns": {}}
    for fmt in FORMATS:
        r = await client.get(f"/api/surveys/campus/export?format={fmt}", headers=AUTH)
        assert r.status_code == 200, r.text
        name = r.headers["content-disposition"].split('filename="')[1].rstrip('"')
        (folder / name).write_bytes(r.content)
        frame, _ = read_export(folder / name)
        out["rows"][fmt] = released_rows(frame) if len(frame) else []
        raw = pd.read_csv(folder / name) if fmt in ("csv", "wide") else frame
        out["columns"][fmt] = raw
    res = (await client.get("/api/surveys/campus/results?version=1", headers=AUTH)).json()
    for q in res["questions"]:
        if q["direct"] and "counts" in q:
            for i, n in enumerate(q["counts"]):
                out["counts"][f"results {q['id']} = {i}"] = n
    for b in res.get("breakdowns", []):
        for g in b["groups"]:
            out["counts"][f"breakdown {b['question']} by {b['by']} = {g['group']}"] = g["n"]
    if out["rows"]["csv"]:
        by = CliRunner().invoke(
            app,
            [
                "analyze",
                str(folder / "campus.csv"),
                "--question",
                "transplant",
                "--by",
                "faculty",
                "--json",
            ],
        )
        assert by.exit_code == 0, by.output
        for g in json.loads(by.stdout)["groups"]:
            out["counts"][f"analyze transplant by faculty = {g['group']}"] = g["n"]
    out["released"] = res["released"]
    return out


@pytest.mark.slow
async def test_an_attacker_with_every_release_singles_no_one_out(client, tmp_path):
    """faculty x year asked directly, cheat asked directly in arm dq (post-randomized),
    min_release 10; crowds sent by the batch API so their make-up is known, one of them
    nine others and one law/first-year "yes" in arm dq; a release asked for before
    every read. For every pair of releases, every channel, the difference grouped by
    key cell, and every count the results and `analyze --by` give of key answers, has
    no group of 1 to 9 (and nothing decreases); no export carries a time; two exports
    of one release share no id and no row order. (The checks by sensitive answer and
    l-diversity are retired: the answer is randomized; tests/test_pram.py's flip test
    and injecting analyst replace them.) Control: the same check on what was *sent*
    finds groups of 1 to 9, so it can fail."""
    rng = np.random.default_rng(20261127)
    r = await client.post("/api/surveys", json=campus(), headers=AUTH)
    assert r.status_code == 201, r.text
    key = await ingestion_key(client)
    sizes = [60, 45, 30, 50, None, 40, 70, 35, 55, 60, 80, 45]
    snapshots, sent, sent_so_far = [], [], []
    for i, size in enumerate(sizes):
        batch = crowd(rng, size) if size else [*crowd(rng, 9), response(rng, 0, 0, "dq", 1)]
        await send(client, 1, batch, key)
        sent.extend(batch)
        sent_so_far.append(list(sent))
        snapshots.append(await snapshot(client, tmp_path, f"r{i}"))
    released = [s["released"] for s in snapshots]
    assert len(set(released)) >= 5, released  # releases did happen
    assert released[-1] < len(sent)  # and some responses wait
    for a, b in itertools.combinations(range(len(snapshots)), 2):
        for fmt in FORMATS:
            before, after = (
                groupings(snapshots[a]["rows"][fmt]),
                groupings(snapshots[b]["rows"][fmt]),
            )
            for name in before:
                assert singled_out(before[name], after[name]) == {}, (a, b, fmt, name)
        counts_a, counts_b = snapshots[a]["counts"], snapshots[b]["counts"]
        diffs = {k: counts_b.get(k, 0) - counts_a.get(k, 0) for k in {*counts_a, *counts_b}}
        assert {k: d for k, d in diffs.items() if d < 0 or 0 < d < M} == {}, (a, b)
    assert any(snapshots[-1]["counts"]), "the results API released counts"
    for s in snapshots:
        for fmt in FORMATS:
            rows = s["rows"][fmt]
            assert rows == [] or sorted(rows) == sorted(s["rows"]["wide"])
            frame = s["columns"][fmt]
            timed = [c for c in frame.columns if any(w in c for w in ("time", "bucket", "date"))]
            assert timed == [] and not any(
                pd.api.types.is_datetime64_any_dtype(frame[c]) for c in frame.columns
            )

    # the control: what was sent, lined up batch by batch, does single people out
    def as_rows(responses):
        return [
            (
                1,
                -1 if x["reports"]["faculty"] is None else x["reports"]["faculty"],
                x["reports"]["year"],
                x["arm"],
                x["reports"]["cheat"] if x["arm"] == "dq" else None,
            )
            for x in responses
        ]

    control = [groupings(as_rows(s)) for s in sent_so_far]
    found = any(
        singled_out(control[i][name], control[i + 1][name])
        for i in range(len(control) - 1)
        for name in control[i]
    )
    assert found
    # two exports of one release: no shared id, another order
    one = (await client.get("/api/surveys/campus/export?format=wide", headers=AUTH)).text
    two = (await client.get("/api/surveys/campus/export?format=wide", headers=AUTH)).text
    first, second = pd.read_csv(pd.io.common.StringIO(one)), pd.read_csv(pd.io.common.StringIO(two))
    assert set(first["response_id"]).isdisjoint(second["response_id"])
    columns = [c for c in first.columns if c != "response_id"]
    assert (
        first[columns]
        .sort_values(columns)
        .reset_index(drop=True)
        .equals(second[columns].sort_values(columns).reset_index(drop=True))
    )
    assert not first[columns].equals(second[columns])


def test_select_release_takes_whole_key_cells_across_arms():
    """Replaces the test of atoms by (cell, arm, answer) and l-diversity: the rule on a
    hand-made crowd (min_release 3) takes a key cell (faculty, year) when 3 of its
    responses wait, whatever their arms and answers, and leaves a cell of 2 waiting;
    changing any response's arm or sensitive answer changes nothing it takes."""
    survey = load_survey(campus(min_release=3, allow_small_release=True))
    plan = disclosure_plan(survey)
    assert [survey.questions[i].id for i in plan.keys] == ["faculty", "year"]

    def codes(f, y, c):
        return (f, y, c, 0, 0)

    waiting = [codes(0, 0, 1)] * 2 + [codes(0, 0, 0)] + [codes(1, 0, 1)] * 2 + [codes(2, 0, 1)] * 3
    take = select_release(plan, waiting, 3)
    assert take == [True] * 3 + [False] * 2 + [True] * 3
    flipped = [codes(f, y, 1 - c) for f, y, c, _, _ in waiting]
    assert select_release(plan, flipped, 3) == take

"""Waves of a panel, end to end on a real server with the terminal client (issue 40):
a wave's reports follow the composed channel, the device keeps one permanent report per
answer, `survey wave` refuses one-layer questions, `survey remind` stores nothing."""

from __future__ import annotations

import csv
import json
import math
import sqlite3
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from deniable.collection.model._release import DEFAULT_RELEASE_EVERY
from deniable.collection.model._survey import load_survey
from deniable.collection.respondent._client import permanent_uniform

from .conftest import AUTH
from .test_recipients import _cli
from .test_server_process import Server


def panel(survey_id: str, k: int = 2, **changes) -> dict:
    """A panel question: yes/no (Warner p = 0.9 on a permanent Warner p = 0.9), or k
    choices (k-ary RR on a permanent k-ary RR)."""
    if k == 2:
        question = {
            "id": "q",
            "text": "Did you use it in the last month?",
            "design": {"name": "warner", "params": {"p": 0.9}},
            "panel": {"permanent": {"name": "warner", "params": {"p": 0.9}}},
        }
    else:
        question = {
            "id": "q",
            "text": "Which one did you use most?",
            "choices": [f"c{i}" for i in range(k)],
            "design": {"name": "kary-rr", "params": {"epsilon": 2.5}},
            "panel": {"permanent": {"name": "kary-rr", "params": {"epsilon": 2.5}}},
        }
    return {
        "format": 1,
        "id": survey_id,
        "version": 1,
        "title": "Panel",
        "privacy_budget": 3,
        "lifetime_budget": 30,
        "requires_invitation": True,
        "min_release": 1,
        "allow_small_release": True,
        "questions": [question],
    } | changes


@pytest.fixture(scope="module")
def panel_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("waves")
    s = Server(
        f"sqlite:///{tmp / 'db.sqlite'}",
        tmp,
        env={"DENIABLE_LIFETIME_BUDGET": "60", "DENIABLE_RECIPIENT_KEY": "w" * 40},
    )
    s.start()
    yield s
    s.stop()


def _recipients(tmp: Path, n: int, name: str) -> Path:
    path = tmp / f"{name}.csv"
    path.write_text("address\n" + "".join(f"p{i}@{name}.example.org\n" for i in range(n)))
    return path


def _links(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _respond(link: str, base: str, home: Path, answer: str, send: bool = True):
    args = ("respond", link, "--json") + (("--yes",) if send else ())
    out = _cli(*args, base=base, data_home=home, input=answer + ("" if send else "n\n"))
    return out


def _sent(out) -> dict:
    return json.loads(out.stdout[out.stdout.index("{") :])


@pytest.mark.slow
def test_a_second_wave_measures_the_new_answer_through_the_composed_channel(panel_server, tmp_path):
    """20 devices answer "no" in wave 1 and "yes" in wave 2: wave 2's "yes" reports
    follow the composed channel (0.82 each, independent of wave 1), not wave 1's
    reports. 4-sigma bound on the Binomial(20, 0.82) count: at least 10 (a memo that
    re-sent wave 1 would give about 20 x 0.18 = 3.6)."""
    base = panel_server.base
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        assert http.post("/api/surveys", json=panel("two-waves")).status_code == 201
    env_links = tmp_path / "wave1.csv"
    out = _cli(
        "survey", "invite", "two-waves", "--recipients", str(_recipients(tmp_path, 20, "tw")),
        "--output", str(env_links), base=base, data_home=tmp_path,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    homes = [tmp_path / f"device{i}" for i in range(20)]
    first = []
    for row, home in zip(_links(env_links), homes, strict=True):
        out = _respond(row["link"], base, home, "1\n")
        assert out.exit_code == 0, out.output
        first.append(_sent(out)["reports"]["q"])
    wave2 = tmp_path / "wave2.csv"
    out = _cli(
        "survey", "wave", "two-waves", "--links", str(env_links), "--output", str(wave2),
        base=base, data_home=tmp_path,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "wave 2 published; 20 recipient(s) invited" in out.output
    second = []
    for row, home in zip(_links(wave2), homes, strict=True):
        out = _respond(row["link"], base, home, "2\n")
        assert out.exit_code == 0, out.output
        second.append(_sent(out)["reports"]["q"])
    yes = sum(second)
    assert yes >= 20 * 0.82 - 4 * math.sqrt(20 * 0.82 * 0.18)  # >= 9.5
    assert second != first  # not the first wave's reports sent again
    # the status lists both waves with their response rates
    status = json.loads(
        _cli("survey", "status", "two-waves", "--json", base=base, data_home=tmp_path).stdout
    )
    assert [(w["wave"], w["invited"], w["responses"]) for w in status["waves"]] == [
        (1, 20, 20),
        (2, 20, 20),
    ]
    assert [w["rr1"] for w in status["waves"]] == [1.0, 1.0]
    assert status["waves"][0]["closed"] == status["waves"][1]["opened"]
    # each wave charged what a report from a new device costs: 2 epsilon_1 = 3.03 nats
    entry = status["ledger"]["questions"][0]
    assert entry["cost"] == pytest.approx(2 * math.log(0.82 / 0.18))
    assert entry["panel_answers"] == 2


@pytest.mark.slow
def test_three_waves_of_a_16_choice_question_keep_one_permanent_report_per_answer(
    panel_server, tmp_path
):
    """12 devices (one recipient each) answer c3, c7, c3 (half of them c7, c3, c7):
    after wave 1 each device's storage holds one 32-byte secret and nothing else,
    whatever the answer; the secret stays the same over the waves, so waves 1 and 3
    have the same permanent report and wave 2 another (derived with another answer);
    the sent reports are fresh instantaneous draws (waves 1 and 3 agree no more often
    than the instantaneous layer predicts)."""
    base = panel_server.base
    survey = panel("sixteen", 16)
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        assert http.post("/api/surveys", json=survey).status_code == 201
        view = http.get("/api/surveys/sixteen").json()["questions"][0]
    question = load_survey(survey).questions[0]
    two = question.two_layer
    assert two is not None
    n = 12
    homes = [tmp_path / f"d{i}" for i in range(n)]
    plans = [(3, 7, 3) if i % 2 == 0 else (7, 3, 7) for i in range(n)]
    links = tmp_path / "w1.csv"
    out = _cli(
        "survey", "invite", "sixteen", "--recipients", str(_recipients(tmp_path, n, "st")),
        "--output", str(links), base=base, data_home=tmp_path,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    sent: list[list[int]] = [[] for _ in range(n)]
    secrets_seen: list[set[int]] = [set() for _ in range(n)]
    for wave in range(3):
        if wave:
            nxt = tmp_path / f"w{wave + 1}.csv"
            out = _cli(
                "survey", "wave", "sixteen", "--links", str(links), "--output", str(nxt),
                base=base, data_home=tmp_path,
            )  # fmt: skip
            assert out.exit_code == 0, out.output
            links = nxt
        for i, row in enumerate(_links(links)):
            out = _respond(row["link"], base, homes[i], f"{plans[i][wave] + 1}\n")
            assert out.exit_code == 0, out.output
            sent[i].append(_sent(out)["reports"]["q"])
            memo = json.loads((homes[i] / "deniable" / "memo.json").read_text())
            (owner,) = memo
            # the storage: one secret per owner, the same shape whatever the answers
            assert list(memo[owner]) == ["panel/secret"]
            assert 0 <= memo[owner]["panel/secret"] < 2**256
            secrets_seen[i].add(memo[owner]["panel/secret"])
    assert all(len(s) == 1 for s in secrets_seen)  # kept across the waves
    key = view["panel"]["key"]
    agree = 0
    for i in range(n):
        secret = next(iter(secrets_seen[i])).to_bytes(32, "big")
        perm = {
            a: int(two.permanent_reports([a], [permanent_uniform(secret, key, a)])[0])
            for a in (3, 7)
        }
        a1, a2, a3 = plans[i]
        assert a1 == a3 != a2  # waves 1 and 3: one permanent report; wave 2 another
        agree += sent[i][0] == sent[i][2]
        for report in sent[i]:
            assert 0 <= report < 16
        assert perm[3] in range(16) and perm[7] in range(16)
    # fresh draws: Pr(two instantaneous draws of one permanent report agree) = sum_r M[r,s]^2
    M = two.instantaneous.matrix
    p_agree = float((M[:, 0] ** 2).sum())
    assert agree <= n * p_agree + 4 * math.sqrt(n * p_agree * (1 - p_agree))
    assert agree < n  # a one-layer memo would agree on all 12


@pytest.mark.slow  # starts the module's server process (7.4 s)
def test_a_wave_of_one_layer_questions_is_refused_with_how_to_declare_a_panel(
    panel_server, tmp_path
):
    base = panel_server.base
    one = panel("one-layer")
    del one["questions"][0]["panel"]
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        assert http.post("/api/surveys", json=one).status_code == 201
    out = _cli(
        "survey", "wave", "one-layer", "--recipients", str(_recipients(tmp_path, 2, "ol")),
        base=base, data_home=tmp_path,
    )  # fmt: skip
    assert out.exit_code == 2
    assert "questions.q.panel" in out.output and "permanent" in out.output
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        assert http.get("/api/surveys/one-layer/status").json()["latest_version"] == 1


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return list(conn.iterdump())


@pytest.mark.slow
def test_remind_lists_exactly_those_who_did_nothing_and_stores_only_its_audit_entry(
    panel_server, tmp_path
):
    """Five recipients: two send, one starts (the invitation spent for a credential) and
    does not send, two do nothing. `survey remind` writes the two who did nothing; every
    table of the database is byte-for-byte the same after it."""
    base = panel_server.base
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        assert http.post("/api/surveys", json=panel("remind")).status_code == 201
    links = tmp_path / "links.csv"
    out = _cli(
        "survey", "invite", "remind", "--recipients", str(_recipients(tmp_path, 5, "rm")),
        "--output", str(links), base=base, data_home=tmp_path,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = _links(links)
    for i in (0, 1):
        assert _respond(rows[i]["link"], base, tmp_path / f"s{i}", "2\n").exit_code == 0
    started = _respond(rows[2]["link"], base, tmp_path / "s2", "2\n", send=False)
    assert started.exit_code == 1 and "Nothing was sent" in started.output
    database = Path(panel_server.url.removeprefix("sqlite:///"))
    # the scheduled release at the start of each hour (release_every's default) would
    # move the two waiting responses between the dumps: keep clear of it
    left = DEFAULT_RELEASE_EVERY - time.time() % DEFAULT_RELEASE_EVERY
    if left < 60:
        time.sleep(left + 5)
    before = _dump(database)
    target = tmp_path / "remind.csv"
    out = _cli(
        "survey", "remind", "remind", "--links", str(links), "--output", str(target),
        base=base, data_home=tmp_path,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "2 of 5 invitation(s) unused" in out.output
    assert [r["recipient"] for r in _links(target)] == [rows[3]["recipient"], rows[4]["recipient"]]
    # stored: one audit entry (who, the hour, how many hashes, the period), nothing else
    added = [line for line in _dump(database) if line not in before]
    assert len(added) == 1 and "'unused'" in added[0] and '"hashes": 5' in added[0]
    assert all(line in _dump(database) for line in before)
    # a malformed hash is refused, naming the field
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        r = http.post("/api/surveys/remind/invitations/unused", json={"token_hashes": ["x"]})
        assert r.status_code == 422 and "token_hashes" in r.text


@pytest.fixture
def store(database_url):
    from deniable.collection.store._storage import Store

    s = Store(database_url)
    yield s
    s.close()


def test_the_recipient_ledger_charges_a_panel_in_every_wave_and_refuses_past_the_cap(
    store,
):
    """Per person across the server, whatever device answers: a yes/no panel question
    (Warner 0.9 on Warner 0.9) charges epsilon_1 = ln(0.82 / 0.18) in every wave, the
    composition bound of that many reports from new devices (each wave's report an
    independent draw of the composed channel, so w reports reveal exactly w epsilon_1:
    computed here from the composed matrix); under a 10-nat cap the 7th wave is refused
    row by row with the sums named (9.098 + 1.516 = 10.61) and nothing more is charged.
    A 3-choice question (epsilon_inf 2, epsilon_1 0.87) charges epsilon_1 a wave."""
    from deniable.collection.store._recipients import RecipientKey
    from deniable.errors import RecipientsRefusedError

    key = RecipientKey(b"p" * 32)
    people = ["ada@example.org", "bob@example.org"]
    composed = load_survey(panel("ten")).questions[0].mechanism.matrix
    one = float(np.max(np.abs(np.log(composed[:, 0] / composed[:, 1]))))
    for version in range(1, 11):
        store.publish(load_survey(panel("ten", version=version)))
        if version == 7:
            with pytest.raises(RecipientsRefusedError) as refused:
                store.invitations.invite_recipients("ten", people, 10.0, key)
            assert "recipients.0" in str(refused.value)
            assert "9.098 + 1.516 = 10.61 nats" in str(refused.value)
            break
        store.invitations.invite_recipients("ten", people, 10.0, key)
        for person in people:  # the composition bound of `version` new-device reports
            assert store.invitations.recipient_spent(person, key) == pytest.approx(version * one)
    for person in people:
        assert store.invitations.recipient_spent(person, key) == pytest.approx(6 * one)
    three = panel("three", 3)
    three["questions"][0] |= {
        "choices": ["a", "b", "c"],
        "design": {"name": "kary-rr", "params": {"epsilon": 2.0}},
        "panel": {"permanent": {"name": "kary-rr", "params": {"epsilon": 2.0}}},
    }
    others = ["cy@example.org", "di@example.org"]
    two = load_survey(three).questions[0].two_layer
    for version in (1, 2, 3):
        store.publish(load_survey(three | {"version": version}))
        store.invitations.invite_recipients("three", others, 5.0, key)
        assert store.invitations.recipient_spent(others[0], key) == pytest.approx(
            two.waves_bound(version)
        )
    assert two.waves_bound(3) == pytest.approx(3 * two.epsilon_1)


def panel_study(version: int = 1) -> dict:
    """A panel study: an arm randomizing a yes/no panel question, and a direct arm."""
    data = panel("study", version=version, min_release=5, requires_invitation=False)
    data["arms"] = {
        "rr": {"weight": 1},
        "dq": {"weight": 1, "designs": {"q": {"name": "direct"}}},
    }
    return data


@pytest.mark.anyio
async def test_a_panel_study_at_every_moment_of_its_life(client, tmp_path):
    """Before its first release, between its waves, after its close: the dashboard
    renders; once both waves are released it shows each wave's prevalence and the
    change, per arm and pooled, equal to the library's wave_change on the exported
    rows; the wave is a key of the release rule (a wave's responses wait for their
    own crowd, never filling up with another wave's)."""
    from deniable.analysis._waves import wave_change
    from deniable.collection.exports._export import wide_frame
    from deniable.collection.store._wave_store import next_wave

    store = client.store
    v1 = load_survey(panel_study())
    store.publish(v1)
    page = await client.get("/surveys/study/results", headers=AUTH)
    assert page.status_code == 200 and "Waves" not in page.text
    gen = np.random.default_rng(40)
    two = v1.questions_in("rr")[0].two_layer
    assert two is not None

    def send(survey, n, share_yes):
        for i in range(n):
            arm = "rr" if i % 2 == 0 else "dq"
            truth = int(gen.random() < share_yes)
            if arm == "rr":
                s = two.permanent_reports([truth], [gen.random()])
                report = int(two.instantaneous_reports(s, gen)[0])
            else:
                report = truth
            store.submit(survey, {"q": report}, None, arm)

    send(v1, 40, 0.3)
    v2 = load_survey(next_wave(store.versions("study")))
    store.publish(v2)
    send(v2, 3, 0.5)  # fewer than min_release: wave 2 waits, whole
    res = (await client.get("/api/surveys/study/results", headers=AUTH)).json()
    assert [w["responses"] for w in res["waves"]] == [40, 3]
    # the direct arm's answers are released in crowds of 5 per answer: most of wave 1
    assert store.released.count("study", 2) == 0 and store.released.count("study", 1) >= 30
    assert res["wave_change"] == []  # nothing of wave 2 released
    page = await client.get("/surveys/study/results", headers=AUTH)
    assert page.status_code == 200 and 'id="waves"' in page.text
    send(v2, 37, 0.5)
    res = (await client.get("/api/surveys/study/results", headers=AUTH)).json()
    (change,) = res["wave_change"]
    assert (change["first"], change["second"]) == (1, 2)
    frame = wide_frame(store, "study")
    for arm in ("rr", "dq"):
        row = next(r for r in change["rows"] if r["arm"] == arm)
        rows = [frame[(frame["version"] == v) & (frame["arm"] == arm)]["q"] for v in (1, 2)]
        design = v1.questions_in(arm)[0].mechanism
        lib = wave_change(
            design, rows[0].to_numpy(np.int64), design, rows[1].to_numpy(np.int64), 0.95
        )
        assert row["difference"] == pytest.approx(lib.difference[1])
        assert (row["low"], row["high"]) == pytest.approx((lib.low[1], lib.high[1]))
        assert row["n"] == [len(rows[0]), len(rows[1])]
        assert row["left_out"] == [0.0, 0.0] and row["cells"] == 1  # no key: one cell
    pooled = next(r for r in change["rows"] if r["arm"] == "pooled")
    released = [store.released.count("study", v) for v in (1, 2)]
    assert pooled["n"] == released and pooled["low"] < pooled["difference"] < pooled["high"]
    page = await client.get("/surveys/study/results", headers=AUTH)
    assert 'id="change-q-2"' in page.text and "wave 1 to wave 2" in page.text
    assert "at the common cell mix" in page.text and "left out (key cells" in page.text
    # the export analysed by `deniable analyze --waves` gives the dashboard's numbers
    exported = await client.get(
        "/api/surveys/study/export", params={"format": "parquet"}, headers=AUTH
    )
    path = tmp_path / "study.parquet"
    path.write_bytes(exported.content)
    out = _cli("analyze", str(path), "--waves", "--json", base="http://x", data_home=tmp_path)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["changes"] == res["wave_change"]
    sub = _cli("analyze", "waves", str(path), "--json", base="http://x", data_home=tmp_path)
    assert sub.exit_code == 0 and sub.stdout == out.stdout, sub.output
    text = _cli("analyze", str(path), "--waves", base="http://x", data_home=tmp_path)
    assert "wave 1 to wave 2" in text.stdout and "pooled" in text.stdout
    one = _cli("analyze", str(path), "--waves", "--arms", base="http://x", data_home=tmp_path)
    assert one.exit_code == 2 and "drop --arms" in one.output
    await client.post("/api/surveys/study/close", headers=AUTH)
    res = (await client.get("/api/surveys/study/results", headers=AUTH)).json()
    assert res["waves"][-1]["closed"] is not None
    page = await client.get("/surveys/study/results", headers=AUTH)
    assert page.status_code == 200 and "open" not in res["waves"][-1]["period"]


def test_the_export_bundle_lists_the_waves_with_their_response_rates(tmp_path):
    """`survey export --format bundle` of a panel writes ID.waves.csv: each wave's field
    period, invitations, responses and RR1 (responses over invitations)."""
    from deniable.collection.server._live import serve_in_thread
    from deniable.collection.store._storage import Store

    from .conftest import ANALYST

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    for version in (1, 2):
        survey = load_survey(panel("bundle", version=version, requires_invitation=False))
        store.publish(survey)
        store.audit("analyst", "publish", "bundle", version)
        store.submit_batch(survey, [{"q": i % 2} for i in range(4 + version)])
    with serve_in_thread(store, ANALYST) as base:
        out = _cli(
            "survey", "export", "bundle", "--format", "bundle", "--output",
            str(tmp_path / "b"), "--server", base, base=base, data_home=tmp_path,
        )  # fmt: skip
    store.close()
    assert out.exit_code == 0, out.output
    rows = list(csv.DictReader((tmp_path / "b" / "bundle.waves.csv").open()))
    assert [(r["wave"], r["responses"], r["invited"], r["rr1"]) for r in rows] == [
        ("1", "5", "0", ""),
        ("2", "6", "0", ""),
    ]
    assert rows[0]["closed"] == rows[1]["opened"] != ""


def test_a_change_between_waves_is_an_estimate_on_the_common_base():
    """WaveChange has the vocabulary of every estimate: ``estimate`` is the change, its
    Wald interval at the level it was made at is the one it carries, ``summary`` and
    ``to_dict`` (the one shape, with the dashboard's rows) follow."""
    from deniable import Warner
    from deniable.analysis._waves import wave_change
    from deniable.estimation import EstimateResult

    rng = np.random.default_rng(3)
    design = Warner(p=0.8)
    first = design.randomize(rng.random(600) < 0.2, rng)
    second = design.randomize(rng.random(500) < 0.3, rng)
    change = wave_change(design, first, design, second, 0.9)
    assert isinstance(change, EstimateResult)
    ci = change.confidence_interval(0.9)
    np.testing.assert_allclose(ci.low, change.low, atol=1e-12)
    np.testing.assert_allclose(ci.high, change.high, atol=1e-12)
    payload = change.to_dict()
    assert payload["result"] == "WaveChange" and payload["estimate"] == change.difference.tolist()
    assert [a["low"] for a in payload["answers"]] == pytest.approx(ci.low.tolist(), abs=1e-12)
    assert "Change between waves" in change.summary(0.9)


def test_a_panel_member_keeps_one_arm_in_every_wave_on_every_device(store, tmp_path):
    """20 named panel members answer 3 waves, each wave on a fresh device (an empty
    memo): each keeps one arm across the waves, the arm the owner tag of their links
    fixes (assign, as the page's assign: tests/test_browser.py). Control: drawn from each
    wave's token, as before, most members would change arm between waves."""
    import copy

    from deniable.collection.respondent._client import assign, token_uniform
    from deniable.collection.respondent._memo import ReportMemo, owner_of
    from deniable.collection.store._recipients import RecipientKey

    key = RecipientKey(b"a" * 32)
    people = [f"p{i}@example.org" for i in range(20)]
    seen: dict[str, list[str]] = {p: [] for p in people}
    by_token: dict[str, list[str]] = {p: [] for p in people}
    for version in (1, 2, 3):
        data = panel_study(version) | {"requires_invitation": True}
        survey = load_survey(data)
        store.publish(survey)
        issued = store.invitations.invite_recipients("study", people, 30.0, key)
        for address, token, tag in zip(issued.recipients, issued.tokens, issued.owners,
                                       strict=True):  # fmt: skip
            device = ReportMemo(tmp_path / f"{address}-{version}.json")  # a fresh device
            view = copy.deepcopy(survey.respondent_view())
            arm, _ = assign(view, device, owner_of(tag, token), token)
            seen[address].append(arm)
            by_token[address].append("dq" if token_uniform(token, "study") < 0.5 else "rr")
    assert all(len(set(arms)) == 1 for arms in seen.values()), seen
    assert {arms[0] for arms in seen.values()} == {"dq", "rr"}  # both arms drawn
    assert sum(len(set(arms)) > 1 for arms in by_token.values()) >= 5  # 15 expected


@pytest.mark.slow  # 2-5 s, a simulation over many surveys or fits: the whole suite
def test_change_on_like_cells_is_unbiased_and_covers_over_500_panels():
    """500 simulated two-wave panels, two arms (Warner 0.8 and forced response 0.2/0.2),
    four key cells whose prevalence differs (0.1 to 0.7) and rises by 0.05 x cell, and
    attrition that differs by cell (90% to 30% answer again): the change on like cells,
    per arm and pooled over the arms as the dashboard pools them, has |mean bias| under
    3 Monte Carlo SEs against its estimand (each cell's true prevalence among who
    answered, at the common mix) and covers it in >= 94% of panels. Control: the change
    of the waves' plain prevalences is biased by the attrition."""
    from deniable.analysis import pool_wave_changes
    from deniable.analysis._waves import wave_change, wave_change_by_cell
    from deniable.mechanisms import ForcedResponse, Warner

    rng = np.random.default_rng(59)
    designs = {"rr": Warner(p=0.8), "fr": ForcedResponse(p_yes=0.2, p_no=0.2)}
    prevalence = np.array([0.1, 0.3, 0.5, 0.7])
    rise = 0.05 * np.arange(4)
    stay = np.array([0.9, 0.7, 0.5, 0.3])
    errors: dict[str, list[float]] = {"rr": [], "fr": [], "pooled": []}
    covered = dict.fromkeys(errors, 0)
    plain = []
    panels = 500
    for _ in range(panels):
        parts, truths = [], []
        for arm, design in designs.items():
            n = 600
            cell = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
            y1 = rng.random(n) < prevalence[cell]
            y2 = y1 | (rng.random(n) < rise[cell] / (1 - prevalence[cell]))
            again = rng.random(n) < stay[cell]
            c2, t2 = cell[again], y2[again]
            r1, r2 = design.randomize(y1, rng), design.randomize(t2, rng)
            res = wave_change_by_cell((design, r1, cell), (design, r2, c2))
            counts = np.bincount(cell, minlength=4) + np.bincount(c2, minlength=4)
            w = counts / counts.sum()
            s1 = sum(w[c] * y1[cell == c].mean() for c in range(4))  # at the common mix
            s2 = sum(w[c] * t2[c2 == c].mean() for c in range(4))
            errors[arm].append(res.difference[1] - (s2 - s1))
            covered[arm] += res.low[1] <= s2 - s1 <= res.high[1]
            parts.append(res)
            truths.append((s1, s2))
            if arm == "rr":
                plain.append(wave_change(design, r1, design, r2).difference[1] - (s2 - s1))
        pooled = pool_wave_changes(parts, 0.95)  # each wave: the arms weighted by their reports
        n1 = np.array([p.n[0] for p in parts], dtype=float)
        n2 = np.array([p.n[1] for p in parts], dtype=float)
        s1s, s2s = zip(*truths, strict=True)
        truth = float(n2 @ s2s / n2.sum() - n1 @ s1s / n1.sum())
        errors["pooled"].append(pooled.difference[1] - truth)
        covered["pooled"] += pooled.low[1] <= truth <= pooled.high[1]
    for name, errs in errors.items():
        e = np.array(errs)
        assert abs(e.mean()) < 3 * e.std(ddof=1) / math.sqrt(panels), (name, e.mean())
        assert covered[name] / panels >= 0.94, (name, covered[name] / panels)
    bias = np.array(plain)
    assert abs(bias.mean()) > 3 * bias.std(ddof=1) / math.sqrt(panels)  # the control


def test_field_periods_are_dated_to_the_minute_of_publication_and_close(tmp_path, monkeypatch):
    """A wave's field period runs from its publication's minute to the next wave's (or
    the close's), as the researcher did them; every audit entry's own date stays the
    hour."""
    import time as time_module

    from deniable.collection.store._storage import Store

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    clock = [1_789_999_200.0 + 17 * 60 + 5]  # 17 minutes and 5 seconds past an hour
    monkeypatch.setattr(time_module, "time", lambda: clock[0])
    for version in (1, 2):
        store.publish(load_survey(panel("minutes", version=version, requires_invitation=False)))
        store.audit("analyst", "publish", "minutes", version)
        clock[0] += 50 * 60  # the next act 50 minutes later
    store.set_closed("minutes", True, actor="analyst")
    waves = store.waves("minutes")
    start = 1_789_999_200 + 17 * 60
    assert [(w["opened"], w["closed"]) for w in waves] == [
        (start, start + 50 * 60),
        (start + 50 * 60, start + 100 * 60),
    ]
    assert waves[0]["period"] == "2026-09-21 14:17 .. 2026-09-21 15:07"
    assert all(e["at"] % 3600 == 0 for e in store.audit_log("minutes"))

"""Releases that protect by randomization (issue 58), tested as the analyst would attack
them: the server's post-randomization of direct sensitive answers and list counts, the
flip test (one target's answer changes no released byte but its own randomized value),
the analyst who knows every arm and key cell, polls releases after every arrival and
injects n - 1 responses into the target's key cell, and what the stored rows hold."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select, text
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._export import export_bytes, survey_file
from deniable.collection.model import load_survey
from deniable.collection.store._payload import StagedResponse, pack, unpack
from deniable.collection.store._release_control import disclosure_report
from deniable.collection.store._schema import staging
from deniable.collection.store._storage import Store
from deniable.collection.study._survey_results import survey_results
from deniable.errors import SurveyError

from .conftest import AUTH, Z4, assert_error_shape
from .test_direct import respond_in_terminal

LN3 = math.log(3)


def _bench(name: str):
    """A script of bench/ as a module (the attack is shared with its 1,000-target run)."""
    path = Path(__file__).resolve().parents[1] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


ATTACK = _bench("release_attack")
#: Two key questions asked before treatment, the arm comparison on cheat (dq asks it
#: directly, fr randomizes it), a direct question asked after treatment (never a key),
#: and a list experiment (bench/release_attack.py's study).
STUDY = ATTACK.STUDY
_body, _submit = ATTACK.body, ATTACK.submit


def study(**changes) -> dict:
    return {**STUDY, **changes}


def test_keys_come_before_treatment_and_sensitive_values_get_channels():
    """faculty and year are keys; mood, asked directly in every arm but after the
    first question that differs by arm, is not; dq's cheat gets k-ary RR at fr's
    epsilon (ln 3) and the list count the geometric channel at ln 9."""
    survey = load_survey(study())
    assert [survey.questions[i].id for i in survey.key_positions] == ["faculty", "year"]
    dq = {q.id: q for q in survey.questions_in("dq")}
    fr = {q.id: q for q in survey.questions_in("fr")}
    channel = dq["cheat"].release_channel
    assert channel.spec_name == "kary-rr" and channel.params["epsilon"] == pytest.approx(LN3)
    assert fr["cheat"].release_channel is None and dq["mood"].release_channel is None
    assert dq["upset"].release_channel is fr["upset"].release_channel or (
        dq["upset"].release_channel.params == fr["upset"].release_channel.params
    )
    assert dq["upset"].release_channel.epsilon == pytest.approx(math.log(9))


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"allow_unprotected_release": True}, "no_lifetime_budget"),
        ({"release_every": "0s"}, "release_every"),
        ({"release_every": "32d"}, "release_every"),
        ({"release_every": "soon"}, "release_every"),
    ],
)
def test_bad_release_settings_are_refused_by_name(changes, field):
    with pytest.raises(SurveyError, match=field):
        load_survey(study(**changes))


def test_release_epsilon_and_pram_are_checked_by_name():
    questions = [dict(q) for q in STUDY["questions"]]
    questions[0] = questions[0] | {"release_epsilon": 1.0}  # a key: nothing to randomize
    with pytest.raises(SurveyError, match="release_epsilon"):
        load_survey(study(questions=questions))
    questions = [dict(q) for q in STUDY["questions"]]
    questions[3] = questions[3] | {"pram": True}  # pram with allow_no_answer
    with pytest.raises(SurveyError, match="pram"):
        load_survey(study(questions=questions))
    questions[3] = {k: v for k, v in questions[3].items() if k != "allow_no_answer"}
    questions[3]["release_epsilon"] = 0.5  # the hard end: a small epsilon
    survey = load_survey(study(questions=questions))
    assert survey.question("mood").release_channel.params["epsilon"] == 0.5


def _store(tmp_path, seed: int, **changes) -> tuple[Store, object]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return ATTACK.make_store(tmp_path, seed, **changes)


def test_the_stored_direct_answer_follows_the_channel_within_four_sigma(tmp_path):
    """10,000 dq respondents who all answer yes and 10,000 who all answer no: the
    stored share of yes is keep = 3/4 and 1/4 within 4 binomial SEs; the stored
    counts of group 0's list (all 3) spread over 0..4 as the channel's column."""
    store, survey = _store(tmp_path, 1)
    n = 10_000
    for truth in (1, 0):  # faculty tells the two crowds apart
        _submit(store, survey, [_body(1 - truth, 0, truth, 1, 3, 0, "dq")] * n)
    with store.connection() as conn:
        rows = conn.execute(select(staging.c.payload).where(staging.c.filled.is_(True)))
        payloads = [unpack(bytes(p)) for (p,) in rows]
    stored = [p for p in payloads if p.survey_id == "study"]
    assert len(stored) == 2 * n
    for faculty, want in ((0, 0.75), (1, 0.25)):
        row = np.array([p.codes[2] for p in stored if p.codes[0] == faculty])
        assert row.size == n
        assert abs(row.mean() - want) <= Z4 * math.sqrt(want * (1 - want) / n)
    counts = np.bincount([p.codes[4] for p in stored], minlength=5) / (2 * n)
    column = survey.question("upset").release_channel.matrix[:, 3]
    assert np.all(np.abs(counts - column) <= Z4 * np.sqrt(column * (1 - column) / (2 * n)))
    store.close()


def _run(tmp_path, seed: int, target: tuple, every: int = 7):
    """One study: 140 responses (both arms, all key cells), the target's at position
    70; a release after every ``every`` arrivals and at the end, as an analyst who
    polls. Returns, per release, the released rows without their ids (sorted) and the
    waiting total."""
    rng = np.random.default_rng(seed)
    store, survey = _store(tmp_path, seed)
    bodies = []
    for i in range(140):
        arm = "dq" if i % 2 else "fr"
        cheat = int(rng.integers(2))
        if arm == "fr":
            cheat = int(survey.question("cheat").mechanism.randomize(np.array([cheat]), rng)[0])
        group = int(rng.integers(2))
        count = int(rng.integers(0, 4 + group))
        bodies.append(
            _body(int(rng.integers(3)), int(rng.integers(2)), cheat, int(rng.integers(2)),
                  count, group, arm)
        )  # fmt: skip
    bodies[70] = target
    out = []
    for i, body in enumerate(bodies):
        _submit(store, survey, [body])
        if (i + 1) % every == 0 or i == len(bodies) - 1:
            store.release()
            frame = store.released.export("study")
            if frame.empty:
                out.append(([], store.waiting("study").get(1, 0)))
                continue
            wide = frame.pivot(index="response_id", columns="question_id", values="report")
            meta = frame.groupby("response_id")[["arm", "release", "group"]].max()
            rows = sorted(
                tuple(r)
                for r in wide.join(meta)[["release", "arm", "faculty", "year", "cheat", "mood",
                                          "upset"]].fillna(-1).itertuples(index=False)
            )  # fmt: skip
            out.append((rows, store.waiting("study").get(1, 0)))
    store.close()
    return out


@pytest.mark.parametrize(
    ("target", "flipped", "column"),
    [
        (_body(1, 0, 1, 1, 2, 1, "dq"), _body(1, 0, 0, 1, 2, 1, "dq"), 4),  # cheat
        pytest.param(  # the count (over 5 s on one of the fast loop's two workers)
            _body(2, 1, 0, 0, 3, 1, "dq"), _body(2, 1, 0, 0, 4, 1, "dq"), 6, marks=pytest.mark.slow
        ),
    ],
)
def test_flipping_one_answer_changes_only_its_randomized_value(tmp_path, target, flipped, column):
    """The flip test: every seed fixed, the target's direct answer (or list count, by
    one) changed: the same release moments, the same waiting totals, the same released
    rows release by release, but for the target's one randomized value (the channel
    draws one uniform per respondent whatever the answer)."""
    first = _run(tmp_path / "a", 58, target)
    second = _run(tmp_path / "b", 58, flipped)
    assert len(first) == len(second) == 20
    assert first[-1][0] and first[-1][1] == second[-1][1]
    for (rows_a, wait_a), (rows_b, wait_b) in zip(first, second, strict=True):
        assert wait_a == wait_b and len(rows_a) == len(rows_b)
        rest = [tuple(v for j, v in enumerate(r) if j != column) for r in rows_a]
        assert Counter(rest) == Counter(
            tuple(v for j, v in enumerate(r) if j != column) for r in rows_b
        )
        differ = Counter(rows_a) - Counter(rows_b)
        assert sum(differ.values()) <= 1


@pytest.mark.slow  # 6.7 s
def test_an_analyst_who_injects_and_polls_is_held_to_the_channels_bound(tmp_path):
    """200 targets (balanced yes/no), each alone with min_release - 1 injected rows in
    its key cell and a release right after: the best guess's balanced accuracy is at
    most e^eps / (e^eps + 1) = 3/4 (dq's cheat at ln 3) plus 3 Monte Carlo SEs, and the
    attack reaches it (the channel is all that protects). The 1,000-target run is
    bench/release_attack.py."""
    accuracy, se = ATTACK.attack(tmp_path, 200, 7)
    bound = math.exp(LN3) / (math.exp(LN3) + 1)
    assert accuracy <= bound + 3 * se
    assert accuracy >= bound - 4 * se


def test_the_migration_post_randomizes_what_waits_and_counts_what_was_released(tmp_path):
    """A database from before migration 0009: 20 dq responses released and 4,000
    waiting with their direct answer "yes" as given. Opening it post-randomizes every
    waiting answer once (the stored share of yes becomes 3/4 within 4 SEs), records the
    20 released as given, and the results say so."""

    path = tmp_path / "old.sqlite"
    store = Store(f"sqlite:///{path}")
    survey = load_survey(study())
    store.publish(survey)
    _submit(store, survey, [_body(0, 0, 1, 1, 1, 0, "dq")] * 20)
    store.release()
    n = 4000
    dq = survey.report_plan.arm_index["dq"]
    as_given = pack(StagedResponse("study", 1, 0, (1, 0, 1, 1, 2), dq, (0, 0, 0, 0, 1)))
    with store.engine.begin() as conn:  # the old schema and payloads as given
        conn.execute(text("ALTER TABLE staging_counts DROP COLUMN withheld"))
        conn.execute(text("ALTER TABLE staging_counts DROP COLUMN as_given"))
        conn.execute(text("DROP TABLE arrivals"))
        conn.execute(text("DELETE FROM schema_migrations WHERE name LIKE '0009%'"))
        slots = conn.execute(text("SELECT slot FROM staging WHERE NOT filled")).scalars().all()
        while len(slots) < n:  # enough slots for the old responses
            conn.execute(
                staging.insert(),
                [{"slot": 10**6 + len(slots) + i, "filled": False, "payload": b"\0" * 256}
                 for i in range(1000)],
            )  # fmt: skip
            slots = conn.execute(text("SELECT slot FROM staging WHERE NOT filled")).scalars().all()
        conn.execute(
            staging.update()
            .where(staging.c.slot.in_(slots[:n]))
            .values(filled=True, payload=as_given)
        )
        conn.execute(text(f"UPDATE staging_counts SET n = {n}"))
    store.close()
    store = Store(f"sqlite:///{path}")
    assert "0009_post_randomized_direct_answers" in store.applied_migrations()
    with store.connection() as conn:
        rows = conn.execute(select(staging.c.payload).where(staging.c.filled.is_(True)))
        cheat = np.array([unpack(bytes(p)).codes[2] for (p,) in rows])
    assert cheat.size == n
    assert abs(cheat.mean() - 0.75) <= Z4 * math.sqrt(0.75 * 0.25 / n)
    assert store.released.withheld("study")[1] == {"withheld": 0, "as_given": 20}
    out = survey_results(store, survey, 0.95)
    assert out["released_as_given"] == 20 and "released as given" in out["note"]
    store.close()


@pytest.mark.anyio
async def test_the_unused_poll_is_audited_and_answered_once_per_release_period(client):
    """The analyst's look-up of unused invitations (which names every starter when
    polled after each arrival) is written to the audit log (who, how many hashes) and a
    second look-up in the same release period gets 429, naming the period."""

    data = study(requires_invitation=True, release_every="1h")
    assert (await client.post("/api/surveys", json=data, headers=AUTH)).status_code == 201
    r = await client.post("/api/surveys/study/invitations", json={"count": 3}, headers=AUTH)
    hashes = [hashlib.sha256(t.encode()).hexdigest() for t in r.json()["tokens"]]
    first = await client.post(
        "/api/surveys/study/invitations/unused", json={"token_hashes": hashes}, headers=AUTH
    )
    assert first.status_code == 200 and sorted(first.json()["unused"]) == sorted(hashes)
    again = await client.post(
        "/api/surveys/study/invitations/unused", json={"token_hashes": hashes}, headers=AUTH
    )
    err = assert_error_shape(again, 429)
    assert "once per release period" in err["message"]
    (entry,) = [e for e in client.store.audit_log("study") if e["action"] == "unused"]
    assert entry["actor"] == "api" and entry["detail"]["hashes"] == 3


def test_the_respondent_is_told_and_the_device_sends_the_answer_as_given(tmp_path):
    """A pram question's view: the device's columns are the identity (it sends the
    answer as given), ``release`` names the server's channel and epsilon; the terminal
    client says the server randomizes it before storing it, and what is stored is a
    valid answer code."""
    data = {
        "id": "campus",
        "version": 1,
        "title": "Pram",
        "privacy_budget": 3.0,
        "questions": [
            {"id": "faculty", "text": "Faculty?", "choices": ["a", "b"],
             "design": {"name": "direct"}},
            {"id": "cheat", "text": "Cheated?", "design": {"name": "direct"}, "pram": True},
        ],
    }  # fmt: skip
    view = load_survey(data).respondent_view()
    q = next(v for v in view["questions"] if v["id"] == "cheat")
    assert q["direct"] and q["columns"] == [[1.0, 0.0], [0.0, 1.0]]
    assert q["release"]["channel"].startswith("kary-rr:k=2")
    assert q["release"]["epsilon"] == pytest.approx(math.log(9))
    assert next(v for v in view["questions"] if v["id"] == "faculty")["release"] is None
    out, store = respond_in_terminal(tmp_path, data, "1\n2\n")
    assert "randomized by the server before it is stored (epsilon 2.20 nats)" in out.output
    frame = store.released.export("campus")
    assert set(frame["question_id"]) == {"faculty", "cheat"}
    assert int(frame.loc[frame["question_id"] == "cheat", "report"].iloc[0]) in (0, 1)
    store.close()


def test_a_randomized_value_is_refused_as_a_predictor_or_group(tmp_path):
    """`analyze EXPORT --question cheat --by upset` (a list count the server
    post-randomized) and `--formula 'cheat ~ mood + upset'` are refused naming the
    column; a question stored as sent in every arm is taken."""
    store, survey = _store(tmp_path, 3)
    rng = np.random.default_rng(3)
    bodies = [
        _body(int(rng.integers(3)), int(rng.integers(2)), int(rng.integers(2)),
              int(rng.integers(2)), int(rng.integers(4)), 0, ["dq", "fr"][i % 2])
        for i in range(400)
    ]  # fmt: skip
    _submit(store, survey, bodies)
    store.release()
    content, _, name = export_bytes(store, "study", "wide")
    path = tmp_path / name
    path.write_bytes(content)
    (tmp_path / "study.survey.json").write_text(json.dumps(survey_file(store, "study")))
    store.close()
    for args in (["--by", "upset"], ["--formula", "cheat ~ mood + upset"]):
        out = CliRunner().invoke(app, ["analyze", str(path), "--question", "cheat", *args])
        assert out.exit_code != 0 and "'upset' holds randomized values" in out.output
    ok = CliRunner().invoke(app, ["analyze", str(path), "--question", "cheat", "--by", "faculty"])
    assert ok.exit_code == 0, ok.output


def test_withheld_at_the_close_stays_withheld_after_a_reopen_and_arrivals_are_counted(tmp_path):
    """30 responses in faculty 0 (a complete key cell) and 4 in faculty 1: the close
    releases the 30 and withholds the 4 for good; after a reopen and a release they are
    still withheld (the version did not change) and new ones wait on their own. The
    sample-ratio counts are what arrived in each arm, released or not."""
    store, survey = _store(tmp_path, 5)
    cell = [_body(0, 0, 1, 1, 1, 0, ["dq", "fr"][i % 2]) for i in range(30)]
    small = [_body(1, 0, 1, 1, 1, 0, "fr")] * 4
    _submit(store, survey, cell + small)
    assert store.released.arrivals(survey) == [15, 19]  # dq, fr: before any release
    store.set_closed("study", True)
    assert store.released.count("study") == 30 and store.waiting("study") == {}
    assert store.released.withheld("study")[1]["withheld"] == 4
    store.set_closed("study", False)
    _submit(store, survey, [_body(1, 0, 0, 1, 1, 0, "dq")] * 7)
    store.release()
    assert store.released.count("study") == 30  # 7 in faculty 1: still under 10
    assert store.waiting("study") == {1: 7} and store.released.withheld("study")[1]["withheld"] == 4
    assert store.released.arrivals(survey) == [22, 19]
    release = [e for e in store.audit_log("study") if e["action"] == "release"]
    assert [e["detail"].get("withheld") for e in release] == [4]
    store.close()


def test_allow_unprotected_release_stores_the_answer_as_sent_and_says_so(tmp_path):
    """The opt-in: dq's answers are stored as sent (every yes stays yes), the question's
    epsilon is infinite on the page, and survey check's report names it."""
    store, survey = _store(tmp_path, 6, allow_unprotected_release=True, no_lifetime_budget=True)
    _submit(store, survey, [_body(0, 0, 1, 1, 1, 0, "dq")] * 200)
    with store.connection() as conn:
        rows = conn.execute(select(staging.c.payload).where(staging.c.filled.is_(True)))
        assert {unpack(bytes(p)).codes[2] for (p,) in rows} == {1}
    view = survey.respondent_view()
    q = next(v for v in view["questions"] if v["id"] == "cheat")
    assert q["release"] is None
    assert set(disclosure_report(survey)["unprotected"]) == {"cheat", "upset"}
    assert all(v.release_channel is None for v in survey.variants("cheat"))
    store.close()


@pytest.mark.slow  # over 5 s on one of the fast loop's two workers
def test_an_analyst_who_injects_is_held_to_the_bound_on_a_list_item(tmp_path):
    """200 targets in the longer list (one control item known to the analyst, the
    sensitive item balanced by design), each with min_release - 1 injected rows in its
    key cell and a release right after: the balanced accuracy of the best guess of the
    item is at most e^eps / (e^eps + 1) = 0.9 (ln 9 per item) plus 3 MC SEs."""
    accuracy, se = ATTACK.attack_list(tmp_path, 200, 11)
    assert accuracy <= 0.9 + 3 * se
    assert accuracy > 0.5  # the attack works as far as the channel lets it

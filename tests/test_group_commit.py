"""The group committer and the release schedule (SQLite and PostgreSQL).

Replaces the tests of the committer's release policy (a group's release deferred under
load, or made inline before a small group's acknowledgement): a release inside an
arrival's transaction let the arrival choose the moment, so the committer now never
releases. Releases come from :class:`ReleaseSchedule`, once per period of
``release_every`` counted from the epoch, at moments no arrival chooses; whatever the
timing, every release adds at least ``min_release`` to each key cell."""

from __future__ import annotations

import asyncio
import copy
import itertools

import pytest

from deniable.collection.model._survey import load_survey
from deniable.collection.server._ingestion import GroupCommitter
from deniable.collection.store._storage import Store

from .conftest import SURVEY

pytestmark = pytest.mark.anyio


@pytest.fixture
def store(database_url: str):
    s = Store(database_url)
    yield s
    s.close()


def published(store: Store, min_release: int):
    small = {"allow_small_release": True} if min_release < 10 else {}
    s = load_survey(copy.deepcopy(SURVEY) | {"min_release": min_release} | small)
    store.publish(s)
    return s


async def send(committer: GroupCommitter, store: Store, survey, n: int) -> None:
    """``n`` responses submitted together (one group, or a few)."""
    pending = [store.prepare(survey, {"drugs": i % 2, "status": i % 3}) for i in range(n)]
    await asyncio.gather(*(committer.submit(p) for p in pending))


def releases(store: Store, survey_id: str) -> list[int]:
    return sorted(
        e["detail"]["released"] for e in store.audit_log(survey_id) if e["action"] == "release"
    )


async def test_no_arrival_releases_anything(store):
    """Replaces "a small group releases before its acknowledgement" and "a group under
    load defers its release": 40 responses one at a time and in groups are committed
    and acknowledged, and none is released by its own commit, however small the group
    or however long the writer then sits idle."""
    s = published(store, 5)
    committer = GroupCommitter(store)
    for _ in range(12):
        await send(committer, store, s, 1)
    await send(committer, store, s, 28)
    await asyncio.sleep(0.3)  # the idle writer releases nothing either
    assert store.released.count(s.id) == 0 and store.waiting(s.id) == {1: 40}
    assert releases(store, s.id) == []
    await committer.close()


async def test_the_schedule_releases_at_period_boundaries_counted_from_the_epoch(store):
    """Replaces "under sustained load a release comes every release_seconds": with
    release_every = 60 s, a survey first seen waiting in a minute is released at the
    first call after the next boundary, whatever has arrived since (its first arrival
    does not choose the moment); further calls in that minute release nothing; the
    next boundary releases again. Each release adds at least min_release."""
    s = load_survey(
        copy.deepcopy(SURVEY)
        | {"min_release": 7, "allow_small_release": True, "release_every": "60s"}
    )
    store.publish(s)
    committer = GroupCommitter(store)
    t = 600.0 * 60  # the start of a minute
    await send(committer, store, s, 20)
    assert store.release_scheduled(t + 1) == 0  # first seen: wait for the boundary
    await send(committer, store, s, 30)
    assert store.release_scheduled(t + 59.9) == 0
    assert store.release_scheduled(t + 60) == 50
    await send(committer, store, s, 9)
    assert store.release_scheduled(t + 100) == 0  # the same minute
    assert store.release_scheduled(t + 121) == 9
    await send(committer, store, s, 3)
    assert store.release_scheduled(t + 185) == 0  # 3 < 7 wait
    assert store.waiting(s.id) == {1: 3}
    steps = releases(store, s.id)
    assert steps == [50, 59] and all(b - a >= 7 for a, b in itertools.pairwise([0, *steps]))
    await committer.close()


async def test_close_commits_what_is_queued(store):
    """Shutdown drains the writer: responses submitted before ``close`` are committed
    and acknowledged, and no task is left pending; nothing is released by it."""
    s = published(store, 10)
    committer = GroupCommitter(store)
    pending = [store.prepare(s, {"drugs": i % 2, "status": i % 3}) for i in range(40)]
    submits = [asyncio.ensure_future(committer.submit(p)) for p in pending]
    await asyncio.sleep(0)  # every submit is queued
    writer = committer._task
    assert writer is not None and not writer.done()
    await asyncio.wait_for(committer.close(), 30)
    assert writer.done() and not writer.cancelled() and writer.exception() is None
    assert all(f.done() and f.exception() is None for f in submits)
    assert store.response_count(s.id) == 40 and store.waiting(s.id) == {1: 40}
    await committer.close()  # a second close is a no-op
    await send(committer, store, s, 3)  # a submit after close starts a new writer
    assert store.response_count(s.id) == 43
    await committer.close()


async def test_the_application_runs_the_schedule_and_stops_it(database_url):
    """The application's lifespan starts the schedule (a tick of 0.05 s here,
    release_every 1 s) and stops it with the writer: responses sent are released by the
    schedule at the next boundary, with no request asking for it."""
    from deniable.collection.server._app import create_app

    store = Store(database_url)
    app = create_app(store, analyst_token="t" * 32, release_tick=0.05)
    s = load_survey(copy.deepcopy(SURVEY) | {"min_release": 10, "release_every": "1s"})
    store.publish(s)
    async with app.router.lifespan_context(app):
        await send(app.state.committer, store, s, 12)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if store.released.count(s.id):
                break
        assert store.released.count(s.id) == 12
        schedule = app.state.schedule._task
        assert schedule is not None and not schedule.done()
    assert schedule.done()
    store.close()


async def test_the_application_shutdown_stops_the_writer(database_url):
    from deniable.collection.server._app import create_app

    store = Store(database_url)
    app = create_app(store, analyst_token="t" * 32)
    s = published(store, 10)
    async with app.router.lifespan_context(app):
        committer = app.state.committer
        await send(committer, store, s, 12)
        writer = committer._task
        assert writer is not None and not writer.done()
    assert writer.done() and committer._task is None
    assert store.response_count(s.id) == 12
    store.close()

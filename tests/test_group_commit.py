"""The group committer's release policy (SQLite and PostgreSQL): under load a group's
release is deferred and done once the writer is idle, or at most ``release_seconds``
after the last; a small group releases in its own transaction, before its
acknowledgement. Whatever the timing, every release is a crowd of at least
``min_release``."""

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


async def test_a_group_under_load_defers_its_release_until_the_writer_is_idle(store):
    s = published(store, 10)
    committer = GroupCommitter(store, idle_seconds=0.2, release_seconds=3600, inline_group=8)
    await send(committer, store, s, 40)  # one group of 40 (> 8): acknowledged, not released
    assert store.released_count(s.id) == 0
    assert store.waiting(s.id) == {1: 40}
    assert store.response_count(s.id) == 40
    for _ in range(100):  # the writer releases 0.2 s after the last commit
        await asyncio.sleep(0.05)
        if store.released_count(s.id):
            break
    assert store.released_count(s.id) == 40 and store.waiting(s.id) == {}
    assert releases(store, s.id) == [40]  # one crowd of 40, not four of 10
    await committer.close()


async def test_a_small_group_releases_before_its_acknowledgement(store):
    s = published(store, 5)
    committer = GroupCommitter(store, idle_seconds=60, release_seconds=3600, inline_group=8)
    seen = []
    for _ in range(12):
        await send(committer, store, s, 1)
        seen.append(store.released_count(s.id))
    assert seen == [0, 0, 0, 0, 5, 5, 5, 5, 5, 10, 10, 10]
    assert releases(store, s.id) == [5, 10]
    await committer.close()


async def test_under_sustained_load_a_release_comes_every_release_seconds(store):
    """``release_seconds=0``: every group releases whatever has its crowd, however big
    the group; each release still adds at least ``min_release``."""
    s = published(store, 7)
    committer = GroupCommitter(store, idle_seconds=60, release_seconds=0, inline_group=1)
    total = 0
    for n in (20, 3, 30, 2, 9):
        await send(committer, store, s, n)
        total += n
        released = store.released_count(s.id)
        assert released + store.waiting(s.id).get(1, 0) == total
        assert store.waiting(s.id).get(1, 0) < 7  # whatever had its crowd was released
    steps = releases(store, s.id)
    assert steps[-1] == store.released_count(s.id)
    assert all(b - a >= 7 for a, b in itertools.pairwise([0, *steps]))
    await committer.close()


async def test_close_commits_what_is_queued_and_makes_the_deferred_release(store):
    """Shutdown drains the writer: responses submitted before ``close`` are committed
    and acknowledged, the release their group deferred is made, and no task is left
    pending (an idle writer would otherwise wait ``idle_seconds``, here an hour)."""
    s = published(store, 10)
    committer = GroupCommitter(store, idle_seconds=3600, release_seconds=3600, inline_group=8)
    pending = [store.prepare(s, {"drugs": i % 2, "status": i % 3}) for i in range(40)]
    submits = [asyncio.ensure_future(committer.submit(p)) for p in pending]
    await asyncio.sleep(0)  # every submit is queued
    writer = committer._task
    assert writer is not None and not writer.done()
    await asyncio.wait_for(committer.close(), 30)
    assert writer.done() and not writer.cancelled() and writer.exception() is None
    assert all(f.done() and f.exception() is None for f in submits)
    assert store.response_count(s.id) == 40
    assert store.released_count(s.id) == 40 and store.waiting(s.id) == {}
    await committer.close()  # a second close is a no-op
    await send(committer, store, s, 3)  # a submit after close starts a new writer
    assert store.response_count(s.id) == 43
    await committer.close()
    assert store.released_count(s.id) + store.waiting(s.id).get(1, 0) == 43


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

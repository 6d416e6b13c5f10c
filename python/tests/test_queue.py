"""Queue: connection forms, the layout check, getters, pause/resume, logs, lanes, QueueEvents."""
import asyncio

import pytest
import redis.asyncio as aioredis

from echomq import IncompatibleLayoutError, Job, Queue, QueueEvents, Worker
from echomq.keys import QueueKeys
from echomq.library import library
from helpers import mirror_processor, settled_counter


@pytest.mark.parametrize("form", ["dict", "url", "client-bytes", "client-text"])
async def test_three_connection_forms(conn, redis_url, qname, form):
    given = None
    if form == "dict":
        c = conn
    elif form == "url":
        c = redis_url
    else:
        given = aioredis.Redis.from_url(redis_url, decode_responses=(form == "client-text"))
        c = given
    q = Queue(qname, {"connection": c})
    job = await q.add("c", {"é": [1, 2]}, {"lane": "L"})
    w = Worker(qname, mirror_processor, {"connection": c})
    done = settled_counter(w, 1)
    [(kind, j, rv)] = await asyncio.wait_for(done, 5)
    await w.close()
    got = await q.getJob(job.id)
    assert kind == "completed" and got.data == {"é": [1, 2]} and got.returnvalue == {"by": "python", "n": None}
    assert got.opts["lane"] == "L"
    await q.close()
    if given is not None:
        assert await given.ping()  # a client given is the user's: not closed
        await given.aclose()


async def test_layout_version_is_claimed_then_checked(conn, r, qname):
    k = QueueKeys(qname)
    q = Queue(qname, {"connection": conn})
    await q.getJobCounts("waiting")
    assert await r.exists(k.meta) == 0  # the check reads only: the first add stores lv
    await q.add("a", {})
    assert await r.hget(k.meta, "lv") == str(library().layout_version)
    await q.close()
    await r.hset(k.meta, "lv", "99")
    before = await r.hgetall(k.meta)
    q2 = Queue(qname, {"connection": conn})
    with pytest.raises(IncompatibleLayoutError, match=f"queue {qname} is stored in layout version 99; this echomq reads layout version 2$"):
        await q2.add("b", {})
    w = Worker(qname, mirror_processor, {"connection": conn, "autorun": False})
    with pytest.raises(IncompatibleLayoutError):
        await w.run()
    await w.close()
    assert await r.hgetall(k.meta) == before and await q2.getJobCounts("waiting") == {"waiting": 1}
    await q2.close()


async def test_getters_counts_and_states(conn, qname):
    q = Queue(qname, {"connection": conn})
    a = await q.add("a", {}, {"lane": "x"})
    b = await q.add("b", {}, {"priority": 3})
    c = await q.add("c", {}, {"delay": 60000})
    assert await q.getJobCounts() == {"active": 0, "completed": 0, "delayed": 1, "failed": 0, "prioritized": 1,
                                      "waiting": 1, "waiting-children": 0}
    assert await q.getJobCountByTypes("waiting", "prioritized") == 2
    assert (await q.getWaitingCount(), await q.getPrioritizedCount(), await q.getDelayedCount()) == (1, 1, 1)
    assert [j.id for j in await q.getWaiting()] == [a.id]
    assert [j.id for j in await q.getPrioritized()] == [b.id]
    assert [j.id for j in await q.getDelayed()] == [c.id]
    assert {j.id for j in await q.getJobs(["waiting", "delayed"])} == {a.id, c.id}
    assert await q.getJobState(b.id) == "prioritized" and await q.getJobState("nope") == "unknown"
    assert (await Job.fromId(q, "nope")) is None
    assert q.qualifiedName == f"emq:{qname}" and q.toKey("wait") == f"emq:{qname}:wait"
    assert await q.remove(c.id) == 1 and await q.getDelayedCount() == 0
    await q.pause()
    assert await q.isPaused()
    await q.resume()
    assert not await q.isPaused()
    await q.close()


async def test_job_calls_logs_progress_retry_remove(conn, qname):
    q = Queue(qname, {"connection": conn})
    w = Worker(qname, mirror_processor, {"connection": conn})
    done = settled_counter(w, 1)
    job = await q.add("j", {"fail": "nope", "log": "first"}, {"attempts": 1})
    await asyncio.wait_for(done, 5)
    j = await q.getJob(job.id)
    assert j.failedReason == "nope" and await j.getState() == "failed"
    await j.log("second")
    assert await q.getJobLogs(job.id) == {"logs": ["second"], "count": 1}
    await j.updateData({"ret": 9, "log": "third"})
    await j.updateProgress(42)
    done2 = settled_counter(w, 1)
    await j.retry()
    [(kind, _, rv)] = await asyncio.wait_for(done2, 5)
    assert kind == "completed" and rv == 9
    assert await q.getJobLogs(job.id) == {"logs": ["second", "third"], "count": 2}
    assert await q.getJobLogs(job.id, asc=False) == {"logs": ["third", "second"], "count": 2}
    await w.close()
    j = await q.getJob(job.id)
    assert j.progress == 42 and j.finishedOn and j.processedOn and j.timestamp
    await j.remove()
    assert await q.getJob(job.id) is None
    await q.close()


async def test_lanes_controls(conn, qname):
    q = Queue(qname, {"connection": conn})
    await q.add("a", {}, {"lane": "t1"})
    await q.lanes.setWeight("t1", 3)
    await q.lanes.setLimit("t1", 2)
    await q.lanes.setRateLimit("t1", {"max": 5, "duration": 1000})
    await q.lanes.pause("t1")
    info = await q.lanes.get("t1")
    assert info == {"name": "t1", "depth": 1, "active": 0, "weight": 3, "limit": 2, "paused": True,
                    "rate": {"max": 5, "duration": 1000}, "inRing": False}
    await q.lanes.resume("t1")
    await q.lanes.removeLimit("t1")
    await q.lanes.setRateLimit("t1", None)
    info = await q.lanes.get("t1")
    assert info["limit"] is None and info["rate"] is None and info["inRing"] and not info["paused"]
    await q.close()


async def test_group_option_is_a_lane(conn, qname):
    q = Queue(qname, {"connection": conn})
    job = await q.add("g", {}, {"group": {"id": "tenant-9", "priority": 4}})
    j = await q.getJob(job.id)
    assert j.lane == "tenant-9" and j.priority == 4 and j.opts["group"] == {"id": "tenant-9", "priority": 4}
    await q.close()


async def test_queue_events_payloads(conn, qname):
    ev = QueueEvents(qname, {"connection": conn, "lastEventId": "0"})
    seen = []
    for name in ("added", "waiting", "active", "progress", "completed", "failed", "retries-exhausted"):
        ev.on(name, lambda args, eid, name=name: seen.append((name, args)))
    q = Queue(qname, {"connection": conn})
    a = await q.add("a", {"progress": {"p": 1}, "ret": "done"})
    b = await q.add("b", {"fail": "bad"})
    bulk = await q.addBulk([{"name": "m", "data": {"ret": i}} for i in range(5)])  # one entry, five jobs
    w = Worker(qname, mirror_processor, {"connection": conn})
    done = settled_counter(w, 7)
    await asyncio.wait_for(done, 5)
    await w.close()
    for _ in range(50):
        if any(n == "retries-exhausted" for n, _ in seen):
            break
        await asyncio.sleep(0.05)
    await ev.close()
    by = lambda n: [x for k, x in seen if k == n]
    assert [x["jobId"] for x in by("added")] == [a.id, b.id] + [j.id for j in bulk]
    assert {x["jobId"] for x in by("waiting")} >= {a.id, b.id}
    assert by("progress") == [{"jobId": a.id, "data": {"p": 1}}]
    assert [(x["jobId"], x["returnvalue"]) for x in by("completed")] == [(a.id, "done")] + [(j.id, i) for i, j in enumerate(bulk)]
    assert [(x["jobId"], x["failedReason"]) for x in by("failed")] == [(b.id, "bad")]
    assert by("retries-exhausted") == [{"jobId": b.id, "attemptsMade": "1"}]
    await q.close()


async def test_settings_and_workers_listing(conn, r, qname):
    q = Queue(qname, {"connection": conn})
    k = QueueKeys(qname)
    await q.setGlobalConcurrency(3)
    await q.setGlobalRateLimit(10, 1000)
    assert await q.getGlobalConcurrency() == 3 and await q.getGlobalRateLimit() == {"max": 10, "duration": 1000}
    assert await r.hmget(k.meta, ["conc", "rlmax", "rldur"]) == ["3", "10", "1000"]
    await q.rateLimit(400)
    assert 0 < await q.getRateLimitTtl() <= 400 and await q.removeRateLimitKey() == 1
    await q.removeGlobalConcurrency()
    await q.removeGlobalRateLimit()
    assert await q.getGlobalConcurrency() is None and await q.getGlobalRateLimit() is None
    w = Worker(qname, mirror_processor, {"connection": conn, "name": "w1"})
    for _ in range(50):
        if await q.get_workers_count() >= 1:
            break
        await asyncio.sleep(0.05)
    workers = await q.get_workers()
    assert workers and all(x["name"] == qname for x in workers)
    assert any(x["rawname"].endswith(":w:w1") for x in workers)
    await w.close()
    job = await q.add("l", {})
    assert await Job.addJobLog(q, job.id, "row", 0) == 1
    await q.close()


def test_add_batches_count_each_lane_a_call_opens():
    from types import SimpleNamespace
    from echomq.queue import _add_batches

    def jobs(lanes):
        return [(SimpleNamespace(lane=lane), i) for i, lane in enumerate(lanes)]

    assert [len(b) for b in _add_batches(jobs(["a"] * 250))] == [100, 100, 50]
    assert [len(b) for b in _add_batches(jobs([f"l{i}" for i in range(120)]))] == [50, 50, 20]
    assert [len(b) for b in _add_batches(jobs(["a" if i % 2 else "b" for i in range(200)]))] == [99, 99, 2]
    every = jobs([f"l{i % 7}" for i in range(333)])
    assert [x for b in _add_batches(every) for x in b] == every
    assert _add_batches([]) == []


async def test_add_bulk_into_many_new_lanes(conn, qname):
    q = Queue(qname, {"connection": conn})
    try:
        added = await q.addBulk([{"name": "b", "data": {"i": i}, "opts": {"lane": f"lane-{i}"}} for i in range(230)])
        assert [j.data["i"] for j in added] == list(range(230))
        assert await q.count() == 230
    finally:
        await q.close()

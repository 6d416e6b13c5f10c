"""Queue upkeep and limits (queue_maintenance.py) with BullMQ Python's return values."""
import asyncio

import pytest

from echomq import Queue, ValidationError, Worker


async def test_clean_drain_obliterate(conn, qname, r):
    q = Queue(qname, {"connection": conn})
    for i in range(3):
        await q.add("t", {"i": i})
    await q.add("d", {}, {"delay": 60_000})
    assert await q.drain() is None
    assert await q.getJobCounts("waiting", "delayed") == {"waiting": 0, "delayed": 1}
    await q.drain(True)
    assert await q.getDelayedCount() == 0
    for i in range(4):
        await q.add("t", {"i": i})
    removed = await q.clean(0, 2, "wait")
    assert len(removed) == 2 and await q.getWaitingCount() == 2
    with pytest.raises(ValidationError, match="type must be one of"):
        await q.clean(0, 0, "nope")
    assert await r.keys(q.keys.base + "*") != []
    await q.obliterate()
    # Request records (req:<rid>, docs/protocol.md "Applied once") expire with their window by themselves.
    assert [k for k in await r.keys(q.keys.base + "*") if not k.startswith(q.keys.reqBase)] == []
    await q.close()


async def test_obliterate_refused_with_active_jobs(conn, qname):
    q = Queue(qname, {"connection": conn})
    await q.add("t", {})
    w = Worker(qname, None, {"connection": conn})
    job = await w.getNextJob("tok")
    assert job is not None
    with pytest.raises(Exception, match="^Cannot obliterate queue with active jobs"):
        await q.obliterate()
    assert await q.getActiveCount() == 1
    await q.obliterate(force=True)
    assert await q.getActiveCount() == 0
    await w.close()
    await q.close()


async def test_retry_and_promote_jobs(conn, qname):
    q = Queue(qname, {"connection": conn})
    w = Worker(qname, None, {"connection": conn})
    await q.add("t", {})
    job = await w.getNextJob("tok")
    await job.moveToFailed(Exception("boom"), "tok")
    assert await q.getFailedCount() == 1
    assert await q.retryJobs({"state": "failed"}) is None
    assert await q.getFailedCount() == 0 and await q.getWaitingCount() == 1
    await q.add("d", {}, {"delay": 60_000})
    await q.promoteJobs()
    assert await q.getDelayedCount() == 0 and await q.getWaitingCount() == 2
    await w.close()
    await q.close()


async def test_limits_and_counts_per_priority(conn, qname):
    q = Queue(qname, {"connection": conn})
    assert await q.getGlobalConcurrency() is None
    assert await q.setGlobalConcurrency(3) == 1
    assert await q.getGlobalConcurrency() == 3
    assert await q.removeGlobalConcurrency() == 1
    assert await q.setGlobalRateLimit(5, 1000) == 2
    assert await q.getGlobalRateLimit() == {"max": 5, "duration": 1000}
    assert await q.removeGlobalRateLimit() == 2
    await q.rateLimit(5000)
    assert 0 < await q.getRateLimitTtl() <= 5000
    assert await q.removeRateLimitKey() == 1
    with pytest.raises(ValidationError, match="expire_time_ms"):
        await q.rateLimit(0)
    await q.add("a", {}, {"priority": 2})
    await q.add("b", {}, {"priority": 2})
    await q.add("c", {})
    assert await q.getCountsPerPriority([0, 2, 7]) == {"0": 1, "2": 2, "7": 0}
    assert await q.trimEvents(0) >= 0
    assert await q.removeDeprecatedPriorityKey() == 0
    await q.close()


async def test_remove_with_children_and_locked(conn, qname):
    from echomq import FlowProducer
    fp = FlowProducer({"connection": conn})
    tree = await fp.add({"name": "p", "queueName": qname, "children": [{"name": "c", "queueName": qname}]})
    q = Queue(qname, {"connection": conn})
    assert await q.remove(tree["job"].id) == 1
    assert await q.getJob(tree["children"][0]["job"].id) is None
    await q.add("t", {}, {"jobId": "held"})
    w = Worker(qname, None, {"connection": conn})
    job = await w.getNextJob("tok")
    assert job.id == "held"
    with pytest.raises(Exception, match="could not be removed because it is locked by another worker"):
        await job.remove()
    assert await q.getJobState("held") == "active"
    await w.close()
    await fp.close()
    await q.close()


async def test_get_workers(conn, qname):
    q = Queue(qname, {"connection": conn})

    async def proc(job, token):
        return 1
    w = Worker(qname, proc, {"connection": conn})
    for _ in range(50):
        if await q.get_workers_count() > 0:
            break
        await asyncio.sleep(0.02)
    ws = await q.get_workers()
    assert ws and ws[0]["name"] == qname
    await w.close()
    await q.close()

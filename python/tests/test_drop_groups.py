"""BullMQ Pro's group methods on the Python Queue (queue_groups.py), as Node names them."""
import asyncio

import pytest

from echomq import Queue, ValidationError, Worker


async def test_group_settings_status_and_listing(conn, qname):
    q = Queue(qname, {"connection": conn})
    for i in range(3):
        await q.add("t", {"i": i}, {"group": {"id": "g1"}})
    await q.add("t", {}, {"group": {"id": "g2"}, "priority": 4})
    await q.add("plain", {})
    assert await q.getGroupsJobsCount() == 4
    assert [j.data["i"] for j in await q.getGroupJobs("g1")] == [0, 1, 2]
    assert [j.data["i"] for j in await q.getGroupJobs("g1", 1, 1)] == [1]
    assert await q.getCountsPerPriorityForGroup("g2", [0, 4]) == {"0": 0, "4": 1}
    assert await q.getGroupStatus("g1") == "waiting" and await q.getGroupStatus("none") is None
    await q.setGroupConcurrency("g1", 2)
    assert await q.getGroupConcurrency("g1") == 2
    await q.removeGroupConcurrency("g1")
    assert await q.getGroupConcurrency("g1") is None
    assert await q.pauseGroup("g1") is True and await q.pauseGroup("g1") is False
    assert await q.getGroupStatus("g1") == "paused"
    assert await q.getGroupsByStatus("paused") == [{"id": "g1", "count": 3}]
    assert await q.resumeGroup("g1") is True and await q.resumeGroup("g1") is False
    await q.setGroupRateLimit("g2", 1, 60_000)
    assert await q.getGroupRateLimitTtl("g2") == -2
    with pytest.raises(ValidationError, match="groupId"):
        await q.pauseGroup("")
    with pytest.raises(ValidationError, match="status must be one of"):
        await q.getGroupsByStatus("busy")
    await q.close()


async def test_group_concurrency_holds_and_rate_limit_group(conn, qname):
    q = Queue(qname, {"connection": conn})
    await q.setGroupConcurrency("g", 1)
    for i in range(2):
        await q.add("t", {"i": i}, {"group": {"id": "g"}})
    w = Worker(qname, None, {"connection": conn})
    a = await w.moveToActive("tok")
    assert a is not None and await w.moveToActive("tok") is None  # the group is at its concurrency
    assert await q.getGroupStatus("g") == "maxed" and await q.getGroupActiveCount("g") == 1
    await w.rateLimitGroup(a, 5_000)
    assert 0 < await q.getGroupRateLimitTtl("g") <= 5_000
    assert await q.getGroupStatus("g") == "limited"
    await w.close()
    await q.close()


async def test_worker_group_defaults(conn, qname):
    with pytest.raises(ValidationError, match="group.concurrency"):
        Worker(qname, None, {"connection": conn, "group": {"concurrency": 0}})
    q = Queue(qname, {"connection": conn})
    started = asyncio.Event()

    async def proc(job, token):
        started.set()
        await asyncio.sleep(0.3)
    w = Worker(qname, proc, {"connection": conn, "concurrency": 4, "group": {"concurrency": 1}})
    for i in range(3):
        await q.add("t", {"i": i}, {"group": {"id": "g"}})
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0.1)
    assert await q.getGroupConcurrency("g") == 1 and await q.getGroupActiveCount("g") == 1
    await w.close()
    await q.close()

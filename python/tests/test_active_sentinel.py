"""The active set's sentinel (layout 2) is invisible to readers, and upgradeLayout moves a queue
stored in layout 1 (test/active-sentinel.test.ts and test/layout-version.test.ts on Node)."""
import asyncio

import pytest

from echomq import IncompatibleLayoutError, Queue, ValidationError, Worker
from echomq.keys import ACTIVE_SENTINEL, QueueKeys

WINDOWS = [(0, -1), (0, 9), (10, 19), (45, 60), (49, 49), (50, 50), (-5, -1), (-60, -40), (-1, -1), (3, 1)]


async def until(cond, timeout=10.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await cond():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.01)


async def _eq(aw, want):
    return (await aw) == want


async def readings(q):
    out = {"counts": await q.getJobCounts(), "active": await q.getActiveCount(),
           "both": await q.getJobCountByTypes("active", "waiting")}
    for s, e in WINDOWS:
        for asc in (True, False):
            out[f"jobs {s} {e} {asc}"] = [j.id for j in await q.getJobs(["active"], s, e, asc)]
        out[f"getActive {s} {e}"] = [j.id for j in await q.getActive(s, e)]
    return out


async def test_active_is_a_skiplist_and_readers_never_see_the_sentinel(conn, r, qname):
    k = QueueKeys(qname)
    q = Queue(qname, {"connection": conn})
    for i in range(80):
        await q.add(f"j{i}", {})
    gate = asyncio.Event()

    async def hold(job, token):
        await gate.wait()

    w = Worker(qname, hold, {"connection": conn, "concurrency": 50})
    await until(lambda: _eq(q.getActiveCount(), 50))
    assert await r.object("ENCODING", k.active) == "skiplist"
    assert await r.zscore(k.active, ACTIVE_SENTINEL) == float("inf")
    with_sentinel = await readings(q)
    assert with_sentinel["active"] == 50 and with_sentinel["counts"]["active"] == 50
    assert len(with_sentinel["jobs 0 -1 True"]) == 50 and ACTIVE_SENTINEL not in with_sentinel["jobs 0 -1 True"]
    assert with_sentinel["jobs 50 50 True"] == []
    await r.zrem(k.active, ACTIVE_SENTINEL)  # the set as layout 1 stored it: the jobs alone
    without = await readings(q)
    await r.zadd(k.active, {ACTIVE_SENTINEL: float("inf")})
    assert with_sentinel == without

    gate.set()
    await until(lambda: _eq(q.getCompletedCount(), 80), 20)
    await until(lambda: _eq(q.getActiveCount(), 0))
    await w.close()
    assert await r.zrange(k.active, 0, -1) == [ACTIVE_SENTINEL]
    await q.obliterate()  # no force needed: the sentinel is no active job
    assert await r.exists(k.active, k.meta) == 0
    await q.close()


async def test_the_sentinel_is_refused_as_a_job_id(conn, qname):
    q = Queue(qname, {"connection": conn})
    with pytest.raises(ValidationError):
        await q.add("x", {}, {"jobId": ACTIVE_SENTINEL})
    await q.obliterate()
    await q.close()


async def test_upgrade_layout_from_1(conn, r, qname):
    k = QueueKeys(qname)
    q = Queue(qname, {"connection": conn})
    await q.add("waiting", {})
    await q.close()
    await r.hset(k.meta, "lv", "1")
    await r.zadd(k.active, {"held-by-an-old-worker": 1e15})
    q = Queue(qname, {"connection": conn})
    with pytest.raises(IncompatibleLayoutError, match=r"layout version 1; this echomq reads layout version 2; "
                                                      r"upgrade it with queue\.upgradeLayout\(\)"):
        await q.add("b", {})
    assert await q.upgradeLayout(dryRun=True) == 1
    assert await r.hget(k.meta, "lv") == "1" and await r.zcard(k.active) == 1
    assert await q.upgradeLayout() == 1
    assert await r.hget(k.meta, "lv") == "2"
    assert await r.zrange(k.active, 0, -1, withscores=True) == [("held-by-an-old-worker", 1e15), (ACTIVE_SENTINEL, float("inf"))]
    assert await q.getActiveCount() == 1
    await q.add("b", {})  # goes ahead now
    assert await q.upgradeLayout() == 2  # a second call changes nothing
    assert await r.hget(k.meta, "lv") == "2" and await r.zcard(k.active) == 2
    await q.obliterate(force=True)
    assert await q.upgradeLayout() == 0  # nothing stored: a new queue
    await r.hset(k.meta, "lv", "7")
    with pytest.raises(IncompatibleLayoutError, match="layout version 7; this echomq reads layout version 2$"):
        await q.upgradeLayout()
    assert await r.hgetall(k.meta) == {"lv": "7"}
    await r.delete(k.meta)
    await q.close()

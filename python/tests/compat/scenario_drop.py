"""Scenarios of the drop-in surface (queue upkeep, schedulers, flows, manual processing,
deduplication, events producer, error codes), run under either package by
test_differential_drop.py. Usage: python scenario_drop.py <bullmq|echomq> <redis_url> <queue> <scenario>."""
import asyncio
import importlib
import json
import sys

lib = importlib.import_module(sys.argv[1])
url, qname, which = sys.argv[2], sys.argv[3], sys.argv[4]
OPTS = {"connection": url, "prefix": "bull"}


async def upkeep(q, out):
    for i in range(4):
        await q.add("w", {"i": i})
    await q.add("p", {}, {"priority": 2})
    await q.add("d", {}, {"delay": 60_000})
    out["per_priority"] = await q.getCountsPerPriority([0, 2, 5])
    out["cleaned"] = len(await q.clean(0, 2, "wait"))
    out["after_clean"] = await q.getJobCounts("waiting", "prioritized", "delayed")
    out["promote"] = await q.promoteJobs()
    out["after_promote"] = await q.getJobCounts("waiting", "delayed")
    out["drain"] = await q.drain()
    out["after_drain"] = await q.getJobCounts("waiting", "prioritized", "delayed")
    out["set_conc"] = await q.setGlobalConcurrency(4)
    out["get_conc"] = await q.getGlobalConcurrency()
    out["rm_conc"] = await q.removeGlobalConcurrency()
    out["set_rl"] = await q.setGlobalRateLimit(10, 1000)
    out["get_rl"] = await q.getGlobalRateLimit()
    out["rm_rl"] = await q.removeGlobalRateLimit()
    await q.rateLimit(2000)
    out["ttl_positive"] = (await q.getRateLimitTtl()) > 0
    out["rm_rate_key"] = await q.removeRateLimitKey()
    out["rm_prio_key"] = await q.removeDeprecatedPriorityKey()
    out["obliterate"] = await q.obliterate()
    out["after_obliterate"] = await q.getJobCounts("waiting", "delayed", "completed")


async def manual(q, out):
    w = lib.Worker(qname, None, OPTS)
    await q.add("a", {"n": 1}, {"attempts": 3, "backoff": 300})
    await q.add("b", {"n": 2})
    job = await w.getNextJob("tok")
    out["active"] = await job.isActive()
    r = await job.moveToFailed(Exception("boom"), "tok", True)
    out["first_delayed"] = await job.isDelayed()
    out["next"] = [r[0]["name"], r[2], r[3]] if r else None
    nxt = await lib.Job.fromId(q, r[1])
    out["next_active"] = await nxt.isActive()
    nxt.token = "tok"
    out["complete"] = await nxt.moveToCompleted("done", "tok")
    out["completed"] = [await nxt.isCompleted(), nxt.returnvalue, nxt.attemptsMade]
    out["failed_reason"] = (await lib.Job.fromId(q, job.id)).failedReason.strip('"')
    await w.close(force=True)


async def schedulers(q, out):
    job = await q.upsertJobScheduler("every-1", {"every": 60_000}, "tick", {"a": 1}, {"attempts": 2})
    out["job_name"] = job.name
    out["job_data"] = job.data
    out["is"] = [await q.isJobScheduler("every-1"), await q.isJobScheduler("nope")]
    await q.upsertJobScheduler("cron-1", {"pattern": "0 0 * * *"}, "nightly")
    s = await q.getJobScheduler("every-1")
    out["sched"] = {k: s.get(k) for k in ("key", "name", "every", "iterationCount")}
    out["sched_template"] = s.get("template", {}).get("data")
    out["has_next"] = isinstance(s.get("next"), int)
    out["count"] = await q.getJobSchedulersCount()
    out["keys"] = sorted(x["key"] for x in await q.getJobSchedulers(0, -1, True))
    out["remove"] = await q.removeJobScheduler("every-1")
    out["remove_missing"] = await q.removeJobScheduler("every-1")
    out["count_after"] = await q.getJobSchedulersCount()
    out["limit_passed"] = await q.upsertJobScheduler("lim", {"every": 1000, "limit": 1, "count": 1}, "x")


async def flows(q, out):
    fp = lib.FlowProducer(OPTS)
    child_q = qname + "-kids"
    tree = await fp.add({"name": "parent", "queueName": qname, "data": {"p": 1}, "children": [
        {"name": "kid1", "queueName": child_q, "data": {"n": 1}},
        {"name": "kid2", "queueName": child_q, "data": {"n": 2}}]})
    out["shape"] = [tree["job"].name, sorted(c["job"].name for c in tree["children"])]
    out["parent_state"] = await q.getJobState(tree["job"].id)
    done = asyncio.get_running_loop().create_future()

    async def kid(job, token):
        return job.data["n"] * 10

    async def parent(job, token):
        vals = await job.getChildrenValues()
        if not done.done():
            done.set_result(sorted(vals.values()))
        return "ok"
    wk = lib.Worker(child_q, kid, OPTS)
    wp = lib.Worker(qname, parent, OPTS)
    out["children_values"] = await asyncio.wait_for(done, 15)
    await wk.close()
    await wp.close()
    bulk = await fp.addBulk([{"name": "r1", "queueName": qname}, {"name": "r2", "queueName": qname}])
    out["bulk"] = [b["job"].name for b in bulk]
    await fp.close()


async def dedup(q, out):
    a = await q.add("x", {"v": 1}, {"deduplication": {"id": "d1"}})
    b = await q.add("x", {"v": 2}, {"deduplication": {"id": "d1"}})
    out["simple_same"] = a.id == b.id
    c = await q.add("y", {}, {"deduplication": {"id": "d2", "ttl": 60_000}})
    d = await q.add("y", {}, {"deduplication": {"id": "d2", "ttl": 60_000}})
    out["throttle_same"] = c.id == d.id
    e = await q.add("z", {"v": 1}, {"delay": 60_000, "deduplication": {"id": "d3", "ttl": 60_000, "extend": True, "replace": True}})
    f = await q.add("z", {"v": 2}, {"delay": 60_000, "deduplication": {"id": "d3", "ttl": 60_000, "extend": True, "replace": True}})
    kept = await q.getDelayed()
    out["replace"] = [len(kept), kept[0].data if kept else None, e.id != f.id]
    g = await q.add("k", {"v": 1}, {"deduplication": {"id": "d4", "keepLastIfActive": True}})
    h = await q.add("k", {"v": 2}, {"deduplication": {"id": "d4", "keepLastIfActive": True}})
    out["keep_last_waiting_same"] = g.id == h.id
    out["counts"] = await q.getJobCounts("waiting", "delayed")


async def events_producer(q, out):
    p = lib.QueueEventsProducer(qname, OPTS)
    await p.publishEvent({"eventName": "custom", "step": "3"})
    await p.close()
    import redis.asyncio as redis
    r = redis.Redis.from_url(url, decode_responses=True)
    keys = [k for k in await r.keys("bull:*") if "events" in k and qname in k]
    entries = await r.xrange(keys[0]) if keys else []
    out["last"] = entries[-1][1] if entries else None
    await r.aclose()


async def error_codes(q, out):
    ec = importlib.import_module(sys.argv[1] + ".error_code").ErrorCode
    out["codes"] = {m.name: m.value for m in ec}
    ce = importlib.import_module(sys.argv[1] + ".custom_errors")
    out["errors"] = [ce.UnrecoverableError is lib.UnrecoverableError, ce.WaitingChildrenError is lib.WaitingChildrenError]


async def main():
    q = lib.Queue(qname, OPTS)
    out = {}
    await globals()[which](q, out)
    await q.close()
    print(json.dumps(out, sort_keys=True, default=str))


asyncio.run(main())

"""Real processes of both runtimes on one queue: producers and workers either way, a mixed fleet,
a Python worker killed mid-job, a Node job scheduler run by Python workers only, Python's
progress and logs seen by Node, a job failed in Python read by Node, the CLI and the dashboard."""
import asyncio
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import redis.asyncio as aioredis

from echomq import Job, Queue, Worker
from echomq.keys import QueueKeys
from helpers import mirror_processor, settled_counter


async def test_node_producer_python_worker(node, conn, redis_url, qname):
    jobs = [{"name": "n", "data": {"n": i, "ret": {"sq": i * i, "t": "ü"}}} for i in range(20)]
    ids = (await node.call("add", url=redis_url, queue=qname, jobs=jobs))["ids"]
    w = Worker(qname, mirror_processor, {"connection": conn, "concurrency": 5})
    await asyncio.wait_for(settled_counter(w, 20), 10)
    await w.close()
    for i, jid in enumerate(ids):
        seen = await node.call("read", url=redis_url, queue=qname, id=jid)
        assert seen["state"] == "completed" and seen["returnvalue"] == {"sq": i * i, "t": "ü"}


async def test_python_producer_node_worker(node, conn, redis_url, qname):
    q = Queue(qname, {"connection": conn})
    added = await q.addBulk([{"name": "p", "data": {"n": i, "ret": [i, 0.5, "é"]}} for i in range(20)])
    tag = await node.call("work", url=redis_url, queue=qname, concurrency=4)
    node_rv = {}
    for _ in range(20):
        e = await node.next_event(tag)
        node_rv[e["id"]] = e["rv"]
    await node.call("close", worker=tag)
    for i, job in enumerate(added):
        got = await Job.fromId(q, job.id)
        assert got.returnvalue == node_rv[job.id] == [i, 0.5, "é"]
    await q.close()


async def _completed_in_stream_order(redis_url, keys):
    """Job ids of the completed events in stream order (an entry may hold up to 10 jobs, so the
    raw entry is read: redis-py's parser would make a dict of it and keep one jobId)."""
    c = aioredis.Redis.from_url(redis_url, decode_responses=True)
    c.response_callbacks.pop("XRANGE", None)
    out = []
    for _, flat in await c.execute_command("XRANGE", keys.events, "-", "+"):
        pairs = list(zip(flat[::2], flat[1::2]))
        if ("event", "completed") in pairs:
            out.extend(v for k, v in pairs if k == "jobId")
    await c.aclose()
    return out


async def test_mixed_fleet_exactly_once_shared_and_fair(node, conn, redis_url, r, qname):
    burst, quiet = 400, 30
    q = Queue(qname, {"connection": conn})
    await q.addBulk([{"name": "b", "data": {"n": i}, "opts": {"lane": "burst"}} for i in range(burst)])
    for lane in ("quiet1", "quiet2"):
        await q.addBulk([{"name": "q", "data": {"n": i}, "opts": {"lane": lane}} for i in range(quiet)])
    total = burst + 2 * quiet

    async def slow(job, token):
        await asyncio.sleep(0.002)
        return {"by": "python", "n": job.data["n"]}

    py = Worker(qname, slow, {"connection": conn, "name": "py-w"})
    py_done = settled_counter(py, 1)
    tag = await node.call("work", url=redis_url, queue=qname, delayMs=2, name="node-w")
    while await q.getCompletedCount() < total:
        await asyncio.sleep(0.1)
    await asyncio.gather(py.close(), node.call("close", worker=tag))
    k = QueueKeys(qname)
    order = await _completed_in_stream_order(redis_url, k)
    assert len(order) == total and len(set(order)) == total  # every job done exactly once
    by = Counter()
    lanes = {}
    for jid in order:
        h = await r.hmget(k.job(jid), ["rv", "att", "lane"])
        assert h[1] == "1"  # one attempt each: no job ran twice
        by[json.loads(h[0])["by"]] += 1
        lanes[jid] = h[2]
    assert by["python"] > total * 0.1 and by["node"] > total * 0.1, by  # both got a share
    last_quiet = max(i + 1 for i, jid in enumerate(order) if lanes[jid] != "burst")
    # The bound of test/lanes-fairness.test.ts at concurrency 1 (3 lanes rotating: about 3 ×
    # quiet, plus 10), with one more window of reordering per worker in flight (2 × 2).
    assert last_quiet <= 3 * quiet + 10 + 4, last_quiet
    assert py_done.done()
    await q.close()


async def test_python_worker_sigkilled_mid_job_is_finished_by_node(node, conn, redis_url, qname):
    q = Queue(qname, {"connection": conn})
    job = await q.add("k", {"ret": "finished by node"})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).with_name("py_crash_worker.py")), redis_url, qname, "800",
        stdout=asyncio.subprocess.PIPE)
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 20)).strip() == b"READY"
        assert (await asyncio.wait_for(proc.stdout.readline(), 20)).strip() == f"STARTED {job.id}".encode()
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert await q.getJobState(job.id) == "active"
    tag = await node.call("work", url=redis_url, queue=qname, stalledInterval=200)
    e = await node.next_event(tag, 15)
    await node.call("close", worker=tag)
    got = await Job.fromId(q, job.id)
    assert e["id"] == job.id and e["rv"] == "finished by node"
    assert got.returnvalue == "finished by node" and got.stalledCounter == 1 and got.attemptsStarted == 2
    await q.close()


async def test_node_scheduler_run_by_python_workers_only(node, conn, redis_url, qname):
    await node.call("scheduler", url=redis_url, queue=qname, id="every-300", repeat={"every": 300},
                    template={"name": "tick", "data": {"ret": "tick"}})
    await node.call("scheduler", url=redis_url, queue=qname, id="cron-1s", repeat={"pattern": "* * * * * *"},
                    template={"name": "cron", "data": {"ret": "cron"}})
    w = Worker(qname, mirror_processor, {"connection": conn})
    seen = []
    w.on("completed", lambda job, rv: seen.append((job.repeatJobKey, job.id)))
    for _ in range(60):
        if sum(1 for s, _ in seen if s == "cron-1s") >= 2 and sum(1 for s, _ in seen if s == "every-300") >= 4:
            break
        await asyncio.sleep(0.1)
    await w.close()
    every = [i for s, i in seen if s == "every-300"]
    cron = [i for s, i in seen if s == "cron-1s"]
    assert len(every) >= 4 and len(set(every)) == len(every)
    assert len(cron) >= 2 and len(set(cron)) == len(cron)
    # Cron slots are whole seconds: the ids carry the slot (repeat:<id>:<ms>).
    assert all(int(i.rsplit(":", 1)[1]) % 1000 == 0 for i in cron)


async def test_python_progress_and_logs_seen_by_node(node, conn, redis_url, qname):
    q = Queue(qname, {"connection": conn})
    job = await q.add("p", {"progress": {"pct": 33.5, "stage": "résumé"}, "log": "step 1 ✓", "ret": 1})
    w = Worker(qname, mirror_processor, {"connection": conn})
    await asyncio.wait_for(settled_counter(w, 1), 5)
    await w.close()
    events = await node.call("events", url=redis_url, queue=qname, ms=300)
    prog = [e for e in events if e["event"] == "progress"]
    assert prog == [{"event": "progress", "jobId": job.id, "data": {"pct": 33.5, "stage": "résumé"}}]
    done = [e for e in events if e["event"] == "completed"]
    assert done and done[0]["returnvalue"] == 1
    seen = await node.call("read", url=redis_url, queue=qname, id=job.id)
    assert seen["logs"] == {"logs": ["step 1 ✓"], "count": 1}
    await q.close()


async def test_python_failure_read_by_node_cli_and_dashboard(node, conn, redis_url, qname):
    q = Queue(qname, {"connection": conn})

    async def boom(job, token):
        raise ValueError("disk full: ünïcode")

    job = await q.add("f", {"x": 1}, {"attempts": 1})
    w = Worker(qname, boom, {"connection": conn})
    await asyncio.wait_for(settled_counter(w, 1), 5)
    await w.close()
    seen = await node.call("read", url=redis_url, queue=qname, id=job.id)
    assert seen["state"] == "failed" and seen["failedReason"] == "disk full: ünïcode"
    assert "ValueError: disk full: ünïcode" in seen["stacktrace"][0]
    cli = await node.call("cli", url=redis_url, argv=["job", qname, job.id, "--json"])
    assert cli["code"] == 0, cli
    detail = json.loads(cli["out"])
    assert detail["failedReason"] == "disk full: ünïcode" and detail["state"] == "failed"
    dash = await node.call("dashboard", url=redis_url, path=f"/api/queues/{qname}/jobs/{job.id}", timeout=120)
    assert dash["status"] == 200, dash
    body = dash["body"]
    found = json.dumps(body, ensure_ascii=False)
    assert "disk full: ünïcode" in found and "ValueError" in found
    await q.close()


async def test_prefix_bull_meets_across_runtimes(node, redis_url, conn, qname):
    """prefix 'bull' works as on Node: a Node producer and a Python worker both given it meet;
    the default (emq) is one queue apart from it."""
    ids = (await node.call("add", url=redis_url, queue=qname, prefix="bull", jobs=[{"name": "b", "data": {"ret": "bull"}}]))["ids"]
    assert await Queue(qname, {"connection": conn}).getWaitingCount() == 0
    q = Queue(qname, {"connection": conn, "prefix": "bull"})
    w = Worker(qname, mirror_processor, {"connection": conn, "prefix": "bull"})
    [(kind, job, rv)] = await asyncio.wait_for(settled_counter(w, 1), 10)
    await w.close()
    assert job.id == ids[0] and rv == "bull"
    seen = await node.call("read", url=redis_url, queue=qname, prefix="bull", id=ids[0])
    assert seen["returnvalue"] == "bull" and q.qualifiedName == f"bull:{qname}"
    await q.close()

"""The Python worker: retries and backoff, UnrecoverableError, the stall sweep, close, pause,
cancellation, events with BullMQ Python's arguments, rate limits, and the idle wait."""
import asyncio

import pytest
import redis.asyncio as aioredis

from echomq import AbortError, Job, Queue, UnrecoverableError, Worker
from echomq.backoff import backoff_delay
from helpers import settled_counter


async def test_retries_with_backoff_then_completes(conn, qname):
    q = Queue(qname, {"connection": conn})
    calls = []

    async def proc(job, token):
        calls.append(job.attemptsMade)
        if len(calls) < 3:
            raise ValueError(f"try {len(calls)}")
        return "ok"

    w = Worker(qname, proc, {"connection": conn})
    done = settled_counter(w, 3)
    job = await q.add("r", {}, {"attempts": 3, "backoff": {"type": "fixed", "delay": 30}})
    kinds = [k for k, _, _ in await asyncio.wait_for(done, 10)]
    await w.close()
    assert kinds == ["failed", "failed", "completed"] and calls == [0, 1, 2]
    j = await Job.fromId(q, job.id)
    assert j.attemptsMade == 3 and j.returnvalue == "ok" and await j.getState() == "completed"
    assert len(j.stacktrace) == 2 and "ValueError: try 2" in j.stacktrace[1]
    await q.close()


async def test_unrecoverable_error_fails_at_once(conn, qname):
    q = Queue(qname, {"connection": conn})

    async def proc(job, token):
        raise UnrecoverableError("")

    w = Worker(qname, proc, {"connection": conn})
    done = settled_counter(w, 1)
    job = await q.add("u", {}, {"attempts": 5})
    [(kind, _, err)] = await asyncio.wait_for(done, 10)
    await w.close()
    j = await Job.fromId(q, job.id)
    # An empty message stores the class name: what a Python user expects to read.
    assert kind == "failed" and isinstance(err, UnrecoverableError)
    assert j.failedReason == "UnrecoverableError" and j.attemptsMade == 1 and await j.getState() == "failed"
    await q.close()


async def test_backoff_strategies():
    assert await backoff_delay({"type": "fixed", "delay": 100}, 3, Exception(), None) == 100
    assert await backoff_delay({"type": "exponential", "delay": 100}, 3, Exception(), None) == 400
    assert await backoff_delay({"type": "exponential"}, 1, Exception(), None) == 1000
    got = await backoff_delay({"type": "fixed", "delay": 1000, "jitter": 0.5}, 1, Exception(), None)
    assert 500 <= got <= 1000
    assert await backoff_delay({"type": "custom"}, 2, Exception(), None, lambda n, t, e, j: n * 7) == 14
    assert await backoff_delay({"type": "custom"}, 2, Exception(), None) is None


async def test_custom_backoff_strategy_from_settings(conn, qname):
    q = Queue(qname, {"connection": conn})
    attempts = []

    async def proc(job, token):
        attempts.append(job.attemptsMade)
        if len(attempts) == 1:
            raise RuntimeError("again")
        return len(attempts)

    w = Worker(qname, proc, {"connection": conn, "settings": {"backoffStrategy": lambda n, t, e, j: 10}})
    done = settled_counter(w, 2)
    await q.add("c", {}, {"attempts": 2, "backoff": {"type": "mine"}})
    assert [k for k, _, _ in await asyncio.wait_for(done, 10)] == ["failed", "completed"]
    await w.close()
    await q.close()


async def test_stalled_job_is_recovered_by_another_worker(conn, qname):
    q = Queue(qname, {"connection": conn})
    started = asyncio.Event()

    async def hang(job, token):
        started.set()
        await asyncio.sleep(3600)

    a = Worker(qname, hang, {"connection": conn, "lockDuration": 300, "stalledInterval": 60000})
    job = await q.add("s", {"v": 1})
    await asyncio.wait_for(started.wait(), 5)
    await a.close(force=True)  # no more renewals: the lease runs out

    async def ok(job, token):
        return "recovered"

    b = Worker(qname, ok, {"connection": conn, "stalledInterval": 200})
    stalled = []
    b.on("stalled", lambda jid: stalled.append(jid))  # BullMQ Python: stalled(job_id)
    done = settled_counter(b, 1)
    [(kind, j, rv)] = await asyncio.wait_for(done, 10)
    await b.close()
    assert stalled == [job.id] and kind == "completed" and rv == "recovered"
    assert (await Job.fromId(q, job.id)).stalledCounter == 1
    await q.close()


async def test_stalled_past_max_count_fails_in_the_sweep(conn, qname):
    q = Queue(qname, {"connection": conn})
    started = asyncio.Event()

    async def hang(job, token):
        started.set()
        await asyncio.sleep(3600)

    a = Worker(qname, hang, {"connection": conn, "lockDuration": 300, "stalledInterval": 60000})
    job = await q.add("s", {}, {"attempts": 3})
    await asyncio.wait_for(started.wait(), 5)
    await a.close(force=True)
    b = Worker(qname, hang, {"connection": conn, "stalledInterval": 200, "maxStalledCount": 0})
    done = settled_counter(b, 1)
    [(kind, j, err)] = await asyncio.wait_for(done, 10)
    await b.close(force=True)
    assert kind == "failed" and isinstance(err, UnrecoverableError)
    assert j.id == job.id and j.failedReason == "job stalled more than allowable limit"
    assert await q.getJobState(job.id) == "failed"
    await q.close()


async def test_graceful_close_waits_and_events_have_bullmq_arguments(conn, qname):
    q = Queue(qname, {"connection": conn})
    release = asyncio.Event()
    events = []

    async def proc(job, token):
        await release.wait()
        return {"v": job.data["v"]}

    w = Worker(qname, proc, {"connection": conn})
    active = asyncio.Event()
    w.on("active", lambda job, prev: (events.append(("active", job.id, prev)), active.set()))
    w.on("completed", lambda job, rv: events.append(("completed", job.id, rv)))
    w.on("closed", lambda: events.append(("closed",)))
    w.on("paused", lambda: events.append(("paused",)))
    w.on("resumed", lambda: events.append(("resumed",)))
    job = await q.add("g", {"v": 5})
    await asyncio.wait_for(active.wait(), 5)
    closing = asyncio.ensure_future(w.close())
    await asyncio.sleep(0.1)
    assert not closing.done()
    release.set()
    await asyncio.wait_for(closing, 5)
    assert events == [("active", job.id, "waiting"), ("completed", job.id, {"v": 5}), ("closed",)]
    await w.close()  # idempotent
    await q.close()


async def test_pause_and_resume_events(conn, qname):
    async def proc(job, token):
        return 1
    w = Worker(qname, proc, {"connection": conn})
    seen = []
    w.on("paused", lambda: seen.append("paused"))
    w.on("resumed", lambda: seen.append("resumed"))
    await w.pause()
    assert w.isPaused()
    w.resume()
    await w.close()
    assert seen == ["paused", "resumed"]


async def test_cancel_job_aborts_the_signal(conn, qname):
    q = Queue(qname, {"connection": conn})
    started = asyncio.Event()

    async def proc(job, token, signal):
        started.set()
        await signal.wait()
        signal.throw_if_aborted()

    w = Worker(qname, proc, {"connection": conn})
    done = settled_counter(w, 1)
    job = await q.add("c", {})
    await asyncio.wait_for(started.wait(), 5)
    assert w.cancelJob(job.id, "user asked")
    [(kind, j, err)] = await asyncio.wait_for(done, 5)
    await w.close()
    assert kind == "failed" and isinstance(err, AbortError) and j.failedReason == "user asked"
    await q.close()


async def test_force_close_leaves_the_job_to_its_lease(conn, qname):
    q = Queue(qname, {"connection": conn})
    started = asyncio.Event()

    async def proc(job, token):
        started.set()
        await asyncio.sleep(3600)

    w = Worker(qname, proc, {"connection": conn})
    job = await q.add("f", {})
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(w.close(force=True), 2)
    assert await q.getJobState(job.id) == "active"
    await q.close()


async def test_idle_worker_blocks_and_wakes_on_add(conn, redis_url, qname):
    """drainDelay 5 s: a job added to an idle worker starts through the wake list (a poll would
    wait for the block to time out), and the idle worker sends next to no commands."""
    q = Queue(qname, {"connection": conn})
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)

    async def proc(job, token):
        return 1

    w = Worker(qname, proc, {"connection": conn})
    await asyncio.sleep(0.3)
    before = (await r.info("commandstats"))
    await asyncio.sleep(1.0)
    after = (await r.info("commandstats"))
    calls = lambda s: sum(v["calls"] for k, v in s.items() if k not in ("cmdstat_info",))
    assert calls(after) - calls(before) <= 3  # one BLPOP in flight, maybe a renewal tick
    done = settled_counter(w, 1)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await q.add("wake", {})
    await asyncio.wait_for(done, 4)  # well under drainDelay: woken, not polled
    assert loop.time() - t0 < 4
    await w.close()
    await q.close()
    await r.aclose()


async def test_limiter_caps_starts_per_window(conn, qname):
    q = Queue(qname, {"connection": conn})
    starts = []

    async def proc(job, token):
        starts.append(asyncio.get_running_loop().time())
        return 1

    w = Worker(qname, proc, {"connection": conn, "concurrency": 5, "limiter": {"max": 2, "duration": 1000}})
    done = settled_counter(w, 4)
    await q.addBulk([{"name": "l", "data": {"i": i}} for i in range(4)])
    await asyncio.wait_for(done, 10)
    await w.close()
    starts.sort()
    assert starts[2] - starts[0] >= 0.5  # the third start waited for the next window
    await q.close()


async def test_worker_rate_limit_call_holds_claims(conn, qname, redis_url):
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    w = Worker(qname, None, {"connection": conn})
    await w.rateLimit(500)
    from echomq.keys import QueueKeys
    k = QueueKeys(qname)
    assert 0 < await r.pttl(k.rate) <= 500 and await r.hget(k.meta, "blk") == "1"
    await w.close()
    await r.aclose()


def _redis_server(port, d):
    import shutil
    import subprocess
    return subprocess.Popen([shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                             "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _until_up(port):
    for _ in range(100):
        try:
            c = aioredis.Redis(port=port)
            await c.ping()
            await c.aclose()
            return
        except Exception:
            await asyncio.sleep(0.05)


async def test_settle_waits_for_redis_to_return(qname, tmp_path):
    """Redis goes away while a job runs: the worker keeps the finished job and settles it when
    Redis is back (its own server, persisted, stopped and started on the same port)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = _redis_server(port, str(tmp_path))
    await _until_up(port)
    conn = {"host": "127.0.0.1", "port": port}
    q = Queue(qname, {"connection": conn})
    release = asyncio.Event()
    started = asyncio.Event()

    async def proc(job, token):
        started.set()
        await release.wait()
        return "after the outage"

    w = Worker(qname, proc, {"connection": conn, "lockDuration": 10000})
    errors = []
    w.on("error", errors.append)
    done = settled_counter(w, 1)
    job = await q.add("o", {})
    await asyncio.wait_for(started.wait(), 5)
    server.terminate()
    server.wait(5)
    release.set()
    await asyncio.sleep(0.5)  # the settle fails meanwhile and is retried
    assert not done.done()
    server = _redis_server(port, str(tmp_path))
    try:
        [(kind, _, rv)] = await asyncio.wait_for(done, 15)
        await w.close()
        assert kind == "completed" and rv == "after the outage"
        assert (await q.getJob(job.id)).returnvalue == "after the outage"
        await q.close()
    finally:
        server.terminate()
        server.wait(5)


async def test_close_returns_after_its_connections_are_closed(conn, qname, redis_url):
    """close() closes the worker's own connections before it returns: its named blocking
    connection, cancelled mid-BLPOP or idle (a job was running, so it was not blocking), is
    gone from CLIENT LIST when close() returns."""
    from echomq.keys import client_name
    admin = aioredis.Redis.from_url(redis_url)
    q = Queue(qname, {"connection": conn})

    async def named() -> list:
        return [c["name"] for c in await admin.client_list() if c["name"].startswith(client_name(q.keys))]

    try:
        for busy in (False, True):
            started = asyncio.Event()

            async def proc(job, token):
                started.set()
                await asyncio.sleep(0.3)

            w = Worker(qname, proc, {"connection": conn, "drainDelay": 5})
            await w.waitUntilReady()
            for _ in range(100):  # the blocking connection names itself once set up
                if len(await named()) >= 2:
                    break
                await asyncio.sleep(0.02)
            assert len(await named()) >= 2
            if busy:
                await q.add("j", {})
                await asyncio.wait_for(started.wait(), 5)
            else:
                await asyncio.sleep(0.1)  # the 5 s BLPOP is in flight
            await w.close()
            assert await named() == [], f"busy={busy}: still open after close()"
    finally:
        await q.close()
        await admin.aclose()


async def test_queue_events_close_closes_its_blocking_connection(conn, qname, redis_url):
    """QueueEvents reads with a blocking connection of its own: close() leaves no socket open."""
    from echomq import QueueEvents
    admin = aioredis.Redis.from_url(redis_url)
    try:
        before = len(await admin.client_list())
        events = QueueEvents(qname, {"connection": conn})
        await events.waitUntilReady()
        for _ in range(100):  # its XREAD has started on its own connection
            if len(await admin.client_list()) > before:
                break
            await asyncio.sleep(0.02)
        assert len(await admin.client_list()) > before
        await events.close()
        assert len(await admin.client_list()) == before
    finally:
        await admin.aclose()

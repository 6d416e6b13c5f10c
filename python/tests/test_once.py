"""Applied once (docs/protocol.md "Applied once"): request ids on the Python client's calls, with
the replies of chosen calls lost by a real TCP proxy on loopback (fault_proxy.py) that cuts the
connection, so redis-py resends the same command (the same request id) to the real Redis."""
import asyncio
import re
import uuid
from urllib.parse import urlparse

import pytest
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from echomq import FlowProducer, Queue, QueueEventsProducer, Worker
from echomq import scripts
from echomq.errors import RedisRefusedError, RequestOutcomeUnknownError
from echomq.keys import QueueKeys
from echomq.library import library
from echomq.request_id import PREFIX, new_request_id, once_error
from echomq.runner import Runner
from fault_proxy import FaultProxy, every_nth, matching

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError, OutOfMemoryError, ResponseError


def _is(script: str):
    sha = library().scripts[script].sha.encode()
    fn = (library().scripts[script].function_name or "\0").encode()

    def pred(name: bytes, arg: bytes) -> bool:
        return (name == b"FCALL" and arg == fn) or (name == b"EVALSHA" and arg == sha)
    return pred


@pytest.fixture
async def proxy(redis_url):
    u = urlparse(redis_url)
    p = await FaultProxy(u.hostname, u.port).start()
    yield p
    await p.stop()


def via(proxy: FaultProxy, retries: int = 3) -> dict:
    return {"host": "127.0.0.1", "port": proxy.port, "retry": Retry(NoBackoff(), retries)}


async def test_request_id_format(r):
    rid = new_request_id(r)
    assert re.fullmatch(r"[A-Za-z0-9_-]{16}[0-9a-z]+", rid) and rid.startswith(PREFIX)
    await asyncio.sleep(0.05)  # the Redis clock offset is learnt in the background
    rid2 = new_request_id(r)
    base, at = rid2.split("@")
    sec, usec = await r.time()
    assert base.startswith(PREFIX) and base != rid and abs(int(at) - (int(sec) * 1000 + int(usec) // 1000)) < 1000


async def test_100_adds_every_10th_reply_dropped(proxy, conn, qname, r):
    proxy.policy = every_nth(10)
    q = Queue(qname, {"connection": via(proxy)})
    ids = [(await q.add("a", {"i": i})).id for i in range(100)]
    await q.close()
    print(f"100 adds: {proxy.dropped} replies dropped")
    assert proxy.dropped >= 9
    assert len(set(ids)) == 100
    p = Queue(qname, {"connection": conn})
    assert await p.getJobCountByTypes("wait") == 100
    for jid in ids:
        assert await p.getJob(jid) is not None
    await p.close()


async def test_add_bulk_flow_log_retry_event_with_lost_replies(proxy, conn, qname, r):
    proxy.policy = every_nth(2)
    q = Queue(qname, {"connection": via(proxy)})
    jobs = await q.addBulk([{"name": "b", "data": {"i": i}} for i in range(30)])
    assert len({j.id for j in jobs}) == 30
    for i in range(4):
        await jobs[0].log(f"line {i}")
    fp = FlowProducer({"connection": via(proxy)})
    await fp.add({"name": "root", "queueName": qname, "children": [{"name": "c", "queueName": qname, "data": {}}]})
    ev = QueueEventsProducer(qname, {"connection": via(proxy)})
    for i in range(4):
        await ev.publishEvent({"eventName": "custom", "n": i})
    await fp.close()
    await ev.close()
    await q.close()
    k = QueueKeys(qname)
    assert await r.lrange(k.logs(jobs[0].id), 0, -1) == ["line 0", "line 1", "line 2", "line 3"]  # each once
    events = await r.xrange(k.events)
    customs = [e for _, e in events if e.get("event") == "custom"]
    assert [c["n"] for c in customs] == ["0", "1", "2", "3"]
    p = Queue(qname, {"connection": conn})
    counts = await p.getJobCounts("wait", "waiting-children")
    assert counts == {"wait": 31, "waiting-children": 1}
    await p.close()
    assert proxy.dropped >= 5


async def test_300_jobs_worker_every_7th_reply_dropped(proxy, conn, qname, r):
    q = Queue(qname, {"connection": conn})
    await q.addBulk([{"name": "w", "data": {"i": i}} for i in range(300)])
    runs = []
    done = asyncio.get_running_loop().create_future()
    completed, failed, stalled = [], [], []

    async def proc(job, token):
        runs.append(job.id)
        await asyncio.sleep(0.001)
        return job.data["i"]

    proxy.policy = every_nth(7)
    w = Worker(qname, proc, {"connection": via(proxy), "concurrency": 4, "lockDuration": 3000,
                             "stalledInterval": 1000})

    def on_completed(job, rv, *_):
        completed.append(job.id)
        if len(completed) == 300 and not done.done():
            done.set_result(None)
    w.on("completed", on_completed)
    w.on("failed", lambda job, err, *_: failed.append(job.id))
    w.on("stalled", lambda jid, *_: stalled.append(jid))
    w.on("error", lambda err, *_: None)
    await asyncio.wait_for(done, 30)
    await w.close()
    print(f"300 jobs: {proxy.dropped} replies dropped, {len(completed)} completed, {len(failed)} failed, "
          f"{len(runs) - len(set(runs))} run twice, {len(stalled)} stalled, {w.releasedClaims} handed back")
    assert proxy.dropped >= 8
    assert len(completed) == 300 and len(set(completed)) == 300
    assert failed == [] and stalled == []
    assert len(runs) == 300 and len(set(runs)) == 300  # none ran twice
    assert await q.getJobCountByTypes("completed") == 300
    k = QueueKeys(qname)
    p = r.pipeline(transaction=False)
    for jid in set(runs):
        p.hget(k.job(jid), "stc")
    assert all(x is None for x in await p.execute())  # no stall counted
    await q.close()


async def test_lost_claim_not_retried_is_handed_back(proxy, conn, qname, r):
    q = Queue(qname, {"connection": conn})
    added = await q.addBulk([{"name": "h", "data": {}} for _ in range(3)])
    # Every claim reply is lost, and redis-py does not resend: the claim's outcome is unknown.
    proxy.policy = matching(_is("claim"), times=100)
    k = QueueKeys(qname)
    c = aioredis.Redis(**via(proxy, retries=0))
    err = None
    try:
        await scripts.claim(Runner(c, k), 3, 30_000, request_id="py-test-claim-1")
    except RequestOutcomeUnknownError as e:
        err = e
    await c.aclose()
    assert err is not None and err.request_id == "py-test-claim-1" and not err.expired
    assert str(err).startswith("claim: outcome unknown for request py-test-claim-1 (it may or may not have been applied)")
    assert await q.getJobCountByTypes("active") == 3  # claimed by the lost call, run by nobody
    direct = Runner(aioredis.Redis.from_url(f"redis://{proxy.host}:{proxy.port_up}"), k)
    assert sorted(await scripts.release_claim(direct, ["py-test-claim-1"])) == sorted(j.id for j in added)
    assert await q.getJobCountByTypes("wait") == 3
    assert int(await r.hget(k.meta, "rcl")) == 3
    assert [await r.hget(k.job(j.id), "stc") for j in added] == [None, None, None]
    # The worker does the same by itself: its claims are lost until it closes, then handed back.
    w = Worker(qname, lambda job, token: asyncio.sleep(0), {"connection": via(proxy, retries=0), "concurrency": 3})
    w.on("error", lambda err, *_: None)
    await asyncio.sleep(0.6)
    await w.close()
    assert w.releasedClaims == 3 and await q.getJobCountByTypes("wait") == 3
    assert [await r.hget(k.job(j.id), "stc") for j in added] == [None, None, None]
    await direct.client.aclose()
    await q.close()


async def test_expired_rerun_and_rerun_in_window(conn, qname, r):
    q = Queue(qname, {"connection": conn})
    await q.waitUntilReady()
    run = q.runner
    sec, usec = await r.time()
    now = int(sec) * 1000 + int(usec) // 1000
    job = scripts.AddJob("", "x", "{}", "", 0, "default", 0, False, (-1, 0), (-1, 0))
    with pytest.raises(RequestOutcomeUnknownError) as ei:
        await scripts.add(run, [job], f"old{uuid.uuid4().hex}@{now - 59_000}")
    assert ei.value.expired and "EMQ_EXPIRED" in str(ei.value)
    assert str(ei.value).startswith("add: outcome unknown for request old")
    assert await q.count() == 0
    rid = f"recent{uuid.uuid4().hex}@{now - 50_000}"
    [first] = await scripts.add(run, [job], rid)
    [again] = await scripts.add(run, [job], rid)
    assert first.id == again.id and first.created and await q.count() == 1
    await q.close()


def test_refusals_are_typed():
    e = once_error(OutOfMemoryError("command not allowed when used memory > 'maxmemory'."), "add", "rid1")
    assert isinstance(e, RedisRefusedError) and e.redis_code == "OOM"
    assert str(e).startswith("OOM command not allowed when used memory > 'maxmemory'.")
    e = once_error(ResponseError("MISCONF Redis is configured to save RDB snapshots"), "add", "rid1")
    assert isinstance(e, RedisRefusedError) and e.redis_code == "MISCONF"
    e = once_error(RedisConnectionError("Connection closed by server."), "claim", "rid2")
    assert isinstance(e, RequestOutcomeUnknownError) and e.request_id == "rid2" and not e.expired
    plain = ResponseError("ERR some script bug")
    assert once_error(plain, "add", "rid3") is plain


async def test_readonly_refusal_from_redis(conn, qname, r):
    q = Queue(qname, {"connection": conn})
    await q.waitUntilReady()
    await r.execute_command("ACL", "SETUSER", "emq-ro-py", "on", ">pw", "~*", "+@all", "-fcall", "-evalsha", "-eval")
    c = aioredis.Redis(host=conn["host"], port=conn["port"], username="emq-ro-py", password="pw")
    job = scripts.AddJob("", "x", "{}", "", 0, "default", 0, False, (-1, 0), (-1, 0))
    try:
        with pytest.raises(RedisRefusedError) as ei:
            await scripts.add(Runner(c, q.keys), [job])
        assert str(ei.value).startswith("NOPERM") and ei.value.redis_code == "NOPERM"
    finally:
        await c.aclose()
        await r.execute_command("ACL", "DELUSER", "emq-ro-py")
        await q.close()


async def test_node_rerun_answers_a_python_claim(node, redis_url, conn, qname):
    q = Queue(qname, {"connection": conn})
    added = await q.addBulk([{"name": "n", "data": {}} for _ in range(2)])
    rid = f"py-interop-{uuid.uuid4().hex}"
    first = await scripts.claim(q.runner, 2, 30_000, request_id=rid)
    res = await node.call("claimOnce", url=redis_url, queue=qname, count=2, requestId=rid)
    assert sorted(res["ids"]) == sorted(j.id for j in first.jobs) == sorted(j.id for j in added)
    assert await q.getJobCountByTypes("active") == 2  # the rerun claimed nothing new
    await q.close()

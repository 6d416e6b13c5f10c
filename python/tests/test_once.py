"""Applied once (docs/protocol.md "Applied once"): request ids on the Python client's calls, with
the replies of chosen calls lost by a real TCP proxy on loopback (fault_proxy.py) that cuts the
connection, so redis-py resends the same command (the same request id) to the real Redis."""
import asyncio
import re
import uuid
from typing import Any, List
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
    src = library().scripts[script].source.encode()

    def pred(name: bytes, arg: bytes) -> bool:
        # EVAL: the script was not cached yet (NOSCRIPT) and is sent in full.
        return (name == b"FCALL" and arg == fn) or (name == b"EVALSHA" and arg == sha) or (name == b"EVAL" and arg == src)
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


# -- moves and cross-queue flow helpers (promote, changePriority, remove, moveToWait,
# addDependency, resolveChild) and flow parts under ids derived from one request id --

def _events_of(entries: List[Any], job_id: str) -> List[str]:
    """A job's events in a stream's entries ("event" or "event:prev"); shared entries are split
    at each jobId, each job taking the shared fields first."""
    out = []
    for _, f in entries:
        items = list(f.items())
        shared = {}
        i = 1  # items[0] is ("event", name)
        while i < len(items) and items[i][0] != "jobId":
            shared[items[i][0]] = items[i][1]
            i += 1
        if i < len(items):
            own = {**shared, "jobId": items[i][1]}
            own.update(dict(items[i + 1:]))
            if own["jobId"] == job_id:
                out.append(f"{f['event']}:{own['prev']}" if own.get("prev") else f["event"])
    return out


async def _ids_in_claim_order(r, qname: str) -> List[str]:
    got = await scripts.claim(Runner(r, QueueKeys(qname)), 10, 30_000)
    return [j.fields["name"] for j in got.jobs]


async def test_promote_change_priority_remove_with_lost_replies(proxy, conn, qname, r):
    k = QueueKeys(qname)
    q = Queue(qname, {"connection": via(proxy)})
    job = await q.add("d", {}, {"delay": 60_000})
    proxy.policy = matching(_is("promote"))
    await job.promote()  # the resend answers 1, not "not delayed"
    assert proxy.dropped == 1 and await r.hget(k.job(job.id), "st") == "w"
    assert [e for e in _events_of(await r.xrange(k.events), job.id) if e.split(":")[0] == "waiting"] == ["waiting:delayed"]

    # changePriority: a job arrives between the first run and its resend; the resend must not
    # move the changed job behind it.
    qp = qname + "-prio"
    q2 = Queue(qp, {"connection": via(proxy)})
    direct = Queue(qp, {"connection": conn})
    a = await q2.add("a", {}, {"priority": 3})
    await q2.add("b", {}, {"priority": 3})

    async def arrive() -> None:
        await direct.add("c", {}, {"priority": 3})
    proxy.on_drop = arrive
    proxy.policy = matching(_is("changePriority"))
    await a.changePriority({"priority": 3})
    proxy.on_drop = None
    assert proxy.dropped == 2
    order = await _ids_in_claim_order(r, qp)
    print(f"changePriority with its reply dropped: claim order {' '.join(order)}")
    assert order == ["b", "a", "c"]

    # remove of a flow root: the resend answers, every job goes, one removed event each.
    fp = FlowProducer({"connection": conn})
    tree = await fp.add({"name": "root", "queueName": qname, "children": [
        {"name": "leaf", "queueName": qname, "data": {"i": i}} for i in range(2)]})
    await fp.close()
    ids = [tree["job"].id] + [c["job"].id for c in tree["children"]]
    proxy.policy = matching(_is("remove"))
    assert await q.remove(tree["job"].id) == 1
    assert proxy.dropped == 3
    assert [await r.exists(k.job(i)) for i in ids] == [0, 0, 0]
    entries = await r.xrange(k.events)
    assert [len([e for e in _events_of(entries, i) if e.split(":")[0] == "removed"]) for i in ids] == [1, 1, 1]
    for x in (q, q2, direct):
        await x.close()


async def test_worker_hand_back_with_lost_reply(proxy, conn, qname, r):
    from echomq.custom_errors.step_errors import RateLimitError
    k = QueueKeys(qname)
    q = Queue(qname, {"connection": conn})
    job = await q.add("x", {})
    runs, errors = [], []
    done = asyncio.get_running_loop().create_future()

    async def proc(j, token):
        runs.append(j.id)
        if len(runs) == 1:
            raise RateLimitError()
        return "ok"
    proxy.policy = matching(_is("moveToWait"))
    w = Worker(qname, proc, {"connection": via(proxy)})
    w.on("error", lambda err, *_: errors.append(str(err)))
    w.on("completed", lambda *_: done.done() or done.set_result(None))
    await asyncio.wait_for(done, 10)
    await w.close()
    assert proxy.dropped == 1 and errors == [] and len(runs) == 2
    assert [e for e in _events_of(await r.xrange(k.events), job.id) if e.split(":")[0] == "waiting"] == ["waiting:active"]
    await q.close()


async def test_cross_queue_parent_registration_with_lost_replies(proxy, conn, qname, r):
    qa, qb = qname + "-a", qname + "-b"
    ka, kb = QueueKeys(qa), QueueKeys(qb)
    a = Queue(qa, {"connection": conn})
    b = Queue(qb, {"connection": conn})
    parent = await b.add("p", {})
    await a.add("x", {}, {"jobId": "dup"})
    pa = Queue(qa, {"connection": via(proxy)})
    ref = {"id": parent.id, "queue": f"emq:{qb}"}
    # An existing job added as a child: the registration is taken back although its reply was lost.
    proxy.policy = matching(_is("addDependency"))
    got = await pa.add("x", {}, {"jobId": "dup", "parent": ref})
    assert proxy.dropped == 1 and got.id == "dup"
    assert await r.hgetall(kb["depsBase"] + parent.id) == {} and int(await r.hget(kb.job(parent.id), "pend") or 0) == 0
    # A new child is registered once; added again, it stays registered (0: already counted).
    proxy.policy = matching(_is("addDependency"))
    child = await pa.add("y", {}, {"jobId": "kid", "parent": ref})
    assert proxy.dropped == 2
    await pa.add("y", {}, {"jobId": "kid", "parent": ref})
    assert await r.hget(kb["depsBase"] + parent.id, ka.job(child.id)) == "p"
    assert await r.hget(kb.job(parent.id), "pend") == "1"
    for x in (a, b, pa):
        await x.close()


async def test_outbox_delivery_with_lost_reply_counts_the_child_once(proxy, conn, qname, r):
    qa, qb = qname + "-a", qname + "-b"
    kb = QueueKeys(qb)
    fp = FlowProducer({"connection": conn})
    tree = await fp.add({"name": "root", "queueName": qb, "children": [{"name": "leaf", "queueName": qa}]})
    await fp.close()
    root = tree["job"].id
    proxy.policy = matching(_is("resolveChild"))
    w = Worker(qa, lambda job, token: asyncio.sleep(0, "ok"), {"connection": via(proxy)})
    w.on("error", lambda *_: None)
    for _ in range(200):
        if await r.hget(kb.job(root), "st") == "w":
            break
        await asyncio.sleep(0.05)
    await w.close()
    assert proxy.dropped == 1
    assert await r.hget(kb.job(root), "pend") == "0" and await r.hget(kb.job(root), "st") == "w"
    assert [e for e in _events_of(await r.xrange(kb.events), root) if e.split(":")[0] == "waiting"] == ["waiting:waiting-children"]


async def test_cross_queue_flow_parts_share_one_request_id(proxy, conn, qname, r):
    qa, qb = qname + "-a", qname + "-b"
    n = [0]

    def first_of_each(name: bytes, arg: bytes) -> bool:
        if not _is("addFlow")(name, arg):
            return False
        n[0] += 1
        return n[0] % 2 == 1
    proxy.policy = first_of_each
    fp = FlowProducer({"connection": via(proxy, retries=0)})  # no resend: call_once retries itself
    await fp.add({"name": "root", "queueName": qa, "children": [
        {"name": "mid", "queueName": qb, "children": [{"name": "leaf", "queueName": qa}]}]})
    await fp.close()
    assert proxy.dropped >= 3
    jobs = [key for q in (qa, qb) for key in await r.keys(QueueKeys(q)["jobBase"] + "*")]
    assert len(jobs) == 3
    rids = [key[len(QueueKeys(q)["reqBase"]):] for q in (qa, qb) for key in await r.keys(QueueKeys(q)["reqBase"] + "*")]
    assert sorted(re.search(r"/(\d+)(@\d+)?$", x).group(1) for x in rids) == ["0", "1", "2"]
    assert len({re.sub(r"/\d+(@\d+)?$", r"\1", x) for x in rids}) == 1


def test_derived_request_ids():
    from echomq.request_id import derive_request_id
    assert derive_request_id("abc7@1700000000000", 2) == "abc7/2@1700000000000"
    assert derive_request_id("abc7", "r0") == "abc7/r0"
    assert len(derive_request_id("x" * 197, 10)) == 200
    for bad in (("x" * 198, 10), ("abc", ""), ("abc", "a/b"), ("", 1)):
        with pytest.raises(ValueError):
            derive_request_id(*bad)


async def test_remove_job_scheduler_with_lost_reply(proxy, conn, qname, r):
    q = Queue(qname, {"connection": via(proxy)})
    await q.upsertJobScheduler("hourly", {"every": 3_600_000}, "s")
    proxy.policy = matching(_is("removeScheduler"))
    assert await q.removeJobScheduler("hourly") == 0  # BullMQ Python's "removed", not 1 (no such scheduler)
    assert proxy.dropped == 1 and not await q.isJobScheduler("hourly")
    await q.close()

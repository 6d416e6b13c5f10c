"""Both runtimes write the same bytes for the same job and read back what the other wrote,
field by field: data, opts, returnvalue, failedReason, stacktrace, progress, logs, timestamps."""
import asyncio
import json

import pytest

from echomq import Job, Queue, Worker
from helpers import job_hash, job_logs, mirror_processor, settled_counter

DATA = [
    {"text": "héllo wörld — 日本 😀", "n": 1.0, "big": 1e16, "small": 1e-7, "neg0": -0.0, "list": [1, 2.5, None, True]},
    {"nested": {"deep": [{"a": "\u2028\u2029\x00\x1f\"\\"}]}, "lone": "\ud83d", "empty": {}},
    {"10": "integer-like", "b": 1, "2": "keys"},
    "a plain string", 42, None, [1, "two", {"three": 3}],
]
OPTS = [
    {},
    {"attempts": 3, "backoff": {"type": "exponential", "delay": 100}},
    {"priority": 7, "lane": "tenant:ü", "lifo": True},
    {"removeOnComplete": {"age": 60, "count": 10}, "removeOnFail": 5, "keepLogs": 3, "stackTraceLimit": 2},
    {"backoff": 250, "attempts": 1, "delay": 60000},
    {"group": {"id": "g1", "priority": 2}, "removeOnComplete": True, "removeOnFail": False},
    {"deduplication": {"id": "d-1"}, "timestamp": 1700000000000},
]


def _own_ids(o, jid):
    o = {**o, "jobId": jid}
    if "deduplication" in o:
        o["deduplication"] = {**o["deduplication"], "id": "d-" + jid}
    return o


async def test_add_writes_the_same_hash_as_node(node, conn, redis_url, r, qname):
    jobs = [{"name": f"n{i}", "data": d, "opts": _own_ids(o, f"j-{i}-{k}")}
            for i, d in enumerate(DATA) for k, o in enumerate(OPTS)]
    await node.call("add", url=redis_url, queue=qname + "-node", jobs=jobs)
    q = Queue(qname + "-py", {"connection": conn})
    await q.addBulk(jobs)
    for j in jobs:
        a = await job_hash(r, qname + "-node", j["opts"]["jobId"])
        b = await job_hash(r, qname + "-py", j["opts"]["jobId"])
        assert a and b, j
        if not j["opts"].get("timestamp"):
            a.pop("ts"), b.pop("ts")
        if j["data"] is DATA[2]:
            # Node's objects put integer-like keys first (JavaScript's rule), so the data Node
            # was handed is already reordered: the same value, compared parsed.
            assert json.loads(a.pop("data")) == json.loads(b.pop("data"))
        assert a == b, j
    await q.close()


async def test_single_add_matches_bulk(node, conn, redis_url, r, qname):
    q = Queue(qname, {"connection": conn})
    job = await q.add("one", DATA[0], {"jobId": "solo", "attempts": 2})
    await node.call("add", url=redis_url, queue=qname + "-n", jobs=[{"name": "one", "data": DATA[0], "opts": {"jobId": "solo", "attempts": 2}}])
    a, b = await job_hash(r, qname, "solo"), await job_hash(r, qname + "-n", "solo")
    a.pop("ts"), b.pop("ts")
    assert a == b and job.id == "solo"
    await q.close()


RESULTS = [
    {"ret": {"score": 0.1, "label": "çà", "n": 3.0}, "progress": {"pct": 50.0}, "log": "línea 1 😀"},
    {"ret": "plain", "progress": 7, "log": "x"},
    {"ret": None},
    {"ret": [1e21, 1e-7, -0.0]},
    {"fail": "it broke: ü \"quoted\""},
]


async def _run_python(conn, queue, count):
    w = Worker(queue, mirror_processor, {"connection": conn})
    done = settled_counter(w, count)
    await asyncio.wait_for(done, 10)
    await w.close()


async def _run_node(node, redis_url, queue, count):
    tag = await node.call("work", url=redis_url, queue=queue)
    for _ in range(count):
        await node.next_event(tag)
    await node.call("close", worker=tag)


async def test_settled_fields_are_the_same_bytes(node, conn, redis_url, r, qname):
    jobs = [{"name": "r", "data": d, "opts": {"jobId": f"r{i}"}} for i, d in enumerate(RESULTS)]
    qn, qp = qname + "-node", qname + "-py"
    await node.call("add", url=redis_url, queue=qn, jobs=jobs)
    await node.call("add", url=redis_url, queue=qp, jobs=jobs)
    await asyncio.gather(_run_node(node, redis_url, qn, len(jobs)), _run_python(conn, qp, len(jobs)))
    for j in jobs:
        jid = j["opts"]["jobId"]
        a, b = await job_hash(r, qn, jid), await job_hash(r, qp, jid)
        for f in ("rv", "prog", "err", "data", "opts", "st", "made", "att"):
            assert a.get(f) == b.get(f), (jid, f)
        assert await job_logs(r, qn, jid) == await job_logs(r, qp, jid)
        if "stack" in a:
            assert a["stack"].startswith('["') and b["stack"].startswith('["')


async def test_python_writes_node_reads(node, conn, redis_url, qname):
    q = Queue(qname, {"connection": conn})
    for i, d in enumerate(RESULTS):
        await q.add("r", d, {"jobId": f"p{i}"})
    await _run_python(conn, qname, len(RESULTS))
    for i, d in enumerate(RESULTS):
        seen = await node.call("read", url=redis_url, queue=qname, id=f"p{i}")
        py = await Job.fromId(q, f"p{i}")
        assert seen["data"] == py.data == d
        assert seen["returnvalue"] == py.returnvalue
        assert seen["progress"] == py.progress
        assert seen["logs"]["logs"] == (await q.getJobLogs(f"p{i}"))["logs"]
        assert seen.get("failedReason") == py.failedReason
        assert seen["stacktrace"] == py.stacktrace
        assert (seen["timestamp"], seen.get("processedOn"), seen.get("finishedOn")) == (py.timestamp, py.processedOn, py.finishedOn)
        assert seen["state"] == await py.getState()
        if "fail" in d:
            # The plain text, as Node stores err.message (BullMQ Python 3.0.4 JSON-encodes it).
            assert seen.get("failedReason") == d["fail"]
            assert "Exception: " + d["fail"] in seen["stacktrace"][0]
        else:
            assert seen["returnvalue"] == d.get("ret")
    await q.close()


async def test_node_writes_python_reads(node, conn, redis_url, qname):
    await node.call("add", url=redis_url, queue=qname,
                    jobs=[{"name": "r", "data": d, "opts": {"jobId": f"n{i}", "attempts": 1}} for i, d in enumerate(RESULTS)])
    await _run_node(node, redis_url, qname, len(RESULTS))
    q = Queue(qname, {"connection": conn})
    for i, d in enumerate(RESULTS):
        seen = await node.call("read", url=redis_url, queue=qname, id=f"n{i}")
        py = await Job.fromId(q, f"n{i}")
        assert py.data == seen["data"] == d
        assert py.opts == seen["opts"]
        assert py.returnvalue == seen["returnvalue"]
        assert py.progress == seen["progress"]
        assert py.failedReason == seen.get("failedReason")
        assert py.stacktrace == seen["stacktrace"]
        assert (await q.getJobLogs(f"n{i}"))["logs"] == seen["logs"]["logs"]
        assert py.attemptsMade == seen["attemptsMade"]
    await q.close()


async def test_big_integers_round_trip_exactly_in_python(conn, qname):
    q = Queue(qname, {"connection": conn})
    big = {"id": 2 ** 63 + 7, "neg": -(2 ** 70)}
    job = await q.add("big", big)
    assert (await Job.fromId(q, job.id)).data == big
    await q.close()

"""The compact argument forms Node sends too (docs/protocol.md, add and complete): a plain add
names each job's name and data alone, a settle of jobs that share their settle fields sends them
once per group. Observed at the client's one call site (Runner.call_once), against a real Redis."""
import asyncio

from echomq import Queue, Worker
from echomq.runner import Runner
from echomq.scripts import settle_groups


def _record_calls(monkeypatch):
    seen = []
    real = Runner.call_once

    async def call_once(self, name, args, op, request_id=None, at=None):
        seen.append((name, [str(a) for a in args]))
        return await real(self, name, args, op, request_id, at)
    monkeypatch.setattr(Runner, "call_once", call_once)
    return seen


def test_groups_follow_the_node_rule():
    a, b = ("x", "1", "", "", "default", "0", "", ""), ("y", "1", "", "", "b", "", "", "")
    jobs = [a, b, a, b, a, b]
    assert settle_groups(jobs) == [[0, 2, 4], [1, 3, 5]]
    assert settle_groups([a]) is None  # one job: 5 + 3 fields is more than 7
    assert settle_groups([a, b]) is None  # two jobs, two groups
    many = [("j", "1", "", "", f"l{i % 17}", "", "", "") for i in range(170)]
    assert settle_groups(many) is None  # more than 16 groups
    sixteen = [("j", "1", "", "", f"l{i % 16}", "", "", "") for i in range(160)]
    assert [len(g) for g in settle_groups(sixteen) or []] == [10] * 16


async def test_plain_adds_send_two_fields_a_job_and_the_others_four(conn, qname, monkeypatch):
    seen = _record_calls(monkeypatch)
    q = Queue(qname, {"connection": conn})
    await q.add("one", {"a": 1})
    await q.addBulk([{"name": "b1", "data": 1}, {"name": "b2", "data": 2}])
    await q.add("custom", 3, {"jobId": "c1"})
    await q.add("later", 4, {"delay": 60000})
    await q.add("first", 5, {"lifo": True})
    adds = [args for name, args in seen if name == "add"]
    assert [a[2] for a in adds] == ["2", "2", "4", "4", "4"]
    assert adds[1][18:22] == ["b1", "1", "b2", "2"]
    assert (await q.getJob("1")).name == "one" and (await q.getJob("3")).data == 2
    assert await q.getJobCounts("waiting", "delayed") == {"waiting": 5, "delayed": 1}
    await q.close()


async def test_a_worker_settles_through_groups_and_completes_every_job_once(conn, qname, monkeypatch):
    q = Queue(qname, {"connection": conn})
    await q.addBulk([{"name": "j", "data": i, "opts": {"removeOnComplete": True}} for i in range(120)])
    seen = _record_calls(monkeypatch)
    ran = []

    async def proc(job, token):
        ran.append(job.id)
        await asyncio.sleep(0.001)
        return job.data
    w = Worker(qname, proc, {"connection": conn, "concurrency": 10})
    for _ in range(500):
        if len(ran) == 120 and (await q.getJobCounts("active"))["active"] == 0:
            break
        await asyncio.sleep(0.02)
    await w.close()
    assert sorted(ran, key=int) == [str(i) for i in range(1, 121)]
    forms = [args[8] for name, args in seen if name == "complete"]
    assert "g" in forms
    assert await q.getJobCounts("active", "completed", "waiting") == {"active": 0, "completed": 0, "waiting": 0}
    await q.close()

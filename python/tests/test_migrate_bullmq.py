"""The move from BullMQ driven from Python (echomq.migrate and `python -m echomq
migrate-from-bullmq`): BullMQ Python 3.0.4 writes a queue with its own API (in its own
environment, through a subprocess), the move runs with the library's scripts, and echomq's
Python Queue and Worker read and serve the jobs as BullMQ would."""
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from echomq import Queue, Worker
from echomq.__main__ import main as cli
from echomq.migrate import MigrationRefusedError, migrate_from_bullmq

HERE = Path(__file__).resolve().parent
BULLMQ_PY = HERE.parent / ".venv-bullmq" / "bin" / "python"


def fill(url: str, name: str) -> dict:
    if not BULLMQ_PY.exists():
        if os.environ.get("ECHOMQ_REQUIRE_BULLMQ") == "1":
            pytest.fail(f"{BULLMQ_PY} is missing (bash scripts/python-test.sh makes it)")
        pytest.skip("bullmq 3.0.4 environment not installed")
    out = subprocess.run([str(BULLMQ_PY), str(HERE / "migrate_fixtures" / "bullmq_fill.py"), url, name],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


async def test_moves_a_bullmq_python_queue(redis_url, r, qname):
    want = fill(redis_url, qname)
    dry = await migrate_from_bullmq(redis_url, [qname], dry_run=True)
    assert dry["refusals"] == []
    assert await r.exists(f"emq:{{{qname}}}:meta") == 0
    report = await migrate_from_bullmq(redis_url, [qname], batch_size=2)
    st = report["queues"][0]["states"]
    assert {s: st[s]["moved"] for s in ("wait", "prioritized", "delayed", "completed", "failed")} == \
        {"wait": 2, "prioritized": 2, "delayed": 1, "completed": 1, "failed": 1}
    assert {s: dry["queues"][0]["states"][s]["moved"] for s in st} == {s: st[s]["moved"] for s in st}
    assert report["queues"][0]["ids"] == {"bullmq": 7, "echomq": 7}
    assert [k for k in await r.keys(f"bull:{qname}:*") if k.split(":")[-1] not in ("events", "id", "meta", "marker", "pc", "stalled-check")] == []

    q = Queue(qname, {"connection": redis_url})
    try:
        for jid, j in want["jobs"].items():
            job = await q.getJob(jid)
            got = {"name": job.name, "data": job.data, "returnvalue": job.returnvalue, "failedReason": job.failedReason,
                   "attemptsMade": job.attemptsMade, "timestamp": job.timestamp, "finishedOn": job.finishedOn,
                   "priority": job.priority}
            # BullMQ Python shows an unfinished job's finishedOn as 0, echomq's Python as None.
            assert got == {**j, "finishedOn": j["finishedOn"] or None}, jid
        assert (await q.getJobLogs(want["doneId"]))["logs"] == want["logs"]
        for jid, due in want["due"].items():
            assert int(float(await r.zscore(f"emq:{{{qname}}}:delayed", jid))) == due
        order = []

        async def process(job, token):
            order.append(job.id)
            return job.name

        w = Worker(qname, process, {"connection": redis_url, "concurrency": 1})
        for _ in range(500):
            if len(order) >= len(want["order"]):
                break
            await asyncio.sleep(0.02)
        await w.close()
        assert order == want["order"]
        assert int((await q.add("new", {})).id) > 7
    finally:
        await q.close()


def test_cli_reports_and_refuses(redis_url, qname, capsys):
    import base64
    import redis as sync_redis
    r = sync_redis.Redis.from_url(redis_url, decode_responses=True)
    r.lpush(f"bull:{qname}:wait", "1")
    r.hset(f"bull:{qname}:1", mapping={"name": "a", "data": "{}", "opts": "{}", "timestamp": "1700000000000"})
    r.set(f"bull:{qname}:id", "1")
    assert cli(["--redis", redis_url, "migrate-from-bullmq", qname, "--dry-run"]) == 0
    assert "wait              would move 1" in capsys.readouterr().out
    assert cli(["--redis", redis_url, "migrate-from-bullmq", qname, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 1
    assert r.exists(f"bull:{qname}:1") == 0
    assert cli(["--redis", redis_url, "migrate-from-bullmq", qname, "--batch", "0"]) == 1
    assert "batchSize" in capsys.readouterr().err
    # BullMQ Pro's group keys: the queue is refused whole.
    r.rpush(f"bull:{qname}-pro:groups:tenant-1", "1")
    with pytest.raises(MigrationRefusedError, match="BullMQ Pro group data"):
        asyncio.run(migrate_from_bullmq(redis_url, [f"{qname}-pro"]))
    # A BullMQ worker's connection (BullMQ's name, no echomq mark) refuses the move.
    r.client_setname(f"bull:{base64.b64encode(qname.encode()).decode()}")
    try:
        with pytest.raises(MigrationRefusedError, match="BullMQ workers are connected"):
            asyncio.run(migrate_from_bullmq(redis_url, [qname], prefix="emq"))
        assert cli(["--redis", redis_url, "migrate-from-bullmq", qname]) == 1
        assert "BullMQ workers are connected" in capsys.readouterr().err
    finally:
        r.close()

"""Follow mode from Python (`python -m echomq migrate-from-bullmq --follow`): a live BullMQ
Python 3.0.4 producer (its own environment, a subprocess) adds plain, prioritized and delayed
jobs and flows while the follower runs as a process and echomq's Python Worker serves the queue.
Every job runs once, flows complete, nothing stays in BullMQ's keys, and SIGTERM ends the
follower with exit code 0 and its report."""
import asyncio
import json
import os
import signal
import sys

import pytest

from echomq import Worker
from echomq.migrate import migrate_from_bullmq

from test_migrate_bullmq import BULLMQ_PY, HERE


async def bull_job_keys(r, name: str) -> list:
    keep = {"meta", "id", "events", "marker", "stalled-check", "pc"}
    return [k async for k in r.scan_iter(match=f"bull:{name}:*") if k[len(f"bull:{name}:"):] not in keep]


async def test_follows_a_live_bullmq_python_producer(redis_url, r, qname):
    if not BULLMQ_PY.exists():
        if os.environ.get("ECHOMQ_REQUIRE_BULLMQ") == "1":
            pytest.fail(f"{BULLMQ_PY} is missing (bash scripts/python-test.sh makes it)")
        pytest.skip("bullmq 3.0.4 environment not installed")
    follower = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "echomq", "--redis", redis_url, "migrate-from-bullmq", qname, "--follow", "--json", "--sweep", "1000",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    runs: dict = {}
    saw: dict = {}

    async def process(job, token):
        runs[job.id] = runs.get(job.id, 0) + 1
        if job.name == "parent":
            saw[job.id] = len(await job.getChildrenValues())
        return job.id

    w = Worker(qname, process, {"connection": redis_url, "concurrency": 4})
    try:
        producer = await asyncio.create_subprocess_exec(
            str(BULLMQ_PY), str(HERE / "migrate_fixtures" / "bullmq_produce.py"), redis_url, qname, "1.5",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(producer.communicate(), 60)
        assert producer.returncode == 0, err.decode()
        added = json.loads(out)
        for _ in range(1000):
            if all(i in runs for i in added["ids"]):
                break
            await asyncio.sleep(0.01)
        follower.send_signal(signal.SIGTERM)
        fout, ferr = await asyncio.wait_for(follower.communicate(), 20)
    finally:
        await w.close()
    assert follower.returncode == 0, ferr.decode()
    assert [i for i in added["ids"] if runs.get(i) != 1] == []
    assert {p: saw.get(p) for p in added["parents"]} == {p: 2 for p in added["parents"]}
    report = json.loads(fout)
    assert report["jobs"] == len(added["ids"])
    assert report["follow"]["wakes"] > 0
    assert "follow (event): moved" in ferr.decode()
    assert await bull_job_keys(r, qname) == []


async def test_follow_is_validated(redis_url):
    from echomq.errors import ValidationError
    with pytest.raises(ValidationError, match="sweepMs"):
        await migrate_from_bullmq(redis_url, ["q"], follow=True, sweep_ms=5)
    with pytest.raises(ValidationError, match="follow"):
        await migrate_from_bullmq(redis_url, ["q"], follow=True, dry_run=True)

"""Shared helpers: the processor both runtimes run in interop tests (node-peer.mjs 'work' has
the same behaviour), and waiting for worker events."""
from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import redis.asyncio as aioredis


async def mirror_processor(job, token):
    d = job.data if isinstance(job.data, dict) else {}
    if d.get("fail"):
        raise Exception(d["fail"])
    if "progress" in d:
        await job.updateProgress(d["progress"])
    if "log" in d:
        await job.log(d["log"])
    return d["ret"] if "ret" in d else {"by": "python", "n": d.get("n")}


def settled_counter(worker, count: int) -> "asyncio.Future[List[Any]]":
    """A future of the first `count` settled jobs of worker: ('completed'|'failed', job, value)."""
    fut = asyncio.get_running_loop().create_future()
    seen: List[Any] = []

    def add(kind):
        def on(job, value, *rest):
            seen.append((kind, job, value))
            if len(seen) >= count and not fut.done():
                fut.set_result(seen)
        return on
    worker.on("completed", add("completed"))
    worker.on("failed", add("failed"))
    return fut


async def job_hash(r: aioredis.Redis, queue: str, job_id: str, prefix: str = "emq") -> Dict[str, str]:
    from echomq.keys import QueueKeys
    return await r.hgetall(QueueKeys(queue, prefix).job(job_id))


async def job_logs(r: aioredis.Redis, queue: str, job_id: str, prefix: str = "emq") -> List[str]:
    from echomq.keys import QueueKeys
    return await r.lrange(QueueKeys(queue, prefix).logs(job_id), 0, -1)

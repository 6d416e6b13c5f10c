"""Run by BullMQ Python 3.0.4 (python/.venv-bullmq): a BullMQ worker (concurrency 1) runs a
queue's jobs until n have run, and prints their ids in the order it ran them, with what BullMQ
shows of the job ids given after n (JSON), for the move-back test.

Usage: python bullmq_run.py <redis url> <queue> <n> [job id...]"""
import asyncio
import json
import sys

from bullmq import Job, Queue, Worker


async def main(url: str, name: str, n: int, show: list) -> None:
    ran = []

    async def process(job, token):
        ran.append(job.id)
        return job.name

    w = Worker(name, process, {"connection": url, "concurrency": 1})
    for _ in range(1000):
        if len(ran) >= n:
            break
        await asyncio.sleep(0.01)
    await w.close()
    q = Queue(name, {"connection": url})
    shown = {}
    for i in show:
        j = await Job.fromId(q, i)
        shown[i] = {"name": j.name, "returnvalue": j.returnvalue, "failedReason": j.failedReason, "lane": j.opts.get("lane")}
    await q.close()
    print(json.dumps({"ran": ran, "shown": shown}))


asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]))

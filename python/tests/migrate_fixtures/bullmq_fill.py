"""Run by BullMQ Python 3.0.4 (python/.venv-bullmq): fills a BullMQ queue with jobs in several
states with BullMQ's own API, and prints what a user reads of them (JSON) for the move test.

Usage: python bullmq_fill.py <redis url> <queue>"""
import asyncio
import json
import sys

from bullmq import Job, Queue, Worker


async def main(url: str, name: str) -> None:
    q = Queue(name, {"connection": url})
    done = await q.add("done", {"n": 0})
    await q.add("boom", {"n": -1})

    async def process(job, token):
        await job.log(f"ran {job.name}")
        if job.name == "boom":
            raise Exception("it broke")
        return {"ok": job.data["n"]}

    w = Worker(name, process, {"connection": url})
    while (await q.getJobCountByTypes("completed", "failed")) < 2:
        await asyncio.sleep(0.02)
    await w.close()
    await q.add("w1", {"n": 1})
    await q.add("w2", {"n": 2})
    await q.add("p3", {"n": 3}, {"priority": 3})
    await q.add("p1", {"n": 4}, {"priority": 1})
    later = await q.add("later", {"n": 5}, {"delay": 60000})
    ids = ["1", "2", "3", "4", "5", "6", "7"]
    out = {"jobs": {}, "order": ["3", "4", "6", "5"], "due": {later.id: later.timestamp + 60000}, "doneId": done.id}
    for i in ids:
        j = await Job.fromId(q, i)
        out["jobs"][i] = {"name": j.name, "data": j.data, "returnvalue": j.returnvalue, "failedReason": j.failedReason,
                          "attemptsMade": j.attemptsMade, "timestamp": j.timestamp, "finishedOn": j.finishedOn,
                          "priority": j.priority}
    out["logs"] = (await q.getJobLogs(done.id))["logs"]
    await q.close()
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2]))

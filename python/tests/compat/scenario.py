"""One scenario, run under either package (BullMQ Python 3.0.4 or echomq): the differential
tests (test_differential.py) run it in both and compare what it observed.
Usage: python scenario.py <bullmq|echomq> <redis_url> <queue> <scenario>; prints JSON."""
import asyncio
import importlib
import json
import sys

lib = importlib.import_module(sys.argv[1])
Queue, Worker, Job, UnrecoverableError = lib.Queue, lib.Worker, lib.Job, lib.UnrecoverableError
url, qname, which = sys.argv[2], sys.argv[3], sys.argv[4]
PREFIX = {"prefix": "bull"}  # BullMQ Python's default, set on both sides


def job_view(job):
    return {"name": job.name, "data": job.data, "attemptsMade": job.attemptsMade, "progress": job.progress,
            "returnvalue": job.returnvalue, "delay": job.delay, "priority": job.priority,
            "stacktrace_len": len(job.stacktrace or []), "has_timestamp": bool(job.timestamp),
            "opts": {k: job.opts.get(k) for k in ("attempts", "priority", "delay", "lifo") if job.opts.get(k) is not None}}


async def run_worker(proc, count, opts=None):
    events = []
    done = asyncio.get_running_loop().create_future()

    def on(kind):
        def f(job, value, *rest):
            events.append([kind, job.id, value if kind == "completed" else str(value)])
            if len([e for e in events if e[0] in ("completed", "failed")]) >= count and not done.done():
                done.set_result(True)
        return f
    w = Worker(qname, proc, {"connection": url, **PREFIX, **(opts or {})})
    w.on("completed", on("completed"))
    w.on("failed", on("failed"))
    await asyncio.wait_for(done, 15)
    await w.close()
    return events


async def main():
    q = Queue(qname, {"connection": url, **PREFIX})
    out = {}
    if which == "add":
        a = await q.add("a", {"x": 1, "s": "ü"})
        b = await q.add("b", {"y": [1, 2]}, {"priority": 3, "attempts": 2})
        c = await q.add("c", {}, {"delay": 60000})
        out["counts"] = await q.getJobCounts("waiting", "prioritized", "delayed", "active", "completed", "failed")
        out["states"] = [await q.getJobState(j.id) for j in (a, b, c)]
        out["jobs"] = [job_view(await Job.fromId(q, j.id)) for j in (a, b, c)]
        out["waiting"] = [j.name for j in await q.getWaiting()]
        out["prioritized"] = [j.name for j in await q.getPrioritized()]
        out["delayed"] = [j.name for j in await q.getDelayed()]
        out["count_by_types"] = await q.getJobCountByTypes("waiting", "delayed")
        await q.pause()
        out["paused"] = await q.isPaused()
        await q.resume()
        out["resumed"] = not await q.isPaused()
        out["removed"] = await q.remove(c.id)
        out["after_remove"] = await q.getDelayedCount()
    elif which == "process":
        for i in range(3):
            await q.add("p", {"i": i})

        async def proc(job, token):
            await job.updateProgress(50)
            await job.log(f"row {job.data['i']}")
            return {"double": job.data["i"] * 2}
        out["events"] = sorted(await run_worker(proc, 3), key=lambda e: e[1])
        jobs = sorted(await q.getCompleted(), key=lambda j: j.data["i"])
        out["jobs"] = [job_view(j) for j in jobs]
        out["logs"] = [await q.getJobLogs(j.id) for j in jobs]
        out["states"] = [await j.getState() for j in jobs]
    elif which == "retry":
        await q.add("r", {}, {"attempts": 3, "backoff": {"type": "fixed", "delay": 20}})
        seen = []

        async def proc(job, token):
            seen.append(job.attemptsMade)
            if len(seen) < 3:
                raise ValueError("again")
            return "ok"
        out["events"] = [e[0] for e in await run_worker(proc, 3)]
        out["attempts_seen"] = seen
        [job] = await q.getCompleted()
        out["job"] = job_view(job)
    elif which == "unrecoverable":
        await q.add("u", {}, {"attempts": 5})

        async def proc(job, token):
            raise UnrecoverableError("fatal")
        out["events"] = [e[0] for e in await run_worker(proc, 1)]
        [job] = await q.getFailed()
        out["job"] = job_view(job)
        out["state"] = await job.getState()
        out["failedReason"] = job.failedReason
    await q.close()
    print(json.dumps(out, sort_keys=True))


asyncio.run(main())

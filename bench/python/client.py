"""One benchmark phase for one package, in its own process (BullMQ Python pins its own
dependencies, so it runs in python/.venv-bullmq; echomq in python/.venv).

Usage: python client.py <bullmq|echomq> <redis_url> <queue> <phase> <jobs>
  phase: add (single adds, 100 in flight), bulk (addBulk of 100), work1/work10/work50 (the
  queue is filled first, untimed; then a worker at that concurrency runs every job).
Prints READY, waits for a line on stdin (the driver reads INFO first), runs the timed part,
prints {"ms": elapsed}, waits for a line again (the driver reads INFO), then closes.
Finished jobs are removed at once in both packages (removeOnComplete), as bench/lib does."""
import asyncio
import importlib
import json
import sys
import time

lib_name, url, qname, phase, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
lib = importlib.import_module(lib_name)
OPTS = {"removeOnComplete": True}


async def line() -> None:
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def main() -> None:
    q = lib.Queue(qname, {"connection": url})
    jobs = [{"name": "b", "data": {"i": i, "pad": "x" * 64}, "opts": OPTS} for i in range(n)]
    if phase.startswith("work"):
        for i in range(0, n, 100):
            await q.addBulk(jobs[i:i + 100])
    else:
        await q.add("warm", {}, OPTS)  # connect and load scripts before timing
    print("READY", flush=True)
    await line()
    t0 = time.perf_counter()
    if phase == "add":
        sem = asyncio.Semaphore(100)

        async def one(j):
            async with sem:
                await q.add(j["name"], j["data"], j["opts"])
        await asyncio.gather(*(one(j) for j in jobs))
    elif phase == "bulk":
        for i in range(0, n, 100):
            await q.addBulk(jobs[i:i + 100])
    else:
        done = asyncio.get_running_loop().create_future()
        count = 0

        async def proc(job, token):
            return None

        def on_completed(job, result):
            nonlocal count
            count += 1
            if count == n and not done.done():
                done.set_result(True)
        w = lib.Worker(qname, proc, {"connection": url, "concurrency": int(phase[4:])})
        w.on("completed", on_completed)
        await done
    ms = (time.perf_counter() - t0) * 1000
    print(json.dumps({"ms": ms}), flush=True)
    await line()
    if phase.startswith("work"):
        await w.close()
    await q.close()


asyncio.run(main())

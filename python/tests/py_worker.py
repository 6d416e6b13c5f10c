"""A Python worker process for the Node side's interop test (test/python-interop.test.ts): runs
until `count` jobs settled, returning {"by": "python", "n": data.n, "echo": data}, then exits.
Usage: python py_worker.py <redis_url> <queue> <count>"""
import asyncio
import sys

from echomq import Worker


async def main() -> None:
    url, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    done = asyncio.Event()
    settled = 0

    async def proc(job, token):
        if isinstance(job.data, dict) and job.data.get("fail"):
            raise RuntimeError(job.data["fail"])
        return {"by": "python", "n": job.data.get("n"), "echo": job.data}

    def on_settled(*_):
        nonlocal settled
        settled += 1
        if settled >= count:
            done.set()

    w = Worker(queue, proc, {"connection": url, "concurrency": 4})
    w.on("completed", on_settled)
    w.on("failed", on_settled)
    print("READY", flush=True)
    await done.wait()
    await w.close()


asyncio.run(main())

"""A Python worker in its own process for the SIGKILL interop test: it claims jobs and never
finishes them, printing `STARTED <id>` so the test can kill it mid-job.
Usage: python py_crash_worker.py <redis_url> <queue> <lockDurationMs>"""
import asyncio
import sys

from echomq import Worker


async def main() -> None:
    url, queue, lock = sys.argv[1], sys.argv[2], int(sys.argv[3])

    async def hang(job, token):
        print(f"STARTED {job.id}", flush=True)
        await asyncio.Event().wait()

    w = Worker(queue, hang, {"connection": url, "lockDuration": lock, "stalledInterval": 600000})
    print("READY", flush=True)
    await asyncio.Event().wait()


asyncio.run(main())

import asyncio

from echomq import Queue, Worker


async def test_add_and_process(conn, qname):
    q = Queue(qname, {"connection": conn})
    done = asyncio.get_running_loop().create_future()
    seen = []

    async def proc(job, token):
        seen.append(job.data["n"])
        return {"twice": job.data["n"] * 2}

    w = Worker(qname, proc, {"connection": conn})

    def on_completed(job, result):
        if len(seen) == 3 and not done.done():
            done.set_result(True)
    w.on("completed", on_completed)
    for i in range(3):
        await q.add("t", {"n": i})
    await asyncio.wait_for(done, 5)
    await w.close()
    assert seen == [0, 1, 2]
    jobs = await q.getCompleted()
    assert sorted(j.returnvalue["twice"] for j in jobs) == [0, 2, 4]
    await q.close()

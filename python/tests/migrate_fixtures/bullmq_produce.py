"""Run by BullMQ Python 3.0.4 (python/.venv-bullmq): a live BullMQ producer for the follow test.
For about `seconds` it adds plain, prioritized and delayed jobs and, now and then, a flow of a
parent and two children with BullMQ's own API, then prints the ids it added and the flows'
parents (JSON).

Usage: python bullmq_produce.py <redis url> <queue> <seconds>"""
import asyncio
import json
import sys
import time

from bullmq import FlowProducer, Queue


async def main(url: str, name: str, seconds: float) -> None:
    q = Queue(name, {"connection": url})
    flows = FlowProducer({"connection": url})
    ids, parents = [], []
    start, i = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        ids.append((await q.add("plain", {"i": i})).id)
        ids.append((await q.add("prio", {"i": i}, {"priority": 1 + i % 3})).id)
        ids.append((await q.add("later", {"i": i}, {"delay": 150})).id)
        if i % 8 == 0:
            tree = await flows.add({"name": "parent", "queueName": name, "data": {},
                                    "children": [{"name": "child", "queueName": name, "data": {"i": i}},
                                                 {"name": "child", "queueName": name, "data": {"j": i}}]})
            parents.append(tree["job"].id)
            ids += [tree["job"].id, *[c["job"].id for c in tree["children"]]]
        i += 1
        await asyncio.sleep(0.05)
    await flows.close()
    await q.close()
    print(json.dumps({"ids": ids, "parents": parents}))


asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))

"""A Redis Cluster (3 masters, scripts/redis-cluster.mjs, real processes): the Python client on
redis.asyncio.cluster.RedisCluster runs the transitions with EVALSHA, as the Node client does,
and a Node worker on the same cluster queue reads what it wrote."""
import asyncio
import json
import subprocess
from pathlib import Path

import pytest
import pytest_asyncio
from redis.asyncio.cluster import ClusterNode, RedisCluster

from echomq import Job, Queue, Worker
from echomq import runner
from helpers import mirror_processor, settled_counter
from node_peer import node_binary

ROOT = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture(scope="module")
async def cluster_nodes():
    node = node_binary()
    if node is None:
        pytest.skip("the local cluster is started by scripts/redis-cluster.mjs (Node)")
    p = subprocess.Popen([node, str(ROOT / "scripts" / "redis-cluster.mjs"), "3", "0"], stdout=subprocess.PIPE, text=True)
    line = await asyncio.get_running_loop().run_in_executor(None, p.stdout.readline)
    nodes = json.loads(line)["nodes"]
    yield nodes
    p.terminate()
    p.wait(20)


async def test_queue_and_worker_on_a_cluster(cluster_nodes, qname):
    client = RedisCluster(startup_nodes=[ClusterNode(n["host"], n["port"]) for n in cluster_nodes])
    q = Queue(qname, {"connection": client})
    assert runner.script_mode(client) == "eval"
    jobs = await q.addBulk([{"name": "c", "data": {"n": i, "ret": i * 3}, "opts": {"lane": f"l{i % 3}"}} for i in range(30)])
    w = Worker(qname, mirror_processor, {"connection": client, "concurrency": 5})
    await asyncio.wait_for(settled_counter(w, 30), 20)
    await w.close()
    for i, j in enumerate(jobs):
        got = await Job.fromId(q, j.id)
        assert got.returnvalue == i * 3 and await got.getState() == "completed"
    assert await q.getJobCounts("completed", "waiting") == {"completed": 30, "waiting": 0}
    await q.close()
    await client.aclose()

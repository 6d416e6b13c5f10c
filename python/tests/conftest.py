"""A redis-server of our own on a free port for the whole session (as scripts/redis-server.mjs
does for the Node tests), or REDIS_URL when set; each test gets its own queue name."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
import pytest_asyncio
import redis.asyncio as aioredis


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url():
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    # ECHOMQ_SERVER_BIN names another server binary (the Valkey run, scripts/valkey-test.sh).
    binary = os.environ.get("ECHOMQ_SERVER_BIN") or shutil.which("redis-server") or shutil.which("valkey-server")
    if not binary:
        pytest.fail("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    d = tempfile.mkdtemp(prefix="emq-py-redis-")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as c:
                c.sendall(b"PING\r\n")
                if c.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    yield f"redis://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(5)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def conn(redis_url):
    """The dict form of a connection (BullMQ Python's most common one)."""
    from urllib.parse import urlparse
    u = urlparse(redis_url)
    return {"host": u.hostname, "port": u.port}


@pytest_asyncio.fixture
async def r(redis_url):
    c = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield c
    await c.aclose()


@pytest.fixture
def qname():
    return f"py-{uuid.uuid4().hex[:10]}"


@pytest_asyncio.fixture(scope="session")
async def node():
    from node_peer import NodePeer
    peer = await NodePeer.start()
    yield peer
    await peer.stop()

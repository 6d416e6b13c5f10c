"""Redis that cannot be reached: a port with nothing listening, and a redis-server of the test's
own started late, stopped and started again on the same port. Worker, Queue, QueueEvents and
FlowProducer ride it out; a call never sent raises RedisUnreachableError (a redis-py
ConnectionError) within connectWaitMs; malformed URLs are refused; an error nobody listens for
is one line."""
from __future__ import annotations

import asyncio
import gc
import logging
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from echomq import FlowProducer, Queue, QueueEvents, Worker
from echomq import RedisUnreachableError, RequestOutcomeUnknownError, ValidationError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A redis-server on a fixed port, started and stopped by the test."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="emq-py-conn-")
        self.proc = None

    def start(self) -> None:
        binary = shutil.which("redis-server") or shutil.which("valkey-server")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(5)
            self.proc = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server():
    s = Server(_free_port())
    yield s
    s.remove()


def _name() -> str:
    return f"py-conn-{uuid.uuid4().hex[:8]}"


async def _until(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_call_never_sent_raises_the_connection_error_within_the_bound(server):
    q = Queue(_name(), {"connection": {"host": "127.0.0.1", "port": server.port, "connectWaitMs": 300}})
    t0 = time.monotonic()
    with pytest.raises(RedisUnreachableError) as info:
        await q.add("never-sent", {})
    waited = time.monotonic() - t0
    err = info.value
    assert isinstance(err, RedisConnectionError) and not isinstance(err, RequestOutcomeUnknownError)
    assert err.code == "ECONNREFUSED"
    assert str(err).startswith(f"connect ECONNREFUSED 127.0.0.1:{server.port}: Redis cannot be reached at 127.0.0.1:{server.port}")
    # The default bound is 5 s: this is the option's (redis-py alone retries its connect ~3.5 s).
    assert 0.25 <= waited < 2.5
    server.start()
    await q.add("sent", {})
    counts = await q.getJobCounts("waiting")
    assert counts["waiting"] == 1  # the refused call was never sent
    await q.close()


async def test_connect_wait_ms_is_validated():
    with pytest.raises(ValidationError, match=r"connection\.connectWaitMs must be an integer of ms >= 0, or None"):
        Queue(_name(), {"connection": {"connectWaitMs": -1}})


async def test_a_worker_started_while_redis_is_down_starts_work_and_rides_out_a_restart(server, caplog):
    gc.collect()
    loop = asyncio.get_running_loop()
    unretrieved = []
    loop.set_exception_handler(lambda _loop, ctx: unretrieved.append(ctx.get("message")))
    conn = {"host": "127.0.0.1", "port": server.port, "connectWaitMs": 200}
    name = _name()
    done = []

    async def process(job, token):
        done.append(job.name)

    worker = Worker(name, process, {"connection": conn, "drainDelay": 1})
    events = QueueEvents(name, {"connection": conn})
    completed = []
    events.on("completed", lambda e, _id: completed.append(e["jobId"]))
    errors = []
    worker.on("error", errors.append)
    events.on("error", lambda e: None)
    await asyncio.sleep(0.8)
    assert worker.running and errors and isinstance(errors[-1], RedisConnectionError)
    server.start()
    q = Queue(name, {"connection": conn})
    flow = FlowProducer({"connection": conn})
    await asyncio.wait_for(asyncio.gather(q.waitUntilReady(), events.waitUntilReady(), flow.waitUntilReady()), 10)
    await asyncio.sleep(0.3)  # QueueEvents reads from "$": let its XREAD start
    job = await q.add("first", {})
    await _until(lambda: "first" in done, 10, "the first job")
    await _until(lambda: job.id in completed, 10, "its completed event")
    server.stop()
    await asyncio.sleep(0.8)
    assert worker.running
    server.start()
    await flow.add({"name": "second", "queueName": name})
    await _until(lambda: "second" in done, 10, "the job added after the restart")
    # The restarted server kept no data (job ids start again): count the events instead.
    await _until(lambda: len(completed) == 2, 10, "QueueEvents' event after the restart")
    await asyncio.gather(worker.close(), events.close(), q.close(), flow.close())
    gc.collect()
    await asyncio.sleep(0)
    assert unretrieved == []
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_wait_until_ready_waits_for_redis_and_raises_when_the_client_gives_up(server):
    conn = {"host": "127.0.0.1", "port": server.port, "connectWaitMs": 200}
    name = _name()
    objs = [Queue(name, {"connection": conn}), Worker(name, None, {"connection": conn}),
            QueueEvents(name, {"connection": conn, "autorun": False}), FlowProducer({"connection": conn})]
    waits = [asyncio.ensure_future(o.waitUntilReady()) for o in objs]
    await asyncio.sleep(0.6)  # past the bound: still waiting
    assert not any(w.done() for w in waits)
    server.start()
    await asyncio.wait_for(asyncio.gather(*waits), 10)
    for o in objs:
        await o.close()
    gives_up = {"host": "127.0.0.1", "port": _free_port(), "connectWaitMs": 0}
    for o in [Queue(name, {"connection": gives_up}), Worker(name, None, {"connection": gives_up}),
              QueueEvents(name, {"connection": gives_up, "autorun": False}), FlowProducer({"connection": gives_up})]:
        with pytest.raises(RedisUnreachableError, match=f"^connect ECONNREFUSED 127.0.0.1:{gives_up['port']}"):
            await o.waitUntilReady()
        await o.close()


@pytest.mark.parametrize("url", ["redis//localhost:6600", "http://localhost:6379", "localhost:6379/x"])
def test_a_malformed_url_is_refused_naming_it(url):
    with pytest.raises(ValidationError) as info:
        Queue(_name(), {"connection": url})
    assert str(info.value) == (
        "connection must be a redis://, rediss:// or unix:// URL (redis://[user:password@]host[:port][/db]), "
        f"host:port, a port number or a Unix socket path (/path/to/redis.sock), got \"{url}\"")


async def test_socket_paths_bare_ports_and_urls_stay_valid():
    q = Queue(_name(), {"connection": "/tmp/echomq-none.sock"})
    assert q.client.connection_pool.connection_kwargs["path"] == "/tmp/echomq-none.sock"
    p = Queue(_name(), {"connection": "6390"})
    assert p.client.connection_pool.connection_kwargs["port"] == 6390
    for url in ["localhost:6390", "redis://localhost:6390/2", "rediss://u:p@localhost:6390", "unix:///tmp/x.sock"]:
        await Queue(_name(), {"connection": url}).close()
    await q.close()
    await p.close()


async def test_an_error_nobody_listens_for_is_one_line(caplog):
    port = _free_port()
    name = _name()
    worker = Worker(name, lambda job, token: None, {"connection": {"host": "127.0.0.1", "port": port, "connectWaitMs": 50}})
    with caplog.at_level(logging.ERROR, logger="echomq"):
        await asyncio.sleep(1.0)  # several failed tries of the worker's start
    await worker.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "echomq"]
    assert lines == [f"[echomq] Worker {name}: connect ECONNREFUSED 127.0.0.1:{port}: Redis cannot be reached at "
                     f"127.0.0.1:{port} (the call waited 50 ms and was not sent)"]

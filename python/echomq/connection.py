"""Connections: the three forms BullMQ Python takes (a dict of redis-py arguments, a
redis.asyncio client used as given in either decode_responses mode, a URL), a separate
blocking connection for the idle wait, and the layout check every object makes once.
"""
from __future__ import annotations

import asyncio
import re
from typing import Any, Dict, Optional, Tuple

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from redis.exceptions import ConnectionError as RedisConnectionError, TimeoutError as RedisTimeoutError

from .codec import text
from .errors import IncompatibleLayoutError, RedisUnreachableError
from .keys import QueueKeys
from .library import library
from .validate import fail, integer_in

Client = Any  # redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster


def is_cluster(client: Client) -> bool:
    return isinstance(client, RedisCluster)


_FORMS = ("a redis://, rediss:// or unix:// URL (redis://[user:password@]host[:port][/db]), host:port, "
          "a port number or a Unix socket path (/path/to/redis.sock)")
_CONNECTION_FORMS = f"{_FORMS}, a dict of redis-py arguments or a redis.asyncio client"
# How long a call waits for a connection by default (ms): the connectWaitMs connection option.
DEFAULT_CONNECT_WAIT_MS = 5000


def _url_client(url: str, field: str) -> Client:
    """A client for a connection string, refusing the forms redis-py or ioredis would misread
    (another scheme such as http://, `redis//localhost:6600`) with the forms accepted. Socket
    paths, bare ports and host:port are read as the Node client reads them."""
    if not url:
        fail(field, _FORMS, url)
    if url.isdigit():
        return aioredis.Redis(port=int(url))
    if url.startswith("/") and not url.startswith("//"):
        return aioredis.Redis(unix_socket_path=url)
    if re.match(r"^(rediss?|unix)://", url, re.I):
        try:
            return aioredis.Redis.from_url(url)
        except ValueError:
            fail(field, _FORMS, url)
    m = re.match(r"^([^/:?#@\s]+|\[[0-9a-fA-F:]+\])(?::(\d{1,5}))?$", url)
    if m is None:
        fail(field, _FORMS, url)
    return aioredis.Redis(host=m.group(1).strip("[]"), port=int(m.group(2) or 6379))


def open_client(connection: Any, field: str = "connection") -> Tuple[Client, bool]:
    """(client, owned): a client given is shared and never closed by echomq. A client echomq
    opens bounds how long a call waits for a connection (watch_calls)."""
    if connection is None:
        client, wait = aioredis.Redis(), DEFAULT_CONNECT_WAIT_MS
    elif isinstance(connection, (aioredis.Redis, RedisCluster)):
        return connection, False
    elif isinstance(connection, str):
        client, wait = _url_client(connection, field), DEFAULT_CONNECT_WAIT_MS
    elif isinstance(connection, dict):
        kwargs = dict(connection)
        wait = kwargs.pop("connectWaitMs", DEFAULT_CONNECT_WAIT_MS)
        if wait is not None:
            wait = integer_in(f"{field}.connectWaitMs", wait, 0, 2_147_483_647, "an integer of ms >= 0, or None for no bound")
        client = aioredis.Redis(**kwargs)
    else:
        fail(field, _CONNECTION_FORMS, connection, as_type=True)
    watch_calls(client, wait)
    return client, True


def where_of(client: Client) -> str:
    """Where a client connects: host:port, or its socket path."""
    kw = client.connection_pool.connection_kwargs
    if kw.get("path"):
        return str(kw["path"])
    return f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}"


def connect_wait_ms(client: Client) -> Optional[int]:
    """The bound watch_calls put on the client (None: none, or a client echomq did not open)."""
    return getattr(client.connection_pool, "_echomq_wait_ms", None)


async def _probe(kw: Dict[str, Any]) -> Optional[BaseException]:
    """The socket's own error, read with one plain connect when the bound passed while redis-py
    was still retrying its connect (it raises only after its retries)."""
    try:
        if kw.get("path"):
            conn = asyncio.open_unix_connection(kw["path"])
        else:
            conn = asyncio.open_connection(kw.get("host", "localhost"), kw.get("port", 6379))
        _, writer = await asyncio.wait_for(conn, 0.5)
        writer.close()
        return None
    except (OSError, asyncio.TimeoutError) as err:
        return err


def watch_calls(client: Client, wait_ms: Optional[int]) -> None:
    """Bounds how long a call waits for a connection. redis-py connects before it sends a
    command, so a call whose connection fails was never sent: it is tried again until `wait_ms`
    has passed, then raises RedisUnreachableError (a redis-py ConnectionError) while later calls
    keep trying. A client given by the user is left as it is."""
    pool = client.connection_pool
    if getattr(pool, "_echomq_watched", False):
        return
    pool._echomq_watched = True
    pool._echomq_wait_ms = wait_ms
    get = pool.get_connection
    make = pool.make_connection
    where = where_of(client)
    healthy = [False]

    def make_connection() -> Any:
        # One connect attempt per try (redis-py retries a failed connect ~3.5 s on its own):
        # the tries, their pauses and the bound are get_connection's below. Command retries stay.
        conn = make()
        once = getattr(conn, "connect_check_health", None)
        if once is not None:
            conn.connect = lambda: once(check_health=True, retry_socket_connect=False)
        return conn

    async def get_connection(*args: Any, **kwargs: Any) -> Any:
        if healthy[0]:
            try:
                return await get(*args, **kwargs)  # the usual case: no timer per call
            except (RedisConnectionError, RedisTimeoutError, OSError) as err:
                healthy[0] = False
                if wait_ms == 0:
                    raise RedisUnreachableError(where, err, 0) from err
        loop = asyncio.get_running_loop()
        deadline = None if wait_ms is None else loop.time() + wait_ms / 1000
        last: Optional[BaseException] = None
        delay = 0.05
        while True:
            left = None if deadline is None else deadline - loop.time()
            try:
                if left is None or wait_ms == 0:
                    conn = await get(*args, **kwargs)
                else:
                    conn = await asyncio.wait_for(get(*args, **kwargs), max(left, 0.001))
                healthy[0] = True
                return conn
            except (RedisConnectionError, RedisTimeoutError, OSError, asyncio.TimeoutError) as err:
                if isinstance(err, RedisUnreachableError):
                    raise
                # The bound passing mid-connect (wait_for's timeout) is no socket error of its own.
                if not (isinstance(err, asyncio.TimeoutError) and deadline is not None and loop.time() >= deadline):
                    last = err
            if deadline is not None and loop.time() >= deadline:
                last = last or await _probe(pool.connection_kwargs)
                raise RedisUnreachableError(where, last, wait_ms) from last
            pause = delay if deadline is None else min(delay, max(0.0, deadline - loop.time()))
            await asyncio.sleep(pause)
            delay = min(delay * 2, 1.0)

    pool.make_connection = make_connection
    pool.get_connection = get_connection


def blocking_client(connection: Any, client: Client) -> Client:
    """A connection for BLPOP with no socket timeout: redis-py's default timeout would end a
    block early (or, as with BullMQ Python, equal it and retry forever)."""
    if is_cluster(client):
        return client
    kwargs: Dict[str, Any] = dict(client.connection_pool.connection_kwargs)
    kwargs["socket_timeout"] = None
    cls = client.connection_pool.connection_class
    pool = aioredis.ConnectionPool(connection_class=cls, max_connections=2, **kwargs)
    dup = aioredis.Redis(connection_pool=pool)
    # The pool is this client's own: aclose() must close it, or its sockets (the worker's named
    # blocking connection) stay open until the pool is garbage-collected.
    dup.auto_close_connection_pool = True
    if getattr(client.connection_pool, "_echomq_watched", False):
        watch_calls(dup, connect_wait_ms(client))
    return dup


async def wait_until_ready(client: Client, check: Any) -> Any:
    """waitUntilReady of every class: waits while Redis cannot be reached (each try bounded by
    connectWaitMs, the client trying again meanwhile) and returns once it answers, as the Node
    classes wait while ioredis retries. Raises at once with connectWaitMs 0 (the client gives up at
    the first failure, as Node's with `retryStrategy: () => null`), and raises any other error."""
    while True:
        try:
            return await check()
        except RedisUnreachableError:
            if connect_wait_ms(client) == 0:
                raise
        await asyncio.sleep(0.05)


async def redis_now_ms(client: Client) -> int:
    """The Redis server clock in ms: every time echomq computes comes from it."""
    sec, usec = await client.time()
    return int(sec) * 1000 + int(usec) // 1000


async def check_layout(client: Client, keys: QueueKeys) -> None:
    """Once per object before its first write: read the queue's stored layout version (one
    read-only HGET, as the Node client) and refuse a queue stored in another. An absent value
    is a new queue: the scripts that create its content stamp lv in the same call
    (docs/protocol.md "Versions"), so the check itself never writes."""
    v = library().layout_version
    got = await client.hget(keys.meta, "lv")
    if got is None:
        return
    got = text(got)
    if got != str(v):
        raise IncompatibleLayoutError(keys.queue, got, v)


async def exec_stamped(client: Client, keys: QueueKeys, build: Any) -> Any:
    """A plain write that may create a queue's meta: `build(pipe)` queues the write and this
    adds `HSETNX meta lv` in the same MULTI, as the scripts stamp theirs (docs/protocol.md
    "Versions"). Returns the first command's reply."""
    pipe = client.pipeline(transaction=True)
    build(pipe)
    pipe.hsetnx(keys.meta, "lv", str(library().layout_version))
    return (await pipe.execute())[0]


async def close_client(client: Optional[Client]) -> None:
    if client is None:
        return
    try:
        await client.aclose()
    except AttributeError:  # redis-py 5.0.0 has close() only
        await client.close()
    except (ConnectionError, OSError, asyncio.CancelledError):
        pass

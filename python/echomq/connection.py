"""Connections: the three forms BullMQ Python takes (a dict of redis-py arguments, a
redis.asyncio client used as given in either decode_responses mode, a URL), a separate
blocking connection for the idle wait, and the layout check every object makes once.
"""
from __future__ import annotations

import asyncio
from typing import Any, Dict, Optional, Tuple

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from .codec import text
from .errors import IncompatibleLayoutError
from .keys import QueueKeys
from .library import library
from .validate import fail

Client = Any  # redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster


def is_cluster(client: Client) -> bool:
    return isinstance(client, RedisCluster)


def open_client(connection: Any, field: str = "connection") -> Tuple[Client, bool]:
    """(client, owned): a client given is shared and never closed by echomq."""
    if connection is None:
        return aioredis.Redis(), True
    if isinstance(connection, (aioredis.Redis, RedisCluster)):
        return connection, False
    if isinstance(connection, str):
        if not connection:
            fail(field, "a redis:// URL, a dict of redis-py arguments or a redis.asyncio client", connection)
        return aioredis.Redis.from_url(connection), True
    if isinstance(connection, dict):
        return aioredis.Redis(**connection), True
    fail(field, "a redis:// URL, a dict of redis-py arguments or a redis.asyncio client", connection, as_type=True)


def blocking_client(connection: Any, client: Client) -> Client:
    """A connection for BLPOP with no socket timeout: redis-py's default timeout would end a
    block early (or, as with BullMQ Python, equal it and retry forever)."""
    if is_cluster(client):
        return client
    kwargs: Dict[str, Any] = dict(client.connection_pool.connection_kwargs)
    kwargs["socket_timeout"] = None
    cls = client.connection_pool.connection_class
    pool = aioredis.ConnectionPool(connection_class=cls, max_connections=2, **kwargs)
    return aioredis.Redis(connection_pool=pool)


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

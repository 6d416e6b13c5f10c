"""Calls a transition as the Node runner (src/scripts/runner.ts) does.

On a single server: FCALL of the library function; "Function not found" is answered by loading
the library once (FUNCTION LOAD REPLACE) and calling again; a client that cannot load it (Redis
< 7, an ACL without FUNCTION) moves to EVALSHA for good. On Redis Cluster, and for scripts
outside the library: EVALSHA, with one EVAL of the source on NOSCRIPT.
"""
from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any, Dict, List, Optional, Sequence, Union

from redis.exceptions import ConnectionError as RedisConnectionError, NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .codec import text
from .connection import Client, is_cluster
from .errors import RedisUnreachableError
from .keys import QueueKeys
from .library import Script, library
from .request_id import new_request_id, once_error

Arg = Union[str, int]

# An applied-once call whose connection failed is sent again (same arguments, so the same request
# id) this many times after redis-py's own retries, with these pauses (s).
_ONCE_RETRY_PAUSES = (0.05, 0.2)

_modes: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()
_loading: "weakref.WeakKeyDictionary[Any, asyncio.Future]" = weakref.WeakKeyDictionary()


def script_mode(client: Client) -> str:
    m = _modes.get(client)
    if m is None:
        m = "eval" if is_cluster(client) or os.environ.get("ECHOMQ_SCRIPTS") == "eval" else "function"
        _modes[client] = m
    return m


def _not_found(err: Exception) -> bool:
    msg = str(err)
    return any(s in msg.lower() for s in ("function not found", "unknown command", "noperm"))


async def _load_library(client: Client) -> bool:
    fut = _loading.get(client)
    if fut is None:
        async def load() -> bool:
            try:
                await client.execute_command("FUNCTION", "LOAD", "REPLACE", library().source)
                return True
            except ResponseError:
                _modes[client] = "eval"
                return False
            finally:
                _loading.pop(client, None)
        fut = asyncio.ensure_future(load())
        _loading[client] = fut
    return await asyncio.shield(fut)


class Runner:
    """Binds a client and a queue's keys; `call(name, args)` runs script `name`."""

    def __init__(self, client: Client, keys: QueueKeys) -> None:
        self.client = client
        self.keys = keys
        self._key_lists: Dict[str, List[bytes]] = {}

    def _keys_for(self, script: Script) -> List[bytes]:
        # Encoded once per queue and script: a hot call sends up to 27 keys.
        ks = self._key_lists.get(script.name)
        if ks is None:
            ks = [self.keys[k].encode("utf-8") for k in script.keys]
            self._key_lists[script.name] = ks
        return ks

    async def call(self, name: str, args: Sequence[Arg]) -> Any:
        script = library().scripts[name]
        ks = self._keys_for(script)
        c = self.client
        if script.function_name and script_mode(c) == "function":
            try:
                return text(await c.execute_command("FCALL", script.function_name, len(ks), *ks, *args))
            except ResponseError as err:
                if not _not_found(err):
                    raise
            if await _load_library(c):
                return text(await c.execute_command("FCALL", script.function_name, len(ks), *ks, *args))
        try:
            return text(await c.execute_command("EVALSHA", script.sha, len(ks), *ks, *args))
        except NoScriptError:
            return text(await c.execute_command("EVAL", script.source, len(ks), *ks, *args))
        except ResponseError as err:
            if str(err).startswith("NOSCRIPT"):
                return text(await c.execute_command("EVAL", script.source, len(ks), *ks, *args))
            raise

    def request_id(self) -> str:
        """A new request id for one logical call through this runner's client."""
        return new_request_id(self.client)

    async def call_once(self, name: str, args: Sequence[Arg], op: str, request_id: Optional[str] = None,
                        at: Optional[int] = None) -> Any:
        """An applied-once call (docs/protocol.md "Applied once"): the request id is appended as the
        last argument (or at ``at``: publishEvent takes it second; reqBase is the last of the script's KEYS), the arguments are built once and
        sent unchanged by every retry; a failure becomes a typed error (request_id.once_error)."""
        rid = request_id if request_id is not None else new_request_id(self.client)
        full = [*args, rid] if at is None else [*args[:at], rid, *args[at:]]
        pauses = iter(_ONCE_RETRY_PAUSES)
        while True:
            try:
                return await self.call(name, full)
            except RedisUnreachableError:
                raise  # never sent, and the wait for a connection is over
            except (RedisConnectionError, RedisTimeoutError, ConnectionError, OSError) as err:
                pause = next(pauses, None)
                if pause is None:
                    raise once_error(err, op, rid) from err
                await asyncio.sleep(pause)
            except Exception as err:
                e = once_error(err, op, rid)
                if e is err:
                    raise
                raise e from err

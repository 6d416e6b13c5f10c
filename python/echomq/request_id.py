"""Request ids of applied-once calls (docs/protocol.md "Applied once"), as src/scripts/request-id.ts
makes them. One id is made per logical call and sent as the script's last argument; redis-py's
retry resends the same command (so the same id), and echomq's own retries pass the same id
again, so the script answers every rerun from the record of the first run.

Format: ``<process prefix><counter in base 36>``, then ``@<ms>`` once this client's Redis clock
offset is known: the send time on the Redis clock, so a rerun older than the window is refused
(EMQ_EXPIRED) instead of being applied twice.
"""
from __future__ import annotations

import asyncio
import base64
import itertools
import os
import re
import time
import weakref
from typing import Any, Dict

from redis.exceptions import ConnectionError as RedisConnectionError, ResponseError, TimeoutError as RedisTimeoutError

from .errors import EchoMQError, RedisRefusedError, RequestOutcomeUnknownError

# 16 random base64url characters per process: ids of two processes never meet.
PREFIX = base64.urlsafe_b64encode(os.urandom(12)).decode("ascii")
_counter = itertools.count()
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"

# The offset is read again after this long (clock drift stays far below the script's 2 s margin).
OFFSET_TTL_MS = 10 * 60_000


class _Offset:
    __slots__ = ("ms", "at", "pending", "__weakref__")

    def __init__(self) -> None:
        self.ms: Any = None
        self.at = 0.0
        self.pending = False


_offsets: "weakref.WeakKeyDictionary[Any, _Offset]" = weakref.WeakKeyDictionary()
_tasks: set = set()


def _base36(n: int) -> str:
    if n == 0:
        return "0"
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(_DIGITS[r])
    return "".join(reversed(out))


def _now_ms() -> int:
    return int(time.time() * 1000)


def _learn_offset(client: Any, o: _Offset) -> None:
    """Reads the Redis clock once (in the background) and keeps Redis time minus local time."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    o.pending = True

    async def learn() -> None:
        t0 = _now_ms()
        try:
            sec, usec = await client.time()
            t1 = _now_ms()
            o.ms = int(sec) * 1000 + int(usec) // 1000 - round((t0 + t1) / 2)
            o.at = t1
        except BaseException:  # no offset yet: ids go without @<ms>, tried again on the next call
            pass
        finally:
            o.pending = False

    t = loop.create_task(learn())
    _tasks.add(t)
    t.add_done_callback(_tasks.discard)


def new_request_id(client: Any) -> str:
    """A new request id for one logical call on ``client``."""
    rid = PREFIX + _base36(next(_counter))
    try:
        o = _offsets.get(client)
        if o is None:
            o = _Offset()
            _offsets[client] = o
    except TypeError:  # a client that takes no weak reference: ids without @<ms>
        return rid
    now = _now_ms()
    if not o.pending and (o.ms is None or now - o.at > OFFSET_TTL_MS):
        _learn_offset(client, o)
    return rid if o.ms is None else f"{rid}@{now + o.ms}"


# Most bytes in a request id (lib/once.lua).
MAX_REQUEST_ID_BYTES = 200
_PART = re.compile(r"[0-9A-Za-z]{1,16}")
_SENT = re.compile(r"@\d+$")


def derive_request_id(request_id: str, part: Any) -> str:
    """The id of part ``part`` of a logical call made of several script calls (a cross-queue
    flow), as src/scripts/request-id.ts deriveRequestId: ``<id>/<part>``, keeping ``@<ms>`` last,
    so a retry of the logical call with the same id gives each part the same id again."""
    p = str(part)
    if not _PART.fullmatch(p):
        raise ValueError(f"request id part: 1 to 16 letters or digits, got {p!r}")
    m = _SENT.search(request_id)
    rid = f"{request_id[:m.start()]}/{p}{m.group(0)}" if m else f"{request_id}/{p}"
    if not request_id or len(rid.encode()) > MAX_REQUEST_ID_BYTES:
        raise ValueError(f"request id: 1 to {MAX_REQUEST_ID_BYTES} bytes with its part, got {len(rid.encode())}")
    return rid


# Redis's words for a call it refused before running it: nothing was written.
_REFUSED = re.compile(r"^(OOM|READONLY|NOPERM|MISCONF|NOREPLICAS|MASTERDOWN|NOAUTH|WRONGPASS)\b")
# redis-py strips the error word of the errors it has a class for; put Redis's text back.
_WORDS: Dict[str, str] = {
    "OutOfMemoryError": "OOM", "ReadOnlyError": "READONLY", "NoPermissionError": "NOPERM",
}


def redis_text(err: BaseException) -> str:
    """The error as Redis sent it (redis-py drops the leading word of OOM, READONLY, NOPERM)."""
    msg = str(err)
    for cls in type(err).__mro__:
        word = _WORDS.get(cls.__name__)
        if word is not None:
            return msg if msg.startswith(word) else f"{word} {msg}"
    return msg


def once_error(err: BaseException, op: str, request_id: str) -> BaseException:
    """The typed error of a failed applied-once call: Redis refused it (RedisRefusedError), it is
    older than the window (EMQ_EXPIRED) or its reply never came (RequestOutcomeUnknownError,
    naming the request); any other error (a script error: a bug) is returned as it is."""
    if isinstance(err, EchoMQError):
        return err
    if isinstance(err, ResponseError):
        msg = redis_text(err)
        if _REFUSED.match(msg):
            return RedisRefusedError(op, msg, err)
        if "EMQ_EXPIRED" in msg:
            return RequestOutcomeUnknownError(op, request_id, err)
        return err  # a reply: the script ran (a script error) or Redis refused it otherwise
    if isinstance(err, (RedisConnectionError, RedisTimeoutError, ConnectionError, OSError, asyncio.TimeoutError)):
        return RequestOutcomeUnknownError(op, request_id, err)
    msg = str(err)
    if _REFUSED.match(msg):
        return RedisRefusedError(op, msg, err)
    return err

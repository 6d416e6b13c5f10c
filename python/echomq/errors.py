"""Error classes. Script status codes map to them by name (library.json "codes")."""
from __future__ import annotations

import re
from typing import Any, Optional

from redis.exceptions import ConnectionError as RedisConnectionError

# redis-py's text of a failed connect: "Error 111 connecting to host:port. ..."
_ERRNO_TEXT = re.compile(r"^Error (\d+) (?:connecting|while)")


class EchoMQError(Exception):
    """Base of echomq's own errors."""


class ValidationError(EchoMQError, ValueError):
    """Bad input: names the field, the expected form and what it got. Nothing was written."""

    def __init__(self, field: str, expected: str, got: str, lead: Optional[str] = None) -> None:
        self.field = field
        self.expected = expected
        self.got = got
        own = f"{field} must be {expected}, got {got}"
        super().__init__(f"{lead}: {own}" if lead else own)


class ValidationTypeError(ValidationError, TypeError):
    """Bad input of the wrong type (a value JSON cannot carry: bytes, set, datetime, NaN...)."""


# The stored layout version that upgradeLayout.lua upgrades (UPGRADES_FROM in src/core/layout.ts).
UPGRADES_FROM = 1


class IncompatibleLayoutError(EchoMQError):
    """The queue is stored in a layout version this client does not read."""

    def __init__(self, queue: str, got: Any, version: int) -> None:
        self.queue = queue
        self.got = got
        self.version = version
        # Layout 1 has an upgrade: say how, as the Node client does.
        how = (f"; upgrade it with queue.upgradeLayout() or `echomq upgrade-layout {queue}`"
               if str(got) == str(UPGRADES_FROM) else "")
        super().__init__(
            f"queue {queue} is stored in layout version {got}; this echomq reads layout version {version}{how}")


class UnrecoverableError(Exception):
    """Raised by a processor: the job fails at once, whatever attempts it has left (BullMQ's)."""


class WaitingChildrenError(Exception):
    """BullMQ's: raised after moveToWaitingChildren; the worker leaves the job alone."""


class JobNotFoundError(EchoMQError, LookupError, TypeError):  # TypeError: BullMQ Python raises that
    def __init__(self, job_id: str, op: str) -> None:
        self.job_id = job_id
        super().__init__(f"Missing key for job {job_id}. {op}")


class StaleJobError(EchoMQError):
    def __init__(self, job_id: str, op: str) -> None:
        self.job_id = job_id
        super().__init__(f"Missing lock for job {job_id}. {op}")


class InvalidStateError(EchoMQError):
    def __init__(self, job_id: str, op: str) -> None:
        self.job_id = job_id
        super().__init__(f"Job {job_id} is not in the state {op} expects")


class ActiveJobsError(EchoMQError):
    def __init__(self, op: str) -> None:
        super().__init__(f"Cannot {op} queue with active jobs")


# What the library's guards (lib/guard.lua) expect of the argument they refused, by code
# (GUARD_EXPECTED in src/core/errors.ts).
GUARD_EXPECTED = {
    -14: "a job id the store can take (not an integer the id counter has not given out, not the active set "
         "sentinel, at most 1024 characters)",
    -15: "a non-empty lane name of at most 1024 characters",
    -16: "an argument in the form docs/protocol.md states for it",
}


def guard_refusal(reply: Any, args: Any, op: str, name_of: Any) -> Optional[ValidationError]:
    """The error of a reply {code, position} by which a script's guards refused a call (add,
    addFlow), or None for any other reply; name_of(position) names the argument."""
    if not isinstance(reply, (list, tuple)) or not reply or not isinstance(reply[0], int) or reply[0] not in GUARD_EXPECTED:
        return None
    pos = int(reply[1])
    sent = args[pos - 1] if 0 < pos <= len(args) else None
    got = sent if isinstance(sent, str) else str(sent)
    got = f"{got[:60]!r}… ({len(got)} chars)" if len(got) > 60 else repr(got)
    return ValidationError(f"{op} {name_of(pos)} (ARGV[{pos}])", GUARD_EXPECTED[reply[0]], got)


def error_from_code(status: int, op: str, job_id: str = "") -> Exception:
    """The one place a negative script reply becomes an error (codes looked up by name)."""
    from .library import library

    codes = library().codes
    if status == codes["NOT_FOUND"]:
        return JobNotFoundError(job_id, op)
    if status == codes["STALE"] or status == codes["LOCK_MISMATCH"]:
        return StaleJobError(job_id, op)
    if status == codes["BAD_STATE"]:
        return InvalidStateError(job_id, op)
    if status == codes["ACTIVE_JOBS"]:
        return ActiveJobsError(op)
    if status == codes["PENDING_DEPENDENCIES"]:
        return EchoMQError(f"Job {job_id} has pending dependencies. {op}")
    if status in (codes["BAD_ID"], codes["BAD_LANE"], codes["BAD_ARGUMENT"]):
        return ValidationError(f"{op} argument", GUARD_EXPECTED[status], repr(job_id))
    names = [n for n, c in codes.items() if c == status]
    return EchoMQError(f"{op} failed for job {job_id}: status {status} ({'/'.join(names) or 'unknown'})")


class RequestOutcomeUnknownError(EchoMQError):
    """An applied-once call whose reply never came (retries exhausted, the client closed) or that
    Redis refused as older than the window (EMQ_EXPIRED, ``expired`` True): it may or may not have
    been applied. Retry it with the same ``request_id`` while the window lasts; after it, read the
    state (getJob) first. docs/protocol.md "Applied once"."""

    code = "ERR_OUTCOME_UNKNOWN"

    def __init__(self, op: str, request_id: str, cause: BaseException) -> None:
        why = str(cause) or type(cause).__name__
        self.op = op
        self.request_id = request_id
        self.requestId = request_id
        self.expired = "EMQ_EXPIRED" in why
        self.cause = cause
        super().__init__(f"{op}: outcome unknown for request {request_id} (it may or may not have been applied): {why}")


class RedisRefusedError(EchoMQError):
    """Redis refused the call before running it (OOM under maxmemory, a read-only replica, an ACL
    denial, MISCONF, ...): nothing was written. The message begins with Redis's own text."""

    code = "ERR_REDIS_REFUSED"

    def __init__(self, op: str, text: str, cause: BaseException) -> None:
        self.op = op
        self.redis_code = text.split(" ", 1)[0]
        self.redisCode = self.redis_code
        self.cause = cause
        super().__init__(f"{text} (echomq {op}: refused by Redis, nothing was written)")


def _socket_code(err: Optional[BaseException]) -> Optional[str]:
    """The socket's error name (ECONNREFUSED, ENOTFOUND, ETIMEDOUT, ...) behind a redis-py error."""
    import errno as _errno
    import socket as _socket
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, _socket.gaierror):
            return "ENOTFOUND"
        if isinstance(err, (TimeoutError, _asyncio_timeout())):
            return "ETIMEDOUT"
        if isinstance(err, OSError) and err.errno:
            return _errno.errorcode.get(err.errno)
        m = _ERRNO_TEXT.match(str(err))
        if m:
            return _errno.errorcode.get(int(m.group(1)))
        err = err.__cause__ or err.__context__
        seen += 1
    return None


def _asyncio_timeout() -> type:
    import asyncio as _asyncio
    return _asyncio.TimeoutError


class RedisUnreachableError(EchoMQError, RedisConnectionError):
    """A call never sent: Redis could not be reached while it waited (up to the connectWaitMs
    connection option), so nothing was written and the outcome is known. A redis-py
    ConnectionError. ``code`` is the socket's (ECONNREFUSED, ENOTFOUND, ETIMEDOUT..., or
    ERR_REDIS_UNREACHABLE); the message begins with the socket's text as Node's
    (``connect ECONNREFUSED 127.0.0.1:6390``), then says where Redis could not be reached."""

    def __init__(self, where: str, cause: Optional[BaseException] = None, waited_ms: Optional[int] = None) -> None:
        code = _socket_code(cause)
        self.code = code or "ERR_REDIS_UNREACHABLE"
        self.where = where
        self.cause = cause
        if code:
            head = f"connect {code} {where}"
        elif waited_ms is not None:
            head = f"no connection within {waited_ms} ms"
        else:
            head = str(cause) if cause is not None else "no connection"
        waited = f"the call waited {waited_ms} ms and was not sent" if waited_ms else "the call was not sent"
        super().__init__(f"{head}: Redis cannot be reached at {where} ({waited})")

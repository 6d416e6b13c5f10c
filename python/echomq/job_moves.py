"""Job methods that move a job a caller holds (manual processing and step jobs) and read a
parent's children, with BullMQ Python's names and return values (Node: src/worker/worker-moves.ts,
src/job/job-dependencies.ts). A mixin of Job. A move checks the caller's token as lib/lock.lua
does: the owner is the token given to getNextJob, or the attempt counter a worker hands its
processor; the fence is the attempt this snapshot was claimed under."""
from __future__ import annotations

import time
import traceback
from typing import Any, Dict, List, Optional

from . import codec
from . import scripts
from . import validate as v
from .backoff import backoff_delay, is_unrecoverable, normalize_backoff
from .errors import EchoMQError, JobNotFoundError, StaleJobError, UnrecoverableError, error_from_code
from .keys import QueueKeys, parse_job_key
from .library import code
from .outbox import drain_all

_DEFAULT_LEASE = 30_000
_MAX_EVENT_VALUE = 32 * 1024
_KINDS = {"processed": "c", "unprocessed": "p", "ignored": "i", "failed": "f"}


def lock_error(status: int, command: str, job_id: str) -> Exception:
    """BullMQ's texts first, then echomq's detail (as Node's lockError)."""
    jid = codec.dumps(job_id)
    if status == code("NOT_FOUND"):
        e: Exception = JobNotFoundError(job_id, command)
        e.args = (f"Missing key for job {job_id}. {command}: job {jid} does not exist",)
        return e
    if status == code("STALE"):
        e = StaleJobError(job_id, command)
        e.args = (f"Missing lock for job {job_id}. {command}: job {jid} is not active under this attempt "
                  "(it finished or moved, or its lease expired)",)
        return e
    if status == code("LOCK_MISMATCH"):
        e = StaleJobError(job_id, command)
        e.args = (f"Lock mismatch for job {job_id}. Cmd {command} from active: job {jid} is held under another token",)
        return e
    if status == code("BAD_STATE"):
        return EchoMQError(f"Job {job_id} is not in the active state. {command}: job {jid} is not active")
    return error_from_code(status, command, job_id)


def logical_job_key(key: str) -> str:
    """BullMQ's `<prefix>:<queue>:<id>` for a stored child key."""
    p = parse_job_key(key)
    return f"{p['prefix']}:{p['queue']}:{p['id']}" if p else key


def _token(value: Any) -> str:
    return v.non_empty_string("token", value, 10_000)


class JobMoves:
    """Job methods for lock holders and parents."""

    @property
    def queueQualifiedName(self) -> str:
        """BullMQ Python's: `<prefix>:<queue>` of the job's queue (a child's parent.queue)."""
        return self.queue.qualifiedName

    @property
    def attempts(self) -> int:
        """BullMQ Python's job.attempts: the attempts option (1 when not given)."""
        return self.opts.get("attempts", 1)

    async def isInZSet(self, set: str) -> bool:
        """BullMQ Python's: whether the job is in the state that BullMQ keeps in sorted set `set`
        (completed, failed, delayed, waiting-children, prioritized)."""
        return await self.getState() == v.string("set", set)

    async def isInList(self, list_name: str) -> bool:
        """BullMQ Python's: whether the job is in the state BullMQ keeps in list `list_name`
        (active; wait for waiting; paused for waiting in a paused queue)."""
        name = v.string("list_name", list_name)
        st = await self.getState()
        if name == "active":
            return st == "active"
        if name in ("wait", "paused"):
            paused = await self.queue.isPaused()
            return st == "waiting" and paused == (name == "paused")  # prioritized jobs are not in BullMQ's lists
        return False

    def _worker(self) -> Any:
        return getattr(self, "_held_by", None)

    def _lease(self) -> int:
        w = self._worker()
        return int(w.opts["lockDuration"]) if w is not None else _DEFAULT_LEASE

    def _fence(self) -> str:
        return str(getattr(self, "_att", "") or "")

    async def _after_move(self, next_reply: Any, token: str, fetch: bool, finished: bool = False) -> Optional[List[Any]]:
        """The next job as BullMQ Python's [jobData, jobId, limitUntil, delayUntil]. A finished
        job's move answers [None, None, None, None] when no job was fetched (BullMQ Python's
        moveToFinished reply); a retry answers None."""
        w = self._worker()
        if w is not None:
            w._manual_release(str(self.id))
        if self.parentKey:  # a parent in another queue learns the outcome before the call returns
            try:
                await drain_all(self.queue.client, self.queue.keys)
            except Exception:
                pass  # left in the outbox for the workers' sweep
        if not fetch or next_reply is None or not next_reply.jobs:
            return [None, None, None, None] if finished else None
        cj = next_reply.jobs[0]
        nxt = w._manual_adopt(cj, token) if w is not None else type(self).from_hash(self.queue, cj.id, cj.fields)
        return [nxt.asJSON(), nxt.id, 0, 0]

    async def moveToCompleted(self, return_value: Any, token: str, fetchNext: bool = False) -> Optional[List[Any]]:
        """Completes the job held under `token`; with fetchNext, claims the next one and returns
        BullMQ's [jobData, jobId, limitUntil, delayUntil] (None when there is none)."""
        owner = _token(token)
        fetch = v.boolean("fetchNext", fetchNext)
        rv = codec.dumps(return_value, "return_value", self.queue.maxPayloadBytes)
        w = self._worker()
        name = (w.opts.get("name") or "") if w is not None else ""
        args: List[Any] = [1 if fetch else 0, self._lease(), _MAX_EVENT_VALUE, owner, 0, "", "", name, 3,
                           str(self.id), self._fence(), rv]
        r = await self.queue.runner.call_once("complete", args, "complete")
        m = int(r[2])
        status = int(r[3]) if m else 1
        if status != 1:
            raise lock_error(status, "moveToFinished", str(self.id))
        self.returnvalue = return_value
        self.attemptsMade += 1
        self.finishedOn = int(time.time() * 1000)
        reply = scripts.ClaimReply(scripts._claimed(r, 3 + m), int(r[1]))
        return await self._after_move(reply, owner, fetch, True)

    async def moveToFailed(self, err: BaseException, token: str, fetchNext: bool = False) -> Optional[List[Any]]:
        """Fails the attempt held under `token`: retried (now or after its backoff) while attempts
        are left, else failed. With fetchNext, claims the next job (BullMQ Python's: also when the
        attempt is retried later) and returns its [jobData, jobId, limitUntil, delayUntil]."""
        owner = _token(token)
        if not isinstance(err, BaseException):
            v.fail("err", "an exception", err, as_type=True)
        fetch = v.boolean("fetchNext", fetchNext)
        attempts = int(self.opts.get("attempts") or 1)
        made = self.attemptsMade + 1
        reason = str(err) or type(err).__name__
        delay = -1
        if not is_unrecoverable(err) and not self.discarded and made < attempts:
            settings = (self.queue.opts.get("settings") or {}) if hasattr(self.queue, "opts") else {}
            d = await backoff_delay(normalize_backoff(self.opts.get("backoff")), made, err, self,
                                    settings.get("backoffStrategy"))
            delay = -1 if d is None or d < 0 else int(d)
        self.updateStacktrace(err)
        stack = codec.dumps(self.stacktrace, "stacktrace")
        do_fetch = fetch and delay != 0
        w = self._worker()
        name = (w.opts.get("name") or "") if w is not None else ""
        args: List[Any] = [str(self.id), self._fence(), reason, stack, delay, 1 if do_fetch else 0, self._lease(),
                           "1" if made >= attempts else "0", owner, 0, "", "", name]
        r = await self.queue.runner.call_once("fail", args, "fail")
        if int(r[0]) < 0:
            cmd = "retryJob" if delay == 0 else "moveToDelayed" if delay > 0 else "moveToFinished"
            raise lock_error(int(r[0]), cmd, str(self.id))
        self.failedReason = reason
        self.attemptsMade = made
        if delay < 0:
            self.finishedOn = int(time.time() * 1000)
        elif delay > 0:
            self.delay = delay
        reply = scripts.ClaimReply(scripts._claimed(r, 2), int(r[1]))
        return await self._after_move(reply, owner, do_fetch, delay < 0)

    def updateStacktrace(self, err: Optional[BaseException] = None) -> None:
        """Appends the current exception's trace (or err's) to job.stacktrace, kept to the job's
        stackTraceLimit (default 10; 0 keeps none)."""
        if err is not None:
            trace = "".join(traceback.format_exception(type(err), err, err.__traceback__)).rstrip("\n")
        else:
            trace = traceback.format_exc()
            if trace.strip() == "NoneType: None":
                trace = ""
        if trace:
            self.stacktrace.append(trace)
        limit = self.opts.get("stackTraceLimit", 10)
        if limit == 0:
            self.stacktrace = []
        elif limit:
            self.stacktrace = self.stacktrace[-int(limit):]

    async def moveToDelayed(self, timestamp: int, token: Optional[str] = None) -> None:
        """Node's: delays the job until `timestamp` (ms on the caller's clock; kept on Redis's)."""
        ts = v.integer_in("timestamp", int(timestamp) if isinstance(timestamp, float) else timestamp, 0,
                          v.MAX_SAFE_INTEGER, "a time in ms since the epoch")
        owner = "" if token is None else _token(token)
        delay = max(0, ts - int(time.time() * 1000))
        r = int(await self.queue.runner.call_once("moveToDelayed", [str(self.id), owner, "" if token is None else self._fence(), delay], "moveToDelayed"))
        if r < 0:
            raise lock_error(r, "moveToDelayed", str(self.id))
        self.delay = delay
        w = self._worker()
        if w is not None:
            w._manual_release(str(self.id))

    async def moveToWaitingChildren(self, token: str, opts: Optional[Dict[str, Any]] = None) -> bool:
        """Parks the job in waiting-children while it has pending children (True), else False."""
        owner = _token(token)
        o = v.plain_object("opts", opts or {})
        child = ""
        if o.get("child") is not None:
            c = v.plain_object("opts.child", o["child"])
            cid = v.existing_job_id(c.get("id"), "opts.child.id")
            q = v.non_empty_string("opts.child.queue", c.get("queue"))
            own = f"{self.queue.keys.prefix}:"
            if q.startswith(own):
                child = QueueKeys(q[len(own):], self.queue.keys.prefix).job(cid)
            else:
                i = q.find(":")
                if i <= 0:
                    v.fail("opts.child.queue", "a qualified queue name '<prefix>:<queue>'", q)
                child = QueueKeys(q[i + 1:], q[:i]).job(cid)
        r = int(await self.queue.runner.call_once("moveToWaitingChildren", [str(self.id), owner, self._fence(), child], "moveToWaitingChildren"))
        if r == code("CHILD_FAILED"):
            raise UnrecoverableError(f"Cannot complete job {self.id} because it has at least one failed child. "
                                     "moveToWaitingChildren")
        if r < 0:
            raise lock_error(r, "moveToWaitingChildren", str(self.id))
        if r == 1:
            w = self._worker()
            if w is not None:
                w._manual_release(str(self.id))
        return r == 1

    # -- children -----------------------------------------------------------------------

    async def _deps(self) -> Dict[str, str]:
        out: Dict[str, str] = {}
        async for f, s in self.queue.client.hscan_iter(self.queue.keys.depsBase + str(self.id), count=500):
            out.setdefault(codec.text(f), codec.text(s))
        return out

    async def getChildrenValues(self) -> Dict[str, Any]:
        """Return values of the completed children, by BullMQ's child key `<prefix>:<queue>:<id>`."""
        return {logical_job_key(k): codec.loads(s[1:]) for k, s in (await self._deps()).items() if s[:1] == "c"}

    async def getIgnoredChildrenFailures(self) -> Dict[str, str]:
        return {logical_job_key(k): s[1:] for k, s in (await self._deps()).items() if s[:1] == "i"}

    async def getFailedChildrenValues(self) -> Dict[str, str]:
        return {logical_job_key(k): s[1:] for k, s in (await self._deps()).items() if s[:1] == "f"}

    async def getDependencies(self, opts: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Node's: {processed, unprocessed, ignored, failed} of this parent (all of them; paging
        options are not offered yet)."""
        o = v.plain_object("opts", opts or {})
        if o:
            v.fail("opts", "{} (paged dependencies are not offered yet)", o)
        out: Dict[str, Any] = {"processed": {}, "unprocessed": [], "failed": [], "ignored": {}}
        for k, s in (await self._deps()).items():
            name = logical_job_key(k)
            if s[:1] == "c":
                out["processed"][name] = codec.loads(s[1:])
            elif s[:1] == "i":
                out["ignored"][name] = s[1:]
            elif s == "p":
                out["unprocessed"].append(name)
            elif s[:1] == "f":
                out["failed"].append(name)
        return out

    async def getDependenciesCount(self, opts: Optional[Dict[str, Any]] = None) -> Dict[str, int]:
        o = v.plain_object("opts", opts or {})
        for k in o:
            if k not in _KINDS:
                v.fail(f"opts.{k}", f"one of {', '.join(_KINDS)}", k)
        kinds = [k for k in _KINDS if o.get(k)] or list(_KINDS)
        counts = {k: 0 for k in kinds}
        for s in (await self._deps()).values():
            for k in kinds:
                if s[:1] == _KINDS[k] and (k != "unprocessed" or s == "p"):
                    counts[k] += 1
        return counts

"""Worker: claims jobs fairly across lanes and runs `async def processor(job, token[, signal])`
with asyncio concurrency. The same transitions and wake-up as the Node worker: claim, settle
and claim in one call (completed jobs of one loop turn settle together), one batched lease
renewal, the stall sweep, and an idle BLPOP on the wake list that never polls."""
from __future__ import annotations

import asyncio
import inspect
import traceback
import uuid
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Set, Tuple

from redis.exceptions import ConnectionError as RedisConnectionError, TimeoutError as RedisTimeoutError

from . import codec
from . import scripts
from .abort_controller import AbortController
from .backoff import backoff_delay, is_unrecoverable, normalize_backoff
from .connection import blocking_client, check_layout, close_client, exec_stamped, open_client, wait_until_ready
from .errors import RequestOutcomeUnknownError, WaitingChildrenError, StaleJobError, ValidationError, error_from_code
from .event_emitter import EventEmitter
from .job import Job
from .keys import DEFAULT_PREFIX, QueueKeys, client_name
from .library import code
from .options import DEFAULT_MAX_PAYLOAD, keep_args
from .queue import Queue
from .runner import Runner
from . import validate as v
from .worker_options import worker_options
from .worker_flows import WorkerFlows
from .queue_groups import WorkerGroups, group_defaults
from .worker_manual import WorkerManual, getCompleted  # noqa: F401 (BullMQ Python's bullmq.worker.getCompleted)
from .custom_errors.step_errors import DelayedError, RateLimitError, WaitingError

_SETTLE_MAX = 200
_RECOVER_BATCH = 100
_RECOVER_CALLS = 10
_MAX_EVENT_VALUE = 16 * 1024  # maxEventValueBytes, as Node's default (docs/protocol.md "Defaults both clients use")
_RATE_BLOCK = 2 ** 50


def failed_reason(err: BaseException) -> str:
    """The stored failedReason: the message as a Python user expects it (str(err)), or the class
    name when that is empty. Plain text, as Node stores err.message (not JSON-encoded)."""
    s = str(err)
    return s if s else type(err).__name__


def _accepts_signal(fn: Callable[..., Any]) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return True
    return n >= 3


# Raised by a processor after its own move (a step job): the worker leaves the job where it is.
STEP_ERRORS = (WaitingChildrenError, DelayedError, WaitingError)


class _Run:
    __slots__ = ("job", "token", "controller", "task", "claimed")

    def __init__(self, job: Job, token: str, controller: Optional[AbortController]) -> None:
        self.job = job
        self.token = token
        self.controller = controller
        self.task: Optional[asyncio.Task] = None
        # lane, kc, ka, made of the claim reply: the completing settle sends them (docs/protocol.md).
        self.claimed: Tuple[str, str, str, str] = ("", "", "", "")


class Worker(WorkerManual, WorkerFlows, WorkerGroups, EventEmitter):
    def __init__(self, name: str, processor: Optional[Callable[..., Awaitable[Any]]], opts: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        self.name = v.queue_name(name)
        if processor is not None and not callable(processor):
            v.fail("processor", "an async function (job, token[, signal])", processor)
        self.opts = worker_options(opts)
        group_defaults(self.opts.get("group"))  # validated here, stored by run()
        self.processor = processor
        self._wants_signal = processor is not None and _accepts_signal(processor)
        self.prefix = DEFAULT_PREFIX if self.opts.get("prefix") is None else v.prefix(self.opts["prefix"])
        self.keys = QueueKeys(self.name, self.prefix)
        self.client, self._owned = open_client(self.opts.get("connection"))
        self.bclient = blocking_client(self.opts.get("connection"), self.client)
        self.runner = Runner(self.client, self.keys)
        # Jobs built by this worker read their queue's limits through a Queue sharing the client.
        self._queue = Queue(self.name, {"connection": self.client, "prefix": self.prefix})
        self.id = str(uuid.uuid4())
        self.closing = False
        self.closed = False
        self.running = False
        self.paused = False
        self.forceClosing = False
        self._runs: Dict[str, _Run] = {}
        # Request ids of claims (claim, or a settle that claimed next jobs) whose reply was lost and
        # that the worker will not retry: handed back with releaseClaim when Redis answers again.
        self._lost_claims: List[str] = []
        self.releasedClaims = 0
        self._pending: List[Tuple[_Run, str, Any]] = []
        self._flush_scheduled = False
        self._settling = 0
        self._settles: Set[asyncio.Task] = set()
        self._slot = asyncio.Event()
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._block_task: Optional[asyncio.Task] = None
        self._timers: List[asyncio.Task] = []
        self._main: Optional[asyncio.Future] = None
        keep_c = self.opts.get("_removeOnComplete")
        keep_f = self.opts.get("_removeOnFail")
        self._keep_c = None if keep_c is None else tuple(keep_args(keep_c))
        self._keep_f = None if keep_f is None else tuple(keep_args(keep_f))
        self._wname = self.opts.get("name", "")
        if processor is not None and self.opts["autorun"]:
            self._main = asyncio.ensure_future(self.run())
            # run() reported its error already ('error'): retrieved here, so asyncio prints no
            # "Task exception was never retrieved" when nobody awaits the task.
            self._main.add_done_callback(lambda t: t.cancelled() or t.exception())

    # -- lifecycle ----------------------------------------------------------------------

    async def waitUntilReady(self) -> Any:
        """Returns the client once Redis answers (connection.wait_until_ready)."""
        return await wait_until_ready(self.client, self._checked)

    async def _checked(self) -> Any:
        await check_layout(self.client, self.keys)
        return self.client

    async def run(self) -> None:
        if self.processor is None:
            raise Exception("No process function is defined.")
        if self.running:
            raise Exception("Worker is already running.")
        self.running = True
        try:
            if not await self._setup():
                return  # closed before Redis answered
            self._timers = [asyncio.ensure_future(self._stall_loop()), asyncio.ensure_future(self._renew_loop())]
            await self._loop()
        except Exception as err:  # the layout check or a setup write failed: say so, stop
            self.emit("error", err)
            raise
        finally:
            self.running = False

    async def _setup(self) -> bool:
        """The layout check, connection names and settings, tried again while Redis cannot be
        reached (a worker started before Redis, as under docker-compose: it starts work once
        Redis answers, `running` all along). False when close() came first."""
        failures = 0
        while not self.closing:
            try:
                await self._checked()
                await self._name_connections()
                lim = self.opts.get("limiter")
                if lim:
                    limits = {"rlmax": str(lim["max"]), "rldur": str(lim["duration"])}
                    await exec_stamped(self.client, self.keys, lambda p: p.hset(self.keys.meta, mapping=limits))
                await self._apply_group_defaults()
                return not self.closing
            except Exception as err:
                if not _is_connection_error(err) or self.closing:
                    raise
                self.emit("error", err)
                failures += 1
                self._slot.clear()  # close() sets it: the pause ends at once
                try:
                    await asyncio.wait_for(self._slot.wait(), min(5.0, 0.05 * 2 ** min(failures, 7)))
                except asyncio.TimeoutError:
                    pass
        return False

    async def _name_connections(self) -> None:
        suffix = f":w:{self._wname}" if self._wname else ""
        try:
            await self.client.client_setname(client_name(self.keys, suffix))
            if self.bclient is not self.client:
                await self.bclient.client_setname(client_name(self.keys, suffix))
        except Exception:  # a cluster or an ACL without CLIENT: names are for listing only
            pass

    async def _loop(self) -> None:
        conc = self.opts["concurrency"]
        rid: Optional[str] = None  # the claim whose reply was lost: retried with the same request id
        while not self.closing:
            if self.paused:
                if rid is not None:
                    self._lost_claims.append(rid)
                    rid = None
                await self._resumed.wait()
                continue
            free = conc - len(self._runs)
            if free <= 0:
                if rid is not None:
                    self._lost_claims.append(rid)
                    rid = None
                self._slot.clear()
                if self.closing:
                    break
                await self._slot.wait()
                continue
            if rid is None:
                rid = self.runner.request_id()
            try:
                reply = await scripts.claim(self.runner, free, self.opts["lockDuration"], self._wname, rid)
            except Exception as err:
                lost = _is_connection_error(err)
                if not lost:
                    rid = None  # a reply (or EMQ_EXPIRED): this claim claimed nothing to retry
                if self.closing:
                    break
                self.emit("error", err)
                await asyncio.sleep(0.1 if not lost else 0.2)
                continue
            rid = None
            await self._release_lost()
            if reply.jobs:
                self._start(reply.jobs)
                continue
            await self._block(reply.wake_in_ms)
        if rid is not None:  # closing with a claim whose reply was lost: close() hands it back
            self._lost_claims.append(rid)

    async def _block(self, wake_in_ms: int) -> None:
        """Waits on the wake list (BLPOP) until work is signalled, the next delayed job is due,
        drainDelay passes, or a local slot frees (a settle that claimed less than it freed)."""
        seconds = float(self.opts["drainDelay"])
        if wake_in_ms >= 0:
            seconds = min(seconds, max(0.001, wake_in_ms / 1000))
        self._slot.clear()
        if self.closing or self.paused:  # close()/pause() set the slot before this clear: do not block
            return
        # A BLPOP still in flight from an earlier wait is awaited again, never stacked behind:
        # a second one would queue on the same connection while the first took the next token.
        if self._block_task is None or self._block_task.done():
            self._block_task = asyncio.ensure_future(self.bclient.blpop([self.keys.wake], timeout=seconds))
        blpop = self._block_task
        slot = asyncio.ensure_future(self._slot.wait())
        try:
            await asyncio.wait({blpop, slot}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            slot.cancel()
        if blpop.done():
            self._block_task = None
            if not blpop.cancelled() and blpop.exception() is not None and not self.closing:
                self.emit("error", blpop.exception())
                await asyncio.sleep(0.1)

    def _start(self, claimed: List[scripts.ClaimedJob]) -> None:
        for c in claimed:
            job = Job.from_hash(self._queue, c.id, c.fields)
            token = c.fields.get("att", "0")
            job.token = token
            controller = AbortController() if self._wants_signal else None
            run = _Run(job, token, controller)
            f = c.fields
            run.claimed = (f.get("lane", ""), f.get("kc", ""), f.get("ka", ""), f.get("made", ""))
            self._runs[c.id] = run
            run.task = asyncio.ensure_future(self._process(run))
            self.emit("active", job, "waiting")
            if job.repeatJobKey:
                from .schedulers import advance_scheduler
                t = asyncio.ensure_future(advance_scheduler(self.client, self.runner, self.keys, job.repeatJobKey))
                t.add_done_callback(self._report_task_error)

    def _report_task_error(self, t: asyncio.Task) -> None:
        if not t.cancelled() and t.exception() is not None and not self.closing:
            self.emit("error", t.exception())

    def _release(self, run: _Run) -> None:
        self._runs.pop(str(run.job.id), None)
        self._slot.set()

    # -- processing ---------------------------------------------------------------------

    async def _process(self, run: _Run) -> None:
        job = run.job
        try:
            if job.deferredFailure:
                from .errors import UnrecoverableError
                raise UnrecoverableError(job.deferredFailure)
            if run.controller is not None:
                result = await self.processor(job, run.token, run.controller.signal)  # type: ignore[misc]
            else:
                result = await self.processor(job, run.token)  # type: ignore[misc]
            rv = codec.dumps(result, "returnvalue", int(self.opts.get("maxPayloadBytes", DEFAULT_MAX_PAYLOAD)))
        except asyncio.CancelledError:
            self._release(run)  # force close: the lease expires and another worker recovers it
            return
        except RateLimitError:
            await self._hand_back(run)
            return
        except STEP_ERRORS:
            self._release(run)  # the processor moved its own job (a step job): leave it there
            return
        except Exception as err:
            await self._failed(run, err)
            return
        if self.forceClosing:
            self._release(run)
            return
        self._pending.append((run, rv, result))
        if len(self._pending) >= len(self._runs) - self._settling:
            # No other running job could still join this batch: settle now, in this task (at
            # concurrency 1 that is one call per job with no extra loop turns).
            batch, self._pending = self._pending[:_SETTLE_MAX], self._pending[_SETTLE_MAX:]
            await self._settle(batch)
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        while self._pending:
            batch, self._pending = self._pending[:_SETTLE_MAX], self._pending[_SETTLE_MAX:]
            t = asyncio.ensure_future(self._settle(batch))
            self._settles.add(t)
            t.add_done_callback(self._settles.discard)

    async def _release_lost(self) -> None:
        """Hands back the jobs of lost claims the worker will not retry (releaseClaim): each job
        still active under the attempt that claim gave it goes back to the front of its tier, no
        stall counted. Ids stay kept while Redis does not answer."""
        while self._lost_claims:
            ids = self._lost_claims[:100]
            try:
                released = await scripts.release_claim(self.runner, ids)
            except Exception as err:
                if not self.closing:
                    self.emit("error", err)
                return
            del self._lost_claims[:len(ids)]
            self.releasedClaims += len(released)

    def _lost_claim(self, rid: str, fetch: int, err: BaseException) -> None:
        """A settle that asked for next jobs and is given up: its claim is handed back later."""
        if fetch > 0 and _is_connection_error(err):
            self._lost_claims.append(rid)

    async def _retrying(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """A settle call, retried while Redis is unreachable (the worker keeps its finished jobs
        and settles them when Redis returns; past the lease, recovery has them anyway)."""
        delay = 0.05
        deadline = asyncio.get_running_loop().time() + self.opts["lockDuration"] / 1000
        while True:
            try:
                return await call()
            except Exception as err:
                if not _is_connection_error(err) or self.forceClosing or asyncio.get_running_loop().time() > deadline:
                    raise
                self.emit("error", err)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    def _fetch(self, n: int) -> int:
        return 0 if self.closing or self.paused else n

    async def _settle(self, batch: List[Tuple[_Run, str, Any]]) -> None:
        fetch = self._fetch(len(batch))
        self._settling += len(batch)
        rid = self.runner.request_id()  # one logical call: every retry sends the same id
        settled = [(r.job.id, r.token, rv, *r.claimed) for r, rv, _ in batch]
        try:
            reply = await self._retrying(lambda: scripts.complete_many(
                self.runner, settled, fetch, self.opts["lockDuration"],
                _MAX_EVENT_VALUE, self._keep_c, self._wname, rid))  # type: ignore[arg-type]
        except Exception as err:
            self._lost_claim(rid, fetch, err)
            self._settling -= len(batch)
            for r, _, _ in batch:
                self._release(r)
            self.emit("error", err)
            return
        self._settling -= len(batch)
        pending_deps = code("PENDING_DEPENDENCIES")
        for (run, _, result), c in zip(batch, reply.codes):
            if c == pending_deps:
                await self._failed(run, Exception(f"Job {run.job.id} has pending dependencies. moveToFinished"))
                continue
            self._release(run)
            if c != 1:
                self.emit("error", error_from_code(c, "moveToFinished", str(run.job.id)))
                continue
            run.job.returnvalue = result
            run.job.attemptsMade += 1
            self.emit("completed", run.job, result)
        await self._deliver_outbox(r.job for r, _, _ in batch)
        if reply.jobs:
            self._start(reply.jobs)

    async def _plan(self, job: Job, err: BaseException) -> Tuple[int, str, bool]:
        """(retry delay ms or -1, reason, exhausted) for a failed attempt, as Node's retryPlan."""
        attempts = int(job.opts.get("attempts") or 1)
        made = job.attemptsMade + 1
        reason = failed_reason(err)
        if is_unrecoverable(err) or made >= attempts:
            return -1, reason, made >= attempts
        try:
            backoff = normalize_backoff(job.opts.get("backoff"))
        except ValidationError:
            backoff = None
        strategy = (self.opts.get("settings") or {}).get("backoffStrategy")
        try:
            d = await backoff_delay(backoff, made, err, job, strategy)
        except Exception as e:
            return -1, f"{reason} (backoff strategy failed: {failed_reason(e)}; not retried)", False
        if d is None:
            return -1, f"{reason} (unknown backoff strategy {codec.dumps(backoff and backoff['type'])}; not retried)", False
        return d, reason, False

    def _stack(self, job: Job, err: BaseException) -> str:
        limit = int(job.opts.get("stackTraceLimit", 10))
        trace = "".join(traceback.format_exception(type(err), err, err.__traceback__)).rstrip("\n")
        all_ = list(job.stacktrace) + [trace]
        return codec.dumps(all_[-limit:] if limit > 0 else [], "stacktrace")

    async def _failed(self, run: _Run, err: BaseException) -> None:
        job = run.job
        if self.forceClosing:
            self._release(run)
            return
        delay, reason, exhausted = await self._plan(job, err)
        stack = self._stack(job, err)
        rid = self.runner.request_id()
        fetch = self._fetch(1)
        try:
            reply = await self._retrying(lambda: scripts.fail(
                self.runner, str(job.id), run.token, reason, stack, delay, exhausted,
                fetch, self.opts["lockDuration"], self._keep_f, self._wname, rid))  # type: ignore[arg-type]
        except Exception as e:
            self._lost_claim(rid, fetch, e)
            self._release(run)
            self.emit("error", e)
            return
        self._release(run)
        if isinstance(reply, int):
            self.emit("error", error_from_code(reply, "moveToFailed", str(job.id)))
            return
        job.failedReason = reason
        job.attemptsMade += 1
        job.stacktrace = codec.loads(stack)
        if delay > 0:
            job.delay = delay
        self.emit("failed", job, err)
        await self._deliver_outbox([job])
        if reply.jobs:
            self._start(reply.jobs)

    async def _hand_back(self, run: _Run) -> None:
        try:
            # '' owner and '1': the worker's own hand-back, with a request id (moveToWait.lua).
            await scripts.one_once(self.runner, "moveToWait", [run.job.id, run.token, "", "1"])
        except Exception as e:
            self.emit("error", e)
        finally:
            self._release(run)

    # -- upkeep -------------------------------------------------------------------------

    async def _idle(self, seconds: float) -> bool:
        """Sleeps up to `seconds`; True when close() ended it. The timers stop between their
        commands, never cancelled in the middle of one (a command cancelled mid-flight leaves its
        connection busy, and close would wait on it)."""
        ev = self.__dict__.setdefault("_stopping", asyncio.Event())
        try:
            await asyncio.wait_for(ev.wait(), seconds)
            return True
        except asyncio.TimeoutError:
            return self.closing

    async def _renew_loop(self) -> None:
        every = self.opts["lockRenewTime"] / 1000
        while not await self._idle(every):
            await self.extendLocks()

    async def extendLocks(self) -> None:
        """Renews every running job's lease in one call; a lost lease aborts the job's signal."""
        runs = list(self._runs.values())
        if not runs:
            return
        try:
            lost = await scripts.extend_leases(self.runner, self.opts["lockDuration"], [(r.job.id, r.token) for r in runs])
        except Exception as err:
            if not self.closing:
                self.emit("error", err)
            return
        for jid in lost:
            r = self._runs.get(jid)
            if r is not None and r.controller is not None:
                r.controller.abort("lock lost")
        renewed = [str(r.job.id) for r in runs if str(r.job.id) not in lost]
        if renewed:
            self.emit("locksRenewed", {"count": len(renewed), "jobIds": renewed})  # BullMQ Python's event

    async def _stall_loop(self) -> None:
        while not self.closing:
            await self.runStalledJobsCheck()
            if await self._idle(self.opts["stalledInterval"] / 1000):
                return

    async def runStalledJobsCheck(self) -> None:
        """The stall sweep: at most 10 bounded recover calls; emits stalled (and failed)."""
        try:
            for _ in range(_RECOVER_CALLS):
                requeued, failed, hashes = await scripts.recover(self.runner, self.opts["maxStalledCount"], _RECOVER_BATCH)
                for jid in requeued:
                    self.emit("stalled", jid)
                for jid, h in zip(failed, hashes):
                    self.emit("stalled", jid)
                    job = Job.from_hash(self._queue, jid, h)
                    from .errors import UnrecoverableError
                    self.emit("failed", job, UnrecoverableError(job.failedReason or "job stalled more than allowable limit"))
                if len(requeued) + len(failed) < _RECOVER_BATCH:
                    break
            from .schedulers import repair_schedulers
            await repair_schedulers(self.client, self.runner, self.keys)
            from .outbox import drain_outbox
            await drain_outbox(self.client, self.keys)
        except Exception as err:
            if not self.closing:
                self.emit("error", err)

    # -- controls -----------------------------------------------------------------------

    async def rateLimit(self, expire_time_ms: int) -> None:
        ms = v.integer_in("expire_time_ms", expire_time_ms, 1, 86_400_000)
        await exec_stamped(self.client, self.keys, lambda p: p.set(self.keys.rate, str(_RATE_BLOCK), px=ms).hset(self.keys.meta, "blk", "1"))

    @staticmethod
    def RateLimitError() -> RateLimitError:
        return RateLimitError()

    async def pause(self, do_not_wait_active: bool = False) -> None:
        if not self.paused:
            self.paused = True
            self._resumed.clear()
            self._slot.set()
            if not do_not_wait_active:
                await self._wait_runs()
        self.emit("paused")

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self._resumed.set()
            self.emit("resumed")

    def isPaused(self) -> bool:
        return self.paused

    def isRunning(self) -> bool:
        return self.running

    def cancelJob(self, job_id: str, reason: Optional[str] = None) -> bool:
        r = self._runs.get(str(job_id))
        if r is None or r.controller is None:
            return False
        r.controller.abort(reason)
        return True

    def cancelAllJobs(self, reason: Optional[str] = None) -> None:
        for r in list(self._runs.values()):
            if r.controller is not None:
                r.controller.abort(reason)

    async def _wait_runs(self) -> None:
        while self._runs or self._pending or self._settles:
            tasks = [r.task for r in self._runs.values() if r.task is not None] + list(self._settles)
            if tasks:
                await asyncio.wait(tasks)
            else:
                await asyncio.sleep(0)

    async def close(self, force: bool = False) -> None:
        """Stops claiming; waits for running jobs to settle (force: aborts and cancels them,
        their leases expire and another worker recovers them). Idempotent."""
        if self.closed:
            return
        first = not self.closing
        self.closing = True
        self._slot.set()
        self._resumed.set()
        if force:
            self.forceClosing = True
            self.cancelAllJobs("worker force-closed")
            for r in list(self._runs.values()):
                if r.task is not None:
                    r.task.cancel()
        if self._block_task is not None and not self._block_task.done():
            self._block_task.cancel()
        if not first:
            while not self.closed:
                await asyncio.sleep(0.01)
            return
        await self._wait_runs()
        if self._main is not None:
            if not self._timers and not self._main.done():
                self._main.cancel()  # still waiting for Redis (_setup): nothing sent to wait for
            try:
                await asyncio.wait_for(asyncio.shield(self._main), 5)
            except BaseException:
                pass
        await self._release_lost()
        self.__dict__.setdefault("_stopping", asyncio.Event()).set()
        # The timers finish the command they are in and stop (see _idle) before the client closes.
        await asyncio.gather(*self._timers, return_exceptions=True)
        if self._block_task is not None:  # a BLPOP cancelled above: let it unwind before its client closes
            await asyncio.gather(self._block_task, return_exceptions=True)
            self._block_task = None
        self.closed = True
        if self.bclient is not self.client:
            await close_client(self.bclient)
        if self._owned:
            await close_client(self.client)
        self.emit("closed")


def _is_connection_error(err: BaseException) -> bool:
    """The call's reply never came (the outcome is unknown, not refused as expired)."""
    if isinstance(err, RequestOutcomeUnknownError):
        return not err.expired
    return isinstance(err, (RedisConnectionError, RedisTimeoutError, ConnectionError, OSError))

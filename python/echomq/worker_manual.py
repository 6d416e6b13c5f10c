"""Manual processing (BullMQ's `Worker(name, None)` + `worker.getNextJob(token)`, Node's
src/worker/worker-manual.ts) and the worker pieces BullMQ Python has beside it: moveToActive,
nextJobFromJobData, cancelProcessing, the lockManager and jobScheduler properties. A mixin of
Worker. Jobs claimed for a caller's token are held here; their leases are renewed with the
worker's lockRenewTime until a lock-holder move (job_moves.py) releases them."""
from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional

from . import scripts
from . import validate as v
from .job import Job


class WorkerManual:
    """Worker methods for manual processing."""

    def _held_jobs(self) -> Dict[str, Any]:
        held = self.__dict__.get("_manual_held")
        if held is None:
            held = self.__dict__["_manual_held"] = {}
        return held

    def _manual_adopt(self, cj: scripts.ClaimedJob, token: str) -> Job:
        job = Job.from_hash(self._queue, cj.id, cj.fields)
        job.token = token
        job._held_by = self  # type: ignore[attr-defined]
        self._held_jobs()[str(cj.id)] = job
        if self.__dict__.get("_manual_renew") is None:
            t = asyncio.ensure_future(self._manual_renew_loop())
            self.__dict__["_manual_renew"] = t
            self._timers.append(t)  # close() cancels the worker's timers
        if job.repeatJobKey:
            from .schedulers import advance_scheduler
            t2 = asyncio.ensure_future(advance_scheduler(self.client, self.runner, self.keys, job.repeatJobKey))
            t2.add_done_callback(self._report_task_error)
        self.emit("active", job, "waiting")
        return job

    def _manual_release(self, job_id: str) -> None:
        self._held_jobs().pop(job_id, None)

    async def _manual_renew_loop(self) -> None:
        every = self.opts["lockRenewTime"] / 1000
        while not await self._idle(every):
            held = list(self._held_jobs().values())
            if not held:
                continue
            try:
                lost = await scripts.extend_leases(self.runner, self.opts["lockDuration"],
                                                   [(str(j.id), str(j._att)) for j in held])
            except Exception as err:
                if not self.closing:
                    self.emit("error", err)
                continue
            for jid in lost:
                self._manual_release(jid)

    async def moveToActive(self, token: str) -> Optional[Job]:
        """Claims the next job for `token` without waiting; None when none is ready."""
        owner = v.non_empty_string("token", token, 10_000)
        if self.closing or self.paused:
            return None
        await self._checked()
        args: List[Any] = [1, self.opts["lockDuration"], owner, self.opts.get("name") or ""]
        r = await self.runner.call_once("claim", args, "claim")
        claimed = scripts._claimed(r, 2)
        self.__dict__["_manual_wake"] = int(r[1])
        self.__dict__["_manual_drained"] = not claimed
        return self._manual_adopt(claimed[0], owner) if claimed else None

    async def getNextJob(self, token: str) -> Optional[Job]:
        """Claims the next job for `token`. When the previous claim found nothing, waits for one
        up to drainDelay first (BullMQ's drained state); None when there is none."""
        v.non_empty_string("token", token, 10_000)
        if self.__dict__.get("_manual_drained") and not self.closing:
            await self._block(self.__dict__.get("_manual_wake", -1))
            if self.closing:
                return None
        return await self.moveToActive(token)

    async def nextJobFromJobData(self, job_data: Optional[Dict[str, Any]] = None, job_id: Optional[str] = None,
                                 limit_until: int = 0, delay_until: int = 0, token: Optional[str] = None) -> Optional[Job]:
        """BullMQ Python's: a Job from BullMQ's raw job data (None for none); a scheduler's job
        makes its next slot's job."""
        if not job_data:
            return None
        job = Job.fromJSON(self._queue, job_data, job_id)
        job.token = token
        if job.repeatJobKey:
            from .schedulers import advance_scheduler
            await advance_scheduler(self.client, self.runner, self.keys, job.repeatJobKey)
        return job

    def cancelProcessing(self) -> None:
        """Cancels every running processor task (their leases expire; another worker recovers them)."""
        for r in list(self._runs.values()):
            if r.task is not None and not r.task.done():
                r.task.cancel()

    @property
    def lockManager(self) -> Any:
        lm = self.__dict__.get("_lock_manager")
        if lm is None:
            from .lock_manager import LockManager
            lm = self.__dict__["_lock_manager"] = LockManager(self, self.opts["lockRenewTime"], self.opts["lockDuration"],
                                                             self.id, self.opts.get("name"))
        return lm

    @property
    def jobScheduler(self) -> Any:
        js = self.__dict__.get("_job_scheduler")
        if js is None:
            from .job_scheduler import JobScheduler
            js = self.__dict__["_job_scheduler"] = JobScheduler(self._queue)
        return js


async def getCompleted(task_set: set, emit_callback: Any) -> tuple:
    """BullMQ Python's helper (bullmq.worker.getCompleted): waits for the first of `task_set` to
    finish; returns (the finished tasks' non-None results, the still pending set). A task that
    raised is reported through emit_callback("error", err) and left out."""
    if not task_set:
        await asyncio.sleep(0)
        return [], set()
    done, pending = await asyncio.wait(task_set, return_when=asyncio.FIRST_COMPLETED)
    out = []
    for t in done:
        if t.cancelled():
            continue
        if t.exception() is not None:
            emit_callback("error", t.exception())
            continue
        if t.result() is not None:
            out.append(t.result())
    return out, pending

"""LockManager (BullMQ Python's, snake_case methods): tracks jobs by id with their token and
renews their leases every lock_renew_time / 2 ms in one extendLocks call; per-job
AbortControllers for cancel_job / cancel_all_jobs. A worker's own running jobs are renewed by
the worker itself (worker.extendLocks); this class is for jobs a caller tracks, and it counts the
worker's running jobs in get_active_job_count / get_tracked_job_ids so both views agree."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Dict, List, Optional

from . import scripts
from . import validate as v
from .abort_controller import AbortController


class LockManager:
    def __init__(self, worker: Any, lock_renew_time: int, lock_duration: int, worker_id: str,
                 worker_name: Optional[str] = None) -> None:
        self.worker = worker
        self.lock_renew_time = v.non_negative_int("lock_renew_time", lock_renew_time)
        self.lock_duration = v.positive_int("lock_duration", lock_duration)
        self.worker_id = worker_id
        self.worker_name = worker_name
        self.tracked_jobs: Dict[str, Dict[str, Any]] = {}
        self.closed = False
        self._task: Optional[asyncio.Task] = None

    def start(self) -> None:
        if self.closed or self._task is not None or self.lock_renew_time <= 0:
            return
        self._task = asyncio.ensure_future(self._loop())

    def track_job(self, job_id: str, token: str, ts: int, should_create_controller: bool = False) -> Optional[AbortController]:
        if self.closed or not job_id:
            return None
        c = AbortController() if should_create_controller else None
        self.tracked_jobs[str(job_id)] = {"token": str(token), "ts": ts, "abort_controller": c}
        return c

    def untrack_job(self, job_id: str) -> None:
        self.tracked_jobs.pop(str(job_id), None)

    def _worker_runs(self) -> Dict[str, Any]:
        return getattr(self.worker, "_runs", None) or {}

    def cancel_job(self, job_id: str, reason: Optional[str] = None) -> bool:
        t = self.tracked_jobs.get(str(job_id))
        if t is not None and t["abort_controller"] is not None:
            t["abort_controller"].abort(reason)
            return True
        cancel = getattr(self.worker, "cancelJob", None)
        return bool(cancel(job_id, reason)) if t is None and cancel is not None else False

    def cancel_all_jobs(self, reason: Optional[str] = None) -> None:
        for t in self.tracked_jobs.values():
            if t["abort_controller"] is not None:
                t["abort_controller"].abort(reason)
        cancel = getattr(self.worker, "cancelAllJobs", None)
        if cancel is not None:
            cancel(reason)

    def get_tracked_job_ids(self) -> List[str]:
        return list(self.tracked_jobs) + [j for j in self._worker_runs() if j not in self.tracked_jobs]

    def get_active_job_count(self) -> int:
        return len(self.get_tracked_job_ids())

    def is_running(self) -> bool:
        return not self.closed and self._task is not None

    async def _loop(self) -> None:
        half = self.lock_renew_time / 2
        while not self.closed:
            await asyncio.sleep(half / 1000)
            now = int(time.time() * 1000)
            due = []
            for jid, t in list(self.tracked_jobs.items()):
                if not t["ts"] or t["ts"] + half < now:
                    t["ts"] = now
                    due.append((jid, t["token"]))
            if not due:
                continue
            try:
                lost = await scripts.extend_leases(self.worker.runner, self.lock_duration, due)
                self.worker.emit("locksRenewed", {"count": len(due) - len(lost), "jobIds": [j for j, _ in due if j not in lost]})
                for jid in lost:
                    t = self.tracked_jobs.pop(jid, None)
                    if t and t["abort_controller"] is not None:
                        t["abort_controller"].abort("lock lost")
                    self.worker.emit("lockRenewalFailed", [jid])
            except Exception as err:
                self.worker.emit("error", err)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        t, self._task = self._task, None
        if t is not None:
            t.cancel()
            try:
                await t
            except asyncio.CancelledError:
                pass
        self.tracked_jobs.clear()

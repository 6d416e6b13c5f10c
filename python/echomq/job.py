"""Job: a snapshot of a job hash and its per-job calls (BullMQ Python's names)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import codec
from . import scripts
from . import validate as v
from .errors import error_from_code
from .library import code
from .job_json import job_from_bullmq_hash
from .job_moves import JobMoves
from .options import DEFAULT_LANE
from .queue_handle import QueueHandle

_STATE = {"a": "active", "d": "delayed", "c": "completed", "f": "failed", "h": "waiting-children"}


def state_name(st: Optional[str], prio: Optional[str]) -> str:
    if st is None:
        return "unknown"
    if st == "w":
        return "prioritized" if prio not in (None, "", "0") else "waiting"
    return _STATE.get(st, "unknown")


def _num(s: Optional[str]) -> Optional[int]:
    if s is None or s == "":
        return None
    f = float(s)
    return int(f) if f.is_integer() else f  # type: ignore[return-value]


def _retention(count: Optional[str], age_ms: Optional[str]) -> Any:
    age = _num(age_ms)
    if age is not None and age > 0:
        c = _num(count)
        a = age / 1000
        a = int(a) if float(a).is_integer() else a
        return {"age": a} if c is None or c < 0 else {"age": a, "count": c}
    if count is None or count == "":
        return None
    c = int(count)
    return True if c == 0 else False if c < 0 else c


def stored_job_options(h: Dict[str, str]) -> Dict[str, Any]:
    """job.opts from the hash, as Node's storedJobOptions builds it."""
    parsed = codec.loads(h.get("opts"))
    o: Dict[str, Any] = {"attempts": 0}
    if isinstance(parsed, dict):
        o.update(parsed)
    prio = h.get("opr", h.get("prio"))
    if prio not in (None, "0"):
        o["priority"] = int(prio)
    if h.get("lane") not in (None, DEFAULT_LANE):
        o["lane"] = h["lane"]
    delay = h.get("odl", h.get("delay"))
    if delay not in (None, "0"):
        o["delay"] = int(delay)
    if h.get("lifo") == "1":
        o["lifo"] = True
    kc = _retention(h.get("kc"), h.get("ka"))
    if kc is not None:
        o["removeOnComplete"] = kc
    kf = _retention(h.get("kfc"), h.get("kfa"))
    if kf is not None:
        o["removeOnFail"] = kf
    return o


class Job(JobMoves):
    """A job as BullMQ Python shows it: id, name, data, opts, progress, returnvalue,
    failedReason, stacktrace, the attempt counts and timestamps."""

    def __init__(self, queue: QueueHandle, name: str, data: Any, opts: Optional[Dict[str, Any]] = None,
                 job_id: Optional[str] = None) -> None:
        self.queue = queue
        self.name = name
        self.data = data
        self.opts: Dict[str, Any] = dict(opts or {})
        self.id: Optional[str] = self.opts.get("jobId") or job_id
        self.progress: Any = 0
        self.returnvalue: Any = None
        self.failedReason: Optional[str] = None
        self.stacktrace: List[str] = []
        self.timestamp: int = int(self.opts.get("timestamp") or 0)
        self.attemptsMade = 0
        self.attemptsStarted = 0
        self.stalledCounter = 0
        self.delay = int(self.opts.get("delay") or 0)
        self.priority = int(self.opts.get("priority") or 0)
        self.lane: str = self.opts.get("lane", DEFAULT_LANE)
        self.processedOn: Optional[int] = None
        self.finishedOn: Optional[int] = None
        self.processedBy: Optional[str] = None
        self.repeatJobKey: Optional[str] = None
        self.parentKey: Optional[str] = None
        self.parent: Optional[Dict[str, Any]] = None
        self.token: Optional[str] = None
        self.deferredFailure: Optional[str] = None
        self.discarded = False

    # -- building from Redis ------------------------------------------------------------

    @classmethod
    def from_hash(cls, queue: QueueHandle, job_id: str, h: Dict[str, str]) -> "Job":
        job = cls(queue, h.get("name", ""), None, None, job_id)
        job._apply(h)
        return job

    def _apply(self, h: Dict[str, str]) -> None:
        self.name = h.get("name", self.name)
        self.data = codec.loads(h.get("data") or "{}")
        self.opts = stored_job_options(h)
        self.timestamp = int(_num(h.get("ts")) or 0)
        self.delay = int(h.get("delay") or 0)
        self.priority = int(h.get("prio") or 0)
        self.lane = h.get("lane", DEFAULT_LANE)
        self.attemptsMade = int(h.get("made") or 0)
        self.attemptsStarted = int(h.get("att") or 0) - int(h.get("atb") or 0)
        self.stalledCounter = int(h.get("stc") or 0)
        prog = codec.loads(h.get("prog"))
        self.progress = 0 if prog is None else prog
        self.returnvalue = None if h.get("rv") is None else codec.loads(h["rv"])
        self.failedReason = h.get("err")
        st = codec.loads(h.get("stack"))
        self.stacktrace = st if isinstance(st, list) else []
        self.processedOn = _num(h.get("pOn"))
        self.finishedOn = _num(h.get("fOn"))
        self.processedBy = h.get("pb")
        self.repeatJobKey = h.get("sid")
        self.deferredFailure = h.get("dfail")
        self._att = h.get("att", "0")
        if h.get("pid"):
            qk = f"{h.get('ppx')}:{h.get('pq')}"
            self.parentKey = f"{qk}:{h['pid']}"
            self.parent = {"id": h["pid"], "queueKey": qk}

    @staticmethod
    async def fromId(queue: QueueHandle, jobId: str) -> Optional["Job"]:
        jid = v.existing_job_id(jobId)
        await queue._checked()
        raw = codec.text(await queue.client.hgetall(queue.keys.job(jid)))
        if not raw:
            return None
        h = {codec.text(k): codec.text(x) for k, x in raw.items()}
        return Job.from_hash(queue, jid, h)

    @staticmethod
    async def addJobLog(queue: QueueHandle, jobId: str, logRow: str, keepLogs: int = 0) -> int:
        jid = v.existing_job_id(jobId)
        row = v.string("logRow", logRow, v.MAX_SAFE_INTEGER)
        keep = v.non_negative_int("keepLogs", keepLogs)
        r = await scripts.one_once(queue.runner, "addLog", [jid, row, keep])
        if r < 0:
            raise error_from_code(r, "addLog", jid)
        return r

    # -- calls --------------------------------------------------------------------------

    async def updateProgress(self, progress: Any) -> None:
        s = codec.dumps(progress, "progress", self.queue.maxPayloadBytes)
        r = await scripts.one(self.queue.runner, "progress", [self.id, s])
        if r < 0:
            raise error_from_code(r, "updateProgress", str(self.id))
        self.progress = progress

    async def log(self, logRow: str) -> int:
        row = v.string("logRow", logRow, v.MAX_SAFE_INTEGER)
        keep = v.non_negative_int("keepLogs", self.opts.get("keepLogs", self.queue.keepLogs))
        r = await scripts.one_once(self.queue.runner, "addLog", [self.id, row, keep])
        if r < 0:
            raise error_from_code(r, "addLog", str(self.id))
        return r

    async def updateData(self, data: Any) -> None:
        s = codec.dumps(data, "data", self.queue.maxPayloadBytes)
        r = await scripts.one(self.queue.runner, "updateData", [self.id, s])
        if r < 0:
            raise error_from_code(r, "updateData", str(self.id))
        self.data = data

    async def getState(self) -> str:
        return await self.queue.getJobState(str(self.id))

    async def retry(self, state: str = "failed", opts: Optional[Dict[str, Any]] = None) -> None:
        if state not in ("failed", "completed"):
            v.fail("state", "'failed' or 'completed'", state)
        o = v.plain_object("opts", opts or {})
        made = bool(o.get("resetAttemptsMade"))
        started = bool(o.get("resetAttemptsStarted"))
        r = await scripts.one_once(self.queue.runner, "retry", [self.id, state, "1" if made else "0", "1" if started else "0"])
        if r < 0:
            if r == code("BAD_STATE"):
                raise error_from_code(r, "reprocessJob", str(self.id))
            raise error_from_code(r, "reprocessJob", str(self.id))
        self.failedReason = None
        self.finishedOn = None
        self.processedOn = None
        self.returnvalue = None
        if made:
            self.attemptsMade = 0
        if started:
            self.attemptsStarted = 0

    async def remove(self, opts: Optional[Dict[str, Any]] = None) -> None:
        """Removes the job (and its children unless removeChildren=False); raises when it is locked."""
        if not await self.queue.remove(str(self.id), opts):
            raise Exception(f"Job {self.id} could not be removed because it is locked by another worker")

    @staticmethod
    def fromJSON(queue: QueueHandle, rawData: Dict[str, Any], jobId: Optional[str] = None) -> "Job":
        """A Job from BullMQ's raw job hash (BullMQ's field names)."""
        return job_from_bullmq_hash(Job, queue, rawData, jobId)

    async def promote(self) -> None:
        r = await scripts.one_once(self.queue.runner, "promote", [self.id])
        if r < 0:
            raise error_from_code(r, "promote", str(self.id))
        self.delay = 0

    async def changePriority(self, opts: Dict[str, Any]) -> None:
        o = v.plain_object("opts", opts)
        p = v.priority(o.get("priority", 0))
        lifo = v.boolean("lifo", o.get("lifo", False))
        r = await scripts.one_once(self.queue.runner, "changePriority", [self.id, p, "1" if lifo else "0"])
        if r < 0:
            raise error_from_code(r, "changePriority", str(self.id))
        self.priority = p

    async def isCompleted(self) -> bool:
        return await self.getState() == "completed"

    async def isFailed(self) -> bool:
        return await self.getState() == "failed"

    async def isDelayed(self) -> bool:
        return await self.getState() == "delayed"

    async def isActive(self) -> bool:
        return await self.getState() == "active"

    async def isWaiting(self) -> bool:
        return await self.getState() in ("waiting", "prioritized")

    async def isWaitingChildren(self) -> bool:
        return await self.getState() == "waiting-children"

    def asJSON(self) -> Dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "data": codec.dumps(self.data), "opts": self.opts,
            "progress": self.progress, "attemptsMade": self.attemptsMade, "attemptsStarted": self.attemptsStarted,
            "finishedOn": self.finishedOn, "processedOn": self.processedOn, "timestamp": self.timestamp,
            "failedReason": self.failedReason, "stacktrace": self.stacktrace, "returnvalue": self.returnvalue,
        }

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, name={self.name!r})"

"""Queue: adds jobs and reads the queue, with BullMQ Python's names (and echomq's lanes)."""
from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import codec
from . import scripts
from . import validate as v
from .connection import check_layout, close_client, open_client, wait_until_ready
from .errors import ValidationError
from .event_emitter import EventEmitter
from .job import Job, state_name
from .keys import ACTIVE_BELOW, DEFAULT_PREFIX, QueueKeys
from .lanes import Lanes
from .queue_maintenance import QueueMaintenance, job_types
from .job_scheduler import QueueSchedulers
from .queue_parent import QueueParent
from .queue_groups import QueueGroups
from .queue_settings import QueueSettings
from .options import DEFAULT_MAX_PAYLOAD, normalize_job_options, stored_options
from .runner import Runner

_SETS = {"active": "active", "delayed": "delayed", "completed": "completed", "failed": "failed",
         "waiting-children": "wchildren", "repeat": "scheds"}
_BULK = 100


def _add_batches(prepared: List[Any]) -> List[List[Any]]:
    """Script calls of at most _BULK jobs, each lane a call touches counted as one job more: a job
    that opens a lane costs Redis about twice a job of a known lane (as the Node client's addBatches)."""
    out: List[List[Any]] = []
    batch: List[Any] = []
    lanes: set = set()
    for item in prepared:
        lane = item[0].lane
        opens = lane not in lanes
        if batch and len(batch) + len(lanes) + (2 if opens else 1) > _BULK + 1:
            out.append(batch)
            batch, lanes = [], set()
        batch.append(item)
        lanes.add(lane)
    if batch:
        out.append(batch)
    return out
_TICK_BATCH = 50  # adds of one loop turn per script call, as the Node client's ADD_COALESCE
_QUEUE_OPTS = ("connection", "prefix", "defaultJobOptions", "maxPayloadBytes", "keepLogs", "skipVersionCheck",
               "skipWaitingForReady", "streams", "settings", "telemetry", "skipMetasUpdate", "blockingConnection")


class QueueBase(EventEmitter):
    """Name, keys, connection and the once-per-object layout check, shared by every class."""

    def __init__(self, name: str, opts: Optional[Mapping[str, Any]] = None, known: Sequence[str] = _QUEUE_OPTS) -> None:
        super().__init__()
        self.name = v.queue_name(name)
        o = v.plain_object("opts", opts or {})
        for k in o:
            if k not in known:
                v.fail(f"opts.{k}", f"one of the known options ({', '.join(known)})", k)
        self.opts: Dict[str, Any] = o
        self.prefix = DEFAULT_PREFIX if o.get("prefix") is None else v.prefix(o["prefix"])
        self.keys = QueueKeys(self.name, self.prefix)
        self.client, self._owned = open_client(o.get("connection"))
        self.runner = Runner(self.client, self.keys)
        self.closing = False
        self._ready: Optional[asyncio.Future] = None

    @property
    def qualifiedName(self) -> str:
        return f"{self.prefix}:{self.name}"

    def toKey(self, type: str) -> str:
        """BullMQ's logical name `<prefix>:<queue>:<type>` (not a physical key: docs/internals.md#keys)."""
        return f"{self.prefix}:{self.name}:{type}"

    async def waitUntilReady(self) -> Any:
        """Returns the client once Redis answers (connection.wait_until_ready)."""
        return await wait_until_ready(self.client, self._checked)

    async def _checked(self) -> Any:
        """The layout check, once per object: what every call waits for (one try, bounded by
        connectWaitMs, so a call made while Redis is away raises RedisUnreachableError)."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(check_layout(self.client, self.keys))
        try:
            await asyncio.shield(self._ready)
        except BaseException:
            self._ready = None
            raise
        return self.client

    async def close(self) -> None:
        if self.closing:
            return
        self.closing = True
        if self._owned:
            await close_client(self.client)


class Queue(QueueSettings, QueueMaintenance, QueueSchedulers, QueueParent, QueueGroups, QueueBase):
    def __init__(self, name: str, opts: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(name, opts)
        o = self.opts
        dj = o.get("defaultJobOptions")
        if dj is not None:
            normalize_job_options(dj, "defaultJobOptions")
        self.jobsOpts: Dict[str, Any] = dict(dj or {})
        self.maxPayloadBytes = DEFAULT_MAX_PAYLOAD if o.get("maxPayloadBytes") is None else v.positive_int(
            "maxPayloadBytes", o["maxPayloadBytes"])
        self.keepLogs = 0 if o.get("keepLogs") is None else v.non_negative_int("keepLogs", o["keepLogs"])
        self.lanes = Lanes(self)
        self._pending_adds: List[Any] = []

    # -- adding -------------------------------------------------------------------------

    def _prepare(self, name: Any, data: Any, opts: Any, field: str = "") -> scripts.AddJob:
        v.string(f"{field}name", name)
        if opts is not None:
            v.plain_object(f"{field}opts", opts)
        merged = {**self.jobsOpts, **(opts or {})} if self.jobsOpts else (dict(opts) if opts else None)
        try:
            n = normalize_job_options(merged, "opts")
        except ValidationError as e:
            if not field:
                raise
            # The same refusal under the bulk entry's name (jobs[3].opts.priority), BullMQ's text kept.
            inner = e.field if e.field.startswith("opts") else f"opts.{e.field}"
            lead = str(e)[: -len(f"{e.field} must be {e.expected}, got {e.got}")].rstrip(": ") or None
            raise type(e)(f"{field}{inner}", e.expected, e.got, lead) from None
        json_data = codec.dumps(data, f"{field}data", self.maxPayloadBytes)
        if n.get("sizeLimit"):
            size = len(json_data.encode("utf-8"))
            if size > n["sizeLimit"]:
                raise ValidationError(f"{field}data", f"at most {n['sizeLimit']} bytes of JSON (sizeLimit)", f"{size} bytes",
                                      f"The size of job {name} exceeds the limit {n['sizeLimit']} bytes")
        d = n.get("deduplication") or {}
        return scripts.AddJob(
            id=n.get("jobId", ""), name=name, data=json_data, opts=stored_options(merged, n),
            priority=n["priority"], lane=n["lane"], delay=n["delay"], lifo=n["lifo"],
            keep_completed=n["keepCompleted"], keep_failed=n["keepFailed"],
            dedup_id=d.get("id", ""), dedup_ttl=d.get("ttl", 0), dedup_mode=d.get("mode", ""),
            timestamp=n.get("timestamp"), group_max_size=n.get("groupMaxSize"))

    def _job_of(self, a: scripts.AddJob, r: scripts.AddReply, data: Any, opts: Any) -> Job:
        if r.group_full:
            from .errors import EchoMQError
            raise EchoMQError(f"Group {a.lane} has reached its maximum size")
        job = Job(self, a.name, data, dict(opts or {}), r.id)
        job.id = r.id
        return job

    async def add(self, name: str, data: Any, opts: Optional[Mapping[str, Any]] = None) -> Job:
        """Adds a job. Adds made in the same loop turn (many producers awaiting together) travel
        together, 50 jobs a script call, as on Node; a lone add is sent on the next turn."""
        if isinstance(opts, Mapping) and opts.get("parent") is not None:
            return await self._add_child(name, data, opts)  # queue_parent.py
        a = self._prepare(name, data, opts)
        await self._checked()
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending_adds.append((a, fut))
        if len(self._pending_adds) == 1:
            asyncio.get_running_loop().call_soon(self._flush_adds)
        r = await fut
        job = self._job_of(a, r, data, {**self.jobsOpts, **(opts or {})})  # job.opts with the defaults, as BullMQ Python
        self.emit("waiting", job)
        return job

    def _flush_adds(self) -> None:
        pending, self._pending_adds = self._pending_adds, []
        for i in range(0, len(pending), _TICK_BATCH):
            chunk = pending[i:i + _TICK_BATCH]
            asyncio.ensure_future(self._send_adds(chunk))

    async def _send_adds(self, chunk: List[Any]) -> None:
        try:
            replies = await scripts.add(self.runner, [a for a, _ in chunk])
        except BaseException as err:
            for _, fut in chunk:
                if not fut.done():
                    fut.set_exception(err)
            return
        for (_, fut), r in zip(chunk, replies):
            if not fut.done():
                fut.set_result(r)

    async def addBulk(self, jobs: Sequence[Mapping[str, Any]]) -> List[Job]:
        if not isinstance(jobs, (list, tuple)):
            v.fail("jobs", "a list of {name, data, opts?}", jobs, as_type=True)
        prepared = []
        for i, j in enumerate(jobs):
            o = v.plain_object(f"jobs[{i}]", j)
            prepared.append((self._prepare(o.get("name"), o.get("data"), o.get("opts"), f"jobs[{i}]."), o))
        await self._checked()
        # Every call's Redis time stays bounded: all calls in one round trip (see _add_batches).
        chunks = _add_batches(prepared)
        replies = await asyncio.gather(*(scripts.add(self.runner, [a for a, _ in c]) for c in chunks))
        out: List[Job] = []
        for c, rs in zip(chunks, replies):
            for (a, o), r in zip(c, rs):
                out.append(self._job_of(a, r, o.get("data"), o.get("opts")))
        return out

    # -- admin --------------------------------------------------------------------------

    async def pause(self) -> None:
        await self._checked()
        await scripts.one(self.runner, "pause", ["1"])

    async def resume(self) -> None:
        await self._checked()
        await scripts.one(self.runner, "pause", ["0"])

    async def isPaused(self) -> bool:
        return codec.text(await self.client.hget(self.keys.meta, "paused")) == "1"

    # -- reading ------------------------------------------------------------------------

    async def getJob(self, job_id: str) -> Optional[Job]:
        return await Job.fromId(self, job_id)

    async def getJobState(self, job_id: str) -> str:
        jid = v.existing_job_id(job_id, "job_id")
        st, prio = codec.text(await self.client.hmget(self.keys.job(jid), ["st", "prio"]))
        return state_name(st, prio)

    async def _counts(self, types: List[str]) -> Dict[str, int]:
        p = self.client.pipeline(transaction=False)
        p.hmget(self.keys.meta, ["ready", "readyP"])
        for t in types:
            if t == "active":  # its jobs: the sentinel at +inf is none (keys.ACTIVE_SENTINEL)
                p.zcount(self.keys.active, *ACTIVE_BELOW)
            elif t in _SETS:
                p.zcard(self.keys[_SETS[t]])
        r = codec.text(await p.execute())
        ready, ready_p = (int(x or 0) for x in r[0])
        out: Dict[str, int] = {}
        i = 1
        for t in types:
            if t in ("waiting", "wait"):
                out[t] = ready - ready_p
            elif t == "prioritized":
                out[t] = ready_p
            elif t == "paused":
                out[t] = 0
            else:
                out[t] = int(r[i])
                i += 1
        return out

    async def getJobCounts(self, *types: Any) -> Dict[str, int]:
        return await self._counts(job_types(types))

    async def getJobCountByTypes(self, *types: Any) -> int:
        return sum((await self._counts(job_types(types))).values())

    async def count(self) -> int:
        return await self.getJobCountByTypes("waiting", "paused", "delayed", "prioritized", "waiting-children")

    async def getActiveCount(self) -> int:
        return await self.getJobCountByTypes("active")

    async def getCompletedCount(self) -> int:
        return await self.getJobCountByTypes("completed")

    async def getDelayedCount(self) -> int:
        return await self.getJobCountByTypes("delayed")

    async def getFailedCount(self) -> int:
        return await self.getJobCountByTypes("failed")

    async def getWaitingCount(self) -> int:
        return await self.getJobCountByTypes("waiting")

    async def getPrioritizedCount(self) -> int:
        return await self.getJobCountByTypes("prioritized")

    async def getWaitingChildrenCount(self) -> int:
        return await self.getJobCountByTypes("waiting-children")

    async def _ready_ids(self, prioritized: bool) -> List[str]:
        """Ready ids lane by lane in lane-name order, each lane in service order (Node's order)."""
        lo, hi = ("(0", "+inf") if prioritized else ("0", "0")
        k = self.keys
        ids: List[str] = []
        cursor = "-"
        while True:
            lanes = codec.text(await self.client.zrangebylex(k.lanes, cursor, "+", 0, 500))
            if not lanes:
                break
            p = self.client.pipeline(transaction=False)
            for lane in lanes:
                p.zrangebyscore(k.lane(lane), lo, hi, withscores=False)
            p.hmget(k.lone, lanes)
            r = codec.text(await p.execute())
            lone = r[-1]
            for lane, members, single in zip(lanes, r[:-1], lone):
                if single:
                    prio, _, member = single.partition(":")
                    if (int(prio) > 0) == prioritized:
                        members = [member]
                ids.extend(m[14:] for m in members)
            if len(lanes) < 500:
                break
            cursor = "(" + lanes[-1]
        return ids

    async def _range(self, t: str, start: int, end: int, asc: bool) -> List[str]:
        if t in ("waiting", "wait", "prioritized"):
            ids = await self._ready_ids(t == "prioritized")
            if not asc:
                ids.reverse()
            n = len(ids)
            s = max(0, n + start) if start < 0 else start
            e = n + end if end < 0 else min(end, n - 1)
            return ids[s:e + 1] if s <= e else []
        if t == "paused":
            return []
        key = self.keys[_SETS[t]]
        if t == "active":
            return await self._active_range(start, end, asc)
        got = await (self.client.zrange(key, start, end) if asc else self.client.zrevrange(key, start, end))
        return codec.text(got)

    async def _active_range(self, start: int, end: int, asc: bool) -> List[str]:
        """A rank window of the active jobs, read by score below +inf so the sentinel is never one
        of them: the same ids at the same ranks as a ZRANGE of the jobs alone."""
        k = self.keys.active
        if start < 0 or end < 0:
            n = int(await self.client.zcount(k, *ACTIVE_BELOW))
            start = max(0, n + start) if start < 0 else start
            end = n + end if end < 0 else end
        if start > end:
            return []
        lo, hi = ACTIVE_BELOW
        got = await (self.client.zrangebyscore(k, lo, hi, start=start, num=end - start + 1) if asc
                     else self.client.zrevrangebyscore(k, hi, lo, start=start, num=end - start + 1))
        return codec.text(got)

    async def getJobs(self, types: Any = None, start: int = 0, end: int = -1, asc: bool = False) -> List[Job]:
        ts = job_types([types] if isinstance(types, str) else (types or []))
        s = v.integer_in("start", start, -v.MAX_SAFE_INTEGER, v.MAX_SAFE_INTEGER, "an integer")
        e = v.integer_in("end", end, -v.MAX_SAFE_INTEGER, v.MAX_SAFE_INTEGER, "an integer")
        seen: List[str] = []
        for t in ts:
            for jid in await self._range(t, s, e, asc):
                if jid not in seen:
                    seen.append(jid)
        p = self.client.pipeline(transaction=False)
        for jid in seen:
            p.hgetall(self.keys.job(jid))
        out: List[Job] = []
        for jid, raw in zip(seen, await p.execute() if seen else []):
            if raw:
                out.append(Job.from_hash(self, jid, {codec.text(a): codec.text(b) for a, b in raw.items()}))
        return out

    async def getWaiting(self, start: int = 0, end: int = -1) -> List[Job]:
        return await self.getJobs(["waiting"], start, end, True)

    async def getPrioritized(self, start: int = 0, end: int = -1) -> List[Job]:
        return await self.getJobs(["prioritized"], start, end, True)

    async def getActive(self, start: int = 0, end: int = -1) -> List[Job]:
        return await self.getJobs(["active"], start, end, True)

    async def getDelayed(self, start: int = 0, end: int = -1) -> List[Job]:
        return await self.getJobs(["delayed"], start, end, True)

    async def getWaitingChildren(self, start: int = 0, end: int = -1) -> List[Job]:
        return await self.getJobs(["waiting-children"], start, end, True)

    async def getCompleted(self, start: int = 0, end: int = -1) -> List[Job]:
        return await self.getJobs(["completed"], start, end, False)

    async def getFailed(self, start: int = 0, end: int = -1) -> List[Job]:
        return await self.getJobs(["failed"], start, end, False)

    async def getJobLogs(self, job_id: str, start: int = 0, end: int = -1, asc: bool = True) -> Dict[str, Any]:
        jid = v.existing_job_id(job_id, "job_id")
        key = self.keys.logs(jid)
        p = self.client.pipeline(transaction=False)
        if asc:
            p.lrange(key, start, end)
        else:
            p.lrange(key, -(end + 1), -(start + 1))
        p.llen(key)
        logs, n = codec.text(await p.execute())
        if not asc:
            logs.reverse()
        return {"logs": logs, "count": int(n)}

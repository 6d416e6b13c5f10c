"""JobScheduler (BullMQ Python's class and Queue methods: upsertJobScheduler, getJobScheduler(s),
getJobSchedulersCount, removeJobScheduler, isJobScheduler) on echomq's scheduler records
(src/lifecycle/schedulers.ts): one hash per scheduler and the job of its next slot, made by
upsertScheduler.lua; workers make each following slot's job (schedulers.py)."""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import codec
from . import validate as v
from .connection import redis_now_ms
from .cron import next_cron_slot
from .bullmq_scheduler import _transform_scheduler_data, bullmq_scheduler_record  # noqa: F401
from .options import keep_args, normalize_job_options, stored_options

_REPEAT_KEYS = ("every", "pattern", "tz", "startDate", "endDate", "limit", "offset", "immediately", "count", "key",
                "jobId", "prevMillis", "utc")


def _to_millis(field: str, value: Any) -> Optional[int]:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            pass
    v.fail(field, "a datetime, ms since the epoch or an ISO 8601 string", value)


def check_cron(pattern: str) -> None:
    """Raises croniter's CroniterBadCronError for a pattern it cannot read (BullMQ Python's error)."""
    from croniter import croniter, CroniterBadCronError
    fields = pattern.split()
    expr = " ".join(fields[1:] + fields[:1]) if len(fields) == 6 else pattern
    if not croniter.is_valid(expr):
        raise CroniterBadCronError(f"Exactly 5, 6 or 7 columns has to be specified for iterator expression: {pattern!r}"
                                   if len(fields) not in (5, 6, 7) else f"Invalid cron expression: {pattern!r}")


def default_repeat_strategy(millis: int, opts: Dict[str, Any]) -> Optional[int]:
    """BullMQ Python's: the next time of opts['pattern'] after `millis` (or startDate when later),
    in opts['tz'] (UTC by default); now with immediately; None without a pattern."""
    pattern = opts.get("pattern")
    if not pattern:
        return None
    if opts.get("immediately"):
        return int(time.time() * 1000)
    check_cron(pattern)
    base = max(millis, _to_millis("startDate", opts.get("startDate")) or 0)
    if opts.get("tz"):
        ZoneInfo(opts["tz"])  # an unknown zone raises ZoneInfoNotFoundError, as BullMQ Python's
    return next_cron_slot(pattern, opts.get("tz"), base)


def scheduler_json(sid: str, h: Dict[str, str]) -> Dict[str, Any]:
    """BullMQ Python's scheduler record: key, name, next, iterationCount, limit, startDate,
    endDate, tz, pattern, every, offset, template {data, opts}."""
    def num(f: str) -> Optional[int]:
        x = h.get(f)
        return None if x in (None, "") else int(float(x))
    out: Dict[str, Any] = {"key": sid, "name": h.get("name", sid), "next": num("next")}
    out["iterationCount"] = num("cnt") or 0
    for field, name in (("limit", "limit"), ("start", "startDate"), ("end", "endDate")):
        if num(field) is not None:
            out[name] = num(field)
    if h.get("tz"):
        out["tz"] = h["tz"]
    if h.get("pattern"):
        out["pattern"] = h["pattern"]
    if h.get("every"):
        every = int(h["every"])
        out["every"] = every
        out["offset"] = int(float(h.get("anchor") or h.get("next") or 0)) % every
    template: Dict[str, Any] = {}
    if h.get("data") not in (None, "", "{}"):
        template["data"] = codec.loads(h["data"])
    opts = codec.loads(h.get("opts")) if h.get("opts") else {}
    opts = dict(opts) if isinstance(opts, dict) else {}
    if h.get("prio") not in (None, "", "0"):
        opts["priority"] = int(h["prio"])
    if h.get("lane") not in (None, "", "default"):
        opts["lane"] = h["lane"]
    if h.get("lifo") == "1":
        opts["lifo"] = True
    if opts:
        template["opts"] = opts
    if template:
        out["template"] = template
    return out


class JobScheduler:
    """Schedulers of one queue, through the queue's client (no connection of its own)."""

    def __init__(self, queue: Any, repeat_strategy: Any = None) -> None:
        self.queue = queue
        if repeat_strategy is not None and not callable(repeat_strategy):
            v.fail("repeat_strategy", "a function (millis, opts) -> ms or None", repeat_strategy)
        self.repeat_strategy = repeat_strategy

    def _repeat(self, repeat_opts: Any) -> Dict[str, Any]:
        o = v.plain_object("repeat_opts", repeat_opts)
        for k in o:
            if k not in _REPEAT_KEYS:
                v.fail(f"repeat_opts.{k}", f"one of the known options ({', '.join(_REPEAT_KEYS)})", k)
        o = {k: x for k, x in o.items() if x is not None}
        if o.get("pattern") and o.get("every"):
            raise ValueError("Both .pattern and .every options are defined for this repeatable job")
        if not o.get("pattern") and not o.get("every"):
            raise ValueError("Either .pattern or .every options must be defined for this repeatable job")
        if o.get("immediately") and o.get("startDate"):
            raise ValueError("Both .immediately and .startDate options are defined for this repeatable job")
        r: Dict[str, Any] = {}
        if o.get("tz") is not None:
            r["tz"] = v.non_empty_string("repeat_opts.tz", o["tz"], 64)
            try:
                ZoneInfo(r["tz"])
            except (ZoneInfoNotFoundError, ValueError):
                raise ZoneInfoNotFoundError(f"No time zone found with key {r['tz']}")
        if o.get("every"):
            r["every"] = v.integer_in("repeat_opts.every", o["every"], 1, v.MAX_SAFE_INTEGER, "a positive integer (ms)")
            if o.get("offset") is not None:
                r["offset"] = v.non_negative_int("repeat_opts.offset", o["offset"]) % r["every"]
        else:
            r["pattern"] = v.non_empty_string("repeat_opts.pattern", o["pattern"], 256)
            if self.repeat_strategy is None:
                check_cron(r["pattern"])
            r["immediately"] = bool(o.get("immediately"))
        for f in ("startDate", "endDate"):
            if o.get(f) is not None:
                r[f] = _to_millis(f"repeat_opts.{f}", o[f])
        if o.get("limit") is not None:
            r["limit"] = v.positive_int("repeat_opts.limit", o["limit"])
        if o.get("count") is not None:
            r["count"] = v.non_negative_int("repeat_opts.count", o["count"])
        return r

    async def upsertJobScheduler(self, job_scheduler_id: str, repeat_opts: Dict[str, Any], job_name: Optional[str] = None,
                                 job_data: Any = None, opts: Optional[Dict[str, Any]] = None, override: bool = True,
                                 producer_id: Optional[str] = None) -> Any:
        """Creates or updates a scheduler; returns the Job of its next slot, or None when no slot
        is left (limit reached, endDate passed). override=False keeps an existing scheduler as it is."""
        sid = v.non_empty_string("job_scheduler_id", job_scheduler_id)
        r = self._repeat(repeat_opts)
        name = sid if job_name is None else v.string("job_name", job_name)
        data = codec.dumps({} if job_data is None else job_data, "job_data", self.queue.maxPayloadBytes)
        user = {k: x for k, x in v.plain_object("opts", opts or {}).items() if x is not None}
        for k in ("jobId", "delay", "deduplication", "repeat", "prevMillis", "repeatJobKey"):
            user.pop(k, None)
        merged = {**getattr(self.queue, "jobsOpts", {}), **user}
        n = normalize_job_options(merged, "opts")
        v.boolean("override", override)
        if r.get("count") is not None and r.get("limit") is not None and r["count"] + 1 > r["limit"]:
            return None
        await self.queue._checked()
        client = self.queue.client
        if not override and await self.isJobScheduler(sid):
            nxt = codec.text(await client.hget(self.queue.keys.scheduler(sid), "next"))
            return await self.queue.getJob(f"repeat:{sid}:{int(float(nxt))}")
        now = await redis_now_ms(client)
        if r.get("endDate") is not None and r["endDate"] < now:
            return None
        first: Any = ""
        if r.get("pattern"):
            if r.get("immediately"):
                first = now
            else:
                after = max(now, r.get("startDate") or 0) - 1
                strat = self.repeat_strategy
                first = strat(after, {**r}) if strat is not None else next_cron_slot(r["pattern"], r.get("tz"), after)
                if first is None:
                    return None
                first = max(int(first), now)
        args: List[Any] = [sid, r.get("every", ""), r.get("pattern", ""), r.get("tz", ""), r.get("startDate", ""),
                           r.get("endDate", ""), r.get("limit", ""), first, name, data, stored_options(merged, n),
                           n["priority"], n["lane"], "1" if n["lifo"] else "0", *keep_args(n["keepCompleted"]),
                           *keep_args(n["keepFailed"]), r.get("offset", "")]
        reply = await self.queue.runner.call("upsertScheduler", args)
        from .errors import guard_refusal
        refused = guard_refusal(reply, args, "upsertScheduler", lambda pos: f"argument {pos}")
        if refused is not None:
            raise refused
        if int(reply[0]) != 1:
            return None
        return await self.queue.getJob(str(reply[2]))

    async def removeJobScheduler(self, job_scheduler_id: str) -> int:
        """0 removed, 1 no such scheduler (BullMQ Python's reply)."""
        sid = v.non_empty_string("job_scheduler_id", job_scheduler_id)
        await self.queue._checked()
        # Applied once: a resend replies the first run's 1, not 0 (no such scheduler).
        return 0 if int(await self.queue.runner.call_once("removeScheduler", [sid], "removeScheduler")) == 1 else 1

    async def isJobScheduler(self, job_scheduler_id: str) -> bool:
        sid = v.non_empty_string("job_scheduler_id", job_scheduler_id)
        return bool(await self.queue.client.hexists(self.queue.keys.scheduler(sid), "next"))

    async def getScheduler(self, job_scheduler_id: str) -> Optional[Dict[str, Any]]:
        sid = v.non_empty_string("job_scheduler_id", job_scheduler_id)
        raw = await self.queue.client.hgetall(self.queue.keys.scheduler(sid))
        h = {codec.text(k): codec.text(x) for k, x in (raw or {}).items()}
        return scheduler_json(sid, h) if "next" in h else None

    async def getJobSchedulers(self, start: int = 0, end: int = -1, asc: bool = False) -> List[Dict[str, Any]]:
        s = v.non_negative_int("start", start)
        e = v.integer_in("end", end, -1, v.MAX_SAFE_INTEGER)
        c, k = self.queue.client, self.queue.keys
        ids = codec.text(await (c.zrange(k.scheds, s, e) if v.boolean("asc", asc) else c.zrevrange(k.scheds, s, e)))
        if not ids:
            return []
        p = c.pipeline(transaction=False)
        for sid in ids:
            p.hgetall(k.scheduler(sid))
        out = []
        for sid, h in zip(ids, await p.execute()):
            h = {codec.text(a): codec.text(b) for a, b in (h or {}).items()}
            if "next" in h:
                out.append(scheduler_json(sid, h))
        return out

    async def getSchedulersCount(self) -> int:
        return int(await self.queue.client.zcard(self.queue.keys.scheds))


class QueueSchedulers:
    """Queue's scheduler methods (a mixin), delegating to its JobScheduler."""

    @property
    def jobScheduler(self) -> JobScheduler:
        js = self.__dict__.get("_job_scheduler")
        if js is None:
            strat = (self.opts.get("settings") or {}).get("repeatStrategy")
            js = self.__dict__["_job_scheduler"] = JobScheduler(self, strat)
        return js

    async def upsertJobScheduler(self, job_scheduler_id: str, repeat_opts: Dict[str, Any], job_name: Optional[str] = None,
                                 job_data: Any = None, opts: Optional[Dict[str, Any]] = None, override: bool = True,
                                 producer_id: Optional[str] = None) -> Any:
        return await self.jobScheduler.upsertJobScheduler(job_scheduler_id, repeat_opts, job_name or job_scheduler_id,
                                                          job_data, opts, override, producer_id)

    async def removeJobScheduler(self, job_scheduler_id: str) -> int:
        return await self.jobScheduler.removeJobScheduler(job_scheduler_id)

    async def isJobScheduler(self, job_scheduler_id: str) -> bool:
        return await self.jobScheduler.isJobScheduler(job_scheduler_id)

    async def getJobScheduler(self, job_scheduler_id: str) -> Optional[Dict[str, Any]]:
        return await self.jobScheduler.getScheduler(job_scheduler_id)

    async def getJobSchedulers(self, start: int = 0, end: int = -1, asc: bool = False) -> List[Dict[str, Any]]:
        return await self.jobScheduler.getJobSchedulers(start, end, asc)

    async def getJobSchedulersCount(self) -> int:
        return await self.jobScheduler.getSchedulersCount()

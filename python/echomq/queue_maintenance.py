"""Queue upkeep with BullMQ Python's names and return values (the Node versions are
src/queue/queue-maintenance.ts and queue.ts): obliterate, drain, clean, retryJobs, promoteJobs,
remove, trimEvents, getCountsPerPriority, sanitizeJobTypes, deduplication keys (limits and
workers are queue_settings.py).
A mixin of Queue: it uses the queue's client, keys, runner and emit."""
from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import codec
from . import scripts
from . import validate as v
from .connection import redis_now_ms
from .errors import ActiveJobsError, EchoMQError, IncompatibleLayoutError
from .keys import ACTIVE_BELOW, QueueKeys, parse_job_key
from .library import code, library
from .outbox import drain_all
from .runner import Runner

_MOVE_BATCH = 500
_DRAIN_BATCH = 150  # jobs per drain call (as the Node client): a call stays under ~2.5 ms
_CLEAN_BATCH = 100
_OBLITERATE_BATCH = 500
_LANE_PAGE = 500
CLEAN_TYPES = ("completed", "wait", "waiting", "active", "paused", "prioritized", "delayed", "failed")
_CLEAN_STATE = {"completed": "c", "failed": "f", "delayed": "d", "active": "a"}
_SLOT_JOB = re.compile(r"^repeat:(.+):(\d+)$", re.S)
_TYPES = ("active", "completed", "delayed", "failed", "prioritized", "waiting", "waiting-children", "wait", "paused", "repeat")
_DEFAULT_TYPES = ("active", "completed", "delayed", "failed", "prioritized", "waiting", "waiting-children")


def job_types(types: Sequence[Any]) -> List[str]:
    """The job types a getter was given (lists flattened, each once, validated), or the default seven."""
    flat: List[Any] = []
    for t in types:
        flat.extend(t if isinstance(t, (list, tuple)) else [t])
    for t in flat:
        if t not in _TYPES:
            v.fail("types", f"a list of {', '.join(_TYPES)}", t)
    out: List[str] = []
    for t in flat or _DEFAULT_TYPES:
        if t not in out:
            out.append(t)
    return out


class QueueMaintenance:
    """Queue methods for upkeep, limits and removal."""

    # -- counts -------------------------------------------------------------------------

    def sanitizeJobTypes(self, types: Any) -> List[str]:
        """BullMQ Python's: the job types given (each once, validated), or its default seven."""
        return job_types(list(types or []))

    async def getCountsPerPriority(self, priorities: Any) -> Dict[str, int]:
        if not isinstance(priorities, (list, tuple, set)):
            v.fail("priorities", "a list of priorities", priorities, as_type=True)
        unique: List[int] = []
        for i, p in enumerate(priorities):
            p = v.priority(p, f"priorities[{i}]")
            if p not in unique:
                unique.append(p)
        out = {str(p): 0 for p in unique}
        if 0 in unique:
            out["0"] = (await self.getJobCounts("waiting"))["waiting"]
        rest = [p for p in unique if p > 0]
        cursor = "-"
        while rest:
            lanes = codec.text(await self.client.zrangebylex(self.keys.lanes, cursor, "+", 0, _LANE_PAGE))
            if lanes:
                pipe = self.client.pipeline(transaction=False)
                for lane in lanes:
                    for p in rest:
                        pipe.zcount(self.keys.lane(lane), p, p)
                    pipe.hget(self.keys.lone, lane)
                r = codec.text(await pipe.execute())
                per = len(rest) + 1
                for li in range(len(lanes)):
                    lone = r[li * per + len(rest)]
                    lone_prio = int(lone.partition(":")[0]) if lone else None
                    for i, p in enumerate(rest):
                        out[str(p)] += int(r[li * per + i]) + (1 if lone_prio == p else 0)
            if len(lanes) < _LANE_PAGE:
                break
            cursor = "(" + lanes[-1]
        return out

    # -- moving many --------------------------------------------------------------------

    async def retryJobs(self, opts: Optional[Mapping[str, Any]] = None) -> None:
        o = v.plain_object("opts", opts or {})
        count = 1000 if o.get("count") is None else v.positive_int("count", o["count"])
        state = o.get("state") or "failed"
        if state not in ("failed", "completed"):
            v.fail("state", "'failed' or 'completed'", state)
        ts = o.get("timestamp")
        if ts is not None and (isinstance(ts, bool) or not isinstance(ts, (int, float)) or ts < 0):
            v.fail("timestamp", "a time in ms (a non-negative number)", ts)
        await self._checked()
        ts = int(ts) if ts is not None else await redis_now_ms(self.client)
        while True:
            moved, more = await self.runner.call("retryJobs", [state, min(count, _MOVE_BATCH), ts])
            if int(more) != 1:
                return

    async def promoteJobs(self, opts: Optional[Mapping[str, Any]] = None) -> None:
        o = v.plain_object("opts", opts or {})
        count = 1000 if o.get("count") is None else v.positive_int("count", o["count"])
        await self._checked()
        while True:
            moved, more = await self.runner.call("promoteJobs", [min(count, _MOVE_BATCH)])
            if int(more) != 1:
                return

    # -- removing -----------------------------------------------------------------------

    async def drain(self, delayed: bool = False) -> None:
        """Removes waiting and prioritized jobs (and delayed ones with delayed=True; a
        scheduler's next-slot job stays), in bounded batches."""
        d = v.boolean("delayed", delayed)
        await self._checked()
        cursor, kept, outbox = "", 0, False
        while True:
            r = await self.runner.call("drain", [_DRAIN_BATCH, "1" if d else "0", cursor, "", kept])
            cursor, kept = str(r[1]), int(r[3])
            outbox = outbox or int(r[4]) == 1
            if int(r[2]) == 1:
                break
        if outbox:
            await drain_all(self.client, self.keys)

    async def _clean_candidates(self, type: str, cutoff: int, now: int, skip: int, count: int, paused: bool) -> List[str]:
        c, k = self.client, self.keys
        if type in ("completed", "failed"):
            return codec.text(await c.zrangebyscore(k[type], "-inf", cutoff, start=skip, num=count))
        if type == "delayed":
            return codec.text(await c.zrange(k.delayed, skip, skip + count - 1))
        if type == "active":  # only leases that ran out: nobody holds those jobs
            return codec.text(await c.zrangebyscore(k.active, "-inf", f"({now}", start=skip, num=count))
        if type == "paused" and not paused:
            return []
        ids = await self._ready_ids(type == "prioritized")
        return ids[skip:skip + count]

    async def clean(self, grace: int, limit: int, type: str = "completed") -> List[str]:
        """Removes up to `limit` jobs (0: no limit) of `type` older than `grace` ms; returns their ids."""
        g = v.non_negative_int("grace", grace)
        lim = v.non_negative_int("limit", limit)
        if type not in CLEAN_TYPES:
            v.fail("type", f"one of {', '.join(CLEAN_TYPES)}", type)
        await self._checked()
        now = await redis_now_ms(self.client)
        cutoff = now - g
        state = _CLEAN_STATE.get(type, "w")
        paused = codec.text(await self.client.hget(self.keys.meta, "paused")) == "1"
        removed: List[str] = []
        skip, calls = 0, 0
        while lim == 0 or len(removed) < lim:
            want = _CLEAN_BATCH if lim == 0 else min(_CLEAN_BATCH, lim - len(removed))
            cands = await self._clean_candidates(type, cutoff, now, skip, want, paused)
            if not cands and calls > 0:
                break
            gone = [str(x) for x in (await self.runner.call("clean", [state, cutoff, *cands]) or [])]
            calls += 1
            skip += len(cands) - len(gone)  # candidates that stayed are skipped next page
            removed.extend(gone)
            if len(cands) < want:
                break
        if removed:
            await drain_all(self.client, self.keys)
        if state == "w":
            removed.reverse()
        self.emit("cleaned", removed, "wait" if type == "waiting" else type)
        return removed

    async def obliterate(self, force: bool = False) -> None:
        """Deletes the queue and everything in it. Refused while jobs are active unless force
        (then nothing changes): "Cannot obliterate queue with active jobs"."""
        f = v.boolean("force", force)
        await self._checked()
        if not f and int(await self.client.zcount(self.keys.active, *ACTIVE_BELOW)) > 0:  # not the sentinel
            raise ActiveJobsError("obliterate")
        was_paused = await self.isPaused()
        await self.pause()
        while True:
            r = await self.runner.call("obliterate", [_OBLITERATE_BATCH, "1" if f else "0"])
            if int(r[0]) < 0:
                if not was_paused:  # a claim slipped in before the pause: leave the queue as it was
                    await self.resume()
                raise ActiveJobsError("obliterate")
            if int(r[1]) == 1:
                return
            await drain_all(self.client, self.keys)

    async def upgradeLayout(self, dryRun: bool = False) -> int:
        """Moves a queue stored in layout version 1 to this echomq's layout (2: the active set's
        sentinel, docs/protocol.md "Versions") in one atomic call, and returns the version stored
        before (0: none; a queue already in it is left alone). It skips the layout check that
        refuses such a queue (that is its point): stop the older clients first. dryRun only
        reports. IncompatibleLayoutError for a version it cannot upgrade from."""
        dry = v.boolean("dryRun", dryRun)
        r = int(await self.runner.call("upgradeLayout", ["0" if dry else "1"]))
        if r == code("UNKNOWN_LAYOUT"):
            stored = codec.text(await self.client.hget(self.keys.meta, "lv"))
            raise IncompatibleLayoutError(self.name, stored, library().layout_version)
        if not dry:
            self._ready = None  # the next write checks the layout again, and goes ahead
        return r

    async def trimEvents(self, maxLength: int) -> int:
        n = v.non_negative_int("maxLength", maxLength)
        return int(await self.client.xtrim(self.keys.events, maxlen=n, approximate=True))

    async def removeDeprecatedPriorityKey(self) -> int:
        """BullMQ's migration helper: deletes BullMQ's old `<prefix>:<queue>:priority` key."""
        return int(await self.client.delete(self.toKey("priority")))

    async def removeDeduplicationKey(self, id: str) -> int:
        """Frees a deduplication id whatever holds it: 1 when a live job or window held it, else 0."""
        did = v.non_empty_string("deduplication id", id)
        held = await self.getDeduplicationJobId(did) is not None
        p = self.client.pipeline(transaction=True)
        p.hdel(self.keys.dedup, did)
        p.zrem(self.keys.dedupx, did)
        await p.execute()
        return 1 if held else 0

    async def getDeduplicationJobId(self, id: str) -> Optional[str]:
        """The id of the job holding a deduplication id, or None when it is free."""
        did = v.non_empty_string("deduplication id", id)
        p = self.client.pipeline(transaction=True)
        p.hget(self.keys.dedup, did)
        p.zscore(self.keys.dedupx, did)
        p.time()
        holder, until, (sec, usec) = codec.text(await p.execute())
        if not holder:
            return None
        if until is not None:
            return holder if float(until) > int(sec) * 1000 + int(usec) // 1000 else None
        st = codec.text(await self.client.hget(self.keys.job(holder), "st"))
        return holder if st is not None and st not in ("c", "f") else None

    async def _children(self, keys: QueueKeys, jid: str, pending_only: bool) -> List[Any]:
        out: List[Any] = []
        async for field, state in self.client.hscan_iter(keys.depsBase + jid, count=200):
            field, state = codec.text(field), codec.text(state)
            if pending_only and state != "p":
                continue
            c = parse_job_key(field)
            if c is not None:
                item = (QueueKeys(c["queue"], c["prefix"]), c["id"])
                if all(x[1] != item[1] or x[0].base != item[0].base for x in out):
                    out.append(item)
        return out

    async def _is_held(self, keys: QueueKeys, jid: str, children: bool, depth: int = 0) -> bool:
        p = self.client.pipeline(transaction=True)
        p.hget(keys.job(jid), "st")
        p.zscore(keys.active, jid)
        p.time()
        st, deadline, (sec, usec) = codec.text(await p.execute())
        if st == "a" and (deadline is None or float(deadline) >= int(sec) * 1000 + int(usec) // 1000):
            return True
        if not children or depth > 64:
            return False
        for ck, cid in await self._children(keys, jid, True):
            if await self._is_held(ck, cid, True, depth + 1):
                return True
        return False

    async def remove(self, job_id: str, opts: Optional[Mapping[str, Any]] = None) -> int:
        """Removes a job and (removeChildren, default True) its children. 1, also for a job that
        does not exist; 0 when it or a child it waits for is active (nothing removed)."""
        jid = v.existing_job_id(job_id, "job_id")
        o = v.plain_object("opts", opts or {})
        rc = True if o.get("removeChildren") is None else v.boolean("removeChildren", o["removeChildren"])
        await self._checked()
        m = _SLOT_JOB.match(jid)
        if m and codec.text(await self.client.hget(self.keys.scheduler(m.group(1)), "next")) == m.group(2):
            raise EchoMQError(f"Job {jid} belongs to a job scheduler and cannot be removed directly. removeJob: "
                              "remove the scheduler with removeJobScheduler")
        if await self._is_held(self.keys, jid, rc):
            return 0
        level = await self._children(self.keys, jid, False) if rc else []
        [r] = await scripts.remove(self.runner, [jid])
        if r == -3:
            return 0  # became active in between
        for _ in range(64):
            if not level:
                break
            nxt: List[Any] = []
            for ck, cid in level:
                nxt.extend(await self._children(ck, cid, False))
                await scripts.remove(Runner(self.client, ck), [cid])  # an active child stays
            level = nxt
        await drain_all(self.client, self.keys)
        self.emit("removed", jid)
        return 1

"""BullMQ Pro's group methods, named as on Node (src/pro/groups.ts; BullMQ Python has none): a
group is an echomq lane. Concurrency, rate limit, pause/resume, counts, status, listings; and the
Worker's rateLimitGroup. Mixins of Queue and Worker."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import codec
from . import validate as v
from .job import Job
from .options import DEFAULT_LANE

GROUP_STATUSES = ("waiting", "paused", "limited", "maxed")


def _gid(value: Any) -> str:
    return v.non_empty_string("groupId", value)


def _lone(value: Optional[str]) -> Optional[tuple]:
    if not value or ":" not in value:
        return None
    score, _, member = value.partition(":")
    return (int(score), member) if score.isdigit() else None


class QueueGroups:
    async def _set_lane(self, lane: str, field: str, value: str) -> None:
        await self._checked()
        await self.runner.call("setLane", [lane, field, value])

    async def setGroupConcurrency(self, groupId: str, concurrency: int) -> None:
        lane = _gid(groupId)
        n = v.integer_in("concurrency", concurrency, 1, 1_000_000)
        await self._set_lane(lane, "limit", str(n))

    async def removeGroupConcurrency(self, groupId: str) -> None:
        await self._set_lane(_gid(groupId), "limit", "")

    async def getGroupConcurrency(self, groupId: str) -> Optional[int]:
        """The group's own concurrency, else the workers' group default, else None."""
        lane = _gid(groupId)
        p = self.client.pipeline(transaction=False)
        p.hget(self.keys.llimit, lane)
        p.hget(self.keys.meta, "gconc")
        own, dflt = codec.text(await p.execute())
        s = own if own is not None else (None if lane == DEFAULT_LANE else dflt)
        return None if s is None else int(s)

    async def setGroupRateLimit(self, groupId: str, max: int, duration: int) -> None:
        lane = _gid(groupId)
        m = v.positive_int("max", max)
        d = v.integer_in("duration", duration, 1, 86_400_000)
        await self._set_lane(lane, "rate", f"{m}:{d}")

    async def removeGroupRateLimit(self, groupId: str) -> None:
        await self._set_lane(_gid(groupId), "rate", "")

    async def getGroupRateLimitTtl(self, groupId: str, maxJobs: Optional[int] = None) -> int:
        """Ms until the group may start jobs again; 0 below maxJobs; -2 without a window."""
        lane = _gid(groupId)
        mx = None if maxJobs is None else v.positive_int("maxJobs", maxJobs)
        rk = self.keys.lrateBase + lane
        p = self.client.pipeline(transaction=False)
        p.time()
        p.zscore(self.keys.rlwait, lane)
        p.get(rk)
        p.pttl(rk)
        (sec, usec), wait, used, ttl = codec.text(await p.execute())
        now = int(sec) * 1000 + int(usec) // 1000
        if mx is not None and used is not None and int(used) < mx:
            return 0
        if wait is not None and float(wait) > now:
            return int(float(wait)) - now
        return -2 if used is None else int(ttl)

    async def pauseGroup(self, groupId: str) -> bool:
        """False when the group was paused already (a paused id is kept before it has jobs)."""
        lane = _gid(groupId)
        await self._checked()
        return int(await self.runner.call("pauseLane", [lane, "1"])) == 1

    async def resumeGroup(self, groupId: str) -> bool:
        lane = _gid(groupId)
        await self._checked()
        return int(await self.runner.call("pauseLane", [lane, "0"])) == 1

    async def _depths(self, lanes: List[str]) -> List[int]:
        if not lanes:
            return []
        p = self.client.pipeline(transaction=False)
        for lane in lanes:
            p.zcard(self.keys.lane(lane))
            p.hexists(self.keys.lone, lane)
        r = await p.execute()
        return [int(r[2 * i]) + int(r[2 * i + 1]) for i in range(len(lanes))]

    async def getGroupsJobsCount(self, pageSize: int = 1000) -> int:
        """Waiting jobs in all groups (the default lane is not a group), pageSize groups a read."""
        page = v.integer_in("pageSize", pageSize, 1, 100_000)
        total, start = 0, 0
        while True:
            lanes = codec.text(await self.client.zrange(self.keys.lanes, start, start + page - 1))
            total += sum(await self._depths([x for x in lanes if x != DEFAULT_LANE]))
            if len(lanes) < page:
                return total
            start += page

    async def getGroupActiveCount(self, groupId: str) -> int:
        return int(codec.text(await self.client.hget(self.keys.lactive, _gid(groupId))) or 0)

    async def getGroupJobs(self, groupId: str, start: int = 0, end: int = -1) -> List[Any]:
        """The group's waiting jobs from start to end (inclusive, Redis ranges), in claim order."""
        lane = _gid(groupId)
        s = v.integer_in("start", start, -10 ** 12, 10 ** 12)
        e = v.integer_in("end", end, -10 ** 12, 10 ** 12)
        p = self.client.pipeline(transaction=False)
        p.zrange(self.keys.lane(lane), s, e)
        p.hget(self.keys.lone, lane)
        page, lone = codec.text(await p.execute())
        one = _lone(lone)
        if one is not None:  # a one-job lane is a list of one
            s1, e1 = (s + 1 if s < 0 else s), (e + 1 if e < 0 else e)
            page = [one[1]] if max(s1, 0) <= 0 <= e1 else []
        out = []
        for m in page:
            job = await Job.fromId(self, m[14:])  # a lane member: 14-character arrival stamp, then the id
            if job is not None:
                out.append(job)
        return out

    async def _lane_states(self, lanes: List[str]) -> List[Dict[str, Any]]:
        if not lanes:
            return []
        k = self.keys
        p = self.client.pipeline(transaction=False)
        p.hget(k.meta, "gconc")
        for lane in lanes:
            p.zcard(k.lane(lane)); p.sismember(k.lpaused, lane); p.zscore(k.rlwait, lane)
            p.hget(k.llimit, lane); p.hget(k.lactive, lane); p.hexists(k.lone, lane)
        r = codec.text(await p.execute())
        dflt, out = r[0], []
        for i, gid in enumerate(lanes):
            depth, paused, wait, own, active, lone = r[1 + i * 6:7 + i * 6]
            limit = own if own is not None else (None if gid == DEFAULT_LANE else dflt)
            count = int(depth) + int(lone)
            if int(paused) == 1:
                status: Optional[str] = "paused"
            elif wait is not None:
                status = "limited"
            elif limit is not None and int(active or 0) >= int(limit):
                status = "maxed"
            else:
                status = "waiting" if count > 0 else None
            out.append({"id": gid, "status": status, "count": count})
        return out

    async def getGroupStatus(self, groupId: str) -> Optional[str]:
        """'paused', 'limited', 'maxed', 'waiting', or None for a group without jobs or settings."""
        return (await self._lane_states([_gid(groupId)]))[0]["status"]

    async def getGroupsByStatus(self, status: str, start: int = 0, end: int = -1) -> List[Dict[str, Any]]:
        if status not in GROUP_STATUSES:
            v.fail("status", f"one of {', '.join(GROUP_STATUSES)}", status)
        s = v.integer_in("start", start, 0, 10 ** 12)
        e = v.integer_in("end", end, -1, 10 ** 12)
        if e < 0 or e - s >= 1000:  # a page reads at most 1000 groups
            e = s + 999
        if status == "paused":
            ids = codec.text(await self.client.sort(self.keys.lpaused, start=s, num=e - s + 1, alpha=True))
        elif status == "limited":
            ids = codec.text(await self.client.zrange(self.keys.rlwait, s, e))
        else:
            ids = codec.text(await self.client.zrange(self.keys.lanes, s, e))
        states = await self._lane_states([x for x in ids if x != DEFAULT_LANE])
        return [{"id": x["id"], "count": x["count"]} for x in states if x["status"] == status]

    async def getCountsPerPriorityForGroup(self, groupId: str, priorities: Any) -> Dict[str, int]:
        lane = _gid(groupId)
        if not isinstance(priorities, (list, tuple)):
            v.fail("priorities", "a list of priorities", priorities, as_type=True)
        if len(priorities) > 10_000:
            v.fail("priorities", "at most 10000 priorities", len(priorities))
        prios = [v.priority(p, f"priorities[{i}]") for i, p in enumerate(priorities)]
        if not prios:
            return {}
        p = self.client.pipeline(transaction=False)
        for prio in prios:
            p.zcount(self.keys.lane(lane), prio, prio)
        p.hget(self.keys.lone, lane)
        r = codec.text(await p.execute())
        one = _lone(r[-1])
        return {str(prio): int(r[i]) + (1 if one and one[0] == prio else 0) for i, prio in enumerate(prios)}


def group_defaults(value: Any) -> Optional[List[str]]:
    """The Worker's `group` option ({concurrency?, limit?: {max, duration}}) as setGroupDefaults'
    arguments [concurrency, "max:duration"] ('' for none), or None without the option."""
    if value is None:
        return None
    g = v.plain_object("group", value)
    for k in g:
        if k not in ("concurrency", "limit"):
            v.fail(f"group.{k}", "one of the known fields (concurrency, limit)", k)
    conc = "" if g.get("concurrency") is None else str(v.integer_in("group.concurrency", g["concurrency"], 1, 1_000_000))
    rate = ""
    if g.get("limit") is not None:
        lim = v.plain_object("group.limit", g["limit"])
        rate = f"{v.positive_int('group.limit.max', lim.get('max'))}:" \
               f"{v.integer_in('group.limit.duration', lim.get('duration'), 1, 86_400_000)}"
    return [conc, rate]


class WorkerGroups:
    async def _apply_group_defaults(self) -> None:
        """Stores the Worker's group defaults in the queue (the last worker started with one wins)."""
        d = group_defaults(self.opts.get("group"))
        if d is not None:
            await self.runner.call("setGroupDefaults", d)
    async def rateLimitGroup(self, job: Any, ms: int) -> None:
        """The job's group leaves the ring for ms (other groups keep flowing); raise
        RateLimitError after it so the job goes back without using an attempt."""
        t = v.integer_in("ms", ms, 1, 86_400_000)
        if not isinstance(getattr(job, "lane", None), str):
            v.fail("job", "a Job", job)
        await self.runner.call("rateLimitLane", [job.lane, t])

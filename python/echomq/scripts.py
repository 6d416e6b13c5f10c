"""Typed wrappers of the transitions the Python client calls: named arguments in, parsed reply
out, ARGV exactly as the script headers (and src/scripts/index.ts) give them. Integers go as
decimal strings, flags as '1'/'0', never a float's repr."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .library import code
from .options import keep_args
from .runner import Runner


@dataclass
class AddJob:
    id: str
    name: str
    data: str
    opts: str
    priority: int
    lane: str
    delay: int
    lifo: bool
    keep_completed: Tuple[int, int]
    keep_failed: Tuple[int, int]
    dedup_id: str = ""
    dedup_ttl: int = 0
    dedup_mode: str = ""
    timestamp: Optional[int] = None
    group_max_size: Optional[int] = None

    def record(self, lane_per_job: bool) -> List[Any]:
        return [self.opts, self.priority, "" if lane_per_job else self.lane, self.delay, "1" if self.lifo else "0",
                *keep_args(self.keep_completed), *keep_args(self.keep_failed), self.dedup_id, self.dedup_ttl,
                "" if self.timestamp is None else self.timestamp, "", self.dedup_mode,
                "" if self.group_max_size is None else self.group_max_size]


@dataclass
class AddReply:
    id: str
    created: bool
    group_full: bool = False


@dataclass
class ClaimedJob:
    id: str
    fields: Dict[str, str]


@dataclass
class ClaimReply:
    jobs: List[ClaimedJob]
    wake_in_ms: int
    codes: List[int] = field(default_factory=list)


def pairs(flat: Sequence[Any]) -> Dict[str, str]:
    return {flat[i]: flat[i + 1] for i in range(0, len(flat) - 1, 2)}


def _claimed(r: Sequence[Any], start: int) -> List[ClaimedJob]:
    return [ClaimedJob(str(r[i]), pairs(r[i + 1])) for i in range(start, len(r), 2)]


def _plain_record(r: Sequence[Any]) -> bool:
    """Whether add.lua may take this option record with names and data alone: delay 0, not lifo,
    no dedup id, parent or groupMaxSize (its fields 3, 4, 9, 12 and 14)."""
    return r[3] == 0 and r[4] == "0" and r[9] == "" and r[12] == "" and r[14] == ""


_ADD_RECORD = ["opts", "priority", "lane", "delay", "lifo", "keepCompletedCount", "keepCompletedAgeMs", "keepFailedCount",
               "keepFailedAgeMs", "dedupId", "dedupTtlMs", "timestamp", "parent", "dedupMode", "groupMaxSize"]


def add_arg_name(pos: int, m: int, k: int) -> str:
    """add.lua's name of ARGV position pos (1-based) in a call of m option records and k fields
    per job (addArgName in src/scripts/index.ts)."""
    if pos <= 3:
        return ["job count", "option record count", "fields per job"][pos - 1]
    o = pos - 4
    if o < 15 * m:
        return f"records[{o // 15}].{_ADD_RECORD[o % 15]}"
    fields = ["name", "data"] if k == 2 else ["id", "name", "data", "record", "lane"]
    return f"jobs[{(o - 15 * m) // k}].{fields[(o - 15 * m) % k]}"


async def add(run: Runner, jobs: Sequence[AddJob], request_id: Optional[str] = None) -> List[AddReply]:
    """One call for up to 100 jobs: each run of equal options is one record (add.lua header)."""
    lane0 = jobs[0].lane
    lane_per_job = any(j.lane != lane0 for j in jobs)
    records: List[Any] = []
    rec_of: List[int] = []
    prev: Optional[List[Any]] = None
    rec = 0
    for j in jobs:
        r = j.record(lane_per_job)
        if r != prev:
            records.extend(r)
            rec += 1
            prev = r
        rec_of.append(rec)
    # A plain call (one record, generated ids, ready FIFO jobs, no dedup id or group limit) sends
    # each job's name and data alone (add.lua's 2-field form), as the Node client does.
    plain = rec == 1 and not lane_per_job and all(j.id == "" for j in jobs) and _plain_record(records)
    per_job: List[Any] = []
    for j, k in zip(jobs, rec_of):
        if plain:
            per_job += [j.name, j.data]
        else:
            per_job += [j.id, j.name, j.data, k] + ([j.lane] if lane_per_job else [])
    fields = 2 if plain else 5 if lane_per_job else 4
    args = [len(jobs), rec, fields, *records, *per_job]
    reply = await run.call_once("add", args, "add", request_id)
    from .errors import guard_refusal
    refused = guard_refusal(reply, args, "add", lambda pos: add_arg_name(pos, rec, fields))
    if refused is not None:
        raise refused
    if plain:
        # {first id, n}: every job created, ids consecutive (a Python queue is not sharded)
        first = int(reply[0])
        return [AddReply(str(first + i), True) for i in range(len(jobs))]
    out: List[AddReply] = []
    full = code("GROUP_FULL")
    for i in range(0, len(reply), 2):
        c = int(reply[i + 1])
        if c == full:
            out.append(AddReply("", False, True))
        elif c < 0:
            from .errors import error_from_code
            raise error_from_code(c, "addJob", jobs[i // 2].id)
        else:
            out.append(AddReply(str(reply[i]), c == 1))
    return out


async def claim(run: Runner, count: int, lease_ms: int, name: str = "", request_id: Optional[str] = None,
                owner: str = "") -> ClaimReply:
    """request_id: a retry of a claim whose reply was lost passes the same one and gets its jobs."""
    r = await run.call_once("claim", [count, lease_ms, owner, name], "claim", request_id)
    return ClaimReply(_claimed(r, 2), int(r[1]))


MAX_SETTLE_GROUPS = 16


def settle_groups(jobs: Sequence[Tuple[str, ...]]) -> Optional[List[List[int]]]:
    """The jobs grouped by their settle fields (lane, kc, ka, made), groups and their jobs in
    first-seen order (indexes); None when groups would not take fewer arguments than 7 a job
    (5 per group + 3 per job) or more than MAX_SETTLE_GROUPS would be needed. The Node client's
    rule (src/scripts/index.ts settleGroups)."""
    groups: Dict[Tuple[str, ...], List[int]] = {}  # insertion order: first seen first
    for i, j in enumerate(jobs):
        h = tuple(j[3:7])
        g = groups.get(h)
        if g is None:
            if len(groups) == MAX_SETTLE_GROUPS or len(groups) * 5 + 5 >= len(jobs) * 4:
                return None
            g = groups[h] = []
        g.append(i)
    return list(groups.values())


async def complete_many(run: Runner, jobs: Sequence[Tuple[str, ...]], fetch: int, lease_ms: int,
                        max_event_bytes: int, keep: Optional[Tuple[int, int]] = None, name: str = "",
                        request_id: Optional[str] = None) -> ClaimReply:
    """jobs: (id, token, returnvalue JSON), or those and the job's lane, kc, ka and made as its claim
    reply gave them ('' when absent): the script then reads fewer fields. codes[i] per job: 1
    completed, or a negative code."""
    per_job = 7 if jobs and all(len(j) == 7 for j in jobs) else 3
    groups = settle_groups(jobs) if per_job == 7 else None
    args: List[Any] = [fetch, lease_ms, max_event_bytes, "", 0,
                       "" if keep is None else keep[0], "" if keep is None else keep[1], name,
                       "g" if groups else per_job]
    order: List[int] = []
    if groups:
        for g in groups:
            args += [*jobs[g[0]][3:7], len(g)]
            for i in g:
                args += jobs[i][:3]
                order.append(i)
    else:
        for j in jobs:
            args += j[:per_job]
        order = list(range(len(jobs)))
    r = await run.call_once("complete", args, "complete", request_id)
    m = int(r[2])
    codes = [0] * m
    for k in range(m):
        codes[order[k]] = int(r[3 + k])
    return ClaimReply(_claimed(r, 3 + m), int(r[1]), codes)


async def fail(run: Runner, job_id: str, token: str, reason: str, stack: str, retry_delay_ms: int, exhausted: bool,
               fetch: int, lease_ms: int, keep: Optional[Tuple[int, int]] = None, name: str = "",
               request_id: Optional[str] = None) -> "ClaimReply | int":
    args: List[Any] = [job_id, token, reason, stack, retry_delay_ms, fetch, lease_ms, "1" if exhausted else "0",
                       "", 0, "" if keep is None else keep[0], "" if keep is None else keep[1], name]
    r = await run.call_once("fail", args, "fail", request_id)
    if int(r[0]) < 0:
        return int(r[0])
    return ClaimReply(_claimed(r, 2), int(r[1]))


async def extend_leases(run: Runner, lease_ms: int, jobs: Sequence[Tuple[str, str]]) -> List[str]:
    args: List[Any] = [lease_ms]
    for jid, tok in jobs:
        args += [jid, tok]
    return [str(x) for x in await run.call("extendLeases", args)]


async def recover(run: Runner, max_stalled_count: int, batch: int = 100) -> Tuple[List[str], List[str], List[Dict[str, str]]]:
    r = await run.call("recover", [max_stalled_count, batch])
    requeued, failed = list(r[0] or []), list(r[1] or [])
    hashes = [pairs(h) for h in (r[2] if len(r) > 2 and r[2] else [])]
    return requeued, failed, hashes


async def one(run: Runner, name: str, args: Sequence[Any]) -> int:
    return int(await run.call(name, list(args)))


async def one_once(run: Runner, name: str, args: Sequence[Any], request_id: Optional[str] = None) -> int:
    """An applied-once script with an integer reply (addLog, retry, moveToDelayed, moveToWaitingChildren,
    promote, changePriority, moveToWait, addDependency)."""
    return int(await run.call_once(name, list(args), name, request_id))


async def release_claim(run: Runner, request_ids: Sequence[str]) -> List[str]:
    """Hands back the jobs of claims whose reply was lost and that will not be retried (at most 100 ids)."""
    return [str(x) for x in (await run.call("releaseClaim", list(request_ids)) or [])]


async def remove(run: Runner, ids: Sequence[str], request_id: Optional[str] = None) -> List[int]:
    """Per-id results (1 removed, -1 missing, -3 held); applied once: a resend replies the first run's."""
    return [int(x) for x in await run.call_once("remove", ["", "", *ids], "remove", request_id)]


async def resolve_child(run: Runner, parent_id: str, child_key: str, kind: str, value: str = "",
                        request_id: Optional[str] = None) -> List[Any]:
    """resolveChild.lua, applied once: a resend replies the first run's {status, outboxWritten}."""
    return list(await run.call_once("resolveChild", [parent_id, child_key, kind, value], "resolveChild", request_id))

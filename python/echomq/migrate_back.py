"""migrate_to_bullmq: moves echomq queues back into BullMQ 6's layout, as Node's migrateToBullMQ
(src/migrate/back.ts) does, by driving the same scripts of the library (docs/protocol.md "Moving
back to BullMQ"): each call moves a bounded batch atomically, so a move killed at any point and
run again moves each job exactly once. Ready jobs of all lanes go in one order: priority, then
arrival across lanes (docs/migrating-from-bullmq.md "Going back"). The report has Node's shape."""
from __future__ import annotations

import heapq
import json
import time
from typing import Any, Dict, List, Sequence, Tuple

from .codec import text
from .connection import close_client, open_client
from .errors import EchoMQError
from .library import code
from .migrate import _code, _layout_refusals, _MoveKeys, _pairs, _slot_refusals, _worker_check, _reasons
from .migrate_report import check_move, move_schedulers, note_cannot, queue_lines, run_lines
from .runner import Runner

BACK_STATES = ("waiting-children", "ready", "delayed", "failed", "completed")
_STAMP_LEN = 14
_PAGE = 1000


def _back_reasons() -> Dict[int, str]:
    r = _reasons()
    r.update({
        code("MIGRATE_ID_TAKEN"): "BullMQ already holds this id",
        code("MIGRATE_OUTSIDE"): "its flow parent or a pending child is in a queue (or prefix) this command does not move, or its parent stays in echomq",
        code("MIGRATE_NOT_CARRIED"): "a keepLastIfActive job (next job or holder) is not carried back",
        code("MIGRATE_LOCKED"): "a deduplication id whose holder job is still in echomq (active, or refused): run again once it moved",
        code("MIGRATE_LANE_PAUSED"): "its lane is paused (BullMQ has no lanes to hold it back): resume the lane and run again",
    })
    return r


class MigrationBackRefusedError(EchoMQError):
    """The move back was refused before anything was written; `reasons` says why."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__("migrate-to-bullmq refused: " + "; ".join(reasons))
        self.reasons = list(reasons)


def _note(r: Dict[str, Any], what: str, refused: List[Dict[str, Any]]) -> None:
    note_cannot(r, what, refused, _back_reasons())


async def _batch(run: Runner, mk: _MoveKeys, state: str, ids: List[str], dry: bool, moved_queues: str) -> Tuple[int, List[Dict[str, Any]]]:
    res = await run.call("migrateBackJobs", [state, "1" if dry else "0", mk.prefix, mk.bull_prefix, moved_queues, *ids])
    return int(res[1]), _pairs(res, 2)


async def _move_set(client: Any, run: Runner, mk: _MoveKeys, state: str, dry: bool, batch: int, moved_queues: str, r: Dict[str, Any]) -> None:
    key = {"waiting-children": mk.keys.wchildren, "delayed": mk.keys.delayed, "failed": mk.keys.failed, "completed": mk.keys.completed}[state]
    skip = 0
    while True:
        ids = [text(x) for x in await client.zrange(key, skip, skip + batch - 1)]
        if not ids:
            break
        moved, refused = await _batch(run, mk, state, ids, dry, moved_queues)
        r["states"][state]["moved"] += moved
        _note(r, state, refused)
        skip += len(ids) if dry else len(refused)
    r["states"][state]["left"] = await client.zcard(key) - (r["states"][state]["moved"] if dry else 0)


class _Lane:
    """A lane's cursor: its buffered entries and how many at the set's front are taken."""

    def __init__(self, name: str) -> None:
        self.name, self.buf, self.front, self.done = name, [], 0, False


async def _move_ready(client: Any, run: Runner, mk: _MoveKeys, dry: bool, batch: int, moved_queues: str, r: Dict[str, Any]) -> None:
    """Ready jobs of every lane merged by (priority, lane member), read lane by lane in pages; a
    lane is read again, from its first entry not taken, after the batch that emptied its page ran."""
    k = mk.keys
    page = max(10, min(batch, 100))
    lanes: List[str] = []
    while True:
        got = [text(x) for x in await client.zrange(k.lanes, len(lanes), len(lanes) + _PAGE - 1)]
        lanes += got
        if len(got) < _PAGE:
            break
    heap: List[Tuple[float, str, int, _Lane]] = []
    seq = 0

    async def fill(cs: List[_Lane]) -> None:
        nonlocal seq
        for c in cs:
            flat = await client.zrange(k.laneBase + c.name, c.front, c.front + page - 1, withscores=True)
            for member, score in flat:
                c.buf.append((float(score), text(member)))
            if c.front == 0:
                lone = text(await client.hget(k.lone, c.name))
                if lone:
                    p, member = lone.split(":", 1)
                    c.buf.append((float(p), member))
            c.done = len(flat) < page
            if c.buf:
                seq += 1
                heapq.heappush(heap, (c.buf[0][0], c.buf[0][1], seq, c))

    await fill([_Lane(x) for x in lanes])
    waiting: List[_Lane] = []
    refused_total = 0
    while True:
        if waiting:
            again, waiting = [c for c in waiting if not c.done], []
            await fill(again)
        taken: List[Tuple[str, _Lane]] = []
        while len(taken) < batch and heap:
            _, _, _, c = heapq.heappop(heap)
            _, member = c.buf.pop(0)
            taken.append((member, c))
            c.front += 1
            if c.buf:
                seq += 1
                heapq.heappush(heap, (c.buf[0][0], c.buf[0][1], seq, c))
            elif not c.done:
                waiting.append(c)
                break
        if not taken:
            break
        ids = [m[_STAMP_LEN:] for m, _ in taken]
        moved, refused = await _batch(run, mk, "ready", ids, dry, moved_queues)
        r["states"]["ready"]["moved"] += moved
        _note(r, "ready", refused)
        refused_total += len(refused)
        if not dry:
            kept = {x["id"] for x in refused}
            for m, c in taken:
                if m[_STAMP_LEN:] not in kept:
                    c.front -= 1
    r["states"]["ready"]["left"] = refused_total


async def migrate_to_bullmq(connection: Any, queues: Sequence[str], prefix: str = "emq", bullmq_prefix: str = "bull",
                            dry_run: bool = False, force: bool = False, batch_size: int = 100) -> Dict[str, Any]:
    """Moves echomq queues back into BullMQ 6's layout; returns the report (Node's shape). Raises
    MigrationBackRefusedError (nothing written) while echomq workers run on them, when keys could
    collide, or on a Cluster when a queue's two layouts are in different slots."""
    names = check_move(queues, prefix, bullmq_prefix, batch_size, "a non-empty list of echomq queue names",
                       "a queue name BullMQ can hold (a non-empty string without ':')")
    started = time.monotonic()
    client, owned = open_client(connection)
    try:
        # echomq's worker connections: named under echomq's prefix, marked by the library name.
        w = await _worker_check(client, names, bullmq_prefix, prefix)
        soft: List[str] = []
        if w["unreadable"] is not None:
            soft.append(f"cannot read CLIENT LIST to see whether echomq workers run ({w['unreadable']}); stop them and pass --force")
        unmarked = w["bullmq"] + w["unknown"]
        if unmarked:
            soft.append(f"worker connections {', '.join(unmarked)} carry echomq's queue names without echomq's library mark (Redis < 7.2, or another client); stop echomq's workers and pass --force")
        refusals = [*(await _layout_refusals(client, names, prefix, bullmq_prefix)),
                    *(await _slot_refusals(client, names, prefix, bullmq_prefix)),
                    *([f"{w['echomq']} echomq worker connection(s) are connected to the queues; stop the workers first"] if w["echomq"] else []),
                    *([] if force else soft)]
        if refusals and not dry_run:
            raise MigrationBackRefusedError(refusals)
        moved_queues = json.dumps(names, separators=(",", ":"), ensure_ascii=False)
        keys = [_MoveKeys(q, prefix, bullmq_prefix) for q in names]
        runs = [Runner(client, mk) for mk in keys]  # type: ignore[arg-type]
        reports = [{"queue": q, "states": {s: {"moved": 0, "left": 0} for s in BACK_STATES}, "schedulers": {"moved": 0, "left": 0},
                    "deduplication": {"moved": 0}, "active": 0, "ids": {"bullmq": 0}, "paused": False, "cannot": [], "cannotCount": 0} for q in names]
        for mk, run, r in zip(keys, runs, reports):
            m = await run.call("migrateBackMeta", ["1" if dry_run else "0"])
            r["paused"] = m[0] == "1"
            if m[1]:
                r["concurrency"] = int(m[1])
            if m[2] and m[3]:
                r["rateLimit"] = {"max": int(m[2]), "duration": int(m[3])}
            r["ids"]["bullmq"] = int(m[4])
            r["active"] = await client.zcard(mk.keys.active)
            await move_schedulers(client, mk.keys.scheds, dry_run, r,
                                  lambda sid, run=run: _code(run.call("migrateBackScheduler", [sid, "1" if dry_run else "0", prefix, bullmq_prefix])),
                                  lambda sid, c, r=r: _note(r, "scheduler", [{"id": sid, "code": c}]))
        for mk, run, r in zip(keys, runs, reports):
            await _move_set(client, run, mk, "waiting-children", dry_run, batch_size, moved_queues, r)
        for mk, run, r in zip(keys, runs, reports):
            await _move_ready(client, run, mk, dry_run, batch_size, moved_queues, r)
            for s in ("delayed", "failed", "completed"):
                await _move_set(client, run, mk, s, dry_run, batch_size, moved_queues, r)
            cursor: Any = 0
            while True:
                cursor, found = await client.hscan(mk.keys.dedup, cursor, count=500)
                ids = [text(x) for x in found.keys()]
                if ids:
                    res = await run.call("migrateBackDedup", ["1" if dry_run else "0", *ids])
                    r["deduplication"]["moved"] += int(res[0])
                    _note(r, "deduplication", _pairs(res, 1))
                if int(cursor) == 0:
                    break
        jobs = sum(s["moved"] for r in reports for s in r["states"].values())
        return {"dryRun": dry_run, "prefix": prefix, "bullmqPrefix": bullmq_prefix, "queues": reports, "jobs": jobs,
                "refusals": refusals, "workers": {"echomq": w["echomq"], "forced": soft if force else []},
                "durationMs": int((time.monotonic() - started) * 1000)}
    finally:
        if owned:
            await close_client(client)


def migration_back_text(r: Dict[str, Any]) -> str:
    """The report as text for people (Node's migrationBackText, line for line)."""
    verb = "would move" if r["dryRun"] else "moved"
    lines: List[str] = []
    for q in r["queues"]:
        middle = [f"  active            {q['active']} stay in echomq (never taken; run again once they finished)"] if q["active"] > 0 else []
        middle.append(f"  ids               BullMQ generates ids above {q['ids']['bullmq']}")
        lines += queue_lines(q, BACK_STATES, verb, r["prefix"], r["bullmqPrefix"], r["dryRun"], "echomq", middle, [])
    lines += run_lines(r)
    lines.append(f"{r['jobs']} jobs {verb} in {r['durationMs']} ms")
    return "\n".join(lines) + "\n"

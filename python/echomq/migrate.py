"""migrate_from_bullmq: moves BullMQ 6 queues' live data into echomq, as Node's
migrateFromBullMQ (src/migrate/migrate.ts) does, by driving the same scripts of the library
(docs/protocol.md "Moving a BullMQ queue"): each call moves a bounded batch atomically, so a move
killed at any point and run again moves each job exactly once. The report has Node's shape."""
from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence

from .codec import text
from .connection import close_client, is_cluster, open_client, redis_now_ms
from .errors import EchoMQError
from .keys import QueueKeys, queue_keys
from .library import code
from .migrate_report import CANNOT_LISTED, check_move, move_schedulers, note_cannot, queue_lines, run_lines
from .runner import Runner
from . import scripts
from . import validate as v

BULL_STATES = ("waiting-children", "wait", "paused", "prioritized", "active", "delayed", "failed", "completed")
_BULL_ONLY = ("id", "wait", "paused", "prioritized", "waiting-children", "pc", "marker", "stalled-check", "repeat")
_ECHOMQ_ONLY = ("ring", "inring", "lanes", "scheds", "wchildren", "lcfg", "dedup")
# The client library name echomq's worker connections carry (src/core/keys.ts WORKER_LIB_TAG).
WORKER_LIB_TAG = "echomq"
_MAX_SKIP = 5000


def _reasons() -> Dict[int, str]:
    return {
        code("MIGRATE_ID_TAKEN"): "echomq already holds this id",
        code("MIGRATE_LOCKED"): "a BullMQ worker holds its lock (run again once it has finished or its lock expired)",
        code("MIGRATE_OUTSIDE"): "its flow parent or a pending child is in a queue (or prefix) this command does not move, or stays in BullMQ",
        code("MIGRATE_PRO"): "BullMQ Pro group data (Pro's group storage is not public)",
        code("MIGRATE_TOO_BIG"): "a flow parent with more than 1,000 children still pending (more than one bounded call moves)",
        code("MIGRATE_NOT_CARRIED"): "not carried: an old-style repeatable job (no repeat hash: BullMQ before about 5.10), or a keepLastIfActive next job with a flow parent",
    }


class MigrationRefusedError(EchoMQError):
    """The move was refused before anything was written; `reasons` says why."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__("migrate-from-bullmq refused: " + "; ".join(reasons))
        self.reasons = list(reasons)


class _MoveKeys:
    """echomq's keys of a queue with BullMQ's base beside them (the scripts' `bullBase`)."""

    def __init__(self, queue: str, prefix: str, bull_prefix: str) -> None:
        self.keys = queue_keys(queue, prefix)
        self.queue = queue
        self.prefix = prefix
        self.bull_prefix = bull_prefix
        self.bull_base = f"{bull_prefix}:{queue}:"

    def __getitem__(self, name: str) -> str:
        return self.bull_base if name == "bullBase" else self.keys[name]


def _pairs(r: List[Any], start: int) -> List[Dict[str, Any]]:
    return [{"id": str(r[i]), "code": int(r[i + 1])} for i in range(start, len(r) - 1, 2)]


def _empty(queue: str) -> Dict[str, Any]:
    return {"queue": queue, "states": {s: {"moved": 0, "left": 0} for s in BULL_STATES},
            "schedulers": {"moved": 0, "left": 0}, "deduplication": {"moved": 0},
            "ids": {"bullmq": 0, "echomq": 0}, "paused": False, "delivered": 0, "cannot": [], "cannotCount": 0}


def _note(r: Dict[str, Any], what: str, refused: List[Dict[str, Any]]) -> None:
    note_cannot(r, what, refused, _reasons())


async def _code(reply: Awaitable[Any]) -> int:
    return int(await reply)


async def _layout_refusals(client: Any, queues: Sequence[str], prefix: str, bull_prefix: str) -> List[str]:
    out: List[str] = []
    for q in queues:
        ours = queue_keys(q, prefix).base
        theirs = f"{bull_prefix}:{q}:"
        if ours.startswith(theirs) or theirs.startswith(ours):
            out.append(f"queue {q}: BullMQ's keys ({theirs}…) and echomq's ({ours}…) share a key prefix, so their keys could collide; use another --prefix")
        elif ours.startswith(f"{bull_prefix}:") and await client.exists(*[ours + s for s in _BULL_ONLY]) > 0:
            out.append(f"queue {q}: echomq's keys {ours}… are the keys of BullMQ's queue {ours[len(bull_prefix) + 1:-1]}, which holds data; use another --prefix")
        elif theirs.startswith(f"{prefix}:") and await client.exists(*[theirs + s for s in _ECHOMQ_ONLY]) > 0:
            out.append(f"queue {q}: BullMQ's keys {theirs}… are the keys of an echomq queue under --prefix {prefix}; use another --prefix")
    return out


def _glob_escape(s: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in s)


async def _pro_refusals(client: Any, queues: Sequence[str], bull_prefix: str) -> List[str]:
    """BullMQ Pro's group keys (`groups…`, a layout that is not public): the queue is refused whole."""
    out: List[str] = []
    for q in queues:
        async for k in client.scan_iter(match=_glob_escape(f"{bull_prefix}:{q}:") + "groups*", count=1000):
            out.append(f"queue {q}: BullMQ Pro group data ({text(k)}); Pro's group storage is not public, so the queue is not moved")
            break
    return out


async def _slot_refusals(client: Any, queues: Sequence[str], prefix: str, bull_prefix: str) -> List[str]:
    if not is_cluster(client):
        return []
    out: List[str] = []
    for q in queues:
        a, b = queue_keys(q, prefix).meta, f"{bull_prefix}:{q}:meta"
        sa, sb = await client.cluster_keyslot(a), await client.cluster_keyslot(b)
        if int(sa) != int(sb):
            out.append(f"queue {q}: on a Redis Cluster the move needs BullMQ's and echomq's keys in one hash slot (give both prefixes one hash tag); {b} is in slot {sb}, {a} in slot {sa}")
    return out


async def _worker_check(client: Any, queues: Sequence[str], prefix: str, bull_prefix: str) -> Dict[str, Any]:
    names = [f"{bull_prefix}:{base64.b64encode(q.encode('utf-8')).decode('ascii')}" for q in queues]
    res: Dict[str, Any] = {"bullmq": [], "unknown": [], "echomq": 0, "unreadable": None}
    try:
        raw = text(await client.execute_command("CLIENT", "LIST"))
    except Exception as err:  # denied by an ACL, or not offered (some managed servers)
        res["unreadable"] = str(err)
        return res
    lines = raw.split("\n") if isinstance(raw, str) else [text(x) for x in raw]
    for line in lines:
        f = dict(p.split("=", 1) for p in line.strip().split(" ") if "=" in p)
        name = f.get("name", "")
        if not any(name == n or name.startswith(n + ":w:") for n in names):
            continue
        lib = f.get("lib-name")
        where = f"{name} ({f.get('addr', '?')})"
        if lib is not None and WORKER_LIB_TAG in lib:
            res["echomq"] += 1
        elif (lib is not None and lib != "") or prefix != bull_prefix:
            res["bullmq"].append(where)
        else:
            res["unknown"].append(where)
    return res


def _worker_refusals(bullmq: List[str], unknown: List[str], unreadable: Optional[str]) -> List[str]:
    out: List[str] = []
    if unreadable is not None:
        out.append(f"cannot read CLIENT LIST to see whether BullMQ workers run ({unreadable}); stop them and pass --force")
    if bullmq:
        out.append(f"BullMQ workers are connected to the queues: {', '.join(bullmq)}; stop them first")
    if unknown:
        out.append(f"worker connections {', '.join(unknown)} may be BullMQ's or echomq's (this server shows no client library name, Redis < 7.2, and both use the prefix); stop BullMQ's workers and pass --force")
    return out


async def _move_pass(run: Runner, mk: _MoveKeys, state: str, dry: bool, batch: int, moved_queues: str, r: Dict[str, Any],
                     again: Optional[set] = None) -> List[str]:
    """One pass over a state (Node's movePass): returns the ids refused as too big for one call,
    unreported; a second pass (`again`) reports only what it refuses of those."""
    skip, left = 0, 0
    big: List[str] = []
    too_big_code = code("MIGRATE_TOO_BIG")
    while True:
        res = await run.call("migrateJobs", [state, batch, skip, "1" if dry else "0", mk.prefix, mk.bull_prefix, moved_queues])
        examined, moved, left = int(res[0]), int(res[1]), int(res[2])
        refused = _pairs(res, 3)
        await _deliver(run, mk, [x["id"] for x in refused if x["code"] > 0], r)
        refused = [x for x in refused if x["code"] < 0]
        r["states"][state]["moved"] += moved
        too_big = [] if again is not None else [x for x in refused if x["code"] == too_big_code]
        if dry:
            r["states"][state]["moved"] += len(too_big)
        else:
            big.extend(x["id"] for x in too_big)
        _note(r, state, [x for x in refused if (x["id"] in again if again is not None else x not in too_big)])
        if examined == 0:
            break
        skip += examined if dry else len(refused)
        if skip > _MAX_SKIP or (dry and skip >= left):
            break
    r["states"][state]["left"] = left - r["states"][state]["moved"] if dry else left
    return big


async def _deliver(run: Runner, mk: _MoveKeys, ids: List[str], r: Dict[str, Any]) -> None:
    """Finished children moved after their parent (BullMQ found the parent's records gone and
    told no one): their outcome goes to the parent as echomq's settle sends it (Node's deliver)."""
    for jid in ids:
        jk = mk.keys.job(jid)
        pid, pq, pol, st, rv, err = [text(x) for x in await run.client.hmget(jk, "pid", "pq", "pol", "st", "rv", "err")]
        if not pid or not pq:
            continue
        if st == "c":
            kind, value = "c", rv or "null"
        elif pol in ("i", "f", "d", "c"):
            kind, value = ("x" if pol == "c" else pol), err or ""
        else:
            continue  # no policy: the parent keeps waiting, as for a child failed in echomq
        res = await scripts.resolve_child(Runner(run.client, queue_keys(pq, mk.prefix)), pid, jk, kind, value)
        if int(res[0]) == 1:
            r["delivered"] += 1


async def _move_state(run: Runner, mk: _MoveKeys, state: str, dry: bool, batch: int, moved_queues: str, r: Dict[str, Any]) -> None:
    big = await _move_pass(run, mk, state, dry, batch, moved_queues, r)
    if not big:
        return
    # Flow parents with more children than one call moves: their finished children first, in
    # bounded steps (migrateDeps), then a second pass moves them with the rest.
    for jid in big:
        left = 1
        while left > 0:
            left = int(await run.call("migrateDeps", [jid, min(batch * 5, 1000), mk.prefix, mk.bull_prefix]))
    await _move_pass(run, mk, state, dry, batch, moved_queues, r, set(big))


async def _move_dedup(run: Runner, ids: List[str], dry: bool, r: Dict[str, Any]) -> None:
    res = await run.call("migrateDedup", ["1" if dry else "0", *ids])
    r["deduplication"]["moved"] += int(res[0])
    _note(r, "deduplication", _pairs(res, 1))


async def _pass_all(client: Any, keys: List[_MoveKeys], runs: List[Runner], o: Dict[str, Any], reason: str) -> List[Dict[str, Any]]:
    """One pass over every queue (Node's movePassAll): ids, settings (first pass only), schedulers,
    flows, states, and deduplication ids (a SCAN: not on passes woken by events)."""
    dry_run, batch_size, moved_queues = o["dry_run"], o["batch_size"], o["moved_queues"]
    reports = [_empty(mk.queue) for mk in keys]
    for mk, run, r in zip(keys, runs, reports):
        bull_id = int(text(await client.get(mk.bull_base + "id")) or 0)
        r["ids"]["bullmq"] = bull_id
        if dry_run:
            r["ids"]["echomq"] = max(bull_id, int(text(await client.hget(mk.keys.meta, "id")) or 0))
        else:
            r["ids"]["echomq"] = int(await Runner(client, mk.keys).call("raiseJobId", [bull_id + o["id_gap"]]))
        if reason == "first":
            meta = await run.call("migrateMeta", ["1" if dry_run else "0"])
            r["paused"] = meta[0] == "1"
            if meta[1]:
                r["concurrency"] = int(meta[1])
            if meta[2] and meta[3]:
                r["rateLimit"] = {"max": int(meta[2]), "duration": int(meta[3])}
        await move_schedulers(client, mk.bull_base + "repeat", dry_run, r,
                              lambda sid, run=run: _code(run.call("migrateScheduler", [sid, "1" if dry_run else "0"])),
                              lambda sid, c, r=r: _note(r, "scheduler", [{"id": sid, "code": c}]))
    for mk, run, r in zip(keys, runs, reports):
        await _move_state(run, mk, "waiting-children", dry_run, batch_size, moved_queues, r)
    for mk, run, r in zip(keys, runs, reports):
        for s in BULL_STATES[1:]:
            await _move_state(run, mk, s, dry_run, batch_size, moved_queues, r)
        if reason == "event":
            continue
        base = mk.bull_base + "de:"
        dids: List[str] = []
        async for k in client.scan_iter(match=_glob_escape(base) + "*", count=1000):
            dids.append(text(k)[len(base):])
            if len(dids) == 500:
                await _move_dedup(run, dids, dry_run, r)
                dids = []
        if dids:
            await _move_dedup(run, dids, dry_run, r)
    return reports


def _jobs(reports: List[Dict[str, Any]]) -> int:
    return sum(s["moved"] for r in reports for s in r["states"].values())


def _merge(r: Dict[str, Any], p: Dict[str, Any]) -> Dict[str, Any]:
    """A later pass added to the run's report: counts add up, what stays is the latest pass's."""
    out = dict(r)
    out["states"] = {s: {"moved": r["states"][s]["moved"] + p["states"][s]["moved"], "left": p["states"][s]["left"]} for s in BULL_STATES}
    out["schedulers"] = {"moved": r["schedulers"]["moved"] + p["schedulers"]["moved"], "left": p["schedulers"]["left"]}
    out["deduplication"] = {"moved": r["deduplication"]["moved"] + p["deduplication"]["moved"]}
    out["ids"], out["cannot"], out["cannotCount"] = p["ids"], p["cannot"], p["cannotCount"]
    out["delivered"] = r["delivered"] + p["delivered"]
    return out


def _note_collisions(stats: Dict[str, Any], reports: List[Dict[str, Any]]) -> None:
    for q in reports:
        for c in q["cannot"]:
            what = f"{q['queue']} {c['what']}"
            if c["code"] != code("MIGRATE_ID_TAKEN") or len(stats["collisions"]) >= CANNOT_LISTED:
                continue
            if not any(x["id"] == c["id"] and x["what"] == what for x in stats["collisions"]):
                stats["collisions"].append({**c, "what": what})


async def _stream_tail(client: Any, key: str) -> str:
    r = await client.xrevrange(key, "+", "-", count=1)
    return text(r[0][0]) if r else "0-0"


async def _follow(client: Any, streams: List[str], start: List[str], sweep_ms: int, stop: Optional[asyncio.Event],
                  stats: Dict[str, Any], run_pass: Callable[[str], Awaitable[None]]) -> None:
    """Node's followLoop: a pass per batch of BullMQ events (XREAD BLOCK on BullMQ's streams, never
    its marker) and per sweep, until `stop` is set; then one last pass."""
    began = time.monotonic()
    ids = {k: v for k, v in zip(streams, start)}
    sweep_at = time.monotonic() + sweep_ms / 1000
    stopping = asyncio.ensure_future(stop.wait()) if stop is not None else asyncio.get_running_loop().create_future()
    try:
        while not stopping.done():
            wait = max(1, int((sweep_at - time.monotonic()) * 1000))
            read = asyncio.ensure_future(client.xread(ids, count=1000, block=wait))
            await asyncio.wait({read, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not read.done():
                read.cancel()
                await asyncio.gather(read, return_exceptions=True)
                break
            reply = read.result()
            if reply:
                for key, entries in (reply.items() if isinstance(reply, dict) else reply):
                    if entries:
                        ids[text(key)] = text(entries[-1][0])
                    stats["events"] += len(entries)
                reason = "event"
                stats["wakes"] += 1
            else:
                reason = "sweep"
                stats["sweeps"] += 1
            if reason == "sweep" or time.monotonic() >= sweep_at:
                sweep_at = time.monotonic() + sweep_ms / 1000
            stats["passes"] += 1
            await run_pass(reason)
        stats["passes"] += 1
        await run_pass("stop")
    finally:
        stopping.cancel()
        stats["durationMs"] = int((time.monotonic() - began) * 1000)


async def migrate_from_bullmq(connection: Any, queues: Sequence[str], prefix: str = "emq", bullmq_prefix: str = "bull",
                              dry_run: bool = False, force: bool = False, batch_size: int = 50, follow: bool = False,
                              stop: Optional[asyncio.Event] = None, sweep_ms: int = 30_000, id_gap: Optional[int] = None,
                              on_pass: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """Moves BullMQ queues into the echomq queues of the same names; returns the report (Node's
    shape). Raises MigrationRefusedError (nothing written) while BullMQ workers run on them, when
    keys could collide, or on a Cluster when a queue's two layouts are in different slots.
    With follow, BullMQ's workers may run: it keeps moving what BullMQ's producers add and its
    workers finish until `stop` is set (Node's `follow`, `signal`, `sweepMs`, `idGap`, `onPass`)."""
    names = check_move(queues, prefix, bullmq_prefix, batch_size, "a non-empty list of BullMQ queue names",
                       "a BullMQ queue name (a non-empty string without ':')")
    if not isinstance(follow, bool):
        v.fail("follow", "a boolean", follow)
    if follow and dry_run:
        v.fail("follow", "false with dryRun (a dry run changes nothing to follow)", follow)
    if stop is not None and not isinstance(stop, asyncio.Event):
        v.fail("stop", "an asyncio.Event", stop)
    if not isinstance(sweep_ms, int) or isinstance(sweep_ms, bool) or not 1000 <= sweep_ms <= 3_600_000:
        v.fail("sweepMs", "an integer from 1000 to 3600000", sweep_ms)
    if id_gap is None:
        id_gap = 1_000_000 if follow else 0
    if not isinstance(id_gap, int) or isinstance(id_gap, bool) or not 0 <= id_gap <= 10**12:
        v.fail("idGap", "an integer from 0 to 1e12", id_gap)
    started = time.monotonic()
    client, owned = open_client(connection)
    try:
        w = await _worker_check(client, names, prefix, bullmq_prefix)
        # Following expects BullMQ's workers to run: the report names them instead.
        soft = [] if follow else _worker_refusals([], w["unknown"], w["unreadable"])
        refusals = [*(await _layout_refusals(client, names, prefix, bullmq_prefix)),
                    *(await _slot_refusals(client, names, prefix, bullmq_prefix)),
                    *(await _pro_refusals(client, names, bullmq_prefix)),
                    *([] if follow else _worker_refusals(w["bullmq"], [], None)), *([] if force else soft)]
        if refusals and not dry_run:
            raise MigrationRefusedError(refusals)
        clock_offset = await redis_now_ms(client) - int(time.time() * 1000)
        o = {"dry_run": dry_run, "batch_size": batch_size, "id_gap": id_gap,
             "moved_queues": json.dumps(names, separators=(",", ":"), ensure_ascii=False)}
        keys = [_MoveKeys(q, prefix, bullmq_prefix) for q in names]
        runs = [Runner(client, mk) for mk in keys]  # type: ignore[arg-type]
        streams = [mk.bull_base + "events" for mk in keys]
        start = [await _stream_tail(client, k) for k in streams] if follow else []
        reports = await _pass_all(client, keys, runs, o, "first")
        workers: Dict[str, Any] = {"echomq": w["echomq"], "forced": soft if force else []}
        if follow:
            workers["bullmq"] = [*w["bullmq"], *w["unknown"]]
        report: Dict[str, Any] = {"dryRun": dry_run, "prefix": prefix, "bullmqPrefix": bullmq_prefix, "queues": reports,
                                  "jobs": _jobs(reports), "refusals": refusals, "workers": workers,
                                  "clockOffsetMs": clock_offset, "durationMs": 0}
        if follow:
            stats: Dict[str, Any] = {"passes": 0, "wakes": 0, "sweeps": 0, "events": 0, "collisions": [], "durationMs": 0}
            report["follow"] = stats
            _note_collisions(stats, reports)

            async def run_pass(reason: str) -> None:
                p = await _pass_all(client, keys, runs, o, reason)
                moved = _jobs(p)
                _note_collisions(stats, p)
                report["queues"] = [_merge(r, x) for r, x in zip(report["queues"], p)]
                report["jobs"] += moved
                if on_pass is not None:
                    on_pass({"reason": reason, "moved": moved, "total": report["jobs"], "stats": stats,
                             "left": sum(c["left"] for q in p for c in q["states"].values()),
                             "heldByBullMQ": sum(q["states"]["active"]["left"] for q in p)})

            await _follow(client, streams, start, sweep_ms, stop, stats, run_pass)
        report["durationMs"] = int((time.monotonic() - started) * 1000)
        return report
    finally:
        if owned:
            await close_client(client)


def migration_text(r: Dict[str, Any]) -> str:
    """The report as text for people (Node's migrationText, line for line)."""
    verb = "would move" if r["dryRun"] else "moved"
    lines: List[str] = []
    for q in r["queues"]:
        lines += queue_lines(q, BULL_STATES, verb, r["bullmqPrefix"], r["prefix"], r["dryRun"], "BullMQ",
                             [f"  ids               BullMQ's counter {q['ids']['bullmq']}; echomq generates ids above {q['ids']['echomq']}"],
                             [f"  flow children     {q['delivered']} outcomes delivered to parents moved before the child finished"] if q.get("delivered", 0) > 0 else [])
    lines += run_lines(r)
    if "follow" in r:
        fo = r["follow"]
        lines.append(f"followed {round(fo['durationMs'] / 1000)} s: {fo['passes']} passes ({fo['wakes']} woken by {fo['events']} BullMQ events, {fo['sweeps']} sweeps)")
        for c in fo["collisions"]:
            lines.append(f"  id collision: {c['what']} {c['id']}: {c['reason']} (left in BullMQ, not overwritten)")
        if r["workers"].get("bullmq"):
            lines.append(f"BullMQ worker connections seen at the start: {', '.join(r['workers']['bullmq'])}")
    off = r["clockOffsetMs"]
    lines.append(f"{r['jobs']} jobs {verb} in {r['durationMs']} ms (Redis clock {'+' if off >= 0 else ''}{off} ms from this host's)")
    return "\n".join(lines) + "\n"

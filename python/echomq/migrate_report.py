"""What the move from BullMQ and the move back share (Node's src/migrate/report.ts): the queue
names' checks, the list of what stays, the job schedulers' loop and the report's common text
lines. Each direction passes its own words (whose queue names, where refused jobs stay)."""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, List, Sequence

from .codec import text
from . import validate as v

CANNOT_LISTED = 100


def check_move(queues: Any, prefix: Any, bullmq_prefix: Any, batch_size: Any, names: str, name: str) -> List[str]:
    """Checks the arguments both directions take; returns the queue names. `names` and `name`
    describe the expected queue names in the errors."""
    if not isinstance(queues, (list, tuple)) or len(queues) == 0:
        v.fail("queues", names, queues)
    found = []
    for i, q in enumerate(queues):
        if not isinstance(q, str) or q == "" or ":" in q:
            v.fail(f"queues[{i}]", name, q)
        found.append(q)
    if len(set(found)) != len(found):
        v.fail("queues", "distinct queue names", queues)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or not 1 <= batch_size <= 1000:
        v.fail("batchSize", "an integer from 1 to 1000", batch_size)
    for field, value in (("prefix", prefix), ("bullmqPrefix", bullmq_prefix)):
        if not isinstance(value, str) or value == "":
            v.fail(field, "a non-empty string", value)
    return found


def note_cannot(r: Dict[str, Any], what: str, refused: List[Dict[str, Any]], reasons: Dict[int, str]) -> None:
    """Adds refused ids to a queue's report, the first CANNOT_LISTED of them by name."""
    for x in refused:
        r["cannotCount"] += 1
        if len(r["cannot"]) < CANNOT_LISTED:
            r["cannot"].append({"what": what, "id": x["id"], "code": x["code"], "reason": reasons.get(x["code"], f"status {x['code']}")})


async def move_schedulers(client: Any, zkey: str, dry_run: bool, r: Dict[str, Any],
                          move: Callable[[str], Awaitable[int]], refuse: Callable[[str, int], None]) -> None:
    """Moves the job schedulers listed in the sorted set `zkey`, one call each (`move` returns the
    script's code: 1 moved, below 0 refused, noted by `refuse`)."""
    skip = 0
    while True:
        ids = [text(x) for x in await client.zrange(zkey, skip, skip + 99)]
        if not ids:
            break
        for sid in ids:
            c = await move(sid)
            if c == 1:
                r["schedulers"]["moved"] += 1
            elif c < 0:
                refuse(sid, c)
            if c != 1 or dry_run:
                skip += 1
    r["schedulers"]["left"] = await client.zcard(zkey) - (r["schedulers"]["moved"] if dry_run else 0)


def queue_lines(q: Dict[str, Any], states: Sequence[str], verb: str, frm: str, to: str, dry_run: bool, stays: str,
                middle: Sequence[str], end: Sequence[str]) -> List[str]:
    """A queue's lines: states, schedulers, deduplication, then `middle`, settings, `end` and what cannot move."""
    lines = [f"queue {q['queue']} ({frm} → {to})" + (" [dry run: nothing changed]" if dry_run else "")]
    for s in states:
        c = q["states"][s]
        if c["moved"] > 0 or c["left"] > 0:
            lines.append(f"  {s.ljust(17)} {verb} {c['moved']}" + (f", {c['left']} stay in {stays}" if c["left"] > 0 else ""))
    sl = q["schedulers"]["left"]
    lines.append(f"  schedulers        {verb} {q['schedulers']['moved']}" + (f", {sl} stay in {stays}" if sl > 0 else ""))
    lines.append(f"  deduplication ids {verb} {q['deduplication']['moved']}")
    lines += middle
    settings = [x for x in ("paused" if q["paused"] else "",
                            f"concurrency {q['concurrency']}" if "concurrency" in q else "",
                            f"rate limit {q['rateLimit']['max']} per {q['rateLimit']['duration']} ms" if "rateLimit" in q else "") if x]
    if settings:
        lines.append(f"  settings          {', '.join(settings)}")
    lines += end
    if q["cannotCount"] > 0:
        lines.append(f"  cannot move {q['cannotCount']}:")
        for c in q["cannot"]:
            lines.append(f"    {c['what']} {c['id']}: {c['reason']}")
        if q["cannotCount"] > len(q["cannot"]):
            lines.append(f"    … {q['cannotCount'] - len(q['cannot'])} more")
    return lines


def run_lines(r: Dict[str, Any]) -> List[str]:
    """The run's lines after the queues': refusals and what was forced past."""
    return [*(f"the move would be refused: {f}" for f in r["refusals"]), *(f"forced past: {f}" for f in r["workers"]["forced"])]

"""Job scheduler upkeep a worker owes (src/lifecycle/schedulers.ts advanceScheduler and
repairSchedulers): after claiming a scheduler's job, make the job of its next slot; in the
stall sweep, advance schedulers whose slot is due (a worker died between claim and advance).
The script is a compare-and-set on (version, next), so racing workers of either runtime make
one job per slot."""
from __future__ import annotations

from typing import Any, List

from . import codec
from .connection import Client
from .cron import next_cron_slot
from .keys import QueueKeys
from .runner import Runner

REPAIR_BATCH = 50


async def advance_scheduler(client: Client, run: Runner, keys: QueueKeys, sid: str) -> int:
    p = client.pipeline(transaction=True)
    p.hmget(keys.scheduler(sid), ["ver", "next", "pattern", "tz", "name"])
    p.time()
    (ver, nxt, pattern, tz, _name), (sec, usec) = codec.text(await p.execute())
    if ver is None or nxt is None:
        return -1
    slot: Any = ""
    if pattern:
        now = int(sec) * 1000 + int(usec) // 1000
        after = max(int(float(nxt)), now)
        n = next_cron_slot(pattern, tz or None, after)
        slot = -1 if n is None or n <= after else n
    r = await run.call("advanceScheduler", [sid, ver, nxt, slot])
    return int(r[0])


async def repair_schedulers(client: Client, run: Runner, keys: QueueKeys) -> int:
    sec, usec = await client.time()
    now = int(sec) * 1000 + int(usec) // 1000
    due: List[str] = codec.text(await client.zrangebyscore(keys.scheds, "-inf", now, start=0, num=REPAIR_BATCH))
    advanced = 0
    first_error = None
    for sid in due:
        try:
            if await advance_scheduler(client, run, keys, sid) in (1, 2):
                advanced += 1
        except Exception as err:  # one unreadable scheduler must not hold up the others
            first_error = first_error or err
    if first_error is not None:
        raise first_error
    return advanced

"""Cross-queue flow delivery (src/lifecycle/flows.ts drainOutbox): a settled or removed child
whose parent lives in another queue leaves an entry in its queue's outbox; delivering it runs
resolveChild on the parent's queue, following a failure cascade a few hops."""
from __future__ import annotations

import json
from typing import Any

from . import codec
from . import scripts
from .keys import QueueKeys
from .runner import Runner

OUTBOX_BATCH = 100
_MAX_HOPS = 8
_OUTCOMES = ("c", "i", "f", "r", "x", "d")


def _entry(raw: str) -> Any:
    try:
        e = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(e, dict) or e.get("k") not in _OUTCOMES:
        return None
    if not all(isinstance(e.get(f), str) for f in ("pid", "pk", "pq", "ppx", "c")):
        return None
    return e


async def drain_outbox(client: Any, keys: QueueKeys, budget: int = OUTBOX_BATCH, hops: int = 0) -> int:
    """Delivers up to `budget` entries; returns how many were taken (0: the outbox is empty)."""
    entries = codec.text(await client.zrange(keys.outbox, 0, budget - 1))
    for raw in entries:
        e = _entry(raw)
        if e is not None:
            pkeys = QueueKeys(e["pq"], e["ppx"])
            if pkeys.job(e["pid"]) == e["pk"]:
                r = await scripts.resolve_child(Runner(client, pkeys), e["pid"], e["c"], e["k"], e.get("v") or "")
                if int(r[1]) == 1 and hops < _MAX_HOPS:
                    await drain_outbox(client, pkeys, budget, hops + 1)
        await client.zrem(keys.outbox, raw)
    return len(entries)


async def drain_all(client: Any, keys: QueueKeys) -> None:
    while await drain_outbox(client, keys) > 0:
        pass

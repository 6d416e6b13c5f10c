"""queue.lanes: weight, limit, rate limit, pause and resume of a lane, named as on Node."""
from __future__ import annotations

from typing import Any, Dict, Optional

from . import codec
from . import scripts
from . import validate as v
from .queue_handle import QueueHandle


class Lanes:
    def __init__(self, queue: QueueHandle) -> None:
        self._q = queue

    async def _set(self, lane: str, field: str, value: str) -> None:
        await self._q._checked()
        await scripts.one(self._q.runner, "setLane", [lane, field, value])

    async def setWeight(self, lane: str, weight: int) -> None:
        v.lane_name(lane)
        w = v.integer_in("weight", weight, 1, 1_000_000)
        await self._set(lane, "weight", str(w))

    async def setLimit(self, lane: str, limit: int) -> None:
        v.lane_name(lane)
        n = v.non_negative_int("limit", limit)
        await self._set(lane, "limit", str(n))

    async def removeLimit(self, lane: str) -> None:
        v.lane_name(lane)
        await self._set(lane, "limit", "")

    async def setRateLimit(self, lane: str, rate: Optional[Dict[str, int]]) -> None:
        v.lane_name(lane)
        if rate is None:
            await self._set(lane, "rate", "")
            return
        r = v.plain_object("rate", rate)
        mx = v.positive_int("rate.max", r.get("max"))
        dur = v.positive_int("rate.duration", r.get("duration"))
        await self._set(lane, "rate", f"{mx}:{dur}")

    async def pause(self, lane: str) -> None:
        v.lane_name(lane)
        await self._q._checked()
        await scripts.one(self._q.runner, "pauseLane", [lane, "1"])

    async def resume(self, lane: str) -> None:
        v.lane_name(lane)
        await self._q._checked()
        await scripts.one(self._q.runner, "pauseLane", [lane, "0"])

    async def get(self, lane: str) -> Dict[str, Any]:
        """{name, depth, active, weight, limit, paused, rate, inRing} (zeros for an unknown lane)."""
        v.lane_name(lane)
        k = self._q.keys
        p = self._q.client.pipeline(transaction=False)
        p.zcard(k.lane(lane)); p.hget(k.lactive, lane); p.hget(k.lweight, lane); p.hget(k.llimit, lane)
        p.sismember(k.lpaused, lane); p.hget(k.lrate, lane); p.sismember(k.inring, lane); p.hexists(k.lone, lane)
        r = codec.text(await p.execute())
        lone = int(r[7])
        rate = r[5]
        return {
            "name": lane, "depth": int(r[0]) + lone, "active": int(r[1] or 0), "weight": int(r[2] or 1),
            "limit": None if r[3] is None else int(r[3]), "paused": int(r[4]) == 1,
            "rate": {"max": int(rate.split(":")[0]), "duration": int(rate.split(":")[1])} if rate else None,
            "inRing": int(r[6]) == 1 or lone == 1,
        }

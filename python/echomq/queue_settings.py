"""Queue-wide settings and worker listing, BullMQ Python's names: global concurrency and rate
limit (meta fields the claim reads), rateLimit(expire_time_ms), get_workers. Plain writes, the
same ones the Node client makes (src/queue/queue.ts), so both runtimes see one setting."""
from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional

from . import codec
from .connection import exec_stamped
from . import validate as v

RATE_BLOCK = 2 ** 50


class QueueSettings:
    client: Any
    keys: Any
    name: str
    prefix: str

    async def setGlobalConcurrency(self, concurrency: Optional[int]) -> int:
        if concurrency is None:
            return await self.removeGlobalConcurrency()
        n = v.positive_int("concurrency", concurrency)
        return int(await exec_stamped(self.client, self.keys, lambda p: p.hset(self.keys.meta, "conc", str(n))))

    async def getGlobalConcurrency(self) -> Optional[int]:
        c = codec.text(await self.client.hget(self.keys.meta, "conc"))
        return None if c is None else int(c)

    async def removeGlobalConcurrency(self) -> int:
        return int(await self.client.hdel(self.keys.meta, "conc"))

    async def setGlobalRateLimit(self, max_jobs: int, duration_ms: int) -> int:
        mx = v.integer_in("max_jobs", max_jobs, 1, 1_000_000_000)
        d = v.integer_in("duration_ms", duration_ms, 1, 86_400_000)
        return int(await exec_stamped(self.client, self.keys, lambda p: p.hset(self.keys.meta, mapping={"rlmax": str(mx), "rldur": str(d)})))

    async def getGlobalRateLimit(self) -> Optional[Dict[str, int]]:
        mx, d = codec.text(await self.client.hmget(self.keys.meta, ["rlmax", "rldur"]))
        return None if mx is None or d is None else {"max": int(mx), "duration": int(d)}

    async def removeGlobalRateLimit(self) -> int:
        return int(await self.client.hdel(self.keys.meta, "rlmax", "rldur"))

    async def rateLimit(self, expire_time_ms: int) -> None:
        ms = v.integer_in("expire_time_ms", expire_time_ms, 1, 86_400_000)
        await exec_stamped(self.client, self.keys, lambda p: p.set(self.keys.rate, str(RATE_BLOCK), px=ms).hset(self.keys.meta, "blk", "1"))

    async def getRateLimitTtl(self) -> int:
        return int(await self.client.pttl(self.keys.rate))

    async def removeRateLimitKey(self) -> int:
        return int(await self.client.delete(self.keys.rate))

    async def get_workers(self) -> List[Dict[str, str]]:
        """Connections named as workers of this queue in CLIENT LIST (BullMQ's naming scheme)."""
        base = f"{self.prefix}:{base64.b64encode(self.name.encode('utf-8')).decode('ascii')}"
        out = []
        for c in await self.client.client_list():
            c = {codec.text(k): codec.text(x) for k, x in c.items()}
            n = c.get("name", "")
            if n == base or n.startswith(base + ":w:"):
                out.append({**c, "name": self.name, "rawname": n})
        return out

    async def get_workers_count(self) -> int:
        return len(await self.get_workers())

"""What a worker owes flows across queues (Node: worker-settle.ts afterFinish, worker-upkeep.ts):
a settled child whose parent lives in another queue left an entry in this queue's outbox;
deliver it right after the settle, so the parent moves on before the next claim, and in the
stall sweep (a delivery that failed is retried there)."""
from __future__ import annotations

from typing import Any, Iterable

from .outbox import drain_all


class WorkerFlows:
    async def _deliver_outbox(self, jobs: Iterable[Any]) -> None:
        if not any(getattr(j, "parentKey", None) for j in jobs):
            return
        try:
            await drain_all(self.client, self.keys)
        except Exception as err:  # left in the outbox for the sweep
            if not self.closing:
                self.emit("error", err)

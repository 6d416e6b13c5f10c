"""What a Job and `queue.lanes` use of the Queue they belong to, as a Protocol (Node's
src/job/job-context.ts plays this part): job.py, job_moves.py and lanes.py sit below queue.py in
the package's layers (docs/python.md), so they name this type, never Queue itself."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Protocol

from .keys import QueueKeys
from .runner import Runner


class QueueHandle(Protocol):
    name: str
    opts: Dict[str, Any]
    client: Any
    keys: QueueKeys
    runner: Runner
    maxPayloadBytes: int
    keepLogs: int

    @property
    def qualifiedName(self) -> str: ...

    async def waitUntilReady(self) -> Any: ...

    async def isPaused(self) -> bool: ...

    async def getJobState(self, job_id: str) -> str: ...

    async def remove(self, job_id: str, opts: Optional[Mapping[str, Any]] = None) -> int: ...

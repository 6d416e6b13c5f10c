"""AbortController / AbortSignal / AbortError, BullMQ Python's cooperative cancellation."""
from __future__ import annotations

import asyncio
from typing import Optional


class AbortError(Exception):
    """Raised by AbortSignal.throw_if_aborted() (and by processors surfacing a cancellation)."""

    def __init__(self, reason: Optional[str] = None) -> None:
        super().__init__(reason or "The operation was aborted")
        self.reason = reason


class AbortSignal:
    """Read-only view of an AbortController: aborted, reason, wait(), throw_if_aborted()."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._reason: Optional[str] = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    @property
    def reason(self) -> Optional[str]:
        return self._reason

    async def wait(self) -> None:
        await self._event.wait()

    def throw_if_aborted(self) -> None:
        if self._event.is_set():
            raise AbortError(self._reason)


class AbortController:
    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Optional[str] = None) -> None:
        # Idempotent: a force close and a cancelJob may both target one job.
        if self.signal._event.is_set():
            return
        self.signal._reason = reason
        self.signal._event.set()

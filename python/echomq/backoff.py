"""Retry backoff (src/core/backoff.ts): fixed, exponential, jitter, custom strategies."""
from __future__ import annotations

import inspect
import random
from typing import Any, Awaitable, Callable, Dict, Optional, Union

from . import validate as v
from .errors import UnrecoverableError

BackoffStrategy = Callable[..., Union[int, float, Awaitable[Union[int, float]]]]


def normalize_backoff(value: Any, field: str = "backoff") -> Optional[Dict[str, Any]]:
    """{type, delay?, jitter?} in this key order (the stored JSON's order, as Node's)."""
    if value is None:
        return None
    if v.is_int(value) or isinstance(value, float):
        return {"type": "fixed", "delay": v.non_negative_int(field, value)}
    o = v.plain_object(field, value)
    if not isinstance(o.get("type"), str) or o["type"] == "":
        v.fail(f"{field}.type", "'fixed', 'exponential' or a strategy name", o.get("type"))
    out: Dict[str, Any] = {"type": o["type"]}
    if o.get("delay") is not None:
        out["delay"] = v.non_negative_int(f"{field}.delay", o["delay"])
    if o.get("jitter") is not None:
        j = o["jitter"]
        if isinstance(j, bool) or not isinstance(j, (int, float)) or not (0 <= j <= 1):
            v.fail(f"{field}.jitter", "a number 0…1", j, "Jitter should be between 0 and 1")
        out["jitter"] = j
    return out


def _jitter(backoff: Dict[str, Any], d: Any) -> Optional[int]:
    if isinstance(d, bool) or not isinstance(d, (int, float)) or d != d or d in (float("inf"), float("-inf")):
        return None
    if backoff.get("jitter"):
        d = d * (1 - backoff["jitter"] * random.random())
    # JavaScript's Math.round: halves go up.
    return max(0, int(d + 0.5) if d >= 0 else -int(-d + 0.5))


async def backoff_delay(backoff: Optional[Dict[str, Any]], attempts_made: int, err: BaseException, job: Any,
                        strategy: Optional[BackoffStrategy] = None) -> Optional[int]:
    if not backoff:
        return 0
    t = backoff["type"]
    if t == "fixed":
        return _jitter(backoff, backoff.get("delay", 0))
    if t == "exponential":
        return _jitter(backoff, backoff.get("delay", 1000) * 2 ** (attempts_made - 1))
    if strategy is None:
        return None
    got = strategy(attempts_made, t, err, job)
    if inspect.isawaitable(got):
        got = await got
    return _jitter(backoff, got)


def is_unrecoverable(err: BaseException) -> bool:
    return isinstance(err, UnrecoverableError) or type(err).__name__ == "UnrecoverableError"

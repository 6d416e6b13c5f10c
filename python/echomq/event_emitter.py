"""BullMQ Python's EventEmitter: on/once/off/emit, listeners called synchronously in order."""
from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, List

# How often one distinct error is printed at most (s) when nobody listens for it.
PRINT_EVERY_S = 30.0
_printed: Dict[str, List[float]] = {}
logger = logging.getLogger("echomq")


def print_error(emitter: Any, err: Any) -> None:
    """An 'error' nobody listens for (BullMQ Python drops it) is logged as one line on the
    "echomq" logger (stderr by default), `[echomq] <Class> <name>: <message>`, each distinct line
    at most once per PRINT_EVERY_S: a Redis that is away repeats its error on every retry."""
    name = getattr(emitter, "name", None)
    who = type(emitter).__name__ + (f" {name}" if isinstance(name, str) else "")
    text = (str(err) or type(err).__name__).split("\n", 1)[0]
    line = f"[echomq] {who}: {text}"
    now = time.monotonic()
    seen = _printed.get(line)
    if seen is not None and now - seen[0] < PRINT_EVERY_S:
        seen[1] += 1
        return
    if len(_printed) > 1000:
        _printed.clear()  # distinct lines are few: never an unbounded map
    _printed[line] = [now, 0]
    more = f" (and {int(seen[1])} more times in the last {int(now - seen[0])} s)" if seen and seen[1] else ""
    logger.error(line + more)


class EventEmitter:
    def __init__(self) -> None:
        self._callbacks: Dict[str, List[Callable[..., Any]]] = {}

    def on(self, event_name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        self._callbacks[event_name] = self._callbacks.get(event_name, []) + [function]
        return function

    def once(self, event_name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.off(event_name, wrapper)
            return function(*args, **kwargs)
        return self.on(event_name, wrapper)

    def off(self, event_name: str, function: Callable[..., Any]) -> None:
        fns = self._callbacks.get(event_name, [])
        if function in fns:
            fns.remove(function)

    def emit(self, event_name: str, *args: Any, **kwargs: Any) -> None:
        fns = self._callbacks.get(event_name)
        if not fns:
            if event_name == "error" and args:
                print_error(self, args[0])
            return
        for fn in list(fns):
            fn(*args, **kwargs)

    def listener_count(self, event_name: str) -> int:
        return len(self._callbacks.get(event_name, []))

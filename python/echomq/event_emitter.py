"""BullMQ Python's EventEmitter: on/once/off/emit, listeners called synchronously in order."""
from __future__ import annotations

from typing import Any, Callable, Dict, List


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
        for fn in list(self._callbacks.get(event_name, [])):
            fn(*args, **kwargs)

    def listener_count(self, event_name: str) -> int:
        return len(self._callbacks.get(event_name, []))

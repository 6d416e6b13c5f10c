"""QueueEventsProducer (BullMQ Python's): publishes custom events on a queue's events stream,
where QueueEvents (of either runtime) emits them by their eventName. No blocking connection."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from . import codec
from . import validate as v
from .queue import QueueBase

_RESERVED = ("error", "closed", "newListener", "removeListener")
_OPTS = ("connection", "prefix", "skipVersionCheck", "telemetry")


def _field(x: Any) -> str:
    # Strings go as they are (BullMQ stores stream fields verbatim); anything else as JSON.
    return x if isinstance(x, str) else codec.dumps(x, "args")


class QueueEventsProducer(QueueBase):
    def __init__(self, name: str, opts: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(name, opts, _OPTS)

    async def publishEvent(self, args: Dict[str, Any], maxEvents: int = 1000) -> None:
        """Adds {event: args['eventName'], ...the rest of args} to the stream, trimmed to about maxEvents."""
        a = v.plain_object("args", args)
        if "eventName" not in a:
            raise ValueError("publishEvent requires an 'eventName' key")
        name = v.non_empty_string("args.eventName", a["eventName"])
        if name in _RESERVED:
            v.fail("args.eventName", f"a name other than {', '.join(_RESERVED)}", name)
        n = v.non_negative_int("maxEvents", maxEvents)
        fields: List[str] = ["event", name]
        for k, x in a.items():
            if k == "eventName":
                continue
            if k == "event":
                v.fail("args", "fields other than 'event' (it carries eventName)", k)
            fields += [str(k), _field(x)]
        # The publishEvent script (applied once: a resent call adds no second entry).
        await self.runner.call_once("publishEvent", [n, *fields], "publishEvent", at=1)

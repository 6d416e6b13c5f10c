"""QueueEvents: reads the queue's capped events stream (XREAD BLOCK, replayable from an id) and
emits BullMQ's event names and payloads, expanded from echomq's entries as Node does
(src/events/event-payloads.ts): one entry may stand for several events or several jobs."""
from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import codec
from . import validate as v
from .connection import blocking_client, close_client, open_client, wait_until_ready
from .event_emitter import EventEmitter
from .keys import DEFAULT_PREFIX, QueueKeys, client_name

_KNOWN = ("connection", "prefix", "blockingTimeout", "lastEventId", "autorun", "skipVersionCheck")
_RESERVED = {"error", "closed", "newListener", "removeListener"}
_READ_COUNT = 1000


def expand_entry(event: str, args: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """The events one job's part of an entry stands for, in order (as Node's expandEntry)."""
    if event == "added":
        then = args.pop("then", None)
        if then is None:
            return [(event, args)]
        args.setdefault("delay", "0")
        out = [(event, args)]
        if then == "waiting":
            out.append(("waiting", {"jobId": args.get("jobId")}))
        return out
    if event == "delayed":
        if isinstance(args.get("delay"), str):
            args["delay"] = int(float(args["delay"]))
        return [(event, args)]
    if event == "completed":
        if isinstance(args.get("returnvalue"), str):
            args["returnvalue"] = codec.loads(args["returnvalue"])
        return [(event, args)]
    if event == "progress":
        if isinstance(args.get("data"), str):
            args["data"] = codec.loads(args["data"])
        return [(event, args)]
    if event == "failed":
        stalled = args.pop("stalled", None)
        exhausted = args.pop("exhausted", None)
        out = []
        if stalled is not None:
            out.append(("stalled", {"jobId": args.get("jobId")}))
        out.append((event, args))
        if exhausted is not None:
            out.append(("retries-exhausted", {"jobId": args.get("jobId"), "attemptsMade": exhausted}))
        return out
    if event == "stalled" and "jobId" in args:
        return [("waiting", {"jobId": args["jobId"], "prev": "active"}), (event, args)]
    if event == "duplicated" and "dedupId" in args:
        d = {"jobId": args.get("jobId"), "deduplicationId": args["dedupId"]}
        if "attempted" in args:
            d["deduplicatedJobId"] = args["attempted"]
        return [("deduplicated", d)]
    return [(event, args)]


class QueueEvents(EventEmitter):
    def __init__(self, name: str, opts: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        self.name = v.queue_name(name)
        o = v.plain_object("opts", opts or {})
        for k in o:
            if k not in _KNOWN:
                v.fail(f"opts.{k}", f"one of the known options ({', '.join(_KNOWN)})", k)
        self.opts: Dict[str, Any] = {"blockingTimeout": 10000, "lastEventId": "$", "autorun": True, **o}
        self.blockingTimeout = v.positive_int("blockingTimeout", self.opts["blockingTimeout"])
        self.lastEventId = v.non_empty_string("lastEventId", self.opts["lastEventId"], 64)
        self.prefix = DEFAULT_PREFIX if o.get("prefix") is None else v.prefix(o["prefix"])
        self.keys = QueueKeys(self.name, self.prefix)
        given, self._owned = open_client(o.get("connection"))
        # A blocking read needs a connection without redis-py's socket timeout: a 5 s
        # block on a 5 s socket timeout would fail the read.
        self.client = blocking_client(o.get("connection"), given)
        if self.client is not given:
            # Raw XREAD entries: redis-py's parser makes a dict of each entry, which keeps one
            # jobId of an entry that holds several jobs (lib/common.lua emitJob).
            self.client.response_callbacks.pop("XREAD", None)
        self._given = given
        self.running = False
        self.closing = False
        self.closed = False
        self._task: Optional[asyncio.Task] = None
        if self.opts["autorun"]:
            self._task = asyncio.ensure_future(self.run())

    async def waitUntilReady(self) -> Any:
        """Returns the client once Redis answers (connection.wait_until_ready)."""
        async def ping() -> Any:
            await self.client.ping()
            return self.client
        return await wait_until_ready(self.client, ping)

    async def run(self) -> None:
        if self.running:
            raise Exception("QueueEvents is already running.")
        self.running = True
        if self._task is None:
            self._task = asyncio.current_task()  # type: ignore[assignment]
        try:
            try:
                await self.client.client_setname(client_name(self.keys, ":qe"))
            except Exception:
                pass
            last = self.lastEventId
            failures = 0
            while not self.closing:
                try:
                    reply = await self.client.execute_command(
                        "XREAD", "COUNT", _READ_COUNT, "BLOCK", self.blockingTimeout, "STREAMS", self.keys.events, last)
                    failures = 0
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    if self.closing:
                        return
                    self.emit("error", err)
                    failures += 1
                    await asyncio.sleep(min(5.0, 0.05 * 2 ** min(failures, 7)))
                    continue
                if isinstance(reply, dict):  # a shared cluster client parsed it: its entries only
                    reply = list(reply.items())
                for _, entries in reply or []:
                    for entry_id, fields in entries:
                        last = codec.text(entry_id)
                        self.lastEventId = last
                        self._dispatch(last, fields)
        finally:
            self.running = False

    def _dispatch(self, entry_id: str, fields: Any) -> None:
        if isinstance(fields, dict):
            flat: List[str] = []
            for k, x in fields.items():
                flat += [codec.text(k), codec.text(x)]
        else:
            flat = codec.text(list(fields))
        event = ""
        shared: Dict[str, Any] = {}
        args = shared
        jobs: List[Dict[str, Any]] = []
        for i in range(0, len(flat) - 1, 2):
            f, x = flat[i], flat[i + 1]
            if f == "event":
                event = x
                continue
            if f == "jobId":
                args = dict(shared)
                jobs.append(args)
            args[f] = x
        if not event or event in _RESERVED:
            return
        for a in jobs or [shared]:
            try:
                if event == "drained":
                    self.emit("drained", entry_id)
                    continue
                for name, payload in expand_entry(event, a):
                    self.emit(name, payload, entry_id)
                    if isinstance(payload.get("jobId"), str):
                        self.emit(f"{name}:{payload['jobId']}", payload, entry_id)
            except Exception as err:
                self.emit("error", err)

    async def close(self) -> None:
        if self.closing or self.closed:
            return
        self.closing = True
        t = self._task
        if t is not None and not t.done() and t is not asyncio.current_task():
            t.cancel()
            try:
                await t
            except BaseException:
                pass
        await close_client(self.client)
        if self._owned:
            await close_client(self._given)
        self.closed = True
        self.emit("closed")

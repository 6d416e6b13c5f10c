"""FlowProducer (BullMQ Python's add / addBulk, Node's src/lifecycle/flow-producer.ts): a tree of
jobs across queues, parents waiting for their children. Each queue's part of a tree is one
addFlow.lua call, parents before their children; a tree in one queue is added atomically. The
failure policies (failParentOnFailure, ignoreDependencyOnFailure, continueParentOnFailure,
removeDependencyOnFailure) are stored per child and applied by the scripts as on Node."""
from __future__ import annotations

import itertools
import uuid
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from . import codec
from . import scripts
from . import validate as v
from .errors import EchoMQError, InvalidStateError, guard_refusal
from .event_emitter import EventEmitter
from .job import Job
from .keys import DEFAULT_PREFIX, QueueKeys
from .options import DEFAULT_KEEP_COUNT, DEFAULT_MAX_PAYLOAD, keep_args, normalize_job_options, stored_options
from .outbox import drain_outbox
from .parent_ref import missing_parent, resolve_parent
from .queue import Queue
from .request_id import derive_request_id, new_request_id

MAX_FLOW_JOBS = 10_000
MAX_FLOW_DEPTH = 64
_NODE_KEYS = ("name", "queueName", "data", "prefix", "opts", "children")
_POLICY = (("failParentOnFailure", "f"), ("ignoreDependencyOnFailure", "i"), ("continueParentOnFailure", "c"),
           ("removeDependencyOnFailure", "d"))
_OPTS = ("connection", "prefix", "maxPayloadBytes", "skipVersionCheck", "skipWaitingForReady", "telemetry",
         "blockingConnection")


class _Node:
    __slots__ = ("id", "name", "data", "opts", "n", "queue", "keys", "key", "parent", "children", "policy",
                 "root_dedup", "dedup", "_user", "external")

    def __init__(self) -> None:
        self.children: List["_Node"] = []
        self.parent: Optional["_Node"] = None
        self.root_dedup: Optional[Tuple[str, int]] = None
        self.dedup = False
        self.external: Optional[Dict[str, Any]] = None  # a root's existing parent (opts.parent)

    def args(self) -> List[Any]:
        n, p, x = self.n, self.parent, self.external
        if p is not None:
            pid, pkey, pq, ppx = p.id, p.key, p.keys.queue, p.keys.prefix
        elif x is not None:
            pid, pkey, pq, ppx = x["id"], x["key"], x["queue"], x["prefix"]
        else:
            pid = pkey = pq = ppx = ""
        return [self.id, self.name, self.data, self.opts, n["priority"], n["lane"], n["delay"], "1" if n["lifo"] else "0",
                *keep_args(n["keepCompleted"]), *keep_args(n["keepFailed"]), pid, pkey, pq, ppx,
                self.policy, "" if n.get("timestamp") is None else n["timestamp"], "1" if x and x["same"] else "0",
                len(self.children), *[c.key for c in self.children]]


class FlowProducer(EventEmitter):
    def __init__(self, redisOpts: Any = None, opts: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        # BullMQ Python takes the connection first, or the options dict alone.
        if opts is None and isinstance(redisOpts, Mapping) and any(k in redisOpts for k in _OPTS):
            opts, redisOpts = redisOpts, None
        o = dict(v.plain_object("opts", opts or {}))
        for k in o:
            if k not in _OPTS:
                v.fail(f"opts.{k}", f"one of the known options ({', '.join(_OPTS)})", k)
        if redisOpts is not None:
            o["connection"] = redisOpts
        self.opts = o
        self.prefix = DEFAULT_PREFIX if o.get("prefix") is None else v.prefix(o["prefix"])
        self.maxPayloadBytes = DEFAULT_MAX_PAYLOAD if o.get("maxPayloadBytes") is None else v.positive_int(
            "maxPayloadBytes", o["maxPayloadBytes"])
        from .connection import open_client
        self.client, self._owned = open_client(o.get("connection"))
        self.closing = False
        self._queues: Dict[str, Queue] = {}

    async def waitUntilReady(self) -> Any:
        """Returns the client once Redis answers (connection.wait_until_ready), as the Node
        FlowProducer's."""
        from .connection import wait_until_ready

        async def ping() -> Any:
            await self.client.ping()
            return self.client
        return await wait_until_ready(self.client, ping)

    def _queue(self, name: str, prefix: str) -> Queue:
        k = f"{prefix}\0{name}"
        q = self._queues.get(k)
        if q is None:
            q = self._queues[k] = Queue(name, {"connection": self.client, "prefix": prefix,
                                               "maxPayloadBytes": self.maxPayloadBytes})
        return q

    # -- preparing ----------------------------------------------------------------------

    def _defaults(self, opts: Any) -> Dict[str, Dict[str, Any]]:
        o = v.plain_object("opts", opts or {})
        out: Dict[str, Dict[str, Any]] = {}
        qo = o.get("queuesOptions")
        if qo is None:
            return out
        for name, q in v.plain_object("opts.queuesOptions", qo).items():
            d = v.plain_object(f"opts.queuesOptions.{name}", q).get("defaultJobOptions")
            if d is not None:
                normalize_job_options(d, f"opts.queuesOptions.{name}.defaultJobOptions")
                out[name] = dict(d)
        return out

    def _prepare(self, node: Any, field: str, parent: Optional[_Node], depth: int, seen: Set[str],
                 defaults: Dict[str, Dict[str, Any]]) -> _Node:
        if depth > MAX_FLOW_DEPTH:
            v.fail(field, f"a flow at most {MAX_FLOW_DEPTH} levels deep", node)
        if len(seen) >= MAX_FLOW_JOBS:
            v.fail(field, f"part of a flow of at most {MAX_FLOW_JOBS} jobs", node)
        o = v.plain_object(field, node)
        for k in o:
            if k not in _NODE_KEYS:
                v.fail(f"{field}.{k}", f"one of the known fields ({', '.join(_NODE_KEYS)})", k)
        p = _Node()
        p.name = v.string(f"{field}.name", o.get("name"))
        qname = v.queue_name(o.get("queueName"), f"{field}.queueName")
        prefix = self.prefix if o.get("prefix") is None else v.prefix(o["prefix"])
        given = {k: x for k, x in v.plain_object(f"{field}.opts", o.get("opts") or {}).items() if x is not None}
        user = {**defaults.get(qname, {}), **given}
        parent_ref = user.pop("parent", None)
        if parent_ref is not None and parent is not None:
            v.fail(f"{field}.opts.parent", "absent below the root (the tree sets it)", parent_ref)
        children = o.get("children")
        has_children = isinstance(children, (list, tuple)) and len(children) > 0
        if parent is not None and user.get("deduplication") is not None:
            raise EchoMQError("Deduplication and parent options cannot be used together")
        p.n = normalize_job_options(user, f"{field}.opts")
        p.id = p.n.get("jobId") or str(uuid.uuid4())
        p.queue = self._queue(qname, prefix)
        p.keys = p.queue.keys
        p.key = p.keys.job(p.id)
        if p.key in seen:
            v.fail(f"{field}.opts.jobId", "an id used once in the flow (per queue)", p.id)
        seen.add(p.key)
        p.data = codec.dumps({} if o.get("data") is None else o["data"], f"{field}.data", self.maxPayloadBytes)
        p.opts = stored_options(user, p.n)
        p.policy = next((letter for k, letter in _POLICY if user.get(k)), "")
        p.parent = parent
        if parent_ref is not None:
            p.external = self._external(parent_ref, p.keys, f"{field}.opts.parent")
        d = p.n.get("deduplication")
        if d and parent is None:
            if has_children:
                # addFlow.lua has no deduplication (docs/protocol.md, addFlow): refused before any
                # write, with BullMQ's text, as the Node client does.
                v.fail(f"{field}.opts.deduplication", "absent on a job with children", user["deduplication"],
                       "Deduplication options cannot be used on flow nodes with children")
            else:
                p.dedup = True
        p._user = user  # type: ignore[attr-defined]
        if children is not None:
            if not isinstance(children, (list, tuple)):
                v.fail(f"{field}.children", "a list of flow jobs", children, as_type=True)
            for i, c in enumerate(children):
                p.children.append(self._prepare(c, f"{field}.children[{i}]", p, depth + 1, seen, defaults))
        return p

    def _external(self, ref: Any, own: QueueKeys, field: str) -> Dict[str, Any]:
        return resolve_parent(ref, own, field)

    async def _register_external(self, roots: List[_Node], strict: bool, rid: str) -> List[_Node]:
        """Counts each root with an existing parent in another queue as that parent's child
        before the root is written; a missing parent raises (add) or drops that root (addBulk).
        Root i registers under request id part r<i> of the logical add's id."""
        kept = []
        for i, r in enumerate(roots):
            x = r.external
            if x is None or x["same"]:
                if x is not None and not await self.client.exists(x["key"]):
                    if strict:
                        raise missing_parent(x)
                    continue
                kept.append(r)
                continue
            from .runner import Runner
            res = await scripts.one_once(Runner(self.client, x["keys"]), "addDependency", [x["id"], r.key],
                                         derive_request_id(rid, f"r{i}"))
            if res < 0:
                if strict:
                    raise missing_parent(x)
                continue
            kept.append(r)
        return kept

    # -- writing ------------------------------------------------------------------------

    async def _write(self, order: List[_Node], rid: str, parts: "itertools.count[int]",
                     root_dedup: Optional[Tuple[str, int]] = None) -> Optional[str]:
        """One addFlow call per queue part, parents first; part n of the logical add is sent
        under request id <rid>/<n> (call_once sends it again while its outcome is unknown)."""
        written: Set[int] = set()
        remaining = order
        if len({n.keys.base for n in order}) > 1:
            p = self.client.pipeline(transaction=False)
            for n in order:
                p.exists(n.key)
            for n, e in zip(order, await p.execute()):
                if int(e) == 1 and any(c.keys.base != n.keys.base for c in n.children):
                    raise InvalidStateError(n.id, "FlowProducer.add")
        while remaining:
            base = remaining[0].keys.base
            batch: List[_Node] = []
            ids: Set[int] = set()
            for n in remaining:
                if n.keys.base == base and (n.parent is None or id(n.parent) in written or id(n.parent) in ids):
                    batch.append(n)
                    ids.add(id(n))
            args: List[Any] = [len(batch)]
            for n in batch:
                args.extend(n.args())
            if root_dedup and not written:
                args.extend([root_dedup[0], root_dedup[1]])
            r = await batch[0].queue.runner.call_once("addFlow", args, "addFlow", derive_request_id(rid, next(parts)))
            refused = guard_refusal(r, args, "addFlow", lambda pos: f"argument {pos}")
            if refused is not None:
                raise refused
            status = int(r[0])
            if status == 2:
                return str(r[1])
            if status < 0:
                node = next((n for n in batch if n.id == str(r[1])), batch[0])
                if status == -7 and node.parent is not None:
                    pk = f"{node.parent.keys.prefix}:{node.parent.keys.queue}:{node.parent.id}"
                    raise EchoMQError(f"The parent job {pk} cannot be replaced. addJob: job {codec.dumps(node.id)} "
                                      "already exists as the child of another parent that still exists")
                raise EchoMQError(f"Job {node.id} already exists. FlowProducer.add: an existing job of a flow may "
                                  "have children only in its own queue")
            if len(r) > 1 and any(n.parent is not None and n.parent.keys.base != n.keys.base for n in batch):
                await drain_outbox(self.client, batch[0].keys)
            written |= ids
            remaining = [n for n in remaining if id(n) not in ids]
        return None

    def _tree(self, r: _Node) -> List[_Node]:
        out = [r]
        i = 0
        while i < len(out):
            out.extend(out[i].children)
            i += 1
        return out

    def _to_node(self, p: _Node) -> Dict[str, Any]:
        n = p.n
        h: Dict[str, str] = {"name": p.name, "data": p.data, "opts": p.opts, "prio": str(n["priority"]), "lane": n["lane"],
                             "delay": str(n["delay"]), "att": "0", "made": "0",
                             "st": "h" if p.children else "d" if n["delay"] > 0 else "w"}
        if n.get("timestamp") is not None:
            h["ts"] = str(n["timestamp"])
        if p.parent is not None:
            h.update({"pid": p.parent.id, "pk": p.parent.key, "pq": p.parent.keys.queue, "ppx": p.parent.keys.prefix})
        elif p.external is not None:
            x = p.external
            h.update({"pid": x["id"], "pk": x["key"], "pq": x["queue"], "ppx": x["prefix"]})
        for (c, a), (kc, ka) in ((n["keepCompleted"], ("kc", "ka")), (n["keepFailed"], ("kfc", "kfa"))):
            if c != DEFAULT_KEEP_COUNT:
                h[kc] = str(c)
            if a > 0:
                h[ka] = str(a)
        job = Job.from_hash(p.queue, p.id, h)
        if n.get("timestamp") is None:
            import time
            job.timestamp = int(time.time() * 1000)
        out: Dict[str, Any] = {"job": job}
        if p.children:
            out["children"] = [self._to_node(c) for c in p.children]
        return out

    async def _add_deduplicated(self, r: _Node) -> Dict[str, Any]:
        a = r.queue._prepare(r.name, codec.loads(r.data), r._user)  # type: ignore[attr-defined]
        [reply] = await scripts.add(r.queue.runner, [a])
        if not reply.created:
            job = await Job.fromId(r.queue, reply.id)
            if job is not None:
                return {"job": job}
        r.id = reply.id
        return self._to_node(r)

    async def _add_trees(self, flows: List[Any], field: Optional[str], opts: Any) -> List[Dict[str, Any]]:
        defaults = self._defaults(opts)
        seen: Set[str] = set()
        roots = [self._prepare(f, field or f"flows[{i}]", None, 1, seen, defaults) for i, f in enumerate(flows)]
        # BullMQ Python: add raises for a missing parent; addBulk leaves that tree out and goes on.
        # One request id for the logical add; each of its script calls gets a part of it.
        rid, parts = new_request_id(self.client), itertools.count()
        writable = await self._register_external(roots, field is not None, rid)
        for q in {id(r.queue): r.queue for root in roots for r in self._tree(root)}.values():
            await q._checked()
        order = [n for r in writable if not r.dedup and not r.root_dedup for n in self._tree(r)]
        if order:
            await self._write(order, rid, parts)
        out = []
        for r in roots:
            if r not in writable:
                out.append(self._to_node(r))  # BullMQ Python's addBulk returns the tree it could not add too
            elif r.dedup:
                out.append(await self._add_deduplicated(r))
            elif r.root_dedup:
                holder = await self._write(self._tree(r), rid, parts, r.root_dedup)
                if holder is None:
                    out.append(self._to_node(r))
                else:
                    job = await Job.fromId(r.queue, holder)
                    out.append({"job": job} if job is not None else self._to_node(r))
            else:
                out.append(self._to_node(r))
        return out

    async def add(self, flow: Dict[str, Any], opts: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
        """Adds one tree; returns {"job": Job, "children": [...]} (None while closing, as BullMQ Python)."""
        if self.closing:
            return None
        [node] = await self._add_trees([flow], "flow", opts)
        return node

    async def addBulk(self, flows: List[Dict[str, Any]]) -> Optional[List[Dict[str, Any]]]:
        if self.closing:
            return None
        if not isinstance(flows, (list, tuple)):
            v.fail("flows", "a list of flow jobs", flows, as_type=True)
        return await self._add_trees(list(flows), None, None)

    async def close(self) -> None:
        if self.closing:
            return
        self.closing = True
        if self._owned:
            from .connection import close_client
            await close_client(self.client)

    async def disconnect(self) -> None:
        await self.close()

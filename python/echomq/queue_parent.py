"""Queue.add with BullMQ's `parent` option (Node: queue.ts add, lifecycle/cross-parents.ts): the
job becomes a dependency of an existing parent. A parent in this queue is checked and counted by
add.lua in the same call; a parent in another queue is counted first through addDependency on
that queue (the child's id is taken beforehand), and uncounted again if the add returns an
existing job instead."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from .connection import exec_stamped
from . import codec
from . import scripts
from .parent_ref import missing_parent, resolve_parent
from .runner import Runner

_POLICY = (("failParentOnFailure", "f"), ("ignoreDependencyOnFailure", "i"), ("continueParentOnFailure", "c"),
           ("removeDependencyOnFailure", "d"))
_PARENT_SLOT = 12  # the parent field of an add record (add.lua header)


@dataclass
class _ChildAdd(scripts.AddJob):
    parent_json: str = ""

    def record(self, lane_per_job: bool) -> List[Any]:
        r = super().record(lane_per_job)
        r[_PARENT_SLOT] = self.parent_json
        return r


class QueueParent:
    async def _add_child(self, name: str, data: Any, opts: Mapping[str, Any]) -> Any:
        o = dict(opts)
        x = resolve_parent(o.pop("parent"), self.keys, "opts.parent")
        a = self._prepare(name, data, o)
        policy = next((letter for k, letter in _POLICY if o.get(k)), "")
        await self._checked()
        registered = False
        prunner = Runner(self.client, x["keys"])
        if not await self.client.exists(x["key"]):
            raise missing_parent(x)
        if not x["same"]:
            if not a.id:
                a.id = str(await exec_stamped(self.client, self.keys, lambda p: p.hincrby(self.keys.meta, "id", 1)))
            res = await scripts.one_once(prunner, "addDependency", [x["id"], self.keys.job(a.id)])
            if res < 0:
                raise missing_parent(x)
            # Only a registration this call made is taken back (0: the parent already counted it;
            # a resend replies the first run's 1, applied once).
            registered = res == 1
        pj = json.dumps({"pid": x["id"], "pk": x["key"], "pq": x["queue"], "ppx": x["prefix"], "pol": policy,
                         "same": 1 if x["same"] else 0}, separators=(",", ":"))
        child = _ChildAdd(**{f: getattr(a, f) for f in a.__dataclass_fields__}, parent_json=pj)
        try:
            [r] = await scripts.add(self.runner, [child])
        except Exception:
            if registered:
                await scripts.resolve_child(prunner, x["id"], self.keys.job(a.id), "d")
            raise
        if registered and not r.created:  # an existing job came back: not this parent's child after all
            await scripts.resolve_child(prunner, x["id"], self.keys.job(r.id), "d")
        merged: Dict[str, Any] = {**getattr(self, "jobsOpts", {}), **o}
        job = self._job_of(child, r, data, merged)
        job.parentKey = x["logical"]
        job.parent = {"id": x["id"], "queueKey": f"{x['prefix']}:{x['queue']}"}
        self.emit("waiting", job)
        return job

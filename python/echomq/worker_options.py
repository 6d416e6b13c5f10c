"""Worker options: BullMQ Python's defaults (drainDelay in seconds, times in ms), validated."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from . import validate as v
from .options import _keep

KNOWN = ("name", "autorun", "concurrency", "maxStalledCount", "stalledInterval", "lockDuration", "lockRenewTime",
         "prefix", "connection", "drainDelay", "limiter", "removeOnComplete", "removeOnFail", "runRetryDelay",
         "skipVersionCheck", "skipWaitingForReady", "settings", "maxPayloadBytes", "group", "backend")


def worker_options(opts: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    o = v.plain_object("opts", opts or {})
    for k in o:
        if k not in KNOWN:
            v.fail(f"opts.{k}", f"one of the known options ({', '.join(KNOWN)})", k)
    out: Dict[str, Any] = {"drainDelay": 5, "concurrency": 1, "lockDuration": 30000, "maxStalledCount": 1,
                           "stalledInterval": 30000, "runRetryDelay": 15000, "autorun": True}
    out.update({k: x for k, x in o.items() if x is not None})
    out["concurrency"] = v.integer_in("concurrency", out["concurrency"], 1, 100_000)
    out["lockDuration"] = v.positive_int("lockDuration", out["lockDuration"])
    out["stalledInterval"] = v.positive_int("stalledInterval", out["stalledInterval"])
    out["maxStalledCount"] = v.non_negative_int("maxStalledCount", out["maxStalledCount"])
    if "lockRenewTime" not in out:
        out["lockRenewTime"] = out["lockDuration"] // 2
    out["lockRenewTime"] = v.positive_int("lockRenewTime", out["lockRenewTime"])
    d = out["drainDelay"]
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not (0 < d <= 86_400):
        v.fail("drainDelay", "a number of seconds > 0", d)
    v.boolean("autorun", out["autorun"])
    if o.get("name") is not None:
        v.non_empty_string("name", o["name"])
    if o.get("limiter") is not None:
        lim = v.plain_object("limiter", o["limiter"])
        out["limiter"] = {"max": v.integer_in("limiter.max", lim.get("max"), 1, 1_000_000_000),
                          "duration": v.integer_in("limiter.duration", lim.get("duration"), 1, 86_400_000)}
    for k in ("removeOnComplete", "removeOnFail"):
        if k in o and o[k] is not None:
            out["_" + k] = _keep(k, o[k])
    if o.get("settings") is not None:
        s = v.plain_object("settings", o["settings"])
        if s.get("backoffStrategy") is not None and not callable(s["backoffStrategy"]):
            v.fail("settings.backoffStrategy", "a function (attemptsMade, type, err, job) -> ms", s["backoffStrategy"])
    return out

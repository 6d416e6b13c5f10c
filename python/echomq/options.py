"""Job options: validation into the add script's arguments and the stored `opts` JSON, as
src/core/options.ts does it, so a job added from Python is stored byte for byte as from Node."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import validate as v
from .backoff import normalize_backoff
from .codec import dumps

KNOWN = (
    "priority", "lane", "delay", "jobId", "attempts", "backoff", "lifo", "removeOnComplete", "removeOnFail",
    "deduplication", "timestamp", "stackTraceLimit", "sizeLimit", "keepLogs", "parent", "failParentOnFailure",
    "continueParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure", "telemetry",
    "prevMillis", "repeatJobKey", "repeat", "group",
)
_OWN_FIELD = {"priority", "lane", "delay", "lifo", "removeOnComplete", "removeOnFail", "attempts", "backoff"}
_DEDUP_KEYS = ("id", "ttl", "extend", "replace", "reschedule", "keepLastIfActive")
_EXCLUSIVE = ("removeDependencyOnFailure", "failParentOnFailure", "continueParentOnFailure", "ignoreDependencyOnFailure")
DEFAULT_LANE = "default"
DEFAULT_KEEP_COUNT = -1
KEEP_ALL_EXPLICIT = -2
DEFAULT_MAX_PAYLOAD = 1024 * 1024


def _keep(field: str, value: Any) -> Tuple[int, int]:
    """Retention as (count, age ms): -1 the default (not stored), -2 an explicit False."""
    if value is None:
        return (DEFAULT_KEEP_COUNT, 0)
    if value is False:
        return (KEEP_ALL_EXPLICIT, 0)
    if value is True:
        return (0, 0)
    if v.is_int(value) or isinstance(value, float):
        return (v.non_negative_int(field, value), 0)
    if not isinstance(value, Mapping):
        v.fail(field, "True, False, a count or {age?, count?, limit?}", value, as_type=True)
    o = dict(value)
    count = -1 if o.get("count") is None else v.non_negative_int(f"{field}.count", o["count"])
    age = 0 if o.get("age") is None else v.non_negative_int(f"{field}.age", o["age"]) * 1000
    if o.get("limit") is not None:
        v.positive_int(f"{field}.limit", o["limit"])
    return (count, age)


def keep_args(keep: Tuple[int, int]) -> List[Any]:
    return ["" if keep[0] == DEFAULT_KEEP_COUNT else keep[0], "" if keep[1] == 0 else keep[1]]


def _dedup(value: Any, field: str) -> Dict[str, Any]:
    o = v.plain_object(field, value)
    for k in o:
        if k not in _DEDUP_KEYS:
            v.fail(f"{field}.{k}", f"one of the known fields ({', '.join(_DEDUP_KEYS)})", k)
    if o.get("id") in (None, ""):
        v.fail(f"{field}.id", "a non-empty string of at most 1024 characters", o.get("id"),
               "Deduplication id must be provided")
    did = v.non_empty_string(f"{field}.id", o["id"])
    ttl = 0 if o.get("ttl") is None else v.integer_in(
        f"{field}.ttl", o["ttl"], 0, v.MAX_SAFE_INTEGER, "a non-negative integer (ms; 0 = held while the job is live)")
    mode = ""
    for key, letter in (("extend", "e"), ("replace", "r"), ("reschedule", "s")):
        if o.get(key) is not None and v.boolean(f"{field}.{key}", o[key]):
            mode += letter
    if o.get("keepLastIfActive") is not None and v.boolean(f"{field}.keepLastIfActive", o["keepLastIfActive"]):
        return {"id": did, "ttl": 0, "mode": mode + "k"}
    return {"id": did, "ttl": ttl, "mode": mode}


def normalize_job_options(opts: Any, field: str = "opts") -> Dict[str, Any]:
    o = {} if opts is None else dict(v.plain_object(field, opts))
    # None means "not given", as a missing key (BullMQ Python programs pass None freely).
    o = {k: x for k, x in o.items() if x is not None}
    for k in o:
        if k not in KNOWN:
            if k == "debounce":
                v.fail(f"{field}.debounce", "absent (use deduplication)", o[k],
                       "Debounce option has been removed. Use deduplication option instead")
            v.fail(f"{field}.{k}", f"one of the known options ({', '.join(KNOWN)})", k)
    delay = 0
    if "delay" in o:
        d = o["delay"]
        if isinstance(d, float) and d.is_integer():
            d = int(d)
        if not v.is_int(d) or abs(d) > v.MAX_SAFE_INTEGER:
            v.fail("delay", "an integer (ms; 0 or less = now)", o["delay"])
        delay = d if d > 0 else 0
    attempts = 1
    if "attempts" in o:
        attempts = v.integer_in("attempts", o["attempts"], 0, v.MAX_SAFE_INTEGER,
                                "a non-negative integer (0 and 1 = one attempt)") or 1
    n: Dict[str, Any] = {
        "priority": 0 if "priority" not in o else v.priority(o["priority"], "priority"),
        "lane": DEFAULT_LANE if "lane" not in o else v.lane_name(o["lane"]),
        "delay": delay,
        "attempts": attempts,
        "lifo": False if "lifo" not in o else v.boolean("lifo", o["lifo"]),
        "keepCompleted": _keep("removeOnComplete", o.get("removeOnComplete")),
        "keepFailed": _keep("removeOnFail", o.get("removeOnFail")),
    }
    if o.get("jobId") not in (None, ""):
        n["jobId"] = v.job_id(o["jobId"])
    n["backoff"] = normalize_backoff(o.get("backoff"))
    if "timestamp" in o:
        n["timestamp"] = v.non_negative_int("timestamp", o["timestamp"])
    for k in ("stackTraceLimit", "keepLogs", "sizeLimit", "prevMillis"):
        if k in o:
            n[k] = v.non_negative_int(k, o[k])
    if "repeatJobKey" in o:
        v.string("repeatJobKey", o["repeatJobKey"])
    if "repeat" in o:
        v.plain_object("repeat", o["repeat"])
    on = [k for k in _EXCLUSIVE if k in o and v.boolean(k, o[k])]
    if len(on) > 1:
        v.fail(field, "at most one of the failure policies", ", ".join(on),
               f"The following options cannot be used together: {', '.join(on)}")
    if "parent" in o:
        # Queue.add takes it out first (queue_parent.py); anywhere else it is not offered.
        v.fail("parent", "absent here (Queue.add and a FlowProducer root take a parent)", o["parent"])
    if "deduplication" in o:
        n["deduplication"] = _dedup(o["deduplication"], "deduplication")
    if "group" in o:
        g = v.plain_object("group", o["group"])
        for k in g:
            if k not in ("id", "priority", "maxSize"):
                v.fail(f"group.{k}", "one of the known fields (id, priority, maxSize)", k)
        gid = v.non_empty_string("group.id", g.get("id"))
        if "lane" in o and o["lane"] != gid:
            v.fail("group.id", f"the same as lane ({dumps(o['lane'])}) when both are given", gid)
        n["lane"] = gid
        if g.get("priority") is not None:
            n["priority"] = v.priority(g["priority"], "group.priority")
        if g.get("maxSize") is not None:
            n["groupMaxSize"] = v.positive_int("group.maxSize", g["maxSize"])
    return n


def stored_options(user: Optional[Mapping[str, Any]], n: Dict[str, Any]) -> str:
    """The `opts` JSON (what job.opts shows beyond the hash's own fields), in Node's key order:
    the user's options but those with a field of their own, then attempts, then backoff."""
    s: Dict[str, Any] = {}
    if user:
        for k, x in user.items():
            if k not in _OWN_FIELD and x is not None:
                s[k] = x
    if user and user.get("attempts") is not None:
        s["attempts"] = user["attempts"]
    elif n["attempts"] != 1:
        s["attempts"] = n["attempts"]
    if n.get("backoff"):
        s["backoff"] = n["backoff"]
    return dumps(s, "opts") if s else ""

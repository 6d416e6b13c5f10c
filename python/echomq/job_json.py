"""Job.fromJSON: a Job from BullMQ's raw job hash (BullMQ's field names: timestamp, attemptsMade
or atm, ats, finishedOn, processedOn, rjk, stc, defa, returnvalue, stacktrace, parentKey,
parent, opts with BullMQ's short option names), as BullMQ Python's fromJSON reads it."""
from __future__ import annotations

from typing import Any, Dict, Optional

from . import codec
from . import validate as v

# BullMQ's short names of stored options (optsDecodeMap) -> the names users give.
_OPTS_DECODE = {"de": "deduplication", "fpof": "failParentOnFailure", "cpof": "continueParentOnFailure",
                "idof": "ignoreDependencyOnFailure", "kl": "keepLogs", "rdof": "removeDependencyOnFailure",
                "tm": "telemetryMetadata", "omc": "telemetryOmitContext"}


def _s(x: Any) -> Any:
    return x.decode("utf-8") if isinstance(x, bytes) else x


def _json(x: Any, default: Any) -> Any:
    if x is None:
        return default
    if not isinstance(x, (str, bytes)):
        return x  # already decoded (a job's asJSON() carries opts as a dict)
    try:
        return codec.loads(_s(x))
    except ValueError:
        return _s(x)


def job_from_bullmq_hash(cls: Any, queue: Any, rawData: Dict[Any, Any], jobId: Optional[str] = None) -> Any:
    if not isinstance(rawData, dict):
        v.fail("rawData", "a dict (a job hash as HGETALL gives it)", rawData, as_type=True)
    raw = {_s(k): _s(x) for k, x in rawData.items()}
    opts_raw = _json(raw.get("opts"), {})
    opts = {_OPTS_DECODE.get(k, k): x for k, x in (opts_raw if isinstance(opts_raw, dict) else {}).items()}
    job = cls(queue, raw.get("name"), _json(raw.get("data"), {}), opts)
    job.id = jobId if jobId is not None else raw.get("id", "")
    job.progress = _json(raw.get("progress"), 0)
    job.delay = int(raw.get("delay") or 0)
    job.priority = int(raw.get("priority") or opts.get("priority") or 0)
    job.timestamp = int(float(raw.get("timestamp") or 0))
    if raw.get("finishedOn"):
        job.finishedOn = int(float(raw["finishedOn"]))
    if raw.get("processedOn"):
        job.processedOn = int(float(raw["processedOn"]))
    if raw.get("rjk"):
        job.repeatJobKey = raw["rjk"]
    if raw.get("ats"):
        job.attemptsStarted = int(raw["ats"])
    if raw.get("failedReason"):
        job.failedReason = raw["failedReason"]
    job.attemptsMade = int(raw.get("attemptsMade") or raw.get("atm") or 0)
    job.stalledCounter = int(raw.get("stc") or 0)
    if raw.get("defa"):
        job.deferredFailure = raw["defa"]
    if isinstance(raw.get("returnvalue"), str):
        job.returnvalue = _json(raw["returnvalue"], None)
    st = _json(raw.get("stacktrace"), [])
    job.stacktrace = st if isinstance(st, list) else []
    if raw.get("parentKey"):
        job.parentKey = raw["parentKey"]
    if raw.get("parent"):
        job.parent = _json(raw["parent"], None)
    if raw.get("pb"):
        job.processedBy = raw["pb"]
    return job

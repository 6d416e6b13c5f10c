"""A scheduler record from BullMQ's stored form (its `repeat:<id>` hash with BullMQ's field
names: ic, limit, startDate, endDate, tz, pattern, every, offset, data, opts; or a legacy
`name:id:endDate:tz:pattern` repeatable key), as BullMQ Python's _transform_scheduler_data
builds it. For tools that read a BullMQ queue's schedulers while migrating."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

from .job_json import _OPTS_DECODE


def _int(fields: Dict[str, Any], f: str) -> Optional[int]:
    try:
        return int(fields[f])
    except (KeyError, TypeError, ValueError):
        return None


def bullmq_scheduler_record(key: str, fields: Dict[str, Any], next_millis: Optional[int]) -> Optional[Dict[str, Any]]:
    if fields:
        out: Dict[str, Any] = {"key": key, "name": fields.get("name"), "next": next_millis}
        for f, name in (("ic", "iterationCount"), ("limit", "limit"), ("startDate", "startDate"),
                        ("endDate", "endDate"), ("every", "every"), ("offset", "offset")):
            if _int(fields, f) is not None:
                out[name] = _int(fields, f)
        for f in ("tz", "pattern"):
            if fields.get(f):
                out[f] = fields[f]
        template: Dict[str, Any] = {}
        for f in ("data", "opts"):
            if fields.get(f):
                try:
                    template[f] = json.loads(fields[f])
                except (TypeError, ValueError):
                    template[f] = fields[f]
        if isinstance(template.get("opts"), dict):
            template["opts"] = {_OPTS_DECODE.get(k, k): x for k, x in template["opts"].items()}
        if template:
            out["template"] = template
        return out
    if ":" not in key:
        return None
    parts = key.split(":")
    end = parts[2] if len(parts) > 2 else ""
    return {"key": key, "name": parts[0], "id": parts[1] or None, "next": next_millis,
            "endDate": int(end) if end.isdigit() else None, "tz": (parts[3] if len(parts) > 3 else "") or None,
            "pattern": ":".join(parts[4:]) or None}


# BullMQ Python's private name for it (its tests and some migration scripts import it).
_transform_scheduler_data = bullmq_scheduler_record

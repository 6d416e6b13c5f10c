"""BullMQ's `parent` option ({id, queue: '<prefix>:<queue>'}) resolved to echomq's keys, and
its missing-parent error (Node: core/options.ts resolveParent, lifecycle/cross-parents.ts)."""
from __future__ import annotations

from typing import Any, Dict

from . import codec
from . import validate as v
from .error_code import ErrorCode
from .errors import JobNotFoundError
from .keys import QueueKeys


def resolve_parent(ref: Any, own: QueueKeys, field: str) -> Dict[str, Any]:
    r = v.plain_object(field, ref)
    pid = v.existing_job_id(r.get("id"), f"{field}.id")
    q = v.non_empty_string(f"{field}.queue", r.get("queue"))
    if q.startswith(own.prefix + ":") and len(q) > len(own.prefix) + 1:
        prefix, queue = own.prefix, q[len(own.prefix) + 1:]
    else:
        i = q.rfind(":")
        if i <= 0 or i == len(q) - 1:
            v.fail(f"{field}.queue", "a queue's qualified name '<prefix>:<queue name>'", q)
        prefix, queue = q[:i], q[i + 1:]
    keys = QueueKeys(queue, prefix)
    return {"id": pid, "queue": queue, "prefix": prefix, "keys": keys, "key": keys.job(pid),
            "same": keys.base == own.base, "logical": f"{q}:{pid}"}


def missing_parent(x: Dict[str, Any]) -> JobNotFoundError:
    """BullMQ's text first; `code` is BullMQ Python's ErrorCode.ParentJobNotExist (-5)."""
    e = JobNotFoundError(x["id"], "addJob")
    e.args = (f"Missing key for parent job {x['logical']}. addJob: job {codec.dumps(x['id'])} does not exist "
              f"in queue {codec.dumps(x['queue'])}",)
    e.code = ErrorCode.ParentJobNotExist.value  # type: ignore[attr-defined]
    return e

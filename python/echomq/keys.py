"""Redis keys of a queue, exactly as src/core/keys.ts builds them.

Every key is ``<prefix>:{<escaped queue>}:<suffix>``: the queue name is escaped inside the hash
tag (``%`` → ``%25``, ``{`` → ``%7B``, ``}`` → ``%7D``) so the tag always ends at the queue's own
brace. Per-lane and per-job keys are a family prefix followed by the raw user string.
"""
from __future__ import annotations

import base64
from typing import Dict, Optional

DEFAULT_PREFIX = "emq"

# The active set's sentinel (layout 2; ACTIVE_SENTINEL in src/core/layout.ts and lib/common.lua):
# a member at score +inf, longer than zset-max-listpack-value, so Redis keeps `active` a
# skiplist. It is no job: readers count and range `active` between ACTIVE_BELOW's bounds.
ACTIVE_SENTINEL = "~" * 72
ACTIVE_BELOW = ("-inf", "(+inf")

_FIXED = (
    "meta", "ring", "inring", "lone", "lanes", "lweight", "llimit", "lactive", "lpaused", "lrate",
    "lcfg", "rlwait", "active", "delayed", "completed", "failed", "events", "rate", "wake",
    "dedup", "dedupx", "scheds", "wchildren", "outbox",
)
_NAMED = {
    "metricsCompleted": "metrics:completed",
    "metricsCompletedData": "metrics:completed:data",
    "metricsFailed": "metrics:failed",
    "metricsFailedData": "metrics:failed:data",
    "schedBase": "sched:",
    "depsBase": "deps:",
    "laneBase": "lane:",
    "jobBase": "job:",
    "logsBase": "logs:",
    "lrateBase": "lrate:",
    "reqBase": "req:",
}


def escape_queue_name(name: str) -> str:
    return name.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


def unescape_queue_name(escaped: str) -> str:
    out, i = [], 0
    while i < len(escaped):
        three = escaped[i:i + 3]
        if three in ("%25", "%7B", "%7D"):
            out.append({"%25": "%", "%7B": "{", "%7D": "}"}[three])
            i += 3
        else:
            out.append(escaped[i])
            i += 1
    return "".join(out)


class QueueKeys:
    """The named keys of one queue (the names the scripts' KEYS headers use)."""

    __slots__ = ("queue", "prefix", "base", "_keys")

    def __init__(self, queue: str, prefix: str = DEFAULT_PREFIX) -> None:
        self.queue = queue
        self.prefix = prefix
        self.base = f"{prefix}:{{{escape_queue_name(queue)}}}:"
        keys: Dict[str, str] = {k: self.base + k for k in _FIXED}
        keys.update({k: self.base + s for k, s in _NAMED.items()})
        self._keys = keys

    def __getitem__(self, name: str) -> str:
        return self._keys[name]

    def __getattr__(self, name: str) -> str:
        try:
            return self._keys[name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> Dict[str, str]:
        return dict(self._keys)

    def job(self, job_id: str) -> str:
        return self._keys["jobBase"] + job_id

    def logs(self, job_id: str) -> str:
        return self._keys["logsBase"] + job_id

    def lane(self, lane: str) -> str:
        return self._keys["laneBase"] + lane

    def scheduler(self, sid: str) -> str:
        return self._keys["schedBase"] + sid


def queue_keys(queue: str, prefix: str = DEFAULT_PREFIX) -> QueueKeys:
    return QueueKeys(queue, prefix)


def client_name(keys: QueueKeys, suffix: str = "") -> str:
    """The CLIENT SETNAME of a connection serving the queue, as Node (and BullMQ) name them."""
    b64 = base64.b64encode(keys.queue.encode("utf-8")).decode("ascii")
    return f"{keys.prefix}:{b64}{suffix}"


def parse_job_key(key: str) -> Optional[Dict[str, str]]:
    """Splits ``<prefix>:{<escaped queue>}:job:<id>``; the first split that rebuilds the key wins."""
    opened = key.find(":{")
    while opened >= 0:
        close = key.find("}:", opened + 2)
        if close < 0:
            return None
        escaped = key[opened + 2:close]
        if "{" not in escaped and "}" not in escaped:
            prefix = key[:opened]
            queue = unescape_queue_name(escaped)
            base = QueueKeys(queue, prefix)["jobBase"]
            if key.startswith(base):
                return {"prefix": prefix, "queue": queue, "id": key[len(base):]}
        opened = key.find(":{", opened + 1)
    return None

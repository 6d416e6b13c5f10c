"""Typed option dicts, as bullmq.types names them (echomq's lane and group added)."""
from __future__ import annotations

from typing import Any, Callable, Dict, TypedDict, Union


class KeepJobs(TypedDict, total=False):
    age: int
    count: int
    limit: int


class BackoffOptions(TypedDict, total=False):
    type: str
    delay: int
    jitter: float


class DeduplicationOptions(TypedDict, total=False):
    id: str
    ttl: int
    extend: bool
    replace: bool
    reschedule: bool
    keepLastIfActive: bool


class GroupOptions(TypedDict, total=False):
    id: str
    priority: int
    maxSize: int


class JobOptions(TypedDict, total=False):
    jobId: str
    timestamp: int
    delay: int
    attempts: int
    backoff: Union[int, BackoffOptions]
    lifo: bool
    priority: int
    removeOnComplete: Union[bool, int, KeepJobs]
    removeOnFail: Union[bool, int, KeepJobs]
    stackTraceLimit: int
    sizeLimit: int
    keepLogs: int
    deduplication: DeduplicationOptions
    lane: str
    group: GroupOptions


class QueueBaseOptions(TypedDict, total=False):
    connection: Union[Dict[str, Any], Any, str]
    prefix: str
    defaultJobOptions: JobOptions
    maxPayloadBytes: int
    keepLogs: int


class RateLimiterOptions(TypedDict):
    max: int
    duration: int


class WorkerOptions(TypedDict, total=False):
    name: str
    autorun: bool
    concurrency: int
    maxStalledCount: int
    stalledInterval: int
    lockDuration: int
    lockRenewTime: int
    prefix: str
    connection: Union[Dict[str, Any], Any, str]
    drainDelay: float
    limiter: RateLimiterOptions
    removeOnComplete: Union[bool, int, KeepJobs]
    removeOnFail: Union[bool, int, KeepJobs]
    settings: Dict[str, Callable[..., Any]]


class QueueEventsOptions(TypedDict, total=False):
    connection: Union[Dict[str, Any], Any, str]
    prefix: str
    blockingTimeout: int
    lastEventId: str
    autorun: bool


class RetryJobsOptions(TypedDict, total=False):
    state: str
    count: int
    timestamp: int


class PromoteJobsOptions(TypedDict, total=False):
    count: int

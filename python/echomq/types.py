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
    failParentOnFailure: bool
    continueParentOnFailure: bool
    ignoreDependencyOnFailure: bool
    removeDependencyOnFailure: bool


class QueueBaseOptions(TypedDict, total=False):
    connection: Union[Dict[str, Any], Any, str]
    prefix: str
    defaultJobOptions: JobOptions
    maxPayloadBytes: int
    keepLogs: int
    skipVersionCheck: bool
    skipWaitingForReady: bool


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
    skipVersionCheck: bool
    skipWaitingForReady: bool


class QueueEventsOptions(TypedDict, total=False):
    connection: Union[Dict[str, Any], Any, str]
    prefix: str
    blockingTimeout: int
    lastEventId: str
    autorun: bool
    skipVersionCheck: bool


class RetryJobsOptions(TypedDict, total=False):
    state: str
    count: int
    timestamp: int


class PromoteJobsOptions(TypedDict, total=False):
    count: int


class QueueEventsProducerOptions(TypedDict, total=False):
    connection: Union[Dict[str, Any], Any, str]
    prefix: str
    skipVersionCheck: bool


class RepeatOptions(TypedDict, total=False):
    every: int
    pattern: str
    tz: str
    offset: int
    immediately: bool
    count: int
    limit: int
    startDate: Union[int, str]
    endDate: Union[int, str]


class JobSchedulerTemplateJson(TypedDict, total=False):
    data: Any
    opts: JobOptions


class JobSchedulerJson(TypedDict, total=False):
    key: str
    id: str
    name: str
    next: int
    iterationCount: int
    limit: int
    startDate: int
    endDate: int
    tz: str
    pattern: str
    every: int
    offset: int
    template: JobSchedulerTemplateJson

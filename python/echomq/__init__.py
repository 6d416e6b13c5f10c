"""echomq for Python: BullMQ Python's API on echomq's queues, byte-compatible with Node."""
__version__ = "0.1.0"

from . import types
from .abort_controller import AbortController, AbortError, AbortSignal
from .errors import (EchoMQError, IncompatibleLayoutError, JobNotFoundError, RedisRefusedError,
                     RequestOutcomeUnknownError, StaleJobError, UnrecoverableError, ValidationError,
                     ValidationTypeError, WaitingChildrenError)
from .job import Job
from .queue import Queue
from .queue_events import QueueEvents
from .worker import Worker
from . import custom_errors, error_code
from .custom_errors import DelayedError, RateLimitError, WaitingError
from .error_code import ErrorCode
from .flow_producer import FlowProducer
from .job_scheduler import JobScheduler
from .lock_manager import LockManager
from .queue_events_producer import QueueEventsProducer
from .errors import RedisUnreachableError
from .migrate import MigrationRefusedError, migrate_from_bullmq
from .migrate_back import MigrationBackRefusedError, migrate_to_bullmq

__all__ = [
    "Queue", "Worker", "Job", "QueueEvents", "UnrecoverableError", "WaitingChildrenError", "AbortController",
    "AbortSignal", "AbortError", "IncompatibleLayoutError", "ValidationError", "ValidationTypeError",
    "EchoMQError", "JobNotFoundError", "StaleJobError", "RequestOutcomeUnknownError", "RedisRefusedError", "types",
    "FlowProducer", "JobScheduler", "LockManager", "QueueEventsProducer", "DelayedError", "RateLimitError",
    "WaitingError", "ErrorCode", "custom_errors", "error_code",
    "RedisUnreachableError",
    "migrate_from_bullmq", "MigrationRefusedError",
    "migrate_to_bullmq", "MigrationBackRefusedError",
]

"""echomq for Python: BullMQ Python's API on echomq's queues, byte-compatible with Node."""
__version__ = "0.1.0"

from . import types
from .abort_controller import AbortController, AbortError, AbortSignal
from .errors import (EchoMQError, IncompatibleLayoutError, JobNotFoundError, StaleJobError, UnrecoverableError,
                     ValidationError, ValidationTypeError, WaitingChildrenError)
from .job import Job
from .queue import Queue
from .queue_events import QueueEvents
from .worker import Worker

__all__ = [
    "Queue", "Worker", "Job", "QueueEvents", "UnrecoverableError", "WaitingChildrenError", "AbortController",
    "AbortSignal", "AbortError", "IncompatibleLayoutError", "ValidationError", "ValidationTypeError",
    "EchoMQError", "JobNotFoundError", "StaleJobError", "types",
]

"""BullMQ Python's custom_errors package, plus the step errors BullMQ for Node has (DelayedError,
RateLimitError, WaitingError): raised by a processor after the matching move, the worker leaves
the job where the move put it."""
from ..errors import UnrecoverableError, WaitingChildrenError
from .step_errors import DelayedError, RateLimitError, WaitingError

__all__ = ["UnrecoverableError", "WaitingChildrenError", "DelayedError", "RateLimitError", "WaitingError"]

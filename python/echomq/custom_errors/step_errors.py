"""Node's DelayedError and WaitingError (BullMQ Python has neither). Same default messages as
BullMQ for Node, so a failedReason or log line reads the same from either runtime."""


class DelayedError(Exception):
    """Raised after job.moveToDelayed(...): the job stays delayed, no attempt is used."""

    def __init__(self, message: str = "bullmq:movedToDelayed") -> None:
        super().__init__(message)


class WaitingError(Exception):
    """Raised after the job was moved back to wait by the processor: the worker leaves it there."""

    def __init__(self, message: str = "bullmq:movedToWait") -> None:
        super().__init__(message)


class RateLimitError(Exception):
    """Raised by a processor after worker.rateLimit(ms): the job goes back without using an attempt."""

    def __init__(self, message: str = "bullmq:rateLimitExceeded") -> None:
        super().__init__(message)

"""BullMQ Python's ErrorCode enum (bullmq.error_code): the status codes BullMQ's scripts return.
echomq's scripts use their own codes (library.json "codes"); `from_echomq` maps one to BullMQ's."""
from __future__ import annotations

from enum import Enum
from typing import Optional


class ErrorCode(Enum):
    JobNotExist = -1
    JobLockNotExist = -2
    JobNotInState = -3
    JobPendingDependencies = -4
    ParentJobNotExist = -5
    JobLockMismatch = -6
    ParentJobCannotBeReplaced = -7
    JobHasFailedChildren = -9
    SchedulerJobIdCollision = -10
    SchedulerJobSlotsBusy = -11


# echomq status name -> BullMQ's code for the same condition.
_BY_NAME = {
    "NOT_FOUND": ErrorCode.JobNotExist,
    "STALE": ErrorCode.JobLockNotExist,
    "BAD_STATE": ErrorCode.JobNotInState,
    "PENDING_DEPENDENCIES": ErrorCode.JobPendingDependencies,
    "MISSING_PARENT": ErrorCode.ParentJobNotExist,
    "LOCK_MISMATCH": ErrorCode.JobLockMismatch,
    "OTHER_PARENT": ErrorCode.ParentJobCannotBeReplaced,
    "CHILD_FAILED": ErrorCode.JobHasFailedChildren,
}


def from_echomq(status_name: str) -> Optional[ErrorCode]:
    """BullMQ's ErrorCode for an echomq status name (library.json), None when BullMQ has none."""
    return _BY_NAME.get(status_name)

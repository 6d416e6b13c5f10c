"""Input checks for every public entry: each raises a ValidationError naming the field, the
expected form and the value, before anything is written (src/core/validate.ts, in Python)."""
from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, Mapping, NoReturn, Optional

from .errors import ValidationError, ValidationTypeError
from .js_numbers import js_number
from .keys import ACTIVE_SENTINEL

MAX_PRIORITY = 2_097_151
MAX_NAME_LENGTH = 1024
MAX_SAFE_INTEGER = 2 ** 53 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


def describe(value: Any) -> str:
    """A short rendering of any value for error messages (as Node's describe)."""
    if isinstance(value, str):
        if len(value) > 60:
            return f"{json.dumps(value[:60], ensure_ascii=False)}… ({len(value)} chars)"
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return f"{_article(type(value).__name__)} of {len(value)}"
    if callable(value):
        return "a function"
    return _article(type(value).__name__)


def _article(noun: str) -> str:
    """The article by the noun's first letter: "an object", "a dict"."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def fail(field: str, expected: str, value: Any, lead: Optional[str] = None, as_type: bool = False) -> NoReturn:
    cls = ValidationTypeError if as_type else ValidationError
    raise cls(field, expected, describe(value), lead)


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def integer_in(field: str, value: Any, lo: int, hi: int, expected: Optional[str] = None) -> int:
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        value = int(value)  # 3.0 is the integer 3, as JavaScript sees it
    if not is_int(value) or value < lo or value > hi:
        rng = f">= {lo}" if hi == MAX_SAFE_INTEGER else f"{lo}…{hi}"
        fail(field, expected or f"an integer {rng}", value, as_type=not isinstance(value, (int, float)))
    return int(value)


def non_negative_int(field: str, value: Any) -> int:
    return integer_in(field, value, 0, MAX_SAFE_INTEGER, "a non-negative integer")


def positive_int(field: str, value: Any) -> int:
    return integer_in(field, value, 1, MAX_SAFE_INTEGER, "a positive integer")


def priority(value: Any, field: str = "priority") -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not is_int(value) or value < 0 or value > MAX_PRIORITY:
        lead = ("Priority should not be float" if isinstance(value, float) and math.isfinite(value)
                else f"Priority should be between 0 and {MAX_PRIORITY}")
        fail(field, f"an integer 0…{MAX_PRIORITY}", value, lead)
    return value


def non_empty_string(field: str, value: Any, max_len: int = MAX_NAME_LENGTH) -> str:
    if not isinstance(value, str) or value == "" or utf16_len(value) > max_len:
        fail(field, f"a non-empty string of at most {max_len} characters", value, as_type=not isinstance(value, str))
    if _SURROGATE.search(value):
        fail(field, "a well-formed Unicode string (no lone surrogates)", value)
    return value


def string(field: str, value: Any, max_len: int = MAX_NAME_LENGTH) -> str:
    if not isinstance(value, str) or utf16_len(value) > max_len:
        fail(field, f"a string of at most {max_len} characters", value, as_type=not isinstance(value, str))
    if _SURROGATE.search(value):
        fail(field, "a well-formed Unicode string (no lone surrogates)", value)
    return value


def boolean(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        fail(field, "a boolean", value, as_type=True)
    return value


def plain_object(field: str, value: Any) -> Dict[str, Any]:
    if type(value) is dict:
        return value
    if not isinstance(value, Mapping):
        fail(field, "a dict", value, as_type=True)
    return dict(value)


def _js_parse_int(s: str) -> Optional[str]:
    """What JavaScript's `${parseInt(s, 10)}` prints for s (None for NaN)."""
    m = re.match(r"[\s\ufeff\xa0]*([+-]?\d+)", s)
    if not m:
        return None
    n = int(m.group(1))
    # parseInt yields a double: digits beyond 2^53 are rounded, and '-0' prints '0'.
    f = float(n)
    if f.is_integer() and abs(f) < 1e21:
        return str(int(f))
    return js_number(f)


def job_id(value: Any, field: str = "jobId") -> str:
    i = non_empty_string(field, value)
    if i == "0" or i.startswith("0:"):
        fail(field, "a string other than '0' and not starting with '0:'", value,
             "JobId cannot be '0' or start with '0:'")
    if _js_parse_int(i) == i:
        fail(field, "a non-empty string that is not an integer (integers are generated ids)", value,
             "Custom Id cannot be integers")
    if i == ACTIVE_SENTINEL:  # a job of that id would take over the active set's sentinel
        fail(field, 'not the active set\'s sentinel (72 "~")', value)
    return i


def existing_job_id(value: Any, field: str = "jobId") -> str:
    if is_int(value) and value > 0:
        return str(value)
    return non_empty_string(field, value)


def lane_name(value: Any, field: str = "lane") -> str:
    return non_empty_string(field, value)


def queue_name(value: Any, field: str = "queue name") -> str:
    # BullMQ Python takes "" as a queue name (Node's BullMQ refuses it): the Python side follows
    # BullMQ Python. On Redis Cluster its keys would not share a slot (an empty hash tag).
    if value is None:
        fail(field, f"a string of at most {MAX_NAME_LENGTH} characters", value, "Queue name must be provided")
    if value == "":
        return value
    return non_empty_string(field, value)


def prefix(value: Any) -> str:
    return non_empty_string("prefix", value, 256)

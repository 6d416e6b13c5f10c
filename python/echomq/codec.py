"""JSON exactly as Node's JSON.stringify writes it, and the stored fields read back.

Python's json module differs from JavaScript in ways that change the stored bytes: it escapes
non-ASCII (ensure_ascii), writes lone surrogates raw (which then cannot be encoded as UTF-8),
puts spaces after separators, and formats floats by repr (1.0, 1e+16). This encoder writes
what Node writes: non-ASCII raw, lone surrogates as \\udxxx, compact separators, numbers as
Number.prototype.toString formats them (1.0 → 1, 1e16 → 10000000000000000, 1e-7, -0.0 → 0).
Integers keep all their digits (Node reads those beyond 2^53 as the nearest double).
NaN, Infinity, bytes, sets, datetimes and other objects JSON cannot carry are refused with a
typed error naming the field (BullMQ Python refuses NaN the same way).
"""
from __future__ import annotations

import json
import math
from typing import Any, List, Optional

from .errors import ValidationError, ValidationTypeError
from .js_numbers import js_number
from .validate import describe

import re

_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# What JSON.stringify escapes: control characters, quote, backslash, and lone surrogates (a
# Python str holds a surrogate pair as one code point, so any surrogate in it is lone).
_NEEDS = re.compile("[\x00-\x1f\"\\\\\ud800-\udfff]")


def _escape(m: "re.Match[str]") -> str:
    c = m.group(0)
    return _ESC.get(c) or "\\u%04x" % ord(c)


def js_string(s: str) -> str:
    """A JSON string literal as JSON.stringify writes it (well-formed JSON.stringify, ES2019)."""
    if _NEEDS.search(s) is None:
        return '"' + s + '"'
    return '"' + _NEEDS.sub(_escape, s) + '"'


def _where(field: str, path: Any) -> str:
    parts: List[str] = []
    while path is not None:
        path, part = path
        parts.append(part)
    return field + "".join(reversed(parts))


def dumps(value: Any, field: str = "data", max_bytes: Optional[int] = None) -> str:
    """Encodes value as Node's JSON.stringify would; refuses what would not round-trip."""
    out: List[str] = []
    app = out.append
    seen: set = set()

    def enc(v: Any, path: Any) -> None:
        t = type(v)
        if t is str:
            app(js_string(v))
        elif t is int:
            app(int.__repr__(v))
        elif v is None:
            app("null")
        elif v is True:
            app("true")
        elif v is False:
            app("false")
        elif t is float or isinstance(v, float):
            if not math.isfinite(v):
                raise ValidationTypeError(_where(field, path), "a finite number (JSON has no NaN or Infinity)", describe(v),
                                          "Out of range float values are not JSON compliant")
            app(js_number(float(v)))
        elif isinstance(v, int):
            app(str(int(v)))
        elif isinstance(v, str):
            app(js_string(str(v)))
        elif isinstance(v, dict):
            if id(v) in seen:
                raise ValidationTypeError(_where(field, path), "a JSON-serialisable value without cycles", describe(v))
            seen.add(id(v))
            app("{")
            first = True
            for k, x in v.items():
                if type(k) is not str:
                    if isinstance(k, int) and not isinstance(k, bool):
                        k = str(k)  # JavaScript object keys are strings; json.dumps converts ints too
                    elif isinstance(k, str):
                        k = str(k)
                    else:
                        raise ValidationTypeError(_where(field, path), "a dict with string keys", f"the key {describe(k)}")
                if first:
                    first = False
                else:
                    app(",")
                app(js_string(k))
                app(":")
                enc(x, (path, "." + k))
            app("}")
            seen.discard(id(v))
        elif isinstance(v, (list, tuple)):
            if id(v) in seen:
                raise ValidationTypeError(_where(field, path), "a JSON-serialisable value without cycles", describe(v))
            seen.add(id(v))
            app("[")
            for i, x in enumerate(v):
                if i:
                    app(",")
                enc(x, (path, f"[{i}]"))
            app("]")
            seen.discard(id(v))
        else:
            raise ValidationTypeError(_where(field, path),
                                      "a JSON value (None, bool, int, float, str, list, dict)", describe(v))

    enc(value, None)
    s = "".join(out)
    if max_bytes is not None and len(s) * 3 > max_bytes:
        size = len(s.encode("utf-8"))
        if size > max_bytes:
            raise ValidationError(field, f"at most {max_bytes} bytes of JSON", f"{size} bytes")
    return s


def loads(s: Optional[str]) -> Any:
    """A stored JSON field: None when absent or empty, the parsed value, or the raw text when it
    is not JSON (a value another tool wrote stays readable), as Node's parseJson."""
    if s is None or s == "":
        return None
    try:
        return json.loads(s)
    except ValueError:
        return s


def text(v: Any) -> Any:
    """A reply value as str (bytes decoded as UTF-8), recursively for lists."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [text(x) for x in v]
    return v

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
from .validate import describe

_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _needs_escape(c: str) -> bool:
    o = ord(c)
    return o < 0x20 or c == '"' or c == "\\" or 0xD800 <= o <= 0xDFFF


def js_string(s: str) -> str:
    """A JSON string literal as JSON.stringify writes it (well-formed JSON.stringify, ES2019)."""
    if not any(_needs_escape(c) for c in s):
        return '"' + s + '"'
    out: List[str] = ['"']
    for c in s:
        o = ord(c)
        if c in _ESC:
            out.append(_ESC[c])
        elif o < 0x20 or 0xD800 <= o <= 0xDFFF:
            # Python strings hold a surrogate pair as one code point, so any surrogate here is lone.
            out.append("\\u%04x" % o)
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def js_number(f: float) -> str:
    """Number.prototype.toString of a finite double."""
    if f == 0:
        return "0"
    if f.is_integer() and abs(f) < 2 ** 53:
        return str(int(f))  # exact below 2^53; above, the shortest digits padded, as JavaScript
    r = repr(abs(f))
    mant, _, e = r.partition("e")
    exp = int(e) if e else 0
    ip, _, fp = mant.partition(".")
    if ip.strip("0") == "":
        stripped = fp.lstrip("0")
        n = exp - (len(fp) - len(stripped))
        digits = stripped
    else:
        n = len(ip) + exp
        digits = ip + fp
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        x = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if x >= 0 else "-") + str(abs(x))
    return ("-" if f < 0 else "") + s


def _where(field: str, path: List[str]) -> str:
    return field + "".join(path)


def dumps(value: Any, field: str = "data", max_bytes: Optional[int] = None) -> str:
    """Encodes value as Node's JSON.stringify would; refuses what would not round-trip."""
    out: List[str] = []
    seen: set = set()

    def enc(v: Any, path: List[str]) -> None:
        if v is None:
            out.append("null")
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif isinstance(v, int):
            out.append(str(int(v)))
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise ValidationTypeError(_where(field, path), "a finite number (JSON has no NaN or Infinity)", describe(v),
                                          "Out of range float values are not JSON compliant")
            out.append(js_number(v))
        elif isinstance(v, str):
            out.append(js_string(v))
        elif isinstance(v, (list, tuple)):
            if id(v) in seen:
                raise ValidationTypeError(_where(field, path), "a JSON-serialisable value without cycles", describe(v))
            seen.add(id(v))
            out.append("[")
            for i, x in enumerate(v):
                if i:
                    out.append(",")
                enc(x, path + [f"[{i}]"])
            out.append("]")
            seen.discard(id(v))
        elif isinstance(v, dict):
            if id(v) in seen:
                raise ValidationTypeError(_where(field, path), "a JSON-serialisable value without cycles", describe(v))
            seen.add(id(v))
            out.append("{")
            first = True
            for k, x in v.items():
                if isinstance(k, str):
                    ks = k
                elif isinstance(k, int) and not isinstance(k, bool):
                    ks = str(k)  # JavaScript object keys are strings; json.dumps converts ints too
                else:
                    raise ValidationTypeError(_where(field, path), "a dict with string keys", f"the key {describe(k)}")
                if not first:
                    out.append(",")
                first = False
                out.append(js_string(ks))
                out.append(":")
                enc(x, path + [f".{ks}"])
            out.append("}")
            seen.discard(id(v))
        else:
            raise ValidationTypeError(_where(field, path),
                                      "a JSON value (None, bool, int, float, str, list, dict)", describe(v))

    enc(value, [])
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

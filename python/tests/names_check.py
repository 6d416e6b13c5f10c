"""Reads python/bullmq-python-names.txt and resolves each name on echomq's package (used by
test_migration_table.py): what a name is, and the parameter names echomq gives it."""
from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path
from typing import List, Optional, Tuple

import echomq
import echomq.custom_errors
import echomq.error_code
import echomq.types

ROOT = Path(__file__).resolve().parents[2]
NAMES = ROOT / "python" / "bullmq-python-names.txt"
LINE = re.compile(r"^([A-Za-z_][\w.]*)(\((.*)\))?$")


def listed() -> List[Tuple[str, Optional[List[str]]]]:
    """(name, parameter names or None) for every line of the committed list."""
    out = []
    for line in NAMES.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, f"unreadable line in {NAMES.name}: {line!r}"
        ps = None if m.group(2) is None else [p.strip() for p in m.group(3).split(",") if p.strip()]
        out.append((m.group(1), ps))
    return out


def resolve(name: str) -> Tuple[bool, Optional[List[str]]]:
    """(exists on echomq, its parameter names when callable)."""
    parts = name.split(".")
    if parts[0] == "types":
        cls = getattr(echomq.types, parts[1], None)
        if cls is None or not typing.is_typeddict(cls):
            return False, None
        return (len(parts) == 2 or parts[2] in typing.get_type_hints(cls)), None
    if parts[0] == "error_code":
        obj: object = echomq.error_code
    elif parts[0] == "custom_errors":
        obj = echomq.custom_errors
    else:
        obj = echomq
    for p in parts if obj is echomq else parts[1:]:
        if obj is echomq.error_code.ErrorCode:
            if p not in obj.__members__:  # type: ignore[attr-defined]
                return False, None
            return True, None
        if inspect.isclass(obj):
            try:
                attr = inspect.getattr_static(obj, p)
            except AttributeError:
                return False, None
            if isinstance(attr, (staticmethod, classmethod)):
                return True, _params(attr.__func__)
            if inspect.isfunction(attr):
                return True, _params(attr)
            return True, None
        if not hasattr(obj, p):
            return False, None
        obj = getattr(obj, p)
    if inspect.isclass(obj):
        return True, _params(obj.__init__) if "__init__" in vars(obj) or not issubclass(obj, BaseException) else []
    return True, None


def _params(fn: object) -> List[str]:
    try:
        sig = inspect.signature(fn)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []
    names = [p.name if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) else ("*" if p.kind == p.VAR_POSITIONAL else "**") + p.name
             for p in sig.parameters.values()]
    return names[1:] if names and names[0] == "self" else names

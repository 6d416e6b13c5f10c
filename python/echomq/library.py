"""The assembled Lua library (library.json, built from src/scripts by scripts/build-library.mjs).

The artifact is the protocol's one implementation: every transition is one of its scripts.
Status codes are read by name from its "codes" table, never spelled as numbers here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Dict, List, Optional


@dataclass(frozen=True)
class Script:
    name: str
    keys: List[str]
    sha: str
    function_name: Optional[str]
    source: str


@dataclass(frozen=True)
class Library:
    name: str
    tag: str
    layout_version: int
    codes: Dict[str, int]
    source: str
    scripts: Dict[str, Script]

    def code(self, name: str) -> int:
        return self.codes[name]


@lru_cache(maxsize=1)
def library() -> Library:
    raw = json.loads(resources.files("echomq").joinpath("library.json").read_text("utf-8"))
    scripts = {
        n: Script(n, list(s["keys"]), s["sha"], s.get("functionName"), s["source"])
        for n, s in raw["scripts"].items()
    }
    return Library(raw["libraryName"], raw["libraryTag"], int(raw["layoutVersion"]),
                   dict(raw["codes"]), raw["library"], scripts)


def code(name: str) -> int:
    """A script status code by its name in the artifact's codes table."""
    return library().codes[name]

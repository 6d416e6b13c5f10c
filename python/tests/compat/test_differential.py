"""Differential tests against PyPI bullmq 3.0.4, the way test/compat/ runs bullmq on Node: the
same scenario (scenario.py) under both packages, each on its own queue of one Redis, and the
observations compared. The differences allowed are listed here, each a deliberate one
(docs/python.md, "What differs from BullMQ Python")."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BULLMQ_PY = HERE.parents[1] / ".venv-bullmq" / "bin" / "python"


def bullmq_python() -> str:
    if not BULLMQ_PY.exists():
        if os.environ.get("ECHOMQ_REQUIRE_BULLMQ") == "1":
            pytest.fail(f"{BULLMQ_PY} is missing (bash scripts/python-test.sh makes it)")
        pytest.skip("bullmq 3.0.4 environment not installed")
    return str(BULLMQ_PY)


def run(python: str, lib: str, url: str, scenario: str) -> dict:
    q = f"diff-{lib}-{uuid.uuid4().hex[:8]}"
    out = subprocess.run([python, str(HERE / "scenario.py"), lib, url, q, scenario],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def without_zero_delay(view):
    # job.opts: BullMQ Python shows delay 0 for every job; echomq (Node and Python alike) shows
    # only a delay that was given, as Node BullMQ's job.opts does.
    if isinstance(view, dict) and isinstance(view.get("opts"), dict) and view["opts"].get("delay") == 0:
        view = {**view, "opts": {k: x for k, x in view["opts"].items() if k != "delay"}}
    return view


def normalise(obs: dict) -> dict:
    o = dict(obs)
    for k in ("jobs",):
        if k in o:
            o[k] = [without_zero_delay(j) for j in o[k]]
    if "job" in o:
        o["job"] = without_zero_delay(o["job"])
    if isinstance(o.get("failedReason"), str) and o["failedReason"].startswith('"'):
        # BullMQ Python 3.0.4 stores failedReason JSON-encoded; echomq stores the text, as Node does.
        o["failedReason"] = json.loads(o["failedReason"])
    return o


@pytest.mark.parametrize("scenario", ["add", "process", "retry", "unrecoverable"])
def test_same_observations_as_bullmq(redis_url, scenario):
    theirs = run(bullmq_python(), "bullmq", redis_url, scenario)
    ours = run(sys.executable, "echomq", redis_url, scenario)
    if scenario == "unrecoverable":
        assert theirs["failedReason"] == '"fatal"' and ours["failedReason"] == "fatal"
    assert normalise(ours) == normalise(theirs)

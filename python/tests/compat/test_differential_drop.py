"""Differential tests of the drop-in surface against PyPI bullmq 3.0.4: scenario_drop.py under
both packages on one Redis (separate queues), observations compared. Fails, not skips, without
the bullmq environment when ECHOMQ_REQUIRE_BULLMQ=1 (CI: scripts/python-test.sh)."""
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_differential import bullmq_python  # noqa: E402

HERE = Path(__file__).resolve().parent


def run(python: str, lib: str, url: str, scenario: str) -> dict:
    q = f"drop-{lib}-{uuid.uuid4().hex[:8]}"
    out = subprocess.run([python, str(HERE / "scenario_drop.py"), lib, url, q, scenario],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("scenario", ["upkeep", "manual", "schedulers", "flows", "dedup", "events_producer", "error_codes"])
def test_drop_in_same_as_bullmq(redis_url, scenario):
    theirs = run(bullmq_python(), "bullmq", redis_url, scenario)
    ours = run(sys.executable, "echomq", redis_url, scenario)
    assert ours == theirs

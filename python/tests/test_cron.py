"""The shared cron table (test/fixtures/cron-cases.json, also run by test/cron-parity.test.ts):
the Python client computes the same next slot as Node's cron-parser."""
import json
from pathlib import Path

import pytest

from echomq.cron import next_cron_slot

CASES = json.loads((Path(__file__).resolve().parents[2] / "test" / "fixtures" / "cron-cases.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[f"{c['pattern']}|{c['tz']}|{c['after']}" for c in CASES])
def test_same_next_slot_as_node(case):
    assert next_cron_slot(case["pattern"], case["tz"], case["after"]) == case["next"]


def test_table_covers_the_hard_cases():
    pats = " ".join(c["pattern"] for c in CASES)
    assert all(tok in pats for tok in ("L", "#", "W", "?")) and any(len(c["pattern"].split()) == 6 for c in CASES)
    assert any(c["next"] is None for c in CASES)
    zones = {c["tz"] for c in CASES}
    assert {"Europe/Berlin", "Europe/London", "America/New_York"} <= zones

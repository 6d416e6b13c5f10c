"""docs/migrating-from-bullmq-python.md against python/bullmq-python-names.txt: one row per name;
a row marked same or differs names something echomq's package has (same: the same parameter
names); and the committed list is scripts/bullmq-python-names.py's output when bullmq is
installed (the bullmq 3.0.4 environment, python/.venv-bullmq; required when ECHOMQ_REQUIRE_BULLMQ=1)."""
import os
import re
import subprocess
from collections import Counter

import pytest

from names_check import NAMES, ROOT, listed, resolve

DOC = ROOT / "docs" / "migrating-from-bullmq-python.md"
ROW = re.compile(r"^\| `([^`]+)` \| (same|differs|not yet) \|(.*)\|\s*$")
BULLMQ_PY = ROOT / "python" / ".venv-bullmq" / "bin" / "python"


def rows():
    out = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            out.append((m.group(1), m.group(2), m.group(3).strip()))
    return out


def test_every_listed_name_has_exactly_one_row():
    names = [n for n, _ in listed()]
    assert len(names) == len(set(names)), "the list repeats a name"
    counts = Counter(n for n, _, _ in rows())
    assert {n: c for n, c in counts.items() if c != 1} == {}
    assert sorted(set(names) - set(counts)) == [], "names without a row"
    assert sorted(set(counts) - set(names)) == [], "rows for names not in the list"


def test_same_and_differs_rows_name_what_echomq_has():
    params = dict(listed())
    for name, status, note in rows():
        ok, ours = resolve(name)
        if status == "not yet":
            assert not ok, f"{name} exists on echomq; its row says not yet"
            assert note, f"{name}: a not-yet row says why"
            continue
        assert ok, f"{name} is marked {status} but echomq has no such name"
        if status == "differs":
            assert note, f"{name}: a differs row says how and why"
        elif params[name] is not None:
            assert ours == params[name], f"{name}: BullMQ Python's parameters {params[name]}, echomq's {ours}"


def test_counts_line_matches_the_table():
    c = Counter(s for _, s, _ in rows())
    line = f"Counts: {c['same']} same, {c['differs']} differs, {c['not yet']} not yet ({sum(c.values())} names)."
    assert line in DOC.read_text(encoding="utf-8")


def test_list_is_the_scripts_output_for_the_installed_package():
    if not BULLMQ_PY.exists():
        if os.environ.get("ECHOMQ_REQUIRE_BULLMQ") == "1":
            pytest.fail(f"{BULLMQ_PY} is missing (bash scripts/python-test.sh makes it)")
        pytest.skip("bullmq 3.0.4 environment not installed")
    out = subprocess.run([str(BULLMQ_PY), str(ROOT / "scripts" / "bullmq-python-names.py")],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out == NAMES.read_text(encoding="utf-8")

"""The library's guards through the Python bindings: a refusal {code, position} of add.lua
(BAD_ID, BAD_LANE, BAD_ARGUMENT) becomes a ValidationError naming the argument, and nothing is
written (DUMP of every key of the queue before and after). test/guards.test.ts calls the
scripts from a raw client; these check the Python mapping of the same codes."""
from __future__ import annotations

import pytest

from echomq import Queue, scripts
from echomq.errors import ValidationError, error_from_code
from echomq.library import library
from echomq.runner import Runner


async def _dump_all(r, q):
    # Reads finish an incremental rehash of a hashtable-encoded hash (meta), whose DUMP would
    # otherwise list the same fields in another order.
    for _ in range(32):
        await r.hget(q.keys.meta, "id")
    out = {}
    async for k in r.scan_iter(match=q.keys.base.replace("[", "\\[") + "*", count=1000):
        out[k] = await r.dump(k)
    return out


def _job(**over):
    a = dict(id="", name="n", data="{}", opts="", priority=0, lane="default", delay=0, lifo=False,
             keep_completed=(-1, 0), keep_failed=(-1, 0))
    a.update(over)
    return scripts.AddJob(**a)


@pytest.mark.parametrize("over, field, code", [
    ({"id": "77"}, "add jobs[0].id (ARGV[19])", "BAD_ID"),
    ({"id": "~" * 72}, "add jobs[0].id (ARGV[19])", "BAD_ID"),
    ({"lane": ""}, "add records[0].lane (ARGV[6])", "BAD_LANE"),
    ({"id": "x", "delay": "soon"}, "add records[0].delay (ARGV[7])", "BAD_ARGUMENT"),
])
async def test_add_refusal_is_a_validation_error(conn, qname, r, over, field, code):
    q = Queue(qname, {"connection": conn})
    try:
        await q.add("a", {"n": 1})
        before = await _dump_all(r, q)
        with pytest.raises(ValidationError) as ei:
            await scripts.add(q.runner, [_job(**over)])
        assert ei.value.field == field
        assert library().codes[code] in (-14, -15, -16)
        assert await _dump_all(r, q) == before
    finally:
        await q.close()


def test_error_from_code_maps_the_guard_codes():
    for name in ("BAD_ID", "BAD_LANE", "BAD_ARGUMENT"):
        assert isinstance(error_from_code(library().codes[name], "moveToLane", "7"), ValidationError)


async def test_flow_root_with_children_and_deduplication_is_refused_before_any_write(conn, qname, r):
    """addFlow.lua has no deduplication pair: the client refuses it first (as Node does), where it
    used to send one that the script read as its request id."""
    from echomq import FlowProducer
    fp = FlowProducer({"connection": conn})
    try:
        with pytest.raises(ValidationError) as ei:
            await fp.add({"name": "p", "queueName": qname, "opts": {"deduplication": {"id": "d1"}},
                          "children": [{"name": "c", "queueName": qname}]})
        assert str(ei.value).startswith("Deduplication options cannot be used on flow nodes with children")
        assert [k async for k in r.scan_iter(match=f"*{qname}*")] == []
    finally:
        await fp.close()

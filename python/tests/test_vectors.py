"""Runs every test vector (test/vectors/*.json, written by scripts/test-vectors.mjs) against the
real server from Python, with the library artifact echomq/library.json and nothing else of the
package: each step's exact KEYS and ARGV, its reply, and every key of the queue afterwards, byte
for byte except the placeholders (docs/protocol.md "Writing a client"). test/vectors.test.ts runs
the same files from Node."""
from __future__ import annotations

import asyncio
import json
import re
import secrets
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError

ROOT = Path(__file__).resolve().parents[2]
VECTORS = sorted((ROOT / "test" / "vectors").glob("*.json"))
LIB = json.loads((ROOT / "python" / "echomq" / "library.json").read_text("utf-8"))
PLACEHOLDER = re.compile(r"\$\{t(\d+)(?:\+(\d+))?\}")

Window = Optional[Tuple[int, int]]


async def redis_ms(c) -> int:
    s, us = await c.execute_command("TIME")
    return int(s) * 1000 + int(us) // 1000


async def run_step(c, step: Dict[str, Any]) -> Any:
    """FCALL for the library's transitions (loading the library when missing), else EVALSHA/EVAL."""
    try:
        if "redis" in step:
            return await c.execute_command(*step["redis"])
        s = LIB["scripts"][step["call"]]
        keys, argv = step["keys"], step["argv"]
        if s["functionName"]:
            try:
                return await c.execute_command("FCALL", s["functionName"], len(keys), *keys, *argv)
            except aioredis.ResponseError as e:
                if "Function not found" not in str(e):
                    raise
                await c.execute_command("FUNCTION", "LOAD", "REPLACE", LIB["library"])
                return await c.execute_command("FCALL", s["functionName"], len(keys), *keys, *argv)
        try:
            return await c.execute_command("EVALSHA", s["sha"], len(keys), *keys, *argv)
        except NoScriptError:  # NOSCRIPT
            return await c.execute_command("EVAL", s["source"], len(keys), *keys, *argv)
    except aioredis.ResponseError as e:
        return {"error": str(e)}


async def read_store(c, q: str) -> Dict[str, Any]:
    keys = sorted([k async for k in c.scan_iter(match=f"emq:{{{q}}}:*", count=1000)])
    out: Dict[str, Any] = {}
    for k in keys:
        t = await c.type(k)
        if t == "hash":
            value: Any = await c.hgetall(k)
        elif t == "zset":
            # Through EVAL: the reply as Redis sends it, without redis-py's parsing of scores.
            r = await c.execute_command("EVAL", "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", 1, k)
            value = [[r[i], r[i + 1]] for i in range(0, len(r), 2)]
        elif t == "list":
            value = await c.lrange(k, 0, -1)
        elif t == "set":
            value = sorted(await c.smembers(k))
        elif t == "string":
            value = await c.get(k)
        elif t == "stream":
            # Through EVAL: a shared entry repeats `jobId`, which redis-py's dict of fields would merge.
            r = await c.execute_command("EVAL", "return redis.call('XRANGE', KEYS[1], '-', '+')", 1, k)
            value = [{"id": e[0], "fields": e[1]} for e in r]
        else:
            value = None
        if k.startswith(f"emq:{{{q}}}:req:") and isinstance(value, str):
            value = json.loads(value)  # cjson's key order is unspecified: compared as JSON
        out[k] = {"type": t, "value": value}
    return out


def match_text(expected: str, actual: str, windows: List[Window]) -> bool:
    if "${t" not in expected:
        return expected == actual
    pattern, spans, last = "", [], 0
    for m in PLACEHOLDER.finditer(expected):
        pattern += re.escape(expected[last:m.start()]) + r"(\d+)"
        w = windows[int(m.group(1))]
        x = int(m.group(2) or 0)
        spans.append((w[0] + x, w[1] + x))
        last = m.end()
    tail = expected[last:]
    pattern += r"-\d+" if tail == "-*" else re.escape(tail)
    got = re.fullmatch(pattern, actual)
    return got is not None and all(lo <= int(got.group(i + 1)) <= hi for i, (lo, hi) in enumerate(spans))


def compare(expected: Any, actual: Any, windows: List[Window], at: str, out: List[str]) -> None:
    if isinstance(expected, str):
        if not isinstance(actual, str) or not match_text(expected, actual, windows):
            out.append(f"{at}: expected {expected!r}, got {actual!r}")
    elif isinstance(expected, dict) and set(expected) == {"int"}:
        if not isinstance(actual, int) or not match_text(expected["int"], str(actual), windows):
            out.append(f"{at}: expected the integer {expected['int']}, got {actual!r}")
    elif isinstance(expected, dict) and set(expected) == {"hgetall"}:
        if not isinstance(actual, list) or len(actual) % 2:
            out.append(f"{at}: expected a field list, got {actual!r}")
            return
        compare(expected["hgetall"], {actual[i]: actual[i + 1] for i in range(0, len(actual), 2)}, windows, at, out)
    elif isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            out.append(f"{at}: expected {expected!r}, got {actual!r}")
            return
        for i, e in enumerate(expected):
            compare(e, actual[i], windows, f"{at}[{i}]", out)
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or sorted(expected) != sorted(actual):
            out.append(f"{at}: expected keys {sorted(expected)}, got {sorted(actual) if isinstance(actual, dict) else actual!r}")
            return
        for k in expected:
            compare(expected[k], actual[k], windows, f"{at}.{k}", out)
    elif isinstance(expected, bool) or type(expected) is not type(actual) or expected != actual:
        out.append(f"{at}: expected {expected!r}, got {actual!r}")


def subst(v: Any, q: str) -> Any:
    if isinstance(v, str):
        return v.replace("$Q", q)
    if isinstance(v, list):
        return [subst(x, q) for x in v]
    if isinstance(v, dict):
        return {subst(k, q): subst(x, q) for k, x in v.items()}
    return v


def test_there_are_vectors():
    names = {p.stem for p in VECTORS}
    assert len(VECTORS) >= 60
    for n in ("add-plain", "add-bulk", "add-priority", "add-lane", "add-delay", "add-lifo", "add-custom-id", "add-dedup",
              "claim", "complete-and-claim", "fail-retry", "fail-exhausted", "lease-renewal", "stall-recovery",
              "delayed-promotion", "layout-check"):
        assert n in names


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
async def test_vector(redis_url, path):
    v = json.loads(path.read_text("utf-8"))
    q = f"vec{secrets.token_hex(6)}"
    c = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        windows: List[Window] = []
        diffs: List[str] = []
        for i, s in enumerate(v["steps"]):
            if "sleepMs" in s:
                await asyncio.sleep(s["sleepMs"] / 1000)
                windows.append(None)
                continue
            step = subst(s, q)
            before = await redis_ms(c)
            reply = await run_step(c, step)
            windows.append((before, await redis_ms(c)))
            compare(subst(s["reply"], q), reply, windows, f"step {i} ({s.get('call') or s['redis'][0]}) reply", diffs)
        expected = subst(v["store"], q)
        for k, e in expected.items():
            if k.startswith(f"emq:{{{q}}}:req:") and isinstance(e["value"], str):
                e["value"] = json.loads(e["value"])
        compare(expected, await read_store(c, q), windows, "store", diffs)
        assert diffs == []
    finally:
        await c.aclose()

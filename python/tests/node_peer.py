"""Drives test/interop/node-peer.mjs: one long-lived Node process per session that runs the
Node client (from src/, through the repository's TypeScript hooks) on command."""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
PEER = REPO / "test" / "interop" / "node-peer.mjs"
HOOKS = REPO / "test" / "fixtures" / "register-ts.mjs"


def node_binary() -> Optional[str]:
    node = shutil.which("node")
    if node is None or not (REPO / "node_modules").exists():
        if os.environ.get("ECHOMQ_REQUIRE_NODE") == "1":
            pytest.fail("interop tests need Node and the repository's node_modules (npm ci)")
        return None
    return node


class NodePeer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._tags = itertools.count(1)
        self._waiters: Dict[str, asyncio.Future] = {}
        self.events: Dict[str, asyncio.Queue] = {}
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls) -> "NodePeer":
        node = node_binary()
        if node is None:
            pytest.skip("Node is not available")
        proc = await asyncio.create_subprocess_exec(
            node, "--import", str(HOOKS), str(PEER), cwd=str(REPO), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, limit=64 * 1024 * 1024)
        peer = cls(proc)
        hello = asyncio.get_running_loop().create_future()
        peer._waiters["hello"] = hello
        await asyncio.wait_for(hello, 60)
        return peer

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            msg = json.loads(line)
            tag = msg.get("tag")
            if "event" in msg:
                self.events.setdefault(tag, asyncio.Queue()).put_nowait(msg["event"])
                continue
            fut = self._waiters.pop(tag, None)
            if fut is not None and not fut.done():
                if "error" in msg:
                    fut.set_exception(RuntimeError(f"node peer: {msg['error']}"))
                else:
                    fut.set_result(msg.get("result"))

    async def call(self, op: str, timeout: float = 30, **args: Any) -> Any:
        tag = f"t{next(self._tags)}"
        fut = asyncio.get_running_loop().create_future()
        self._waiters[tag] = fut
        self.events.setdefault(tag, asyncio.Queue())
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"tag": tag, "op": op, **args}) + "\n").encode())
        await self.proc.stdin.drain()
        res = await asyncio.wait_for(fut, timeout)
        if op == "work":
            return tag
        return res

    async def next_event(self, tag: str, timeout: float = 10) -> Any:
        return await asyncio.wait_for(self.events[tag].get(), timeout)

    async def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except asyncio.TimeoutError:
            self.proc.kill()
        self._reader.cancel()

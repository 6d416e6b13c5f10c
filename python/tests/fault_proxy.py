"""A TCP proxy on loopback that loses replies the way a network does (as test/fault-proxy.ts):
it parses the RESP commands going to Redis and the replies coming back, and when its policy
says so it drops a reply (Redis already ran the command) and cuts the connection, so redis-py
reconnects and resends the command. No mocks: the commands run on the real test Redis."""
from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Awaitable, Callable, List, Optional, Tuple

SCRIPT_CALLS = (b"FCALL", b"FCALL_RO", b"EVALSHA", b"EVAL")
# Replies of scripts Redis did not have (they did not run): never dropped; the client sends the
# script again in full, and that reply is the one a policy can drop.
_NOT_RUN = (b"-NOSCRIPT", b"-ERR Function not found")


def _line(buf: bytes, pos: int) -> Optional[Tuple[bytes, int]]:
    end = buf.find(b"\r\n", pos)
    return None if end < 0 else (buf[pos:end], end + 2)


def parse(buf: bytes, pos: int = 0) -> Optional[Tuple[Any, int]]:
    """(value, end) of the RESP2/RESP3 value at pos, or None while it is incomplete."""
    ln = _line(buf, pos)
    if ln is None:
        return None
    head, p = ln
    t, rest = head[:1], head[1:]
    if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
        return rest, p
    if t in (b"$", b"=", b"!"):
        n = int(rest)
        if n < 0:
            return None, p
        if len(buf) < p + n + 2:
            return None
        return buf[p:p + n], p + n + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(rest)
        if n < 0:
            return None, p
        if t in (b"%", b"|"):
            n *= 2
        out: List[Any] = []
        for _ in range(n):
            r = parse(buf, p)
            if r is None:
                return None
            out.append(r[0])
            p = r[1]
        if t == b"|":  # an attribute precedes the real reply
            r = parse(buf, p)
            return None if r is None else (r[0], r[1])
        return out, p
    raise ValueError(f"not RESP: {head[:20]!r}")


Policy = Callable[[bytes, bytes], bool]


def every_nth(k: int, names: Tuple[bytes, ...] = SCRIPT_CALLS) -> Policy:
    """Drops the reply of every k-th command whose name is in `names` (script calls by default)."""
    n = [0]

    def policy(name: bytes, arg: bytes) -> bool:
        if name not in names:
            return False
        n[0] += 1
        return n[0] % k == 0
    return policy


def matching(pred: Callable[[bytes, bytes], bool], times: int = 1) -> Policy:
    """Drops the reply of the first `times` commands pred accepts."""
    left = [times]

    def policy(name: bytes, arg: bytes) -> bool:
        if left[0] > 0 and pred(name, arg):
            left[0] -= 1
            return True
        return False
    return policy


class FaultProxy:
    def __init__(self, host: str, port: int, policy: Optional[Policy] = None) -> None:
        self.host, self.port_up = host, port
        self.policy: Policy = policy or (lambda n, a: False)
        # Awaited when a reply is dropped, before the connection is cut: the client still waits
        # for that reply, so what it does lands between the first run and the resend.
        self.on_drop: Optional[Callable[[], Awaitable[Any]]] = None
        self.dropped = 0
        self.commands = 0
        self._server: Optional[asyncio.base_events.Server] = None
        self._conns: set = set()
        self._tasks: set = set()
        self.port = 0

    async def start(self) -> "FaultProxy":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._conns):
            w.close()
        if self._tasks:  # the pumps see their sockets closed and end
            await asyncio.wait(list(self._tasks), timeout=2)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            await self._pump(cr, cw)
        finally:
            self._tasks.discard(task)

    async def _pump(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection(self.host, self.port_up)
        except OSError:
            cw.close()
            return
        self._conns.update((cw, uw))
        sent: deque = deque()  # (name, first argument) of each command awaiting its reply

        def cut() -> None:
            cw.close()
            uw.close()

        async def up() -> None:
            buf = b""
            try:
                while True:
                    chunk = await cr.read(65536)
                    if not chunk:
                        break
                    buf += chunk
                    pos = 0
                    while True:
                        r = parse(buf, pos)
                        if r is None:
                            break
                        cmd, pos = r
                        name = bytes(cmd[0]).upper() if isinstance(cmd, list) and cmd else b""
                        arg = bytes(cmd[1]) if isinstance(cmd, list) and len(cmd) > 1 else b""
                        self.commands += 1
                        sent.append((name, arg))
                    uw.write(buf[:pos])
                    buf = buf[pos:]
                    await uw.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                cut()

        async def down() -> None:
            buf = b""
            try:
                while True:
                    chunk = await ur.read(65536)
                    if not chunk:
                        break
                    buf += chunk
                    pos = 0
                    out = b""
                    while True:
                        r = parse(buf, pos)
                        if r is None:
                            break
                        start, pos = pos, r[1]
                        cmd = sent.popleft() if sent else (b"", b"")
                        if not buf.startswith(_NOT_RUN, start) and self.policy(*cmd):
                            self.dropped += 1
                            if out:
                                cw.write(out)
                            if self.on_drop is not None:
                                await self.on_drop()
                            cut()
                            return
                        out += buf[start:pos]
                    buf = buf[pos:]
                    if out:
                        cw.write(out)
                        await cw.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                cut()

        try:
            await asyncio.gather(up(), down())
        finally:
            self._conns.discard(cw)
            self._conns.discard(uw)

"""`python -m echomq`: the command line of the Python package: `migrate-from-bullmq` and
`migrate-to-bullmq`, with the flags and reports of the Node CLI's (docs/operators.md)."""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import signal
import sys
from typing import Any, Dict, List, Optional

from .errors import EchoMQError
from .migrate import migrate_from_bullmq, migration_text
from .migrate_back import migrate_to_bullmq, migration_back_text


def _move_parser(sub: Any, name: str, help_text: str, workers: str, batch: str) -> argparse.ArgumentParser:
    """A migrate command's parser: the options both directions take."""
    m = sub.add_parser(name, help=help_text)
    m.add_argument("queues", nargs="+", metavar="queue")
    m.add_argument("--bullmq-prefix", default="bull", help="BullMQ's key prefix")
    m.add_argument("--dry-run", action="store_true", help="report what would move and what cannot, and why; change nothing")
    m.add_argument("--force", action="store_true", help=f"go on when the check for running {workers} workers cannot tell")
    m.add_argument("--batch", default=batch, help="jobs per script call (1..1000)")
    m.add_argument("--json", action="store_true", help="print JSON instead of text")
    return m


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m echomq", description="Operate echomq queues from Python.")
    p.add_argument("--redis", help="Redis URL (default: $REDIS_URL or redis://127.0.0.1:6379)")
    p.add_argument("--prefix", default="emq", help="key prefix of the queues")
    sub = p.add_subparsers(dest="command", required=True)
    m = _move_parser(sub, "migrate-from-bullmq", "move BullMQ queues' data into the echomq queues of the same names", "BullMQ", "50")
    m.add_argument("--follow", action="store_true", help="after the move, keep moving what BullMQ producers add and BullMQ workers finish, until SIGINT/SIGTERM")
    m.add_argument("--sweep", default="30000", help="with --follow: ms between sweeps when BullMQ writes no event")
    m.add_argument("--id-gap", default=None, help="echomq's id counter kept this far above BullMQ's (default with --follow: 1000000)")
    _move_parser(sub, "migrate-to-bullmq", "move echomq queues back into BullMQ 6's layout", "echomq", "100")
    return p


def _int(s: Optional[str]) -> Any:
    try:
        return None if s is None else int(s)
    except ValueError:
        return s  # passed on as given: validation names the field and the value


async def _follow(url: str, args: argparse.Namespace, batch: Any) -> Any:
    """migrate-from-bullmq with --follow (or --id-gap): SIGINT/SIGTERM end following."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def line(p: Dict[str, Any]) -> None:
        if p["moved"] == 0 and p["reason"] == "event":
            return
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        sys.stderr.write(f"{now} follow ({p['reason']}): moved {p['moved']}, {p['total']} in all; {p['left']} in BullMQ "
                         f"({p['heldByBullMQ']} held by BullMQ workers); {p['stats']['passes']} passes, {len(p['stats']['collisions'])} id collisions\n")
        sys.stderr.flush()

    kw: Dict[str, Any] = {"id_gap": _int(args.id_gap)} if args.id_gap is not None else {}
    if args.follow:
        kw.update(follow=True, stop=stop, sweep_ms=_int(args.sweep), on_pass=line)
    return await migrate_from_bullmq(url, args.queues, prefix=args.prefix, bullmq_prefix=args.bullmq_prefix,
                                     dry_run=args.dry_run, force=args.force, batch_size=batch, **kw)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    url = args.redis or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379"
    try:
        batch = int(args.batch)
    except ValueError:
        batch = args.batch  # passed on as given: validation names the field and the value
    try:
        if args.command == "migrate-from-bullmq" and (args.follow or args.id_gap is not None):
            report = asyncio.run(_follow(url, args, batch))
        else:
            move = migrate_to_bullmq if args.command == "migrate-to-bullmq" else migrate_from_bullmq
            report = asyncio.run(move(url, args.queues, prefix=args.prefix, bullmq_prefix=args.bullmq_prefix,
                                      dry_run=args.dry_run, force=args.force, batch_size=batch))
    except (EchoMQError, OSError) as err:
        sys.stderr.write(f"echomq: {err}\n")
        return 1
    as_text = migration_back_text if args.command == "migrate-to-bullmq" else migration_text
    sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n" if args.json else as_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

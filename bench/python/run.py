"""The Python benchmark: echomq's Python client against BullMQ Python 3.0.4 in one run,
alternated phase by phase, medians of 3, with Redis commands and Redis CPU per job from INFO
commandstats / INFO cpu deltas around the timed part (as bench/lib does); echomq's Node worker
beside them for the worker phases. Starts its own redis-server.

Usage: python/.venv/bin/python bench/python/run.py [--jobs N] [--rounds R]"""
import argparse
import json
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]
PY = {"echomq": ROOT / "python/.venv/bin/python", "bullmq": ROOT / "python/.venv-bullmq/bin/python"}
PHASES = ["add", "bulk", "work1", "work10", "work50"]


def start_redis():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = tempfile.mkdtemp()
    p = subprocess.Popen([shutil.which("redis-server"), "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    return p, f"redis://127.0.0.1:{port}", r


def stats(r):
    cs = r.info("commandstats")
    calls = sum(v["calls"] for k, v in cs.items() if k not in ("cmdstat_info",))
    cpu = r.info("cpu")
    return calls, cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def one(kind, url, r, phase, n):
    q = f"bench-{uuid.uuid4().hex[:8]}"
    if kind == "node":
        cmd = ["node", "--import", str(ROOT / "test/fixtures/register-ts.mjs"), str(ROOT / "bench/python/node_worker.mjs"), url, q, phase, str(n)]
    else:
        cmd = [str(PY[kind]), str(ROOT / "bench/python/client.py"), kind, url, q, phase, str(n)]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert p.stdout.readline().strip() == "READY"
    c0, u0 = stats(r)
    p.stdin.write("go\n"); p.stdin.flush()
    ms = json.loads(p.stdout.readline())["ms"]
    c1, u1 = stats(r)
    p.stdin.write("end\n"); p.stdin.flush()
    p.wait(60)
    r.flushall()
    return {"jobs_s": n / (ms / 1000), "cmds": (c1 - c0 - 2) / n, "cpu_us": (u1 - u0) * 1e6 / n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    proc, url, r = start_redis()
    rows = {}
    try:
        for phase in PHASES:
            kinds = ["echomq", "bullmq"] + (["node"] if phase.startswith("work") else [])
            res = {k: [] for k in kinds}
            for i in range(a.rounds):
                for k in (kinds if i % 2 == 0 else list(reversed(kinds))):  # alternated
                    res[k].append(one(k, url, r, phase, a.jobs))
            rows[phase] = {k: {m: statistics.median(x[m] for x in v) for m in ("jobs_s", "cmds", "cpu_us")} for k, v in res.items()}
    finally:
        proc.terminate()
    names = {"add": "add single (100 in flight)", "bulk": "addBulk (100 a call)", "work1": "process, concurrency 1",
             "work10": "process, concurrency 10", "work50": "process, concurrency 50"}
    print(f"jobs {a.jobs}, medians of {a.rounds}; jobs/s, Redis commands per job, Redis CPU µs per job")
    print("| phase | echomq (Python) | bullmq 3.0.4 | ratio | echomq Node worker |")
    print("|---|---|---|---|---|")
    for phase, row in rows.items():
        e, b = row["echomq"], row["bullmq"]
        nd = row.get("node")
        fmt = lambda x: f"{x['jobs_s']:.0f}/s, {x['cmds']:.2f} cmd, {x['cpu_us']:.1f} µs"
        print(f"| {names[phase]} | {fmt(e)} | {fmt(b)} | {e['jobs_s'] / b['jobs_s']:.2f}× | {fmt(nd) if nd else '–'} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()

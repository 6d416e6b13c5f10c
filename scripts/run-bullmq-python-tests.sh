#!/usr/bin/env bash
# Runs a copy of BullMQ Python's own tests (made by hand OUTSIDE this repository, e.g.
# `git -C <bullmq repo> archive vpy3.0.4 python/tests | tar x -C /tmp/bullmq-py-tests`) against
# echomq or bullmq. Fetches nothing. The tests use localhost:6379 and FLUSHDB, so they run in a
# private network namespace (unshare -n; needs root) with a throwaway redis-server of their own.
# usage: scripts/run-bullmq-python-tests.sh <tests dir> <python> [--echomq] [pytest args...]
#   --echomq: rewrite the copy's imports from bullmq to echomq first (in place, only the imports),
#   and replace its conftest (BullMQ's Postgres switch) with an empty one.
set -euo pipefail
DIR=$(cd "$1" && pwd); PY=$2; shift 2
if [ "${1:-}" = "--echomq" ]; then
  shift
  echo '"""Empty: the original conftest switches BullMQ to Postgres."""' > "$DIR/conftest.py"
  sed -i -E 's/\bfrom bullmq\.([a-z_]+)/from echomq.\1/; s/\bfrom bullmq import/from echomq import/;
    s/^import bullmq\.custom_errors$/import echomq.custom_errors/; s/^import bullmq$/import echomq as bullmq, echomq.custom_errors/' "$DIR"/*.py
fi
exec unshare -n bash -c '
ip link set lo up
D=$(mktemp -d)
redis-server --port 6379 --bind 127.0.0.1 --save "" --appendonly no --dir "$D" >/dev/null 2>&1 &
RP=$!
for i in $(seq 50); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
cd "$0"
"$1" -m pytest -p no:cacheprovider --timeout 10 -q -rA --tb=line "${@:2}"
rc=$?
kill $RP; rm -rf "$D"; exit $rc' "$DIR" "$PY" "$@"

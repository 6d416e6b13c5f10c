#!/usr/bin/env bash
# Runs the Python client's tests (python/tests) in python/.venv, made on first use with pip from
# PyPI. The README's `npm test` calls this; ECHOMQ_REQUIRE_NODE=1 makes the interop tests fail
# (not skip) when Node or node_modules is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=python/.venv
PY=${ECHOMQ_PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
# Reinstall only when the package's metadata changed (an editable install sees code changes).
stamp="$VENV/.installed-$(sha1sum python/pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  "$VENV/bin/pip" install -q -e './python[test]'
  touch "$stamp"
fi
# BullMQ Python 3.0.4 in its own environment (it pins its dependencies to exact versions): the
# differential tests (python/tests/compat) and the benchmark (bench/python) run it beside echomq.
BVENV=python/.venv-bullmq
if [ ! -x "$BVENV/bin/python" ]; then
  "$PY" -m venv "$BVENV"
  "$BVENV/bin/pip" install -q bullmq==3.0.4
fi
# --setup-only: make the environment and stop (.ci/run, before the Node tests that start Python).
if [ "${1:-}" = "--setup-only" ]; then exit 0; fi
export ECHOMQ_REQUIRE_NODE=1 ECHOMQ_REQUIRE_BULLMQ=1
exec "$VENV/bin/python" -m pytest -x -q -p no:cacheprovider python/tests "$@"

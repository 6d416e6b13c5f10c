#!/usr/bin/env bash
# Runs the Python client's tests (python/tests) in python/.venv, made on first use with pip from
# PyPI. The README's `npm test` calls this; ECHOMQ_REQUIRE_NODE=1 makes the interop tests fail
# (not skip) when Node or node_modules is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=python/.venv
PY=${ECHOMQ_PYTHON:-python3}
# Debian ships venv and ensurepip apart (python3-venv): as root on Debian, install it when missing,
# as the Node harness does for redis-server and Chromium.
if ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "[python] installing python3-venv with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
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
# Python 3.10, the oldest supported, when the machine has it: a second environment for a
# subset of the suite (the Node interop and differential tests run once, on the default).
PY310=""
for c in python3.10 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python3.10; do
  if "$c" -c "import venv, ensurepip" >/dev/null 2>&1; then PY310="$c"; break; fi
done
V310=python/.venv310
if [ -n "$PY310" ]; then
  if [ ! -x "$V310/bin/python" ]; then
    "$PY310" -m venv "$V310"
    "$V310/bin/pip" install -q --upgrade pip
  fi
  if [ ! -f "$V310/.installed-$(sha1sum python/pyproject.toml | cut -c1-12)" ]; then
    "$V310/bin/pip" install -q -e './python[test]'
    touch "$V310/.installed-$(sha1sum python/pyproject.toml | cut -c1-12)"
  fi
fi
# --setup-only: make the environment and stop (.ci/run, before the Node tests that start Python).
if [ "${1:-}" = "--setup-only" ]; then exit 0; fi
export ECHOMQ_REQUIRE_NODE=1 ECHOMQ_REQUIRE_BULLMQ=1
"$VENV/bin/python" -m pytest -x -q -p no:cacheprovider python/tests "$@"
if [ -n "$PY310" ]; then
  echo "[python] again on $("$V310/bin/python" --version): the client's own tests"
  (cd python && "../$V310/bin/python" -m pytest -x -q -p no:cacheprovider tests/test_validation.py tests/test_cron.py \
    tests/test_worker.py tests/test_queue.py tests/test_library.py tests/test_keys.py::test_job_keys_round_trip_with_any_id)
fi

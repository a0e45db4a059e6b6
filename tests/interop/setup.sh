#!/usr/bin/env bash
# Installs what the interop tests run: the official MCP SDKs and the MCP
# conformance suite (Node packages into tests/interop/node_modules, Python
# packages into tests/interop/.venv), from the package registries.
# Idempotent and safe to run from several test processes at once.
set -euo pipefail
cd "$(dirname "$0")"
exec 9>.setup.lock
flock 9
if [ ! -f .venv/.installed ] || ! cmp -s requirements.txt .venv/.installed; then
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  cp requirements.txt .venv/.installed
fi
if [ ! -f node_modules/.installed ] || ! cmp -s package-lock.json node_modules/.installed; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.installed
fi

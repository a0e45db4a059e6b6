#!/usr/bin/env bash
# Installs the real agent CLIs that run_claude.py drives (Claude Code, pinned
# in package.json / package-lock.json) into tests/interop/agents/node_modules
# from the npm registry. Its postinstall (install.cjs) copies the native
# binary of @anthropic-ai/claude-code-linux-x64 (an optional dependency, about
# 400 MB) over bin/claude.exe, so install scripts must run and optional
# dependencies must not be omitted. Idempotent and safe to run from several
# processes at once. Also needs tests/interop/setup.sh for py_server.py.
set -euo pipefail
cd "$(dirname "$0")"
exec 9>.setup.lock
flock 9
if [ ! -f node_modules/.installed ] || ! cmp -s package-lock.json node_modules/.installed \
   || ! node_modules/.bin/claude --version >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error --include=optional
  node_modules/.bin/claude --version
  cp package-lock.json node_modules/.installed
fi

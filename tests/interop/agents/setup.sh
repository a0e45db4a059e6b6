#!/usr/bin/env bash
# Installs the real agent CLIs that run_claude.py, run_codex.py and
# run_gemini.py drive (Claude Code, the OpenAI Codex CLI and the Gemini CLI,
# pinned in package.json /
# package-lock.json) into tests/interop/agents/node_modules from the npm
# registry. Claude Code's postinstall (install.cjs) copies the native binary
# of @anthropic-ai/claude-code-linux-x64 (an optional dependency, about
# 400 MB) over bin/claude.exe; @openai/codex's bin/codex.js runs the native
# binary of @openai/codex-linux-x64 (an optional dependency, an npm alias of
# @openai/codex@<version>-linux-x64, about 430 MB unpacked); @google/gemini-cli
# is a self-contained JS bundle (bundle/gemini.js, Node >= 20; its native
# optional dependencies, node-pty and keytar, are not needed by `gemini -p`). So install
# scripts must run and optional dependencies must not be omitted. Idempotent
# and safe to run from several processes at once. Also needs
# tests/interop/setup.sh for py_server.py.
set -euo pipefail
cd "$(dirname "$0")"
exec 9>.setup.lock
flock 9
if [ ! -f node_modules/.installed ] || ! cmp -s package-lock.json node_modules/.installed \
   || ! node_modules/.bin/claude --version >/dev/null 2>&1 \
   || ! node_modules/.bin/codex --version >/dev/null 2>&1 \
   || ! node_modules/.bin/gemini --version >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error --include=optional
  node_modules/.bin/claude --version
  node_modules/.bin/codex --version
  node_modules/.bin/gemini --version
  cp package-lock.json node_modules/.installed
fi

"""Runs run_claude.py for the standard tools of tests/interop/py_server.py,
either against the server directly or through `lro gateway`, and prints one
JSON line per run (the run_claude.py report, plus `case`) and then a table of
what reached the model.

    python matrix.py [--lro PATH/TO/lro] [--keep DIR] [--only NAME ...]

Needs tests/interop/setup.sh (the .venv) and `npm ci` in this directory.
Without --lro the runs go to the Python server directly (the baseline: what
Claude Code shows its model of an un-offloaded result); with --lro, through
`lro gateway --upstream <py_server>` with the JSONL files in a temp dir.
Everything listens on 127.0.0.1.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INTEROP = os.path.dirname(HERE)
PYTHON = os.path.join(INTEROP, ".venv", "bin", "python")

# name, tool, args, scenario
CASES = [
    ("records_text", "records_text", {"count": 300}, "bash"),
    ("records", "records", {"count": 3000}, "spill"),
    ("rows", "rows", {"count": 2000}, "spill"),
    ("records_nostruct_schema", "records_nostruct_schema", {"count": 300}, "call"),
    ("linked", "linked", {}, "call"),
]
# Through the gateway: read the file the descriptor names, then run recipe 1
# with Bash and with lro_extract.
GATEWAY_TURNS = [
    {"tool": "Bash", "input": {"command": "tail -n +2 {file_path} | head -n 2", "description": "peek"}, "optional": True},
    {"tool": "Bash", "input": {"command": "{recipe_1} | head -n 3", "description": "recipe 1"}, "optional": True},
    {"tool": "mcp__{server}__lro_extract", "input": {"file_path": "{file_path}", "recipe": 1}, "optional": True},
    {"text": "done"},
]


def start(argv: list, pattern: str, **kw) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **kw)
    for _ in range(20):
        line = proc.stdout.readline()
        m = re.search(pattern, line)
        if m:
            return proc, m.group(1)
        if not line:
            break
    proc.kill()
    sys.exit(f"{argv[0]} did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lro")
    ap.add_argument("--keep")
    ap.add_argument("--only", nargs="*")
    opts = ap.parse_args()
    procs = []
    try:
        py, port = start([PYTHON, os.path.join(INTEROP, "py_server.py"), "0"], r"LISTENING (\d+)")
        procs.append(py)
        url = f"http://127.0.0.1:{port}/mcp"
        server = "py"
        if opts.lro:
            out_dir = tempfile.mkdtemp(prefix="lro-gw-")
            gw, url = start(
                [opts.lro, "gateway", "--upstream", url, "--listen", "127.0.0.1:0", "--output-dir", out_dir],
                r"(http://127\.0\.0\.1:\d+/\S*)",
            )
            procs.append(gw)
            server = "lro"
        rows = []
        for name, tool, args, scenario in CASES:
            if opts.only and name not in opts.only:
                continue
            argv = [sys.executable, os.path.join(HERE, "run_claude.py"), "--http", url, "--server", server]
            if opts.keep:
                argv += ["--keep", os.path.join(opts.keep, name)]
            script = None
            if opts.lro:
                script = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
                json.dump({"turns": [{"tool": f"mcp__{{server}}__{tool}", "input": args}] + GATEWAY_TURNS}, script)
                script.close()
                argv += ["--script", script.name]
            else:
                argv += ["--tool", tool, "--args", json.dumps(args), "--scenario", scenario]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
            if script:
                os.unlink(script.name)
            try:
                report = json.loads(done.stdout)
            except ValueError:
                report = {"ok": False, "stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}
            report["case"] = name
            print(json.dumps(report), flush=True)
            for t in report.get("tool_results", []):
                if t["tool"] == "ToolSearch":
                    continue
                rows.append((name, t["tool"], t["bytes"], t["est_tokens_bytes_div_4"], t["is_error"], t["server_text"][:90]))
        print(f"{'case':24} {'tool':34} {'bytes':>7} {'~tok':>6} err  what the model saw (start)", file=sys.stderr)
        for r in rows:
            print(f"{r[0]:24} {r[1]:34} {r[2]:7} {r[3]:6} {'E' if r[4] else ' ':3}  {r[5]!r}", file=sys.stderr)
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()

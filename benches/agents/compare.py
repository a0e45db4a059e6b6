#!/usr/bin/env python3
"""End-to-end comparison of what Claude Code's model reads to answer questions
about a large MCP tool result: (a) Claude Code's own handling of large results
(no lro) against (b) the same server behind `lro gateway`.

    python3 benches/agents/compare.py --lro PATH/TO/lro [--out benches/agents/RESULTS.md]
                                      [--jobs 4] [--timeout 120] [--keep DIR]

Needs `tests/interop/setup.sh` (the Python MCP server's .venv),
`tests/interop/agents/setup.sh` (the real Claude Code CLI) and `jq` on PATH.
Everything listens on 127.0.0.1; the model is tests/interop/agents/model.py
(scripted), driven through tests/interop/agents/run_claude.py, one Claude
Code run per (case, question, variant). About 2-4 minutes on 2 cores.

Cases: the tools `records_text` (one JSON text block) and `rows` (structured
content {"rows", "total"}) of tests/interop/py_server.py at 300, 500 and 3000
records, i.e. the three ways Claude Code handles a result: inline (< ~50k
characters), "persisted-output" (a 2 KB preview and the path of the saved
file) and over its token limit ("Error: result ... exceeds maximum allowed
tokens. Output has been saved to PATH" with instructions to read the whole
file in sequential chunks).

For each case a probe run (the tool call only) shows how Claude Code handles
the result; the scripted model's reading in (a) then follows Claude Code's
own words:
  * inline: nothing more to read;
  * persisted-output: one `Read` of the saved file;
  * over the limit, plain text ("slice by character range (... dd ...)"):
    Bash `dd` slices of 30000 bytes (Claude Code's Bash output limit; a larger
    output is itself saved to a file), in order;
  * over the limit, JSON ("first probe the structure (e.g., jq 'type,
    length, keys?' FILE), then extract slices with jq"): that probe, then
    `jq -c '.KEY[i:j]'` slices of under 30000 characters, in order.
  Questions that need every record read the whole file (the instructions'
  "until 100% of the content has been read"); a lookup of one id stops at the
  slice that holds it. Whether the answer was derivable is checked by parsing
  the records out of everything the model read and computing the answer from
  them.
(a') is a second baseline, also Claude Code's own advice ("use jq if the
  content is JSON"): a peek at the saved file (`head -c 300`, or the jq probe
  the notice suggests), then ONE jq command on it answering the question
  (for an inline result (a') = (a)).
(b) through `lro gateway`: the descriptor, then ONE Bash command: a recipe of
  the descriptor (count by category) or a jq filter on its file_path; the jq
  output must equal the true answer.

Tokens are bytes/4 of every tool_result the model received in the run
(ToolSearch included, the same in every variant), system reminders included.
"Savings vs inline" compares (b) with the whole result shown inline (its own
size / 4: the text block for records_text, the compact structured content
for rows, which is what Claude Code shows).
"""

import argparse
import concurrent.futures
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AGENTS = os.path.join(ROOT, "tests", "interop", "agents")
INTEROP = os.path.join(ROOT, "tests", "interop")
PYTHON = os.path.join(INTEROP, ".venv", "bin", "python")
sys.path.insert(0, os.path.join(INTEROP, "agents"))
from matrix import start  # noqa: E402  (the agents' harness: a server started and its address read)
RUN_CLAUDE = os.path.join(AGENTS, "run_claude.py")
CLAUDE = os.path.join(AGENTS, "node_modules", ".bin", "claude")

BASH_CHUNK = 30000  # Claude Code shows Bash output up to 30000 characters inline
CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon"]
CASES = [("records_text", 300), ("records_text", 500), ("records_text", 3000),
         ("rows", 300), ("rows", 500), ("rows", 3000)]
DAY = "2026-01-15"


def make_records(count: int) -> list[dict]:
    """The records of tests/interop/py_server.py (checked against what Claude Code saved)."""
    return [
        {
            "id": f"rec_{i:04d}",
            "name": f"record number {i}",
            "category": CATEGORIES[(i * i) % len(CATEGORIES)],
            "value": (i * 37) % 101,
            "created": f"2026-01-{(i % 28) + 1:02d}T10:00:00Z",
        }
        for i in range(count)
    ]


def result_bytes(tool: str, records: list) -> int:
    """The result as Claude Code would show it inline."""
    if tool == "rows":
        return len(json.dumps({"rows": records, "total": len(records)}, separators=(",", ":")).encode())
    return len(json.dumps(records).encode())


def lookup_id(n: int) -> str:
    return f"rec_{(2 * n) // 3:04d}"


# Each question: key, text, whether it needs every record, python answer,
# jq filter over the record array (the same answer as canonical JSON), and
# for (b) optionally a recipe (by description) plus a normaliser of its output.
def questions(n: int) -> list[dict]:
    rid = lookup_id(n)
    return [
        {"key": "count_by_category", "text": "count per category", "all": True,
         "py": lambda rs: {c: sum(1 for r in rs if r["category"] == c) for c in sorted({r["category"] for r in rs})},
         "jq": "group_by(.category) | map({key: .[0].category, value: length}) | from_entries",
         "recipe": "count by category",
         "norm_recipe": lambda v: {x["category"]: x["count"] for x in v}},
        {"key": "value_of_id", "text": f"value of {rid}", "all": False, "id": rid,
         "py": lambda rs, rid=rid: next(r["value"] for r in rs if r["id"] == rid),
         "jq": f'map(select(.id == "{rid}")) | .[0].value'},
        {"key": "count_value_gt_90", "text": "records with value > 90", "all": True,
         "py": lambda rs: sum(1 for r in rs if r["value"] > 90),
         "jq": "map(select(.value > 90)) | length"},
        {"key": "top5_ids", "text": "ids of the 5 highest values (ties: id asc)", "all": True,
         "py": lambda rs: [r["id"] for r in sorted(rs, key=lambda r: (-r["value"], r["id"]))[:5]],
         "jq": "sort_by(-.value, .id) | .[:5] | map(.id)"},
        {"key": "name_of_id", "text": f"name of {rid}", "all": False, "id": rid,
         "py": lambda rs, rid=rid: next(r["name"] for r in rs if r["id"] == rid),
         "jq": f'map(select(.id == "{rid}")) | .[0].name'},
        {"key": "count_created_day", "text": f"records created on {DAY}", "all": True,
         "py": lambda rs: sum(1 for r in rs if r["created"].startswith(DAY)),
         "jq": f'map(select(.created | startswith("{DAY}"))) | length'},
    ]


RECORD_RE = re.compile(
    r'\{"id": ?"(rec_\d+)", ?"name": ?"([^"]*)", ?"category": ?"(\w+)", ?"value": ?(\d+), ?"created": ?"([^"]*)"\}'
)


def records_in(text: str) -> list[dict]:
    """Every whole record in what the model read (JSON escapes of a nested
    string undone), de-duplicated by id."""
    text = text.replace('\\"', '"')
    seen = {}
    for m in RECORD_RE.finditer(text):
        seen.setdefault(m.group(1), {"id": m.group(1), "name": m.group(2), "category": m.group(3),
                                     "value": int(m.group(4)), "created": m.group(5)})
    return list(seen.values())


def run_claude(url: str, server: str, turns: list, timeout: float, keep: str | None) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"turns": turns}, f)
        script = f.name
    argv = [sys.executable, RUN_CLAUDE, "--http", url, "--server", server, "--script", script,
            "--timeout", str(timeout)]
    if keep:
        argv += ["--keep", keep]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60)
        report = json.loads(done.stdout)
    except (subprocess.TimeoutExpired, ValueError) as e:
        report = {"ok": False, "error": repr(e)[:500], "tool_results": [], "spills": []}
    finally:
        os.unlink(script)
    return report


def mcp_turn(tool: str, n: int) -> dict:
    return {"tool": f"mcp__{{server}}__{tool}", "input": {"count": n}}


def bash(command: str, description: str) -> dict:
    return {"tool": "Bash", "input": {"command": command, "description": description}}


def classify(text: str) -> str:
    if "exceeds maximum allowed tokens" in text and "saved to" in text:
        if "first probe the structure" in text:
            return "spill-json"
        return "spill-text"
    if "<persisted-output>" in text:
        return "persisted"
    return "inline"


def array_prefix(doc) -> str:
    """The jq path to the record array in a file Claude Code saved (what a
    model sees from its peek)."""
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and doc[0].get("type") == "text":
        return ".[0].text | fromjson"
    if isinstance(doc, dict) and "rows" in doc:
        return ".rows"
    if isinstance(doc, dict) and isinstance(doc.get("result"), str):
        return ".result | fromjson"
    return "."


def probe(url: str, tool: str, n: int, timeout: float, keep: str) -> dict:
    """One run with the tool call only: how Claude Code handles the result,
    and the file it saved (read here to plan the reading and check the data)."""
    report = run_claude(url, "py", [mcp_turn(tool, n), {"text": "done"}], timeout, keep)
    texts = [t for t in report.get("tool_results", []) if t["tool"] != "ToolSearch"]
    text = texts[0]["text"] if texts else ""
    info = {"mode": classify(text), "notice_bytes": texts[0]["bytes"] if texts else 0, "ok": report.get("ok"),
            "notice": texts[0]["server_text"] if texts else ""}
    spills = report.get("spills") or []
    if spills:
        with open(spills[0]["path"], "rb") as f:
            raw = f.read()
        info["spill_bytes"] = len(raw)
        doc = json.loads(raw)
        info["prefix"] = array_prefix(doc)
        data = subprocess.run(["jq", "-c", info["prefix"]], input=raw, capture_output=True, check=True).stdout
        info["records_ok"] = json.loads(data) == make_records(n)
        info["raw"] = raw.decode()
        if "fromjson" not in info["prefix"]:
            width = max(len(json.dumps(r, separators=(",", ":"))) for r in json.loads(data)) + 1
            info["slice"] = max(1, (BASH_CHUNK - 100) // width)
    else:
        info["records_ok"] = records_in(text) == make_records(n)
    return info


def reading_turns(info: dict, tool: str, n: int, q: dict) -> list:
    """(a): what the model reads after the tool call, following Claude Code."""
    mode = info["mode"]
    if mode == "inline":
        return []
    if mode == "persisted":
        return [{"tool": "Read", "input": {"file_path": "{spill_path}"}}]
    raw = info["raw"]
    if mode == "spill-text" or "slice" not in info:
        end = len(raw.encode()) if q["all"] else raw.index(f'"{q["id"]}"') + 200
        chunks = math.ceil(min(end, len(raw.encode())) / BASH_CHUNK)
        return [bash(f"dd if={{spill_path}} bs={BASH_CHUNK} skip={k} count=1 2>/dev/null",
                     f"Read characters {k * BASH_CHUNK} to {(k + 1) * BASH_CHUNK} of the saved result")
                for k in range(chunks)]
    # spill-json: the probe the notice suggests, then jq slices of the array
    turns = [bash("jq 'type, length, keys?' {spill_path}", "Probe the structure of the saved result")]
    m = info["slice"]
    last = n if q["all"] else int(q["id"][4:]) + 1
    for a in range(0, last, m):
        path = "" if info["prefix"] == "." else info["prefix"]
        turns.append(bash(f"jq -c '{path}[{a}:{a + m}]' {{spill_path}}", f"Read records {a} to {a + m}"))
    return turns


def jq_turns(info: dict, q: dict) -> list:
    """(a'): a peek at the saved file, then one jq command answering q."""
    if info["mode"] == "inline":
        return []
    turns = []
    if info["mode"] == "spill-json":
        turns.append(bash("jq 'type, length, keys?' {spill_path}", "Probe the structure of the saved result"))
    elif info["mode"] == "spill-text":
        turns.append(bash("head -c 300 {spill_path}", "Peek at the saved result"))
    turns.append(bash(f"jq -c '{info['prefix']} | {q['jq']}' {{spill_path}}", q["text"]))
    return turns


def lro_turns(q: dict) -> list:
    if q.get("recipe"):
        return [bash(f"{{recipe~{q['recipe']}}}", q["text"])]
    return [bash(f"tail -n +2 {{file_path}} | jq -c -s '{q['jq']}'", q["text"])]


def tally(report: dict) -> dict:
    results = report.get("tool_results", [])
    total = sum(t["bytes"] for t in results)
    return {"bytes": total, "tokens": total // 4, "calls": len(results),
            "ok": bool(report.get("ok")), "skipped": report.get("script_skipped") or []}


def check_read(report: dict, q: dict, truth) -> tuple[bool, int]:
    """(a): is the answer derivable from everything the model read?"""
    read = "".join(t["server_text"] for t in report.get("tool_results", []) if t["tool"] != "ToolSearch")
    recs = records_in(read)
    try:
        answer = q["py"](recs)
    except StopIteration:
        answer = None
    return answer == truth, len(recs)


def check_jq(report: dict, q: dict, truth, recipe: bool) -> tuple[bool, str]:
    """(a') and (b): does the last command's output equal the true answer?"""
    results = [t for t in report.get("tool_results", []) if t["tool"] == "Bash"]
    if not results:
        return False, "no Bash result"
    out = results[-1]["server_text"].strip()
    try:
        value = json.loads(out)
        if recipe:
            value = q["norm_recipe"](value)
    except (ValueError, TypeError, KeyError):
        return False, out[:200]
    return value == truth, out[:200]


def short(value) -> str:
    s = json.dumps(value, separators=(",", ":"))
    return s if len(s) <= 60 else s[:57] + "..."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lro", required=True, help="the lro binary")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--jobs", type=int, default=4, help="Claude Code runs at once")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per Claude Code run")
    ap.add_argument("--keep", help="keep the probe runs and the lro files here")
    opts = ap.parse_args()
    for path, hint in ((PYTHON, "tests/interop/setup.sh"), (CLAUDE, "tests/interop/agents/setup.sh")):
        if not os.path.exists(path):
            sys.exit(f"{path} missing: run {hint}")
    if not shutil.which("jq"):
        sys.exit("jq is not on PATH")
    started = time.time()
    base = opts.keep or tempfile.mkdtemp(prefix="lro-compare-")
    os.makedirs(base, exist_ok=True)
    procs = []
    try:
        py, port = start([PYTHON, os.path.join(INTEROP, "py_server.py"), "0"], r"LISTENING (\d+)")
        procs.append(py)
        direct = f"http://127.0.0.1:{port}/mcp"
        out_dir = os.path.join(base, "lro-files")
        os.makedirs(out_dir, exist_ok=True)
        gw, gateway = start([opts.lro, "gateway", "--upstream", direct, "--listen", "127.0.0.1:0",
                             "--output-dir", out_dir], r"(http://127\.0\.0\.1:\d+/\S*)")
        procs.append(gw)

        infos = {}
        with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
            futs = {(tool, n): pool.submit(probe, direct, tool, n, opts.timeout, os.path.join(base, f"probe-{tool}-{n}"))
                    for tool, n in CASES}
            for key, fut in futs.items():
                infos[key] = fut.result()
                info = infos[key]
                print(f"probe {key}: {info['mode']} records_ok={info['records_ok']} "
                      f"spill_bytes={info.get('spill_bytes')}", file=sys.stderr, flush=True)

        jobs = []
        for tool, n in CASES:
            info = infos[(tool, n)]
            for q in questions(n):
                head = [mcp_turn(tool, n)]
                jobs.append(((tool, n, q["key"], "a"), direct, "py", head + reading_turns(info, tool, n, q) + [{"text": "done"}]))
                if info["mode"] != "inline":
                    jobs.append(((tool, n, q["key"], "a2"), direct, "py", head + jq_turns(info, q) + [{"text": "done"}]))
                jobs.append(((tool, n, q["key"], "b"), gateway, "lro", head + lro_turns(q) + [{"text": "done"}]))
        reports = {}
        with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
            futs = {key: pool.submit(run_claude, url, server, turns, opts.timeout, None) for key, url, server, turns in jobs}
            for i, (key, fut) in enumerate(futs.items(), 1):
                reports[key] = fut.result()
                print(f"[{i}/{len(futs)}] {key} ok={reports[key].get('ok')} "
                      f"bytes={tally(reports[key])['bytes']}", file=sys.stderr, flush=True)
    finally:
        for p in procs:
            p.kill()
            p.wait()

    rows = []
    for tool, n in CASES:
        info = infos[(tool, n)]
        records = make_records(n)
        inline = result_bytes(tool, records)
        for q in questions(n):
            truth = q["py"](records)
            ra, rb = reports[(tool, n, q["key"], "a")], reports[(tool, n, q["key"], "b")]
            a, b = tally(ra), tally(rb)
            a_ok, a_recs = check_read(ra, q, truth)
            b_ok, b_out = check_jq(rb, q, truth, bool(q.get("recipe")))
            desc = [t["bytes"] for t in rb.get("tool_results", []) if t["tool"] == f"mcp__lro__{tool}"]
            row = {"tool": tool, "n": n, "mode": info["mode"], "q": q["text"], "key": q["key"], "truth": truth,
                   "b_descriptor_bytes": desc[0] if desc else 0,
                   "a": a, "a_ok": a_ok, "a_records_read": a_recs, "b": b, "b_ok": b_ok, "b_out": b_out,
                   "inline_bytes": inline}
            if info["mode"] != "inline":
                ra2 = reports[(tool, n, q["key"], "a2")]
                row["a2"] = tally(ra2)
                row["a2_ok"], row["a2_out"] = check_jq(ra2, q, truth, False)
            else:
                row["a2"], row["a2_ok"] = a, a_ok
            rows.append(row)

    with open(os.path.join(base, "rows.json"), "w") as f:
        json.dump(rows, f, indent=1, default=str)
    elapsed = time.time() - started
    write_report(opts, rows, infos, elapsed, out_dir)
    print(open(opts.out).read())
    if not opts.keep:
        shutil.rmtree(base, ignore_errors=True)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def write_report(opts, rows: list, infos: dict, elapsed: float, out_dir: str) -> None:
    claude_v = subprocess.run([CLAUDE, "--version"], capture_output=True, text=True).stdout.strip()
    lro_v = subprocess.run([opts.lro, "--version"], capture_output=True, text=True).stdout.strip()
    mode_words = {"inline": "inline", "persisted": "persisted (2 KB preview + path)",
                  "spill-text": "over limit, saved (plain text)", "spill-json": "over limit, saved (JSON)"}
    L = []
    L.append("# Claude Code's own large-result handling vs `lro gateway`: tokens the model reads\n")
    L.append(f"Generated by `python3 benches/agents/compare.py --lro {opts.lro}` on "
             f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} "
             f"in {elapsed:.0f} s; {claude_v}, {lro_v}, default lro threshold (1600 tokens). "
             "The model is scripted (tests/interop/agents/model.py); Claude Code, the MCP server "
             "and lro are real. Method: see the header of compare.py.\n")
    L.append("* **(a)** Claude Code alone: the model reads what Claude Code tells it to read "
             "(inline result; or `Read` of the persisted file; or, over its limit, the whole saved "
             "file in sequential slices - `dd` for plain text, the suggested jq probe then `jq` slices "
             "for JSON - stopping early only for a lookup of one id).")
    L.append("* **(a')** Claude Code alone, taking the notice's other hint (\"use jq\"): a peek at "
             "the saved file, then one jq command (inline results: same as (a)).")
    L.append("* **(b)** `lro gateway`: the descriptor, then one jq command on its `file_path` "
             "(count per category: the descriptor's own recipe).")
    L.append("* tokens = bytes/4 of every tool_result the model received (ToolSearch and "
             "Claude Code's system reminders included). `ok` for (a): the answer computed from the "
             "records in what the model read equals the truth; for (a')/(b): the jq output equals "
             "the truth. `inline` = the whole result's own size / 4; savings = 1 - (b)/inline.")
    L.append("* Caveats: (a') ignores the notice's REQUIREMENTS (read 100% before any analysis) and "
             "needs the model to work out the file's layout from a peek; the lro descriptor carries the "
             "line schema and ready recipes. The descriptor's size grows with the length of the output "
             "directory's path, which it repeats 15 times (file_path, 10 recipes, 4 guidance examples); "
             f"here a {len(out_dir)}-character directory.\n")
    L.append("Cases (how Claude Code handled the result in the probe run; the data it saved "
             "was checked against the server's records):\n")
    L.append("| tool | records | Claude Code | result bytes | saved file bytes | data check | "
             "tool call's result in (a), bytes | lro descriptor in (b), bytes |")
    L.append("|---|---:|---|---:|---:|---|---:|---:|")
    for (tool, n), info in infos.items():
        desc = [r["b_descriptor_bytes"] for r in rows if (r["tool"], r["n"]) == (tool, n)]
        L.append(f"| {tool} | {n} | {mode_words[info['mode']]} | {result_bytes(tool, make_records(n))} | "
                 f"{info.get('spill_bytes', '-')} | {'ok' if info['records_ok'] else 'MISMATCH'} | "
                 f"{info['notice_bytes']} | {min(desc) if min(desc) == max(desc) else f'{min(desc)}-{max(desc)}'} |")
    L.append("")
    L.append("| tool | n | question | true answer | (a) calls | (a) bytes | (a) tok | (a) ok | "
             "(a') tok | (a') ok | (b) bytes | (b) tok | (b) ok | (a)/(b) | (a')/(b) | inline tok | (b) savings vs inline |")
    L.append("|---|---:|---|---|---:|---:|---:|---|---:|---|---:|---:|---|---:|---:|---:|---:|")
    for r in rows:
        a, a2, b = r["a"], r["a2"], r["b"]
        inline_tok = r["inline_bytes"] // 4
        L.append(f"| {r['tool']} | {r['n']} | {r['q']} | `{short(r['truth'])}` | {a['calls']} | {a['bytes']} | "
                 f"{a['tokens']} | {'yes' if r['a_ok'] else 'NO'} ({r['a_records_read']}/{r['n']} rec) | "
                 f"{a2['tokens']} | {'yes' if r['a2_ok'] else 'NO'} | {b['bytes']} | {b['tokens']} | "
                 f"{'yes' if r['b_ok'] else 'NO'} | {a['tokens'] / max(1, b['tokens']):.1f}x | "
                 f"{a2['tokens'] / max(1, b['tokens']):.1f}x | {inline_tok} | {pct(1 - b['tokens'] / inline_tok)} |")
    L.append("")
    L.append("Totals (per case and overall):\n")
    L.append("| tool | n | Claude Code | (a) tok | (a') tok | (b) tok | (a)/(b) | (a')/(b) | inline tok x6 | (b) savings vs inline | (a) ok | (a') ok | (b) ok |")
    L.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
    groups = [((t, n), [r for r in rows if (r["tool"], r["n"]) == (t, n)]) for t, n in infos] + [(("all", ""), rows)]
    for (t, n), rs in groups:
        ta = sum(r["a"]["tokens"] for r in rs)
        ta2 = sum(r["a2"]["tokens"] for r in rs)
        tb = sum(r["b"]["tokens"] for r in rs)
        ti = sum(r["inline_bytes"] // 4 for r in rs)
        mode = mode_words[infos[(t, n)]["mode"]] if (t, n) in infos else "-"
        L.append(f"| {t} | {n} | {mode} | {ta} | {ta2} | {tb} | {ta / max(1, tb):.1f}x | {ta2 / max(1, tb):.1f}x | "
                 f"{ti} | {pct(1 - tb / ti)} | {sum(r['a_ok'] for r in rs)}/{len(rs)} | "
                 f"{sum(r['a2_ok'] for r in rs)}/{len(rs)} | {sum(r['b_ok'] for r in rs)}/{len(rs)} |")
    failed = [r for r in rows if not (r["a"]["ok"] and r["b"]["ok"] and r["a2"]["ok"])
              or r["a"]["skipped"] or r["b"]["skipped"]]
    if failed:
        L.append("\nRuns that did not finish cleanly (exit code, timeout or skipped script turns):\n")
        for r in failed:
            L.append(f"* {r['tool']} {r['n']} {r['key']}: a={r['a']['ok']} {r['a']['skipped']} "
                     f"a'={r['a2']['ok']} b={r['b']['ok']} {r['b']['skipped']}")
    wrong = [r for r in rows if not r["b_ok"] or ("a2_out" in r and not r["a2_ok"])]
    if wrong:
        L.append("\njq outputs that did not match:\n")
        for r in wrong:
            L.append(f"* {r['tool']} {r['n']} {r['key']}: (b) `{r['b_out']}` (a') `{r.get('a2_out', '-')}`")
    L.append("\nWhat Claude Code told the model about the result (probe runs; paths shortened):\n")
    for mode in ("persisted", "spill-text", "spill-json"):
        for (tool, n), info in infos.items():
            if info["mode"] == mode:
                text = re.sub(r"/\S*/tool-results/", ".../tool-results/", info["notice"])
                if mode == "persisted":
                    text = text.split("Preview")[0] + "Preview (first 2KB): ..."
                L.append(f"{tool} {n}:\n\n```\n{text.strip()}\n```\n")
                break
    os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
    with open(opts.out, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()

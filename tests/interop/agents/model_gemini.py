"""A scripted Gemini API (Generative Language API, v1beta) endpoint on
127.0.0.1, standing in for the model of the Gemini CLI (pointed here with
GOOGLE_GEMINI_BASE_URL), so that a test can see from the model's side what
reached the model's context. Python stdlib only; the placeholder logic is
model.py's (imported, not copied).

    python model_gemini.py SCRIPT LOG [PORT]

SCRIPT is a JSON file (see below), LOG a JSONL file to which every request is
appended (path, whether it was a main-conversation request, the body as
received, the reply). PORT defaults to 0 (a free port). Once the socket
listens, the first line on stdout is `LISTENING <port>`.

Endpoints (what @google/genai, inside Gemini CLI, calls):
  POST /v1beta/models/MODEL:streamGenerateContent?alt=sse  SSE, one event:
       `data: {"candidates": [{"content": {"role": "model", "parts": [...]},
       "finishReason": "STOP"}], "usageMetadata": {...}}`
  POST /v1beta/models/MODEL:generateContent                the same object as JSON
  POST /v1beta/models/MODEL:countTokens                    {"totalTokens": N}
  anything else                                             {} (logged)

The script has model.py's form:

    {"turns": [
       {"tool": "mcp__lro__records", "input": {"count": 2000}},
       {"tool": "shell", "input": {"command": "{recipe~count by category}"}},
       {"tool": "mcp__lro__lro_extract", "input": {"file_path": "{file_path}", "slurp": true,
                                                   "query": "group_by(.category) | length"}},
       {"text": "done"}
     ]}

and the same placeholders (`{file_path}`, `{recipe_N}`, `{recipe~WORDS}`,
`{spill_path}`, `{last_result}`; see model.py), filled from the tool results
the request holds (the `functionResponse` parts of its `contents`: the
`response.output` string, else the response as JSON). Gemini CLI wraps the
text of every MCP text block in `<untrusted_context>\\n...\\n</untrusted_context>`
and joins the blocks with newlines; each wrapped block is taken as a text of
its own (so a descriptor's JSON parses as JSON). `{spill_path}` is also read
from Gemini CLI's own truncation notice ("... For full output see: PATH").
`"optional": true` skips a turn whose placeholders are missing.

Tool names, as Gemini CLI offers them (`tools[].functionDeclarations[].name`
of a logged request):
  * `"tool": "shell"` (or `"Bash"`, Claude Code's, its `description` kept):
    `run_shell_command` {"command": CMD, ...other keys}.
  * an MCP tool: write it `mcp__SERVER__TOOL` (Claude Code's spelling);
    Gemini CLI names it `mcp_SERVER_TOOL` (characters outside
    [A-Za-z0-9_.:-] replaced by `_`, cut to 63 characters). A name that is
    not offered is matched against the offered ones by that spelling, then
    by its last `__` part as a `_TOOL` suffix.

Each main-conversation request is answered by the next turn of the script,
keyed by how many `model` contents its `contents` already holds (so a retried
request gets the same answer). A request is a main-conversation request when
one of its function declarations is named with `main_tool_prefix` (default
`mcp_`) or is one of `main_tools` (default ["run_shell_command"]); others
(Gemini CLI's model routing classifier, next-speaker and loop checks,
summaries, ...) get a short answer ("{}" when a JSON response is asked for)
and do not advance the script. Once the script is over, the model says "done".
"""

import json
import re
import threading
import time
import uuid

from model import ScriptedHandler, fill, placeholders, serve

SHELL_TOOL = "run_shell_command"
UNTRUSTED_RE = re.compile(r"<untrusted_context>\n(.*?)\n</untrusted_context>", re.S)
GEMINI_SPILL_RE = re.compile(r"For full output see: (\S+)")


def response_text(response) -> str:
    """The text of a functionResponse's `response`, as the model reads it:
    `output` when it is a string, else the response as JSON."""
    if isinstance(response, dict) and isinstance(response.get("output"), str) and len(response) == 1:
        return response["output"]
    if isinstance(response, dict) and isinstance(response.get("error"), str) and len(response) == 1:
        return response["error"]
    return json.dumps(response)


def unwrap(text: str) -> list[str]:
    """The texts the model reads in one tool result: each
    `<untrusted_context>` block on its own (Gemini CLI's wrapper around an
    MCP text block), plus what stands outside them (a truncation notice, a
    shell result), in order."""
    out, pos = [], 0
    for m in UNTRUSTED_RE.finditer(text):
        if text[pos : m.start()].strip():
            out.append(text[pos : m.start()])
        out.append(m.group(1).replace("&lt;/untrusted_context&gt;", "</untrusted_context>"))
        pos = m.end()
    if text[pos:].strip() or not out:
        out.append(text[pos:])
    return out


def function_responses(contents: list) -> list[dict]:
    """Every functionResponse part of the contents, oldest first."""
    out = []
    for c in contents:
        for p in (c.get("parts") or []) if isinstance(c, dict) else []:
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
                out.append(p["functionResponse"])
    return out


def results_texts(contents: list) -> list[list[str]]:
    return [unwrap(response_text(fr.get("response"))) for fr in function_responses(contents)]


def offered_functions(body: dict) -> list[str]:
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            for d in t.get("functionDeclarations") or []:
                if isinstance(d, dict) and d.get("name"):
                    names.append(str(d["name"]))
    return names


def gemini_mcp_name(server: str, tool: str) -> str:
    """Gemini CLI's generateValidName(`${server}_${tool}`)."""
    name = f"{server}_{tool}"
    name = name if name.startswith("mcp_") else "mcp_" + name
    name = re.sub(r"[^a-zA-Z0-9_\-.:]", "_", name)
    if re.match(r"^[^a-zA-Z_]", name):
        name = "_" + name
    if len(name) > 63:
        name = name[:30] + "..." + name[-30:]
    return name


def translate(name: str, args: dict, offered: list[str]) -> tuple[str, dict]:
    """The script's tool call as Gemini CLI offers it: (name, args)."""
    if name in ("shell", "Bash") and isinstance(args.get("command"), str):
        return SHELL_TOOL, dict(args)
    if name in offered:
        return name, args
    if name.startswith("mcp__") and name.count("__") >= 2:
        server, tool = name[len("mcp__") :].split("__", 1)
        candidate = gemini_mcp_name(server, tool)
        if candidate in offered:
            return candidate, args
        tail = tool
    else:
        candidate, tail = name, name.rsplit("__", 1)[-1]
    matches = [o for o in offered if o.endswith("_" + tail)]
    if matches:
        return matches[0], args
    return candidate, args


def is_model_content(c) -> bool:
    return isinstance(c, dict) and c.get("role") == "model"


class Script:
    def __init__(self, path: str, log_path: str):
        with open(path) as f:
            spec = json.load(f)
        self.turns = spec.get("turns", [])
        self.prefix = spec.get("main_tool_prefix", "mcp_")
        self.main_tools = set(spec.get("main_tools", [SHELL_TOOL]))
        self.chars_per_token = float(spec.get("count_tokens_chars_per_token", 4))
        self.log_path = log_path
        self.lock = threading.Lock()
        self.chosen: dict[int, tuple[int, dict]] = {}  # model contents so far -> (script index, reply)

    def is_main(self, body: dict) -> bool:
        return any(n.startswith(self.prefix) or n in self.main_tools for n in offered_functions(body))

    def main_reply(self, body: dict) -> dict:
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        k = sum(1 for c in contents if is_model_content(c))
        with self.lock:
            if k in self.chosen:
                return self.chosen[k][1]
            start = k
            for j in range(k - 1, -1, -1):
                if j in self.chosen:
                    start = self.chosen[j][0] + 1
                    break
            texts = results_texts(contents)
            values = placeholders(texts)
            for group in texts:  # Gemini CLI's own truncation notice
                m = GEMINI_SPILL_RE.search("\n".join(group))
                if m:
                    values["spill_path"] = m.group(1)
            offered = offered_functions(body)
            index, part, skipped, missing = start, None, [], []
            while index < len(self.turns):
                turn = self.turns[index]
                missing = []
                if "tool" in turn:
                    filled = fill(turn.get("input", {}), values, missing)
                    if missing and turn.get("optional"):
                        skipped.append({"turn": index, "missing": missing})
                        index += 1
                        continue
                    name, args = translate(turn["tool"], filled, offered)
                    part = {"functionCall": {"id": "call_" + uuid.uuid4().hex[:16], "name": name, "args": args}}
                else:
                    part = {"text": fill(turn.get("text", "done"), values, missing)}
                break
            if part is None:
                part = {"text": "done"}
            reply = {"part": part, "script_turn": index, "skipped": skipped, "missing": missing}
            self.chosen[k] = (index, reply)
            return reply

    def log(self, record: dict) -> None:
        line = json.dumps(record)
        with self.lock, open(self.log_path, "a") as f:
            f.write(line + "\n")


USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}


def response_object(model: str, part: dict) -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": USAGE,
        "modelVersion": model,
        "responseId": uuid.uuid4().hex[:20],
    }


def sse(data: dict) -> bytes:
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


def raw_text(value) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(raw_text(v) for v in value)
    if isinstance(value, dict):
        return sum(raw_text(v) for v in value.values())
    return len(json.dumps(value)) if value is not None else 0


def count_tokens(body: dict, chars_per_token: float) -> int:
    """An estimate for :countTokens: the characters of the contents (as text)
    divided by `count_tokens_chars_per_token` (default 4)."""
    req = body.get("generateContentRequest") or body
    size = raw_text(req.get("contents", [])) + raw_text(req.get("systemInstruction", ""))
    size += len(json.dumps(req.get("tools", [])))
    return max(1, int(size / chars_per_token))


def wants_json(body: dict) -> bool:
    cfg = body.get("generationConfig") or {}
    return cfg.get("responseMimeType") == "application/json" or bool(
        cfg.get("responseSchema") or cfg.get("responseJsonSchema")
    )


class Handler(ScriptedHandler):
    def do_GET(self):
        self.script.log({"t": time.time(), "method": "GET", "path": self.path, "main": False})
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            self.send(200, b'{"models": []}', "application/json")
        else:
            self.send(404, b'{"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}',
                      "application/json")

    def do_POST(self):
        body, path, record = self.read_post()
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        method = path.rsplit(":", 1)[-1] if ":" in path.rsplit("/", 1)[-1] else ""
        if method == "countTokens":
            reply = {"totalTokens": count_tokens(body, self.script.chars_per_token)}
            record.update(main=False, reply=reply)
            self.script.log(record)
            self.send(200, json.dumps(reply).encode(), "application/json")
            return
        if method not in ("generateContent", "streamGenerateContent"):
            record.update(main=False, reply={})
            self.script.log(record)
            self.send(200, b"{}", "application/json")
            return
        if self.script.is_main(body):
            chosen = self.script.main_reply(body)
            part = chosen["part"]
            record.update(main=True, reply=chosen)
        else:
            part = {"text": "{}" if wants_json(body) else "ok"}
            record.update(main=False, reply={"part": part})
        self.script.log(record)
        obj = response_object(model, part)
        if method == "streamGenerateContent":
            self.send(200, sse(obj), "text/event-stream")
        else:
            self.send(200, json.dumps(obj).encode(), "application/json")


def main() -> None:
    serve(Handler, Script, "model_gemini.py")

if __name__ == "__main__":
    main()

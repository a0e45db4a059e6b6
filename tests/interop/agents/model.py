"""A scripted Anthropic Messages API endpoint on 127.0.0.1, standing in for
the model of a real agent CLI (Claude Code), so that a test can see from the
model's side what reached the model's context. Python stdlib only.

    python model.py SCRIPT LOG [PORT]

SCRIPT is a JSON file (see below), LOG a JSONL file to which every request is
appended (one line per request: path, whether it was a main-conversation
request, the body as received, and the reply the scripted model gave). PORT
defaults to 0 (a free port). Once the socket listens, the first line on
stdout is `LISTENING <port>`.

The script:

    {"turns": [
       {"tool": "mcp__py__records", "input": {"count": 3000}},
       {"tool": "Bash", "input": {"command": "wc -l {file_path}"}, "optional": true},
       {"tool": "mcp__lro__lro_extract", "input": {"file_path": "{file_path}", "recipe": 1}},
       {"text": "done"}
     ],
     "main_tool_prefix": "mcp__"}

Each main-conversation request is answered by the next turn of the script,
keyed by how many assistant messages it already holds (so a retried request
gets the same answer). A request is a main-conversation request when one of
its `tools` is named with `main_tool_prefix` (default `mcp__`) or is one of
`main_tools` (default ["ToolSearch"]: Claude Code defers MCP tools behind its
ToolSearch tool, so the main request may list none of them); every other
request (title and summary calls, quota checks, `count_tokens`, ...) gets a
harmless answer and does not advance the script. Once the script is over, the
model says "done". When a turn calls a tool that the request does not offer
but `ToolSearch` is offered, the model first calls ToolSearch with
`select:<tool>` (as a model would, to load the deferred tool's schema) and
plays the turn on the next request.

Placeholders in any string of a turn's input, filled from the tool results
the model received (the text of the `tool_result` blocks; for each
placeholder the latest result that holds a value wins, so a Bash call or a
ToolSearch between does not hide the descriptor):
  * `{file_path}`  the first `atlatl-<op>-<ULID>.jsonl` path written with its
                   directory (else the first bare file name, as a resource
                   link's name gives it);
  * `{recipe_N}`   the N-th recipe command (1-based): a `command` string
                   starting `tail -n +2` in the JSON of a block (also inside
                   JSON held in a string, e.g. {"result": "{...}"}), or else
                   the N-th line holding `tail -n +2 ... | jq ...`;
  * `{recipe~WORDS}` the first recipe whose description holds WORDS (lower
                   case), e.g. `{recipe~count by category}`;
  * `{spill_path}` the file to which the agent saved an over-long result
                   (Claude Code: "Output has been saved to PATH");
  * `{last_result}` the whole text of the last tool result.
A turn whose placeholders cannot be filled is skipped when it says
`"optional": true`; otherwise the placeholder is replaced by `MISSING:<name>`.
"""

import gzip
import json
import re
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FILE_RE = re.compile(r"atlatl-[a-z0-9_]+-[0-9A-Z]{26}\.jsonl")
# An absolute path: not the path part of a URI (lro://files/NAME, file:///...).
ABS_FILE_RE = re.compile(r"(?<![:/\w.\-])/(?:[\w.\-]+/)*atlatl-[a-z0-9_]+-[0-9A-Z]{26}\.jsonl")
SPILL_RE = re.compile(r"(?:saved to|written to|stored (?:at|in)):?\s*(/[^\s\"'`]+)", re.I)
RECIPE_LINE_RE = re.compile(r"tail -n \+2 .*?\| ?jq [^\n]*")
PLACEHOLDER_RE = re.compile(r"\{(file_path|spill_path|last_result|recipe_[0-9]+|recipe~[a-z0-9_ ]+)\}")


def block_text(block) -> str:
    """The text of one content block of a tool_result, as the model reads it."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return json.dumps(block)
    if block.get("type") == "text":
        return block.get("text", "")
    return json.dumps(block)


def tool_results_texts(messages: list) -> list[list[str]]:
    """For every user message holding tool_result blocks, oldest first: the
    text of each content block of those results, as the model reads them."""
    out = []
    for message in messages:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        texts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                texts += [block_text(x) for x in c] if isinstance(c, list) else [block_text(c or "")]
        if texts:
            out.append(texts)
    return out


def find_recipes(texts: list[str]) -> list[str]:
    """Recipe commands: `command` strings starting `tail -n +2` in the JSON of
    the blocks (in document order), else lines holding `tail -n +2 ... | jq`."""
    return [command for _, command in find_recipe_pairs(texts)]


def find_recipe_pairs(texts: list[str]) -> list[tuple[str, str]]:
    """(description, command) of each recipe, as find_recipes finds them
    (the description empty for a recipe found as a bare line)."""
    found: list[tuple[str, str]] = []

    def walk(value):
        if isinstance(value, dict):
            command = value.get("command")
            if isinstance(command, str) and command.startswith("tail -n +2"):
                found.append((str(value.get("description", "")), command))
                return
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
            try:
                walk(json.loads(value))
            except ValueError:
                pass

    for text in texts:
        try:
            value, _ = json.JSONDecoder().raw_decode(text.lstrip())
        except ValueError:
            continue
        walk(value)
    if not found:
        for text in texts:
            found += [("", m.group(0).rstrip()) for m in RECIPE_LINE_RE.finditer(text)]
    return found


def find_file_path(texts: list[str]) -> str | None:
    """The first offload file path, preferring one written with its directory
    (a resource link's name is the bare file name)."""
    absolute = [m.group(0) for t in texts for m in ABS_FILE_RE.finditer(t)]
    bare = [m.group(0) for t in texts for m in FILE_RE.finditer(t)]
    return (absolute or bare or [None])[0]


def placeholders(results: list[list[str]]) -> dict:
    """Placeholder values from the tool results, the latest result that has a
    value winning (so a Bash peek between does not hide the descriptor)."""
    values: dict = {}
    for texts in results:
        joined = "\n".join(texts)
        values["last_result"] = joined
        path = find_file_path(texts)
        if path:
            values["file_path"] = path
        m = SPILL_RE.search(joined)
        if m:
            values["spill_path"] = m.group(1).rstrip(".,;:)")
        recipes = find_recipe_pairs(texts)
        if recipes:
            values = {k: v for k, v in values.items() if not k.startswith("recipe")}
            for i, (description, r) in enumerate(recipes, start=1):
                values[f"recipe_{i}"] = r
                values.setdefault("descriptions", []).append((description.lower(), r))
    return values


def fill(value, values: dict, missing: list):
    if isinstance(value, str):
        def sub(m):
            name = m.group(1)
            if name.startswith("recipe~"):
                words = name[len("recipe~"):]
                for description, command in values.get("descriptions", []):
                    if words in description:
                        return command
            if name in values:
                return values[name]
            missing.append(name)
            return f"MISSING:{name}"

        return PLACEHOLDER_RE.sub(sub, value)
    if isinstance(value, list):
        return [fill(v, values, missing) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, values, missing) for k, v in value.items()}
    return value


class Script:
    def __init__(self, path: str, log_path: str):
        with open(path) as f:
            spec = json.load(f)
        self.turns = spec.get("turns", [])
        self.prefix = spec.get("main_tool_prefix", "mcp__")
        self.main_tools = set(spec.get("main_tools", ["ToolSearch"]))
        self.searched: set[str] = set()
        self.chars_per_token = float(spec.get("count_tokens_chars_per_token", 4))
        self.log_path = log_path
        self.lock = threading.Lock()
        self.chosen: dict[int, tuple[int, dict]] = {}  # assistant count -> (script index, reply)

    def is_main(self, body: dict) -> bool:
        names = [str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)]
        return any(n.startswith(self.prefix) or n in self.main_tools for n in names)

    def main_reply(self, body: dict) -> dict:
        messages = body.get("messages") or []
        k = sum(1 for m in messages if m.get("role") == "assistant")
        with self.lock:
            if k in self.chosen:
                return self.chosen[k][1]
            start = 0
            for j in range(k - 1, -1, -1):
                if j in self.chosen:
                    start = self.chosen[j][0] + 1
                    break
            else:
                start = k
            values = placeholders(tool_results_texts(messages))
            index, reply, skipped, missing = start, None, [], []
            while index < len(self.turns):
                turn = self.turns[index]
                missing = []
                if "tool" in turn:
                    filled = fill(turn.get("input", {}), values, missing)
                    if missing and turn.get("optional"):
                        skipped.append({"turn": index, "missing": missing})
                        index += 1
                        continue
                    reply = {
                        "type": "tool_use",
                        "id": "toolu_" + uuid.uuid4().hex[:24],
                        "name": turn["tool"],
                        "input": filled,
                    }
                else:
                    reply = {"type": "text", "text": fill(turn.get("text", "done"), values, missing)}
                break
            if reply is None:
                reply = {"type": "text", "text": "done"}
            offered = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
            if (
                reply["type"] == "tool_use"
                and reply["name"] not in offered
                and "ToolSearch" in offered
                and reply["name"] not in self.searched
            ):
                # A deferred tool (Claude Code's tool search): load its schema
                # first, as a model would, then play this turn again.
                self.searched.add(reply["name"])
                reply = {
                    "type": "tool_use",
                    "id": "toolu_" + uuid.uuid4().hex[:24],
                    "name": "ToolSearch",
                    "input": {"query": "select:" + reply["name"]},
                }
                chosen = {"block": reply, "script_turn": index, "skipped": skipped, "missing": [], "tool_search": True}
                self.chosen[k] = (index - 1, chosen)
                return chosen
            reply = {"block": reply, "script_turn": index, "skipped": skipped, "missing": missing}
            self.chosen[k] = (index, reply)
            return reply

    def log(self, record: dict) -> None:
        line = json.dumps(record)
        with self.lock, open(self.log_path, "a") as f:
            f.write(line + "\n")


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def message_events(model: str, block: dict) -> bytes:
    msg_id = "msg_" + uuid.uuid4().hex[:24]
    usage = {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    out = [
        sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    if block["type"] == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        args = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": args[i : i + 200]} for i in range(0, len(args), 200)]
        stop_reason = "tool_use"
    else:
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
        stop_reason = "end_turn"
    out.append(sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}))
    for d in deltas:
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}))
    out.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 10},
            },
        )
    )
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def message_json(model: str, block: dict) -> dict:
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def raw_text(value) -> int:
    """Characters of text in a request part: strings as they are (not JSON-escaped)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(raw_text(v) for v in value)
    if isinstance(value, dict):
        return sum(raw_text(v) for k, v in value.items() if k not in ("type", "cache_control"))
    return len(json.dumps(value)) if value is not None else 0


def count_tokens(body: dict, chars_per_token: float) -> int:
    """An estimate for /v1/messages/count_tokens: the characters of the
    messages and system prompt (as text, not JSON-escaped) plus the tools'
    JSON, divided by `chars_per_token` (script key `count_tokens_chars_per_token`,
    default 4). Claude Code asks this when a tool result might be over its
    limit (25000 tokens), so this figure decides whether it spills the result."""
    size = raw_text(body.get("messages", [])) + raw_text(body.get("system", ""))
    size += len(json.dumps(body.get("tools", [])))
    return max(1, int(size / chars_per_token))


class ScriptedHandler(BaseHTTPRequestHandler):
    """What the scripted endpoints (this one, model_openai.py,
    model_gemini.py) share: quiet, bodies decompressed, answers with a
    length, HEAD, and the request read as JSON with its log record."""

    protocol_version = "HTTP/1.1"
    script = None  # set by serve()
    # The response header carrying a request id, as the provider names it.
    request_id_header = None

    def log_message(self, fmt, *args):  # quiet
        pass

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        elif encoding == "zstd":
            try:
                import zstandard  # not stdlib; Codex sends zstd only to OpenAI's own endpoints

                raw = zstandard.ZstdDecompressor().decompress(raw)
            except ImportError:
                pass
        return raw

    def send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        if self.request_id_header:
            self.send_header(self.request_id_header, "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.wfile.write(payload)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def read_post(self) -> tuple[dict, str, dict]:
        """The POST body as JSON (`_unparsed` when it is not), the path
        without its query, and the log record begun."""
        raw = self.read_body()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        record = {"t": time.time(), "method": "POST", "path": self.path, "body": body}
        return body, self.path.split("?")[0], record


def serve(handler: type, script: type, name: str) -> None:
    """Runs `handler` with `script` (SCRIPT LOG [PORT] from the command
    line) on 127.0.0.1, printing `LISTENING <port>`."""
    if len(sys.argv) < 3:
        sys.exit(f"usage: {name} SCRIPT LOG [PORT]")
    handler.script = script(sys.argv[1], sys.argv[2])
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    print(f"LISTENING {server.server_address[1]}", flush=True)
    server.serve_forever()


class Handler(ScriptedHandler):
    request_id_header = "request-id"

    def do_GET(self):
        self.script.log({"t": time.time(), "method": "GET", "path": self.path, "main": False})
        self.send(200, b"{}", "application/json")

    def do_POST(self):
        body, path, record = self.read_post()
        if path.endswith("/count_tokens"):
            reply = {"input_tokens": count_tokens(body, self.script.chars_per_token)}
            record.update(main=False, reply=reply)
            self.script.log(record)
            self.send(200, json.dumps(reply).encode(), "application/json")
            return
        if not path.endswith("/messages"):
            record.update(main=False, reply={})
            self.script.log(record)
            self.send(200, b"{}", "application/json")
            return
        model = body.get("model", "scripted")
        main = self.script.is_main(body)
        if main:
            chosen = self.script.main_reply(body)
            block = chosen["block"]
            record.update(main=True, reply=chosen)
        else:
            block = {"type": "text", "text": "ok"}
            record.update(main=False, reply={"block": block})
        self.script.log(record)
        if body.get("stream"):
            self.send(200, message_events(model, block), "text/event-stream")
        else:
            self.send(200, json.dumps(message_json(model, block)).encode(), "application/json")


def main() -> None:
    serve(Handler, Script, "model.py")


if __name__ == "__main__":
    main()

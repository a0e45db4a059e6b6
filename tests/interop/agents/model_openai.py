"""A scripted OpenAI Responses API endpoint on 127.0.0.1, standing in for the
model of the OpenAI Codex CLI (as a custom `model_provider` with
`wire_api = "responses"`), so that a test can see from the model's side what
reached the model's context. Python stdlib only; the placeholder logic is
model.py's (imported, not copied).

    python model_openai.py SCRIPT LOG [PORT]

SCRIPT is a JSON file (see below), LOG a JSONL file to which every request is
appended (path, whether it was a main-conversation request, the body as
received, the reply). PORT defaults to 0 (a free port). Once the socket
listens, the first line on stdout is `LISTENING <port>`.

The script has model.py's form:

    {"turns": [
       {"tool": "mcp__lro__records", "input": {"count": 2000}},
       {"tool": "shell", "input": {"command": "{recipe~count by category}"}},
       {"tool": "mcp__lro__lro_extract", "input": {"file_path": "{file_path}", "slurp": true,
                                                   "query": "group_by(.category) | length"}},
       {"text": "done"}
     ]}

and the same placeholders (`{file_path}`, `{recipe_N}`, `{recipe~WORDS}`,
`{spill_path}`, `{last_result}`; see model.py), filled from the text of the
tool outputs (`function_call_output` / `custom_tool_call_output` items) the
request holds. `"optional": true` skips a turn whose placeholders are missing.

Tool names, as Codex offers them (see the `tools` of a logged request):
  * `"tool": "shell"` is the portable name for "run this shell command":
    `input` is `{"command": "CMD"}` (a string; other keys are passed on,
    e.g. `"workdir"`), translated to whichever shell tool the request offers:
    `exec_command` {"cmd": CMD} (unified exec, what Codex 0.171.0 offers),
    `shell_command` {"command": CMD}, or `shell` {"command": ["bash", "-lc",
    CMD]}. A turn naming one of those tools exactly is sent as written.
  * an MCP tool: write it `mcp__SERVER__TOOL`. Codex 0.171.0 offers the
    tools of server SERVER inside a `namespace` tool named `mcp__SERVER`, and
    the call is sent as a function_call with `"namespace": "mcp__SERVER",
    "name": "TOOL"`. A name that is not offered is matched against the
    offered ones by its last `__` part (a top-level function or one inside a
    namespace).

Deferred tools: with a model whose metadata says it supports tool search
(e.g. gpt-5.5, run_codex.py's default), Codex 0.171.0 offers no MCP tool up
front but a `tool_search` tool (`"type": "tool_search", "execution":
"client"`). When a turn calls a tool that is not offered and `tool_search`
is, the model first sends a `tool_search_call` item (arguments {"query":
"SERVER TOOL", "limit": 8}), as a model must; Codex answers with a
`tool_search_output` item holding the matching tools (a `namespace`), and
the turn is played on the next request. (Claude Code's ToolSearch, likewise
in model.py.)

Each main-conversation request is answered by the next turn of the script,
keyed by how many model outputs (function calls, tool_search calls and
assistant messages) its
`input` already holds, so a retried request gets the same answer. A request
is a main-conversation request when it offers tools; others (a title, a
summary, compaction, ...) get a short text answer and do not advance the
script. Once the script is over, the model says "done". Replies are the SSE
events Codex's Responses client reads: response.created,
response.output_item.added, response.output_text.delta /
response.function_call_arguments.delta, response.output_item.done,
response.completed (with `usage`); a request without `"stream": true` gets
the response object as JSON.
"""

import json
import re
import threading
import time
import uuid

from model import ScriptedHandler, fill, placeholders, serve

SHELL_TOOLS = ("exec_command", "shell_command", "shell", "local_shell")


def output_text(output) -> str:
    """The text of a function_call_output's `output`, as the model reads it:
    a string as is; content items (input_text, ...) their text joined by
    newlines, other items as JSON; {"content": ..., "success": ...} its content."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        if "content" in output:
            return output_text(output["content"])
        return json.dumps(output)
    if isinstance(output, list):
        parts = []
        for x in output:
            if isinstance(x, dict) and isinstance(x.get("text"), str):
                parts.append(x["text"])
            else:
                parts.append(json.dumps(x))
        return "\n".join(parts)
    return "" if output is None else json.dumps(output)


CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output")


def is_model_output(item: dict) -> bool:
    return item.get("type") in CALL_TYPES or (item.get("type") == "message" and item.get("role") == "assistant")


# Codex's own header before a tool's output ("Wall time: 0.05 seconds\nOutput:",
# for exec_command with "Chunk ID", exit code and token count lines).
HEADER_RE = re.compile(
    r"^(?:Chunk ID: \S+\n)?Wall time: [0-9.]+ seconds\n"
    r"(?:Process (?:exited with code -?\d+|running with session ID \d+)\n)?"
    r"(?:Original token count: \d+\n)?Output:\n?"
)


def output_texts(output) -> list[str]:
    """The texts of a tool output's content items, one per item (as model.py
    takes one per content block, so a block of JSON is parsed as JSON), with
    Codex's header split off as a text of its own."""
    if isinstance(output, dict) and "content" in output:
        return output_texts(output["content"])
    texts = [output_text([x]) for x in output] if isinstance(output, list) else [output_text(output)]
    if texts:
        m = HEADER_RE.match(texts[0])
        if m and m.end() < len(texts[0]):
            texts = [texts[0][: m.end()], texts[0][m.end() :]] + texts[1:]
    return texts


def tool_outputs_texts(items: list) -> list[list[str]]:
    """For every tool output item of the input, oldest first: the text of each
    of its content items."""
    return [output_texts(i.get("output")) for i in items if isinstance(i, dict) and i.get("type") in OUTPUT_TYPES]


def full_name(namespace: str | None, name: str) -> str:
    """`mcp__py` + `records` -> `mcp__py__records` (Claude Code's spelling)."""
    if not namespace:
        return name
    return namespace + name if namespace.endswith("__") else f"{namespace}__{name}"


def offered_functions(body: dict) -> dict:
    """full name -> (namespace or None, name) of every function tool offered,
    including those inside `namespace` tools."""
    out: dict = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace":
            for inner in t.get("tools") or []:
                if isinstance(inner, dict) and inner.get("name"):
                    ns, name = str(t.get("name")), str(inner["name"])
                    out.setdefault(full_name(ns, name), (ns, name))
            continue
        name = t.get("name") or t.get("type")
        if name:
            out.setdefault(str(name), (None, str(name)))
    return out


def searched_functions(items: list) -> dict:
    """The tools that tool_search outputs of the input loaded (same form)."""
    tools = []
    for i in items:
        if i.get("type") == "tool_search_output":
            tools += i.get("tools") or []
    return offered_functions({"tools": tools})


def translate(name: str, args: dict, offered: dict) -> tuple[str, dict, str | None]:
    """The script's tool call as Codex offers it: (name, arguments, namespace)."""
    command = args.get("command")
    if name == "shell" and isinstance(command, str):
        extra = {k: v for k, v in args.items() if k != "command"}
        if "exec_command" in offered:
            out = {"cmd": command, **{k: v for k, v in extra.items() if k != "timeout_ms"}}
            return "exec_command", out, None
        if "shell_command" in offered:
            return "shell_command", {"command": command, **extra}, None
        if "shell" in offered:
            return "shell", {"command": ["bash", "-lc", command], **extra}, None
    if name in offered:
        ns, bare = offered[name]
        return bare, args, ns
    tail = name.rsplit("__", 1)[-1]
    matches = [v for k, v in offered.items() if k.endswith("__" + tail) or k == tail]
    if matches:
        ns, bare = matches[0]
        return bare, args, ns
    return name, args, None


class Script:
    def __init__(self, path: str, log_path: str):
        with open(path) as f:
            spec = json.load(f)
        self.turns = spec.get("turns", [])
        self.log_path = log_path
        self.lock = threading.Lock()
        self.chosen: dict[int, tuple[int, dict]] = {}  # model outputs so far -> (script index, reply)
        self.searched: set[str] = set()

    @staticmethod
    def is_main(body: dict) -> bool:
        return bool(body.get("tools"))

    def main_reply(self, body: dict) -> dict:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        items = [i for i in items if isinstance(i, dict)]
        k = sum(1 for i in items if is_model_output(i))
        with self.lock:
            if k in self.chosen:
                return self.chosen[k][1]
            start = k
            for j in range(k - 1, -1, -1):
                if j in self.chosen:
                    start = self.chosen[j][0] + 1
                    break
            values = placeholders(tool_outputs_texts(items))
            offered = {**searched_functions(items), **offered_functions(body)}
            index, item, skipped, missing = start, None, [], []
            while index < len(self.turns):
                turn = self.turns[index]
                missing = []
                if "tool" in turn:
                    filled = fill(turn.get("input", {}), values, missing)
                    if missing and turn.get("optional"):
                        skipped.append({"turn": index, "missing": missing})
                        index += 1
                        continue
                    name, args, namespace = translate(turn["tool"], filled, offered)
                    item = {
                        "type": "function_call",
                        "id": "fc_" + uuid.uuid4().hex[:24],
                        "call_id": "call_" + uuid.uuid4().hex[:24],
                        "name": name,
                        "arguments": json.dumps(args),
                        "status": "completed",
                    }
                    if namespace:
                        item["namespace"] = namespace
                else:
                    item = text_item(fill(turn.get("text", "done"), values, missing))
                break
            if item is None:
                item = text_item("done")
            if (
                item["type"] == "function_call"
                and full_name(item.get("namespace"), item["name"]) not in offered
                and "tool_search" in offered
                and turn["tool"] not in self.searched
            ):
                # A deferred tool (Codex's tool_search): load it first, as a
                # model would, then play this turn again.
                self.searched.add(turn["tool"])
                parts = turn["tool"].split("__")
                query = " ".join(p for p in parts if p and p != "mcp")
                search = {
                    "type": "tool_search_call",
                    "id": "tsc_" + uuid.uuid4().hex[:24],
                    "call_id": "call_" + uuid.uuid4().hex[:24],
                    "status": "completed",
                    "execution": "client",
                    "arguments": {"query": query, "limit": 8},
                }
                reply = {"item": search, "script_turn": index, "skipped": skipped, "missing": [], "tool_search": True}
                self.chosen[k] = (index - 1, reply)
                return reply
            reply = {"item": item, "script_turn": index, "skipped": skipped, "missing": missing}
            self.chosen[k] = (index, reply)
            return reply

    def log(self, record: dict) -> None:
        line = json.dumps(record)
        with self.lock, open(self.log_path, "a") as f:
            f.write(line + "\n")


def text_item(text: str) -> dict:
    return {
        "type": "message",
        "id": "msg_" + uuid.uuid4().hex[:24],
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 110,
}


def response_object(resp_id: str, model: str, status: str, output: list, usage=None) -> dict:
    return {
        "id": resp_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "usage": usage,
    }


def sse(data: dict) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def response_events(model: str, item: dict) -> bytes:
    resp_id = "resp_" + uuid.uuid4().hex[:24]
    seq = iter(range(1_000_000))
    ev = lambda d: sse({**d, "sequence_number": next(seq)})  # noqa: E731
    out = [
        ev({"type": "response.created", "response": response_object(resp_id, model, "in_progress", [])}),
        ev({"type": "response.in_progress", "response": response_object(resp_id, model, "in_progress", [])}),
    ]
    if item["type"] == "tool_search_call":
        out.append(ev({"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}}))
    elif item["type"] == "function_call":
        added = {**item, "arguments": "", "status": "in_progress"}
        out.append(ev({"type": "response.output_item.added", "output_index": 0, "item": added}))
        args = item["arguments"]
        for i in range(0, len(args), 200):
            out.append(ev({"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": 0,
                           "delta": args[i : i + 200]}))
        out.append(ev({"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": 0,
                       "arguments": args}))
    else:
        text = item["content"][0]["text"]
        out.append(ev({"type": "response.output_item.added", "output_index": 0,
                       "item": {**item, "status": "in_progress", "content": []}}))
        part = {"type": "output_text", "text": "", "annotations": []}
        out.append(ev({"type": "response.content_part.added", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "part": part}))
        out.append(ev({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "delta": text}))
        out.append(ev({"type": "response.output_text.done", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "text": text}))
        out.append(ev({"type": "response.content_part.done", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "part": {**part, "text": text}}))
    out.append(ev({"type": "response.output_item.done", "output_index": 0, "item": item}))
    out.append(ev({"type": "response.completed", "response": response_object(resp_id, model, "completed", [item], USAGE)}))
    return b"".join(out)


class Handler(ScriptedHandler):
    request_id_header = "x-request-id"

    def do_GET(self):
        self.script.log({"t": time.time(), "method": "GET", "path": self.path, "main": False})
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            # Codex may ask for the provider's model list; none is known here.
            self.send(200, json.dumps({"object": "list", "data": [], "models": []}).encode(), "application/json")
        else:
            self.send(404, b'{"error": {"message": "not found"}}', "application/json")

    def do_POST(self):
        body, path, record = self.read_post()
        if not path.endswith("/responses"):
            record.update(main=False, reply={})
            self.script.log(record)
            self.send(404, b'{"error": {"message": "not found"}}', "application/json")
            return
        model = body.get("model", "scripted")
        if self.script.is_main(body):
            chosen = self.script.main_reply(body)
            item = chosen["item"]
            record.update(main=True, reply=chosen)
        else:
            item = text_item("ok")
            record.update(main=False, reply={"item": item})
        self.script.log(record)
        if body.get("stream"):
            self.send(200, response_events(model, item), "text/event-stream")
        else:
            obj = response_object("resp_" + uuid.uuid4().hex[:24], model, "completed", [item], USAGE)
            self.send(200, json.dumps(obj).encode(), "application/json")


def main() -> None:
    serve(Handler, Script, "model_openai.py")

if __name__ == "__main__":
    main()

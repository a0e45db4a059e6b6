"""A recording chat provider on loopback, the upstream of `lro history` in
tests/command/history.rs (no model: every answer is canned).

    python chat_provider.py <record.jsonl>

Prints `LISTENING <port>` once it listens on 127.0.0.1. Serves OpenAI Chat
Completions (`POST …/chat/completions`, streamed with `"stream": true`),
OpenAI Responses (`POST …/responses`), Anthropic Messages
(`POST …/messages`, streamed too) and `GET …/models`; appends one JSON line
per request to <record.jsonl>: the path, the credentials headers as they
arrived, the body's bytes (as text) and its SHA-256.
"""

import hashlib
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body: bytes):
        line = {
            "method": self.command,
            "path": self.path,
            "authorization": self.headers.get("authorization"),
            "x_api_key": self.headers.get("x-api-key"),
            "body": body.decode("utf-8", "replace"),
            "sha256": hashlib.sha256(body).hexdigest(),
        }
        with LOCK, open(sys.argv[1], "a") as f:
            f.write(json.dumps(line) + "\n")

    def send_json(self, value, status=200):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, events, done=False):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        chunks = [
            (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events
        ]
        if done:
            chunks.append("data: [DONE]\n\n")
        for chunk in chunks:
            raw = chunk.encode()
            self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self):
        self.record(b"")
        if self.path.endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": "stand-in", "object": "model", "owned_by": "test"}]})
        else:
            self.send_json({"error": {"message": "not found"}}, 404)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        self.record(body)
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            self.send_json({"error": {"message": "the body is not JSON"}}, 400)
            return
        n = len(request.get("messages") or request.get("input") or [])
        text = f"ok, {n} items"
        model = request.get("model", "stand-in")
        if model in ("reader", "looper"):
            getattr(self, model)(request)
            return
        if self.path.endswith("/chat/completions"):
            if request.get("stream"):
                base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model}
                self.send_events([
                    (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]}),
                    (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                ], done=True)
                return
            self.send_json({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })
        elif self.path.endswith("/responses"):
            self.send_json({
                "id": "resp_1", "object": "response", "created_at": 0, "status": "completed", "model": model,
                "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
            })
        elif self.path.endswith("/messages"):
            message = {
                "id": "msg_1", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
            if request.get("stream"):
                start = {**message, "content": [], "stop_reason": None}
                self.send_events([
                    ("message_start", {"type": "message_start", "message": start}),
                    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}}),
                    ("message_stop", {"type": "message_stop"}),
                ])
                return
            self.send_json(message)
        else:
            self.send_json({"error": {"message": "not found"}}, 404)

    def reader(self, request):
        """The scripted model `reader`: it calls lro_history_read on the
        offloaded file holding turn 2's log (pattern `req_2_7 `), then,
        given the answer, says what it read."""
        items = request.get("messages") or request.get("input") or []
        last = items[-1] if items else {}
        found = turn_2_file(items)
        if answers_read(last):
            say, call = "read back: " + result_text(last), None
        elif READ in tool_names(request) and found:
            say, call = "Reading the offloaded log.", (READ, "read_1", {"file": found, "pattern": "req_2_7 "})
        else:
            say, call = f"no read tool ({tool_names(request)}) or no file", None
        self.respond(request, say, call)

    def looper(self, request):
        """The scripted model `looper`, for agent frameworks that run the
        tools themselves: it calls read_log for turns 1 to LOOPS, one a
        turn, then lro_history_read on turn 2's log when offered, then
        answers `done: N logs` (and what it read back)."""
        items = request.get("messages") or request.get("input") or []
        results = [i for i in items if i.get("role") == "tool" or i.get("type") == "function_call_output"]
        logs = sum(1 for r in results if not answers_read(r))
        read = next((r for r in results if answers_read(r)), None)
        found = turn_2_file(items)
        if logs < LOOPS:
            say, call = f"Reading log {logs + 1}.", ("read_log", f"call_{logs + 1}", {"turn": logs + 1})
        elif read is None and READ in tool_names(request) and found:
            say, call = "Reading the offloaded log.", (READ, "read_1", {"file": found, "pattern": "req_2_7 "})
        else:
            say = f"done: {logs} logs" + (" read back: " + result_text(read) if read else " (nothing read back)")
            call = None
        self.respond(request, say, call)

    def respond(self, request, say, call):
        """An answer in the request's format saying `say` and making
        `call` (name, id, arguments) if any, streamed if asked."""
        path = self.path
        name, call_id, call = call if call else (None, None, None)
        stream = request.get("stream")
        if path.endswith("/chat/completions"):
            calls = [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(call)}}] if call else []
            if stream:
                base = {"id": "chatcmpl-r", "object": "chat.completion.chunk", "created": 0, "model": "reader"}
                events = [(None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": say}, "finish_reason": None}]})]
                if call:
                    args = json.dumps(call)
                    events.append((None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
                        {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": args[:10]}}]}, "finish_reason": None}]}))
                    events.append((None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
                        {"index": 0, "function": {"arguments": args[10:]}}]}, "finish_reason": None}]}))
                events.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if call else "stop"}]}))
                self.send_events(events, done=True)
                return
            message = {"role": "assistant", "content": say}
            if calls:
                message["tool_calls"] = calls
            self.send_json({"id": "chatcmpl-r", "object": "chat.completion", "created": 0, "model": "reader",
                            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        elif path.endswith("/messages"):
            content = [{"type": "text", "text": say}]
            if call:
                content.append({"type": "tool_use", "id": "toolu_" + call_id, "name": name, "input": call})
            message = {"id": "msg_r", "type": "message", "role": "assistant", "model": "reader", "content": content,
                       "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}
            if not stream:
                self.send_json(message)
                return
            events = [("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}),
                      ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                      ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": say}}),
                      ("content_block_stop", {"type": "content_block_stop", "index": 0})]
            if call:
                args = json.dumps(call)
                events += [("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_" + call_id, "name": name, "input": {}}}),
                           ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": args[:7]}}),
                           ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": args[7:]}}),
                           ("content_block_stop", {"type": "content_block_stop", "index": 1})]
            events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": 1}}),
                       ("message_stop", {"type": "message_stop"})]
            self.send_events(events)
        else:
            output = [{"type": "message", "id": "msg_r", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": say, "annotations": []}]}]
            if call:
                output.append({"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": name,
                               "arguments": json.dumps(call), "status": "completed"})
            self.send_json({"id": "resp_r", "object": "response", "created_at": 0, "status": "completed", "model": "reader",
                            "output": output, "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}})


READ = "lro_history_read"
LOOPS = 6


def tool_names(request):
    return [t.get("name") or (t.get("function") or {}).get("name") for t in request.get("tools") or []]


def answers_read(item):
    """Whether `item` answers the call read_1 (any format)."""
    blocks = item.get("content") if isinstance(item.get("content"), list) else []
    return ("read_1" in (item.get("tool_call_id"), item.get("call_id"))
            or any(isinstance(b, dict) and b.get("tool_use_id") == "toolu_read_1" for b in blocks))


def result_text(item):
    result = item.get("content") or item.get("output") or ""
    if isinstance(result, list):
        result = result[0].get("content", "")
    return result


def turn_2_file(items):
    """The file the pointer to turn 2's log names (its preview starts with
    req_2_0), if any."""
    for item in items:
        text = json.dumps(item)
        if "req_2_0 " in text:
            found = re.search(r"/[^\s\"'\\]*/history-tool-[a-z0-9_-]+\.txt", text)
            if found:
                return found.group(0)
    return None


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"LISTENING {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

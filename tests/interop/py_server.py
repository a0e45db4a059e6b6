"""An MCP server written with the official Python SDK (mcp 2.x, `MCPServer`,
formerly `FastMCP`), served over the streamable-http transport on 127.0.0.1.

    python py_server.py PORT [--json] [--stateless] [--resumable]
    python py_server.py PORT --sse

PORT 0 picks a free port. `--sse` serves the old HTTP+SSE transport
(2024-11-05) instead: the event stream at GET /sse, messages POSTed to
/messages/ (tests/command/legacy_sse.rs). Once the socket listens, the first line on stdout
is `LISTENING <port>`. `--resumable` keeps every event in memory, so a
client can resume a stream with `Last-Event-ID`. The tests in tests/gateway.rs put `lro gateway`
in front of it.

Tools:
  * `greet(name)`            - a small text answer (stays inline);
  * `records(count=300)`     - `count` JSON records as one text block (large;
                               the SDK adds structuredContent {"result": text});
  * `records_list(count=300)`- the same records returned as a list (the SDK
                               sends one text block per record and
                               structuredContent {"result": [...]});
  * `slow_records(count=300)`- two progress notifications, 1.5 s, then records;
  * `echo_headers()`         - the HTTP request headers this server received;
  * `announce()`             - sends notifications/tools/list_changed on the
                               session's standalone (GET) event stream;
  * `rows(count=2000)`       - a declared output schema {"rows": [record],
                               "total": int}: structuredContent is that object,
                               the text block the same JSON (indent=2);
  * `records_text(count=300)`- the records as ONE text block, no
                               structuredContent and no outputSchema;
  * `records_nostruct_schema(count=300)` - a text block (a marker line, then
                               the records) and structuredContent {"rows",
                               "total"} with NO declared outputSchema, plus a
                               `_meta` marker (what does a client show?);
  * `linked()`               - a text block, a resource_link block, an
                               embedded text resource and a `_meta` marker.
"""

import asyncio
import json
import socket
import sys

from typing_extensions import TypedDict

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, EmbeddedResource, ResourceLink, TextContent, TextResourceContents
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon"]

mcp = MCPServer("py-interop", version="1.0.0")


def make_records(count: int) -> list[dict]:
    """Deterministic records; tests/gateway.rs computes the same ones."""
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


@mcp.tool()
def greet(name: str = "world") -> str:
    """A small greeting."""
    return f"hello, {name}"


@mcp.tool()
def records(count: int = 300) -> str:
    """Returns `count` records as a JSON array in one text block."""
    return json.dumps(make_records(count))


@mcp.tool()
def layout(kind: str, count: int = 300) -> str:
    """`count` records laid out as a server in another language writes them:
    `ndjson` (Python's json.dumps per line: ", " and ": "), `spaced` (one
    json.dumps array), `indent2` (Python indent=2, the same bytes as
    JavaScript's JSON.stringify(v, null, 2)), `go` (Go's json.MarshalIndent
    with two spaces: <, > and & escaped)."""
    rows = [dict(r, name=r["name"] + " <b> & co") for r in make_records(count)]
    if kind == "ndjson":
        return "\n".join(json.dumps(r) for r in rows) + "\n"
    if kind == "spaced":
        return json.dumps(rows)
    if kind == "indent2":
        return json.dumps(rows, indent=2)
    if kind == "go":
        text = json.dumps(rows, indent=2, ensure_ascii=False)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    raise ValueError(f"unknown layout {kind}")


@mcp.tool()
def records_list(count: int = 300) -> list[dict]:
    """Returns `count` records as a list."""
    return make_records(count)


@mcp.tool()
async def slow_records(ctx: Context, count: int = 300) -> str:
    """Reports progress twice, waits 1.5 s, then returns the records."""
    await ctx.report_progress(1, 3, "reading")
    await ctx.report_progress(2, 3, "sorting")
    await asyncio.sleep(1.5)
    return json.dumps(make_records(count))


@mcp.tool()
def echo_headers(ctx: Context) -> str:
    """The HTTP headers of this request, as seen by the server (lower-case names)."""
    headers = ctx.headers or {}
    return json.dumps({k.lower(): v for k, v in headers.items()}, sort_keys=True)


@mcp.tool()
async def announce(ctx: Context) -> str:
    """Sends tools/list_changed outside any request (the GET stream)."""
    await ctx.session.send_tool_list_changed()
    return "announced"


class Record(TypedDict):
    id: str
    name: str
    category: str
    value: int
    created: str


class Rows(TypedDict):
    rows: list[Record]
    total: int


@mcp.tool()
def rows(count: int = 2000) -> Rows:
    """Returns `count` records under `rows`, with their `total` (a declared output schema)."""
    return {"rows": make_records(count), "total": count}


@mcp.tool(structured_output=False)
def records_text(count: int = 300) -> str:
    """Returns `count` records as a JSON array in one text block (no structured content)."""
    return json.dumps(make_records(count))


@mcp.tool()
def records_nostruct_schema(count: int = 300) -> CallToolResult:
    """Structured content without a declared output schema: a text block and
    structuredContent {"rows", "total"} that differ, and a `_meta` marker."""
    text = f"TEXT-BLOCK-MARKER {count} records follow\n" + json.dumps(make_records(count))
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"rows": make_records(count), "total": count, "marker": "STRUCTURED-MARKER"},
        _meta={"tower-lro/test": "META-MARKER"},
    )


@mcp.tool()
def linked() -> CallToolResult:
    """A text block, a resource_link block, an embedded resource and `_meta`."""
    return CallToolResult(
        content=[
            TextContent(type="text", text="TEXT-BLOCK-MARKER see the linked file"),
            ResourceLink(
                type="resource_link",
                uri="file:///tmp/atlatl-linked-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
                name="LINK-NAME-MARKER",
                description="LINK-DESCRIPTION-MARKER",
                mime_type="application/jsonl",
                _meta={"tower-lro/test": "LINK-META-MARKER"},
            ),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="lro://embedded", mime_type="text/plain", text="EMBEDDED-MARKER"),
            ),
        ],
        _meta={"tower-lro/test": "META-MARKER"},
    )


class MemoryEventStore(EventStore):
    """Every event of every stream, in order, for replays after a Last-Event-ID."""

    def __init__(self) -> None:
        self.events: list[tuple[EventId, StreamId, object]] = []

    async def store_event(self, stream_id: StreamId, message) -> EventId:
        event_id = str(len(self.events) + 1)
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        index = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        for event_id, sid, message in self.events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: py_server.py PORT [--json] [--stateless] [--resumable] | PORT --sse")
    port = int(sys.argv[1])
    json_response = "--json" in sys.argv[2:]
    stateless = "--stateless" in sys.argv[2:]
    event_store = MemoryEventStore() if "--resumable" in sys.argv[2:] else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    if "--sse" in sys.argv[2:]:
        app = mcp.sse_app(host="127.0.0.1")
    else:
        app = mcp.streamable_http_app(
            streamable_http_path="/mcp",
            json_response=json_response,
            stateless_http=stateless,
            event_store=event_store,
            host="127.0.0.1",
        )
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    print(f"LISTENING {sock.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()

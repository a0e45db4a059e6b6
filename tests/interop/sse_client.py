"""The official Python SDK client over the old HTTP+SSE transport (2024-11-05),
directly and through `lro proxy`, run by tests/command/legacy_sse.rs.

    python sse_client.py <py|everything> <lro binary> <server url> <output dir> [proxy flags...]

Two sessions make the same calls: one straight to the server with the SDK's
`sse_client`, one over stdio through `lro proxy <server url> --output-dir
<output dir> [proxy flags...]` (which then speaks HTTP+SSE to the server). `py`
is tests/interop/py_server.py --sse, `everything` is server-everything's `sse`
mode. The proxied session also lists and extracts the proxy's own files. Prints
both sessions as one JSON object for the Rust side; asserts nothing itself.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from report_util import attempt, dump

LARGE = "\n".join(f"line {i}: the quick brown fox jumps over the lazy dog" for i in range(1200))
CALLS = {
    "py": [
        ("greet", {"name": "sse"}),
        ("records", {"count": 300}),
        ("records_list", {"count": 40}),
    ],
    "everything": [
        ("echo", {"message": "hello"}),
        ("get-sum", {"a": 2, "b": 3}),
        ("get-tiny-image", {}),
        ("get-structured-content", {"location": "New York"}),
        ("trigger-sampling-request", {"prompt": "what is 2+2?", "maxTokens": 20}),
        ("trigger-elicitation-request", {}),
        ("echo", {"message": LARGE}),
    ],
}
# A call that reports progress: the tool and its arguments.
PROGRESS = {
    "py": ("slow_records", {"count": 300}),
    "everything": ("trigger-long-running-operation", {"duration": 1, "steps": 3}),
}


def descriptor_path(result):
    for block in result.get("ok", {}).get("content", []):
        if block.get("type") == "text":
            try:
                return json.loads(block["text"]).get("file_path")
            except ValueError:
                return None
    return None


async def session(kind, server, proxied):
    asked = []

    async def sampling(context, params):
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="four"), model="test"
        )

    async def elicitation(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async with Client(
        server,
        mode="legacy",
        read_timeout_seconds=30,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
    ) as client:
        out = {"protocolVersion": client.protocol_version}
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["calls"] = [await attempt(client.call_tool(name, args)) for name, args in CALLS[kind]]
        events = []

        async def on_progress(progress, total, message):
            events.append({"kind": "progress", "progress": progress})

        name, args = PROGRESS[kind]
        slow = await attempt(client.call_tool(name, args, progress_callback=on_progress))
        events.append({"kind": "result"})
        out["slow"] = {**slow, "events": events}
        if proxied:
            path = descriptor_path(out["calls"][1 if kind == "py" else -1])
            out["lro_list"] = await attempt(client.call_tool("lro_list", {}))
            out["recipe6"] = await attempt(client.call_tool("lro_extract", {"file_path": path, "recipe": 6}))
        out["asked"] = asked
        return out


async def main():
    kind, lro, url, output_dir = sys.argv[1:5]
    flags = sys.argv[5:]
    via = StdioServerParameters(command=lro, args=["proxy", url, "--output-dir", output_dir, *flags])
    result = {
        "direct": await session(kind, sse_client(url), False),
        "proxied": await session(kind, via, True),
        "large": LARGE,
    }
    sys.stdout.write(json.dumps(result) + "\n")


asyncio.run(main())

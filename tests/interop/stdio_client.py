"""An agent on the official Python SDK (`mcp`) talking to `lro proxy` over stdio,
run by tests/proxy.rs.

    python stdio_client.py <legacy|auto> <lro binary> <server url> <output dir>

It launches `lro proxy <server url> --output-dir <output dir>` as its stdio MCP
server, does what an agent would do (list tools, a small call, a large call, a
recipe through lro_extract, a call reporting progress) and prints one JSON
object for the Rust side to check. It asserts nothing itself.
"""

import asyncio
import json
import sys
import time

from mcp import Client, StdioServerParameters
from report_util import attempt, dump

RECALL = {"query": "cache", "count": 200}


def descriptor_path(large):
    for block in large.get("ok", {}).get("content", []):
        if block.get("type") == "text":
            try:
                return json.loads(block["text"]).get("file_path")
            except ValueError:
                return None
    return None


async def main():
    mode, lro, url, output_dir = sys.argv[1:5]
    server = StdioServerParameters(command=lro, args=["proxy", url, "--output-dir", output_dir])
    async with Client(server, mode=mode, read_timeout_seconds=30) as client:
        out = {"client": "python", "mode": mode, "protocolVersion": client.protocol_version}
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["small"] = await attempt(client.call_tool("status", {}))
        out["large"] = await attempt(client.call_tool("recall_memories", RECALL))
        path = descriptor_path(out["large"])
        out["recipe6"] = await attempt(client.call_tool("lro_extract", {"file_path": path, "recipe": 6}))
        t0 = time.monotonic()
        events = []

        async def on_progress(progress, total, message):
            events.append({"kind": "progress", "t": (time.monotonic() - t0) * 1000, "progress": progress})

        slow = await attempt(client.call_tool("slow_recall", RECALL, progress_callback=on_progress))
        events.append({"kind": "result", "t": (time.monotonic() - t0) * 1000})
        out["slow"] = {**slow, "events": events}
    sys.stdout.write(json.dumps(out) + "\n")


asyncio.run(main())

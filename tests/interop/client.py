"""An MCP client built on the official Python SDK (`mcp`), run by tests/interop_sdks.rs.

    python client.py <legacy|auto> <url-with-layer> <url-without-layer> <url-corrupted>

`legacy` connects with the initialize handshake (protocol 2025-11-25), `auto`
lets the SDK probe `server/discover` first (protocol 2026-07-28 when the server
speaks it). It connects over streamable HTTP to the same MCP server mounted with
and without the offload layer, does what an agent would do (list tools, call
small and large tools, a tool with an outputSchema, a tool with an image, a
tool reporting progress) and prints one JSON object on stdout for the Rust side
to check. It asserts nothing itself: errors are reported in the JSON. The third
URL serves the server without the layer but with its structuredContent
corrupted, to show that the SDK really validates it.
"""

import asyncio
import json
import sys
import time
from importlib.metadata import version

from mcp import Client
from report_util import attempt, dump

RECALL = {"query": "cache", "count": 200}


async def session(mode, url):
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        out = {"protocolVersion": client.protocol_version}
        listed = await client.list_tools()
        out["tools"] = sorted(t.name for t in listed.tools)
        out["outputSchemas"] = {t.name: t.output_schema for t in listed.tools if t.output_schema}
        out["small"] = await attempt(client.call_tool("status", {}))
        out["large"] = await attempt(client.call_tool("recall_memories", RECALL))
        out["structured"] = await attempt(client.call_tool("recall_structured", RECALL))
        out["chart"] = await attempt(client.call_tool("chart", {}))
        t0 = time.monotonic()
        events = []

        async def on_progress(progress, total, message):
            events.append(
                {"kind": "progress", "t": (time.monotonic() - t0) * 1000, "progress": progress, "total": total}
            )

        slow = await attempt(client.call_tool("slow_recall", RECALL, progress_callback=on_progress))
        events.append({"kind": "result", "t": (time.monotonic() - t0) * 1000})
        out["slow"] = {**slow, "events": events}
        if "lro_extract" in out["tools"]:
            out["extraction"] = await extraction(client, out["large"])
        return out


async def extraction(client, large):
    """What a shell-less agent does with a descriptor: lro_extract with a
    recipe, with params, with a custom query by pages, lro_list, and
    resources/read of the result's resource_link."""
    content = large.get("ok", {}).get("content", [])
    text = next((b["text"] for b in content if b.get("type") == "text"), "{}")
    descriptor = json.loads(text)
    link = next((b for b in content if b.get("type") == "resource_link"), None)
    file_path = descriptor.get("file_path")
    namespace = (descriptor.get("summary", {}).get("top_namespaces") or [None])[0]

    def extract(args):
        return attempt(client.call_tool("lro_extract", {"file_path": file_path, **args}))

    return {
        "file_path": file_path,
        "namespace": namespace,
        "link": link,
        "recipe6": await extract({"recipe": 6}),
        "recipe2": await extract({"recipe": 2, "params": {"namespace": namespace}}),
        "page1": await extract({"query": ".id", "offset": 0, "limit": 50}),
        "page2": await extract({"query": ".id", "offset": 50, "limit": 50}),
        "bad": await extract({"recipe": 6, "query": ".id"}),
        "list": await attempt(client.call_tool("lro_list", {})),
        "resource": await attempt(client.read_resource(link["uri"])) if link else None,
    }


async def corrupted(mode, url):
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        await client.list_tools()  # caches the output schemas the SDK validates against
        return await attempt(client.call_tool("recall_structured", RECALL))


async def main():
    mode, with_url, without_url, corrupt_url = sys.argv[1:5]
    result = {
        "client": "python",
        "sdk": version("mcp"),
        "mode": mode,
        "with": await session(mode, with_url),
        "without": await session(mode, without_url),
        "corrupted": await corrupted(mode, corrupt_url),
    }
    sys.stdout.write(json.dumps(result) + "\n")


asyncio.run(main())

"""A third-party server through `lro proxy`, run by tests/proxy.rs.

    python everything_client.py <lro binary> <server url> <output dir>
    python everything_client.py --gateway <server url> <gateway url>

The official Python SDK client talks to `@modelcontextprotocol/server-everything`
twice: directly over streamable HTTP, and over stdio through `lro proxy` (or,
with `--gateway`, over streamable HTTP through `lro gateway`; tests/gateway.rs). The
same calls on both (tools/list, small tools, an image, structured content, a
large echo); prints both for the Rust side to compare. Asserts nothing itself.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
from report_util import dump

LARGE = "\n".join(f"line {i}: the quick brown fox jumps over the lazy dog" for i in range(1200))
CALLS = [
    ("echo", {"message": "hello"}),
    ("get-sum", {"a": 2, "b": 3}),
    ("get-tiny-image", {}),
    ("get-structured-content", {"location": "New York"}),
    ("echo", {"message": LARGE}),
]


async def session(server):
    async with Client(server, mode="legacy", read_timeout_seconds=30) as client:
        out = {"tools": sorted(t.name for t in (await client.list_tools()).tools), "calls": []}
        for name, args in CALLS:
            try:
                out["calls"].append({"ok": dump(await client.call_tool(name, args))})
            except Exception as e:  # reported to the Rust side, which asserts
                out["calls"].append({"error": f"{type(e).__name__}: {e}"})
        return out


async def main():
    if sys.argv[1] == "--gateway":
        url, via = sys.argv[2:4]
    else:
        lro, url, output_dir = sys.argv[1:4]
        via = StdioServerParameters(command=lro, args=["proxy", url, "--output-dir", output_dir])
    result = {"direct": await session(url), "proxied": await session(via), "large": LARGE}
    sys.stdout.write(json.dumps(result) + "\n")


asyncio.run(main())

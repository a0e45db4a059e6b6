"""An agent on the official Python SDK (`mcp`) using `lro proxy` as installed
from a package (npm's `npx tower-lro`, a wheel's `lro`, `uvx tower-lro`), run
by tests/command/packages.rs.

    python package_client.py '<server command as a JSON array>' <cwd> <server url>

Starts the command as its stdio MCP server (in <cwd>, with this process's
environment), or, when the array is one http:// URL (a gateway started from
the container image), connects to it; then does what an agent would do (list tools, a small call, a large
call, lro_extract on the file it was offloaded to) and makes the same small
calls directly to <server url>. Prints one JSON object for the Rust side to
check; it asserts nothing itself.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
from report_util import attempt, first_text_json

LARGE = {"count": 2000}
QUERY = "group_by(.category) | map({category: .[0].category, count: length})"
SMALL = [("greet", {"name": "package"}), ("records_list", {"count": 3}), ("records", {"count": 5})]


async def small_calls(client):
    return [await attempt(client.call_tool(name, args)) for name, args in SMALL]


async def main():
    argv, cwd, url = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    out = {}
    async with Client(url, read_timeout_seconds=30) as direct:
        out["direct_small"] = await small_calls(direct)
    if len(argv) == 1 and argv[0].startswith("http://"):
        server = argv[0]
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=cwd)
    async with Client(server, read_timeout_seconds=60) as client:
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["small"] = await small_calls(client)
        out["large"] = await attempt(client.call_tool("records_text", LARGE))
        d = first_text_json(out["large"]) or {}
        out["descriptor"] = {k: d.get(k) for k in ("offloaded", "file_path", "summary")}
        args = {"file_path": d.get("file_path"), "query": QUERY, "slurp": True}
        out["extract"] = await attempt(client.call_tool("lro_extract", args))
    print(json.dumps(out))


asyncio.run(main())

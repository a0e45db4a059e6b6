"""Files follow the caller's credentials, not the MCP session: run by
tests/gateway.rs through `lro gateway` (and tests/proxy.rs).

    python bind_client.py <legacy|auto> <url>

With the official Python SDK client, in sessions of their own (a client that
reconnects, the Inspector CLI's session per call, or no session at all under
2026-07-28): "alice" offloads a large result with her bearer token; "alice
again" (a new client, the same token) reads it with lro_extract and
resources/read and finds it in lro_list; "bob" (another token) and "nobody"
(no Authorization header) are refused and list nothing. Prints one JSON
object; asserts nothing itself.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from report_util import attempt, dump

RECALL = {"query": "cache", "count": 200}


def client(mode, url, token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=30)


async def reader(mode, url, token, descriptor):
    async with client(mode, url, token) as c:
        return {
            "extract": await attempt(
                c.call_tool("lro_extract", {"file_path": descriptor["file_path"], "query": ".id", "limit": 2})
            ),
            "read": await attempt(c.read_resource(descriptor["uri"])),
            "list": await attempt(c.call_tool("lro_list", {})),
        }


async def main(mode, url):
    out = {}
    async with client(mode, url, "alice") as alice:
        out["protocolVersion"] = alice.protocol_version
        large = await attempt(alice.call_tool("recall_memories", RECALL))
        out["large"] = large
    if "ok" not in large:
        return out
    text = large["ok"]["content"][0]["text"]
    descriptor = json.loads(text)
    descriptor["uri"] = "lro://files/" + descriptor["file_path"].rsplit("/", 1)[-1]
    out["descriptor"] = descriptor
    out["alice_again"] = await reader(mode, url, "alice", descriptor)
    out["bob"] = await reader(mode, url, "bob", descriptor)
    out["nobody"] = await reader(mode, url, None, descriptor)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))

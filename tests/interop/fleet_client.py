"""A fleet of `lro gateway` replicas sharing one object store: run by
tests/command/fleet.rs.

    python fleet_client.py <legacy|auto> <url> <port> <port> <port>

The official Python SDK client talks to <url> (one replica's), but its HTTP
transport sends each tools/call and resources/read to the next replica of
the three ports in turn (other requests go where the last call went), as a
load balancer without session affinity would. "alice" offloads a large
result; "alice again" (a new client, the same token) reads it with
lro_extract, resources/read and lro_list, each on another replica; "bob"
(another token) and "nobody" (no Authorization header) are refused. Prints
one JSON object, with the replica (port) of every call; asserts nothing
itself.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from report_util import attempt, dump

RECALL = {"query": "cache", "count": 200}
ROTATED = (b'"tools/call"', b'"resources/read"')


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each call to the next replica; records (method, port)."""

    def __init__(self, ports, log):
        self.ports = ports
        self.next = 0
        self.current = ports[0]
        self.log = log
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request):
        body = request.content if request.method == "POST" else b""
        if any(m in body for m in ROTATED):
            self.current = self.ports[self.next % len(self.ports)]
            self.next += 1
            method = json.loads(body).get("method")
            self.log.append([method, self.current])
        request.url = request.url.copy_with(port=self.current)
        return await self.inner.handle_async_request(request)

    async def aclose(self):
        await self.inner.aclose()


def client(mode, url, ports, token, log):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30, transport=RoundRobin(ports, log))
    return Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=30)


async def reader(mode, url, ports, token, descriptor):
    log = []
    async with client(mode, url, ports, token, log) as c:
        out = {
            "extract": await attempt(
                c.call_tool("lro_extract", {"file_path": descriptor["file_path"], "query": ".id", "limit": 2})
            ),
            "read": await attempt(c.read_resource(descriptor["uri"])),
            "list": await attempt(c.call_tool("lro_list", {})),
            "extract_again": await attempt(
                c.call_tool("lro_extract", {"file_path": descriptor["file_path"], "query": "length", "slurp": True})
            ),
        }
    out["replicas"] = log
    return out


async def main(mode, url, ports):
    out = {}
    log = []
    async with client(mode, url, ports, "alice", log) as alice:
        out["protocolVersion"] = alice.protocol_version
        large = await attempt(alice.call_tool("recall_memories", RECALL))
        out["large"] = large
    out["replicas"] = log
    if "ok" not in large:
        return out
    text = large["ok"]["content"][0]["text"]
    descriptor = json.loads(text)
    descriptor["uri"] = "lro://files/" + descriptor["file_path"].rsplit("/", 1)[-1]
    out["descriptor"] = descriptor
    # Each reader starts on the replica after the one that wrote.
    later = ports[1:] + ports[:1]
    out["alice_again"] = await reader(mode, url, later, "alice", descriptor)
    out["bob"] = await reader(mode, url, later, "bob", descriptor)
    out["nobody"] = await reader(mode, url, ports[2:] + ports[:2], None, descriptor)
    return out


if __name__ == "__main__":
    ports = [int(p) for p in sys.argv[3:6]]
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], ports))))

"""A server request relayed both ways through `lro proxy`, run by tests/proxy.rs.

    python stdio_sampling.py <lro binary> <server url> <output dir>

The official Python SDK's stdio client launches `lro proxy` against the MCP
conformance server (examples/support/conformance_server.rs) and calls its
`test_sampling` tool: the server asks the client's LLM (`sampling/createMessage`,
a server-to-client request on the call's event stream), the client answers
through the proxy, and the tool's result quotes the answer. Prints one JSON
object for the Rust side to check.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client, StdioServerParameters

ANSWER = "relayed both ways"


async def main():
    lro, url, output_dir = sys.argv[1:4]
    asked = []

    async def sampling(context, params):
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=ANSWER), model="test"
        )

    server = StdioServerParameters(command=lro, args=["proxy", url, "--output-dir", output_dir])
    async with Client(server, mode="legacy", read_timeout_seconds=30, sampling_callback=sampling) as client:
        try:
            result = await client.call_tool("test_sampling", {"prompt": "what is 2+2?"})
            out = {"ok": result.model_dump(mode="json", by_alias=True, exclude_none=True)}
        except Exception as e:  # reported to the Rust side, which asserts
            out = {"error": f"{type(e).__name__}: {e}"}
    out["asked"] = asked
    sys.stdout.write(json.dumps(out) + "\n")


asyncio.run(main())

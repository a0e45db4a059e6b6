"""The official Python SDK client and the Prometheus project's own parser,
run by tests/command/metrics.rs against `lro gateway`.

    python metrics_client.py calls MODE URL TOOL ARGS_JSON [TOOL ARGS_JSON ...]
    python metrics_client.py scrape METRICS_URL

`calls` connects over streamable HTTP (`legacy`: the initialize handshake,
protocol 2025-11-25; `auto`: the SDK probes `server/discover` first,
2026-07-28 when the server speaks it), calls each tool with its arguments
in order and prints one JSON object: the protocol version and each call's
result (or error). A tool named `lro_extract` whose arguments hold
`"file_path": "@N"` gets the file path of the descriptor answered by call
N (0-based).

`scrape` reads the metrics endpoint, parses it with `prometheus_client`'s
OpenMetrics parser (strict: it refuses what Prometheus would refuse) and
prints the samples as a JSON list of [name, labels, value], the content
type beside them. It asserts nothing itself: the Rust side does.
"""

import asyncio
import json
import sys
import urllib.request

from mcp import Client
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from report_util import dump


def descriptor_path(result):
    for block in result.get("ok", {}).get("content", []):
        if block.get("type") == "text":
            try:
                return json.loads(block["text"]).get("file_path")
            except (ValueError, AttributeError):
                continue
    return None


async def calls(mode, url, pairs):
    out = {"calls": []}
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        out["protocolVersion"] = client.protocol_version
        for tool, args in pairs:
            if tool == "lro_extract" and str(args.get("file_path", "")).startswith("@"):
                args = {**args, "file_path": descriptor_path(out["calls"][int(args["file_path"][1:])])}
            try:
                out["calls"].append({"ok": dump(await client.call_tool(tool, args))})
            except Exception as e:  # reported to the Rust side, which asserts
                out["calls"].append({"error": f"{type(e).__name__}: {e}"})
    return out


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        content_type = response.headers.get("Content-Type")
        text = response.read().decode("utf-8")
    samples = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.append([s.name, s.labels, s.value])
    return {"content_type": content_type, "samples": samples}


def main():
    if sys.argv[1] == "calls":
        mode, url = sys.argv[2:4]
        rest = sys.argv[4:]
        pairs = [(rest[i], json.loads(rest[i + 1])) for i in range(0, len(rest), 2)]
        result = asyncio.run(calls(mode, url, pairs))
    else:
        result = scrape(sys.argv[2])
    sys.stdout.write(json.dumps(result) + "\n")


main()

// An agent on the official TypeScript SDK talking to `lro proxy` over stdio,
// run by tests/proxy.rs.
//
//   node stdio_client.mjs <lro binary> <server url> <output dir>
//
// It launches `lro proxy <server url> --output-dir <output dir>` as its stdio
// MCP server, does what an agent would do (list tools, a small call, a large
// call, a recipe through lro_extract, a call reporting progress) and prints
// one JSON object for the Rust side to check. It asserts nothing itself.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [lro, url, outputDir] = process.argv.slice(2);
const RECALL = { query: 'cache', count: 200 };

async function attempt(f) {
  try {
    return { ok: await f() };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

function descriptorPath(large) {
  const text = (large.ok?.content ?? []).find((b) => b.type === 'text')?.text;
  try {
    return JSON.parse(text ?? '{}').file_path ?? null;
  } catch {
    return null;
  }
}

const transport = new StdioClientTransport({ command: lro, args: ['proxy', url, '--output-dir', outputDir], stderr: 'inherit' });
// The client hands the negotiated version to a transport that takes it.
let negotiated = null;
transport.setProtocolVersion = (v) => {
  negotiated = v;
};
const client = new Client({ name: 'lro-stdio-ts', version: '1.0.0' });
await client.connect(transport);
const out = { client: 'typescript', mode: 'stdio', protocolVersion: negotiated };
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.small = await attempt(() => client.callTool({ name: 'status', arguments: {} }));
out.large = await attempt(() => client.callTool({ name: 'recall_memories', arguments: RECALL }));
const file_path = descriptorPath(out.large);
out.recipe6 = await attempt(() => client.callTool({ name: 'lro_extract', arguments: { file_path, recipe: 6 } }));
const t0 = performance.now();
const events = [];
const slow = await attempt(() =>
  client.callTool({ name: 'slow_recall', arguments: RECALL }, undefined, {
    onprogress: (p) => events.push({ kind: 'progress', t: performance.now() - t0, progress: p.progress }),
    timeout: 30000,
  }),
);
events.push({ kind: 'result', t: performance.now() - t0 });
out.slow = { ...slow, events };
await client.close();
process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));

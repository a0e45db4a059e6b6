// An MCP client built on the official TypeScript SDK, run by tests/interop_sdks.rs.
//
//   node client.mjs <url-with-layer> <url-without-layer> <url-corrupted>
//
// It connects with StreamableHTTPClientTransport to the same MCP server mounted
// with and without the offload layer, does what an agent would do (list tools,
// call small and large tools, a tool with an outputSchema, a tool with an image,
// a tool reporting progress) and prints one JSON object on stdout for the Rust
// side to check. It asserts nothing itself: errors are reported in the JSON.
// The third URL serves the server without the layer but with its
// structuredContent corrupted, to show that the SDK really validates it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createRequire } from 'node:module';

const [withUrl, withoutUrl, corruptUrl] = process.argv.slice(2);
const sdkVersion = createRequire(import.meta.url)('@modelcontextprotocol/sdk/package.json').version;
const RECALL = { query: 'cache', count: 200 };

async function connect(url) {
  const client = new Client({ name: 'lro-interop-ts', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport };
}

async function attempt(f) {
  try {
    return { ok: await f() };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

async function session(url) {
  const { client, transport } = await connect(url);
  const out = {
    protocolVersion: transport.protocolVersion ?? null,
    sessionId: transport.sessionId ?? null,
  };
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => t.name).sort();
  out.outputSchemas = Object.fromEntries(
    listed.tools.filter((t) => t.outputSchema).map((t) => [t.name, t.outputSchema]),
  );
  out.small = await attempt(() => client.callTool({ name: 'status', arguments: {} }));
  out.large = await attempt(() => client.callTool({ name: 'recall_memories', arguments: RECALL }));
  out.structured = await attempt(() => client.callTool({ name: 'recall_structured', arguments: RECALL }));
  out.chart = await attempt(() => client.callTool({ name: 'chart', arguments: {} }));
  const t0 = performance.now();
  const events = [];
  const slow = await attempt(() =>
    client.callTool({ name: 'slow_recall', arguments: RECALL }, undefined, {
      onprogress: (p) => events.push({ kind: 'progress', t: performance.now() - t0, progress: p.progress, total: p.total }),
      timeout: 30000,
    }),
  );
  events.push({ kind: 'result', t: performance.now() - t0 });
  out.slow = { ...slow, events };
  if (out.tools.includes('lro_extract')) {
    out.extraction = await extraction(client, out.large);
  }
  await client.close();
  return out;
}

// What a shell-less agent does with a descriptor: lro_extract with a recipe,
// with params, with a custom query by pages, lro_list, and resources/read of
// the result's resource_link.
async function extraction(client, large) {
  const content = large.ok?.content ?? [];
  const descriptor = JSON.parse(content.find((b) => b.type === 'text')?.text ?? '{}');
  const link = content.find((b) => b.type === 'resource_link') ?? null;
  const file_path = descriptor.file_path;
  const namespace = descriptor.summary?.top_namespaces?.[0] ?? null;
  const extract = (args) => attempt(() => client.callTool({ name: 'lro_extract', arguments: { file_path, ...args } }));
  return {
    file_path,
    namespace,
    link,
    recipe6: await extract({ recipe: 6 }),
    recipe2: await extract({ recipe: 2, params: { namespace } }),
    page1: await extract({ query: '.id', offset: 0, limit: 50 }),
    page2: await extract({ query: '.id', offset: 50, limit: 50 }),
    bad: await extract({ recipe: 6, query: '.id' }),
    list: await attempt(() => client.callTool({ name: 'lro_list', arguments: {} })),
    resource: link ? await attempt(() => client.readResource({ uri: link.uri })) : null,
  };
}

async function corrupted(url) {
  const { client } = await connect(url);
  await client.listTools(); // caches the output schemas the SDK validates against
  const r = await attempt(() => client.callTool({ name: 'recall_structured', arguments: RECALL }));
  await client.close();
  return r;
}

const result = {
  client: 'typescript',
  sdk: sdkVersion,
  node: process.version,
  with: await session(withUrl),
  without: await session(withoutUrl),
  corrupted: await corrupted(corruptUrl),
};
// Exit only once stdout is flushed: a pipe is written asynchronously.
process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));

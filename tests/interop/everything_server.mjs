// Runs the third-party `@modelcontextprotocol/server-everything` in its
// streamable-HTTP mode on loopback only (it listens on every interface by
// default) and on a free port, printed as `LISTENING <port>` on stdout.
// Run by tests/proxy.rs; `node everything_server.mjs sse` runs its old
// HTTP+SSE transport instead (tests/oauth.rs).
import http from 'node:http';

const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (_port, ...rest) {
  this.once('listening', () => console.log(`LISTENING ${this.address().port}`));
  const callbacks = rest.filter((r) => typeof r === 'function');
  return listen.call(this, 0, '127.0.0.1', ...callbacks);
};
process.argv.push('streamableHttp');
await import('@modelcontextprotocol/server-everything/dist/index.js');

// A browser for tests/oauth.rs: `lro proxy` runs `$BROWSER URL`; this
// follows the authorization server's redirects with a cookie jar, submits
// oidc-provider's development login and consent forms, and ends by loading
// the proxy's loopback callback, as a person at a browser would (or, for
// the device authorization grant, confirms the user code and ends on the
// authorization server's success page).
//
//   BROWSER="node oauth_browser.mjs" BROWSER_LOG=/tmp/log lro proxy ...
//
// Appends one line per sign-in to $BROWSER_LOG ("<status of the callback>").
import { appendFileSync } from 'node:fs';

const log = (line) => process.env.BROWSER_LOG && appendFileSync(process.env.BROWSER_LOG, `${line}\n`);
const jar = new Map();

async function go(url, init = {}) {
  const headers = { ...(init.headers || {}) };
  const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  if (cookie) headers.cookie = cookie;
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const at = pair.indexOf('=');
    jar.set(pair.slice(0, at).trim(), pair.slice(at + 1));
  }
  return res;
}

// The first form of a page: its action and fields (login and password
// filled in when asked).
function form(html, base) {
  const f = html.match(/<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i);
  if (!f) return null;
  const body = new URLSearchParams();
  for (const input of f[2].matchAll(/<input([^>]*)>/gi)) {
    const name = input[1].match(/name="([^"]+)"/i)?.[1];
    if (!name) continue;
    const value = input[1].match(/value="([^"]*)"/i)?.[1] ?? '';
    body.set(name, name === 'login' ? 'alice' : name === 'password' ? 'secret' : value);
  }
  return { action: new URL(f[1].replace(/&amp;/g, '&'), base), body };
}

let url = new URL(process.argv[2]);
const authServer = url.origin;
let res = await go(url);
for (let step = 0; step < 20; step += 1) {
  if (res.status >= 300 && res.status < 400) {
    url = new URL(res.headers.get('location'), url);
    res = await go(url);
    continue;
  }
  if (url.origin !== authServer) {
    log(`${res.status}`);
    process.exit(res.ok ? 0 : 1);
  }
  const page = await res.text();
  const next = form(page, url);
  if (!next && res.ok && url.pathname.startsWith('/device')) {
    // The device authorization grant ends on the server's own page.
    log(`device ${res.status}`);
    process.exit(0);
  }
  if (!next) {
    log(`stuck ${res.status} ${url}`);
    process.exit(1);
  }
  url = next.action;
  res = await go(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: next.body.toString(),
  });
}
log('too many steps');
process.exit(1);

// Static keys against the real Python SDK (mcp==2.3.0): a Node server and a
// Python server sharing a key accept each other's states. The Python side is
// scripts/py_interop.py (the SDK's own RequestStateBoundary, as the Rust interop
// test drives it); requests carry the same raw params bytes to both.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';

import { KeysetCodec, createStatesealCodec } from 'stateseal';

import { ROOT } from './harness.mjs';

let python, lines;

before(() => {
  // The venv with the real SDK (scripts/test.sh exports it; made on first use otherwise).
  const exe = process.env.STATESEAL_PYTHON ?? execFileSync(path.join(ROOT, 'scripts/py-env.sh')).toString().trim();
  python = spawn(exe, [path.join(ROOT, 'scripts/py_interop.py')], { stdio: ['pipe', 'pipe', 'inherit'] });
  lines = createInterface({ input: python.stdout })[Symbol.asyncIterator]();
});

after(() => python?.kill());

/** One request line to the SDK driver, `params` spliced in as raw text. */
async function sdk(fields, rawParams) {
  python.stdin.write(`${JSON.stringify(fields).slice(0, -1)},"params":${rawParams}}\n`);
  return JSON.parse((await lines.next()).value);
}

function tamper(token) {
  const mid = token.length >> 1;
  return token.slice(0, mid) + (token[mid] === 'A' ? 'B' : 'A') + token.slice(mid + 1);
}

/** Runs `f(states, ctx)` as a Node server would for a request with these params. */
function asServer(states, method, rawParams, f) {
  const body = `{"jsonrpc":"2.0","id":"r-1","method":${JSON.stringify(method)},"params":${rawParams}}`;
  const ctx = { mcpReq: { id: 'r-1', method } };
  return states.handler({ fetch: (req) => f({ ...ctx, http: { req } }) }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body }));
}

test("Node and the Python SDK accept each other's states, and refuse each other's tampered ones", async () => {
  const key = randomBytes(32);
  const codec = KeysetCodec.fromKeys([key]);
  const rounds = [
    ['tools/call', '{"name":"deploy","arguments":{"env":"prod","n":[1,2.5,1e16],"ü":"😀"}}'],
    ['prompts/get', '{"name":"brief","arguments":{"topic":"x"}}'],
    ['resources/read', '{"uri":"file:///srv/été.txt"}'],
  ];
  let checked = 0;
  for (const [method, raw] of rounds) {
    for (const audience of [undefined, 'svc-é']) {
      // The Rust servers' principal (client id, issuer, subject) is the string the Python SDK binds.
      for (const parts of [undefined, { clientId: 'client-1', issuer: 'https://as.example', subject: 'alice' }]) {
        const principal = parts && '["client-1","https://as.example","alice"]';
        const states = createStatesealCodec({ codec, ttlSeconds: 600, audience, format: 'text', bind: () => parts });
        const base = { key_hex: key.toString('hex'), audience: audience ?? null, principal: principal ?? null, method };
        const state = `state for ${method} "quoted" ✓`;

        const token = await asServer(states, method, raw, (ctx) => states.mint(state, ctx));
        assert.deepEqual(await sdk({ ...base, op: 'verify', token }, raw), { ok: true, state }, `${method} ${audience} ${principal}`);
        assert.equal((await sdk({ ...base, op: 'verify', token: tamper(token) }, raw)).ok, false);

        const theirs = (await sdk({ ...base, op: 'mint', state }, raw)).token;
        assert.equal(await asServer(states, method, raw, (ctx) => states.verify(theirs, ctx)), state);
        await assert.rejects(asServer(states, method, raw, (ctx) => states.verify(tamper(theirs), ctx)), { name: 'InvalidRequestStateError' });
        checked += 1;
      }
    }
  }
  assert.equal(checked, 12);
});

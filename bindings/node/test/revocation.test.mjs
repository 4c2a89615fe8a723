// Revocations through the Node package: `stateseal revoke` writes an entry
// into the keyset, the codec's instance learns it at its next refresh, and
// `verify` refuses the covered states with the Rust servers' reason
// (`revoked`); another principal's states and later ones verify.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { InvalidRequestStateError, KeysetCodec, createStatesealCodec } from 'stateseal';

import { TIMING, cli, localKeyset } from './harness.mjs';

const deploy = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy', arguments: { env: 'prod' } } };
// The request being served, as the SDK gives it to the codec (`ctx.http.req`).
let current;
const ctx = {
  mcpReq: { id: 1, method: 'tools/call' },
  get http() {
    return { req: current };
  },
};
const ALICE = { clientId: 'app-1', issuer: 'https://as.example', subject: 'alice' };
const BOB = { clientId: 'app-1', issuer: 'https://as.example', subject: 'bob' };

function serve(states, f) {
  return states.handler({
    fetch: (request) => {
      current = request;
      return f(states);
    },
  }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body: JSON.stringify(deploy) }));
}

test('a revoked principal is refused after a refresh, and nothing else', async () => {
  const keyset = localKeyset();
  const codec = await KeysetCodec.start(keyset.store, {
    allowLocalKek: true,
    ...TIMING,
    keysetId: keyset.keysetId,
    keysetKeks: keyset.keysetKeks,
  });
  try {
    const as = (who) => createStatesealCodec({ codec, audience: 'svc', bind: () => who });
    const [alice, bob] = [as(ALICE), as(BOB)];
    const early = { alice: await serve(alice, (s) => s.mint('s', ctx)), bob: await serve(bob, (s) => s.mint('s', ctx)) };
    const generation = codec.status().generation;
    await sleep(10);
    cli(keyset, 'revoke', '--store', keyset.store, '--principal', JSON.stringify([ALICE.clientId, ALICE.issuer, ALICE.subject]));
    const deadline = Date.now() + 5000;
    while (codec.status().generation === generation) {
      assert.ok(Date.now() < deadline, 'the codec did not adopt the revocation within 5 s (R = 1 s)');
      await sleep(100);
    }
    await assert.rejects(serve(alice, (s) => s.verify(early.alice, ctx)), (e) => {
      assert.ok(e instanceof InvalidRequestStateError, `${e}`);
      assert.equal(e.reason, 'revoked');
      assert.equal(e.sdkReason, 'expired');
      assert.ok(!`${e.message} ${e.stack}`.includes(early.alice));
      return true;
    });
    assert.equal(await serve(bob, (s) => s.verify(early.bob, ctx)), 's');
    const later = await serve(alice, (s) => s.mint('s', ctx));
    assert.equal(await serve(alice, (s) => s.verify(later, ctx)), 's');
  } finally {
    codec.close();
  }
});

// The package in the real TypeScript MCP SDK: a server whose request states go
// through `createStatesealCodec`, a client of the same SDK, two-round
// conversations, and every attack refused with the SDK's opaque error.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { ProtocolError } from '@modelcontextprotocol/client';
import { KeysetCodec, createStatesealCodec } from 'stateseal';

import { TIMING, deploy, localKeyset, sdkClient, sdkServer } from './harness.mjs';

let keyset, codec, server, alice, bob;
const errors = [];
const reasons = [];
let now = Date.now() / 1000;

before(async () => {
  keyset = localKeyset();
  codec = await KeysetCodec.start(keyset.store, { allowLocalKek: true, ...TIMING, keysetId: keyset.keysetId, keysetKeks: keyset.keysetKeks });
  const states = createStatesealCodec({ codec, audience: 'stateseal-example', clock: () => now });
  server = await sdkServer(states, { errors, reasons });
  alice = await sdkClient(server.url, 'alice');
  bob = await sdkClient(server.url, 'bob');
});

after(async () => {
  await alice?.close();
  await bob?.close();
  await server?.close();
  codec?.close();
});

/**
 * The SDK's refusal of a state: -32602 and its fixed message to the client, the SDK codec's
 * reason in the server's log (`onerror`), stateseal's own on the error thrown.
 */
async function refused(promise, sdkReason, reason) {
  const before = errors.length;
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProtocolError, `${e}`);
    assert.equal(e.code, -32602);
    assert.equal(e.message, 'Invalid or expired requestState');
    assert.deepEqual(e.data, { reason: 'invalid_request_state' });
    return true;
  });
  assert.equal(errors.length, before + 1);
  assert.equal(errors.at(-1), `requestState verification rejected tools/call: ${sdkReason}`);
  if (reason !== undefined) assert.equal(reasons.at(-1), reason);
}

test('a two-round conversation completes with a sealed state', async () => {
  const first = await deploy(alice, 'prod');
  assert.equal(first.resultType, 'input_required');
  assert.match(first.requestState, /^v2\.[A-Za-z0-9_-]+$/);
  assert.ok(!first.requestState.includes('confirm'), 'the state is encrypted, not signed');
  const second = await deploy(alice, 'prod', first.requestState);
  assert.deepEqual(second.content, [{ type: 'text', text: 'deployed to prod' }]);
});

test('a tampered state is refused', async () => {
  const { requestState: s } = await deploy(alice, 'prod');
  const mid = s.length >> 1;
  const flipped = s.slice(0, mid) + (s[mid] === 'A' ? 'B' : 'A') + s.slice(mid + 1);
  await refused(deploy(alice, 'prod', flipped), 'mac', 'seal');
  await refused(deploy(alice, 'prod', 'v2.AAAA'), 'malformed', 'malformed');
});

test("another user's state is refused", async () => {
  const { requestState: s } = await deploy(alice, 'prod');
  await refused(deploy(bob, 'prod', s), 'bind', 'principal');
});

test('a state replayed with other arguments is refused', async () => {
  const { requestState: s } = await deploy(alice, 'staging');
  await refused(deploy(alice, 'prod', s), 'bind', 'request binding');
});

test('an expired state is refused, a fresh one still works', async () => {
  const { requestState: s } = await deploy(alice, 'prod');
  now += TIMING.ttl + 1;
  await refused(deploy(alice, 'prod', s), 'expired', 'expired');
  const fresh = await deploy(alice, 'prod');
  assert.deepEqual((await deploy(alice, 'prod', fresh.requestState)).content, [{ type: 'text', text: 'deployed to prod' }]);
});

test('a state is bound to its audience', async () => {
  const { requestState: s } = await deploy(alice, 'prod');
  const other = createStatesealCodec({ codec, audience: 'another-server', clock: () => now });
  const elsewhere = await sdkServer(other, { errors });
  const client = await sdkClient(elsewhere.url, 'alice');
  try {
    await refused(deploy(client, 'prod', s), 'bind');
  } finally {
    await client.close();
    await elsewhere.close();
  }
});

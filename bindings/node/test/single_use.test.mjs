// Single-use states through the Node package, on a real Redis shared by two
// codecs (two servers of a fleet): a single-use tool's state verifies once
// and is refused `replayed` the second time anywhere; with the store down,
// single-use states are refused `replay store unavailable` while multi-use
// states still verify, and once it is back empty the states issued before
// are refused and fresh ones verify once; a state of the single-use round
// minted without the claim is refused; the paths that record nothing refuse
// single-use states.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { InvalidRequestStateError, KeysetCodec, StatesealError, createStatesealCodec } from 'stateseal';

import { TIMING, localKeyset } from './harness.mjs';
import { redis } from './redis.mjs';

const internal = (name) => createRequire(import.meta.url)(path.join(path.dirname(createRequire(import.meta.url).resolve('stateseal')), name));
const native = internal('native.cjs');
const { Frame } = internal('frame.cjs');

const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
// The request being served, as the SDK gives it to the codec (`ctx.http.req`).
let current;
const ctx = (id) => ({ mcpReq: { id, method: 'tools/call' }, http: { req: current } });

/** `f(states)` inside the handler, for a POST of `body`, as the SDK calls mint and verify. */
function serve(states, body, f) {
  return states.handler({
    fetch: (request) => {
      current = request;
      return f(states);
    },
  }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body: JSON.stringify(body) }));
}

const STATE = { amount: 'secret-amount-42' };

/** A refusal with stateseal's `reason`, whose message and fields hold neither token nor state. */
const refused = (reason, token) => (e) => {
  assert.ok(e instanceof InvalidRequestStateError, `${e}`);
  assert.equal(e.reason, reason);
  assert.equal(e.message, reason);
  assert.equal(e.sdkReason, 'expired');
  const shown = `${e.message} ${e.stack} ${JSON.stringify(e)}`;
  assert.ok(!shown.includes(token) && !shown.includes(STATE.amount), 'the error shows the token or the state');
  return true;
};

let keyset, store, a, b;

/**
 * Waits out the skew allowance S after the store's epoch (set when a codec
 * connects to a new or emptied store): a single-use state issued within S
 * of it is refused, since one minted before a loss may carry an `iat` up to S ahead.
 */
const settle = (epoch) => new Promise((r) => setTimeout(r, Math.max(0, epoch + TIMING.maxSkew * 1000 + 50 - Date.now())));
const options = () => ({
  allowLocalKek: true,
  ...TIMING,
  keysetId: keyset.keysetId,
  keysetKeks: keyset.keysetKeks,
  replayStore: store.uri,
  singleUseTools: ['transfer'],
});

before(async () => {
  keyset = localKeyset();
  store = await redis();
  // Two servers of one fleet: the same keyset, the same Redis.
  const epoch = Date.now();
  a = await KeysetCodec.start(keyset.store, options());
  b = await KeysetCodec.start(keyset.store, options());
  await settle(epoch);
});

after(async () => {
  a?.close();
  b?.close();
  await store?.stop();
});

test('a single-use state verifies once; presented again, on the other server, it is refused as replayed', async () => {
  const [sa, sb] = [a, b].map((codec) => createStatesealCodec({ codec, audience: 'bank' }));
  const transfer = call(1, 'transfer', { to: 'bob' });
  const token = await serve(sa, transfer, (s) => s.mint(STATE, ctx(1)));
  assert.match(token, /^v2\./);
  assert.deepEqual(await serve(sa, transfer, (s) => s.verify(token, ctx(1))), STATE);
  await assert.rejects(serve(sb, transfer, (s) => s.verify(token, ctx(1))), refused('replayed', token));
  await assert.rejects(serve(sa, transfer, (s) => s.verify(token, ctx(1))), refused('replayed', token));
  // Racing presentations on both servers: exactly one is accepted.
  const raced = await serve(sa, transfer, (s) => s.mint(STATE, ctx(1)));
  const outcomes = await Promise.allSettled(
    [sa, sb, sa, sb].map((s) => serve(s, transfer, (x) => x.verify(raced, ctx(1)))),
  );
  assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
  // Another tool's states stay multi-use: verified as often as presented, on either server.
  const deploy = call(2, 'deploy', { env: 'prod' });
  const multi = await serve(sa, deploy, (s) => s.mint(STATE, ctx(2)));
  for (const s of [sa, sb, sa]) assert.deepEqual(await serve(s, deploy, (x) => x.verify(multi, ctx(2))), STATE);
});

test('with the replay store down, single-use states are refused and multi-use states still verify', async () => {
  const states = createStatesealCodec({ codec: a, audience: 'bank' });
  const transfer = call(3, 'transfer', { to: 'carol' });
  const deploy = call(4, 'deploy', { env: 'prod' });
  const once = await serve(states, transfer, (s) => s.mint(STATE, ctx(3)));
  const multi = await serve(states, deploy, (s) => s.mint(STATE, ctx(4)));
  await store.stop();
  try {
    const started = Date.now();
    await assert.rejects(serve(states, transfer, (s) => s.verify(once, ctx(3))), refused('replay store unavailable', once));
    assert.ok(Date.now() - started < 5_000, 'the refusal waited past the store deadline');
    assert.deepEqual(await serve(states, deploy, (s) => s.verify(multi, ctx(4))), STATE);
  } finally {
    await store.start();
  }
  // Back with nothing persisted: its records are gone, so a state issued
  // before is refused; the first presentation reconnects and sets a new epoch.
  await assert.rejects(serve(states, transfer, (s) => s.verify(once, ctx(3))), refused("issued before the replay store's epoch", once));
  const epoch = Date.now();
  await settle(epoch);
  const fresh = await serve(states, transfer, (s) => s.mint(STATE, ctx(3)));
  assert.deepEqual(await serve(states, transfer, (s) => s.verify(fresh, ctx(3))), STATE);
  await assert.rejects(serve(states, transfer, (s) => s.verify(fresh, ctx(3))), refused('replayed', fresh));
});

test('a state of the single-use round minted without the claim is refused, by the codec and the raw unseal', async () => {
  const { replayStore, singleUseTools, ...plainOptions } = options();
  const lax = await KeysetCodec.start(keyset.store, plainOptions);
  try {
    const [sl, sa] = [lax, a].map((codec) => createStatesealCodec({ codec, audience: 'bank' }));
    const transfer = call(6, 'transfer', { to: 'erin' });
    const plain = await serve(sl, transfer, (s) => s.mint(STATE, ctx(6)));
    assert.deepEqual(await serve(sl, transfer, (s) => s.verify(plain, ctx(6))), STATE);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(serve(sa, transfer, (s) => s.verify(plain, ctx(6))), refused('single-use claim missing', plain));
    }
    assert.throws(() => a.unseal(plain), (e) => e instanceof InvalidRequestStateError && e.reason === 'single-use claim missing');
    assert.ok(lax.unseal(plain).length > 0, 'the instance without the setting opens it raw');
  } finally {
    lax.close();
  }
});

test('the paths that record nothing refuse single-use states: the envelope, and the raw codec', async () => {
  const states = createStatesealCodec({ codec: a, audience: 'bank' });
  const transfer = call(5, 'transfer', { to: 'dan' });
  const token = await serve(states, transfer, (s) => s.mint(STATE, ctx(5)));
  const envelope = a._envelope('bank', TIMING.ttl);
  const number = native.envelopeNumber(envelope);
  const round = 1;
  const body = native.envelopeParse(envelope, JSON.stringify(transfer));
  // The envelope reads the token from the frame, and how many bytes of it are the token's.
  const frame = new Frame();
  const verify = (r, now) => {
    frame.text(token);
    return frame.call(number, r, now, native.envelopeVerify);
  };
  const name = (r) => {
    frame.text('');
    frame.name(body, 'tools/call', '5');
    return frame.call(number, r, undefined, native.envelopeOpenNamed);
  };
  // Rounds are named by positive whole numbers; anything else is refused before naming.
  for (const [bad, message] of [
    [0, 'round: expected a positive whole number'],
    [-1, 'frame: expected a whole number where it holds one'],
  ]) {
    assert.throws(() => name(bad), { code: 'ERR_STATESEAL_CONFIG', message });
  }
  assert.throws(() => verify(7), { code: 'ERR_STATESEAL_ROUND' });
  // Named (its empty token refused as malformed), then verified.
  assert.throws(() => name(round), (e) => e.code === 'ERR_STATESEAL_REJECTED' && e.message === 'malformed');
  assert.throws(
    () => verify(round, Date.now() / 1000),
    (e) => e.code === 'ERR_STATESEAL_REJECTED' && e.message === 'replay store unavailable',
  );
  // A length past the frame's end is refused, not read past it.
  frame.text(token);
  frame.numbers[4] = 1 << 30;
  assert.throws(() => frame.call(number, round, undefined, native.envelopeVerify), {
    code: 'ERR_STATESEAL_CONFIG',
    message: "frame: a text runs past the frame's end",
  });
  assert.throws(() => a.unseal(token), (e) => e instanceof InvalidRequestStateError && e.reason === 'replay store unavailable');
  // Still unspent: the codec of createStatesealCodec records and accepts it.
  assert.deepEqual(await serve(states, transfer, (s) => s.verify(token, ctx(5))), STATE);
});

test('single-use tools without a replay store: start fails naming replayStore', async () => {
  const { replayStore, ...rest } = options();
  await assert.rejects(KeysetCodec.start(keyset.store, rest), (e) => e instanceof StatesealError && e.code === 'ERR_STATESEAL_CONFIG' && /replay_store/.test(e.message));
  await assert.rejects(KeysetCodec.start(keyset.store, { ...rest, replayStore: 'memcached://h:1' }), (e) => e instanceof StatesealError && /replay_store/.test(e.message));
});

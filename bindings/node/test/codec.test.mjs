// `KeysetCodec`: a keyset's ring in a Node process, its errors, its status,
// its rotation, and a process that exits while a codec is open.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'node:test';

import stateseal, { InvalidRequestStateError, KeysetCodec, StatesealError } from 'stateseal';

import { TIMING, cli, localKeyset } from './harness.mjs';

const pinned = (k) => ({ allowLocalKek: true, ...TIMING, keysetId: k.keysetId, keysetKeks: k.keysetKeks });

test('ESM and CommonJS entries are one package', () => {
  const cjs = createRequire(import.meta.url)('stateseal');
  assert.equal(cjs.KeysetCodec, KeysetCodec);
  assert.equal(stateseal.InvalidRequestStateError, InvalidRequestStateError);
});

test('seals and opens on a keyset, reports its status, and refuses once closed', async () => {
  const k = localKeyset();
  const codec = await KeysetCodec.start(k.store, pinned(k));
  const token = codec.seal('payload');
  assert.match(token, /^v2\./);
  assert.equal(codec.unseal(token).toString(), 'payload');
  assert.deepEqual(codec.unseal(codec.seal(new Uint8Array([0, 1, 255]))), Buffer.from([0, 1, 255]));
  const st = codec.status();
  assert.equal(st.ready, true);
  assert.equal(st.generation, 1);
  assert.equal(st.ring.length, 1);
  assert.equal(st.primary, st.ring[0]);
  assert.equal(codec.ttl, TIMING.ttl);
  codec.close();
  for (const f of [() => codec.seal('x'), () => codec.unseal(token), () => codec.status()]) {
    assert.throws(f, (e) => e instanceof StatesealError && e.code === 'ERR_STATESEAL_CLOSED' && e.message === 'the codec is closed');
  }
});

test('refusals carry a reason and never the token', async () => {
  const k = localKeyset();
  const codec = await KeysetCodec.start(k.store, pinned(k));
  try {
    const token = codec.seal('secret-plaintext');
    const bad = token.slice(0, -3) + (token.at(-3) === 'A' ? 'B' : 'A') + token.slice(-2);
    for (const [t, reason] of [[bad, 'seal'], ['v2.' + 'A'.repeat(80), 'unknown key'], ['nope', 'malformed'], ['v2.' + 'A'.repeat(1 << 20), 'malformed']]) {
      assert.throws(() => codec.unseal(t), (e) => {
        assert.ok(e instanceof InvalidRequestStateError);
        assert.equal(e.code, 'ERR_STATESEAL_REJECTED');
        assert.equal(e.reason, reason);
        assert.equal(e.message, reason);
        assert.ok(t.length < 20 || !e.stack.includes(t.slice(3, 20)), 'no part of the token');
        assert.ok(!e.stack.includes('secret-plaintext'));
        return true;
      });
    }
  } finally {
    codec.close();
  }
});

test('bad options are refused, naming the option', async () => {
  const k = localKeyset();
  const cases = [
    [{ refresh: 1 }, /unknown setting "refresh"/],
    [{ ttl: 'soon' }, /ttl: expected seconds/],
    [{ keysetKeks: 'local://x' }, /keysetKeks: expected a list/],
    [{ keyset_id: 'ks' }, /camelCase/],
    [{ ttl: -1 }, /ttl/],
  ];
  for (const [options, message] of cases) {
    await assert.rejects(KeysetCodec.start(k.store, { ...pinned(k), ...options }), (e) => {
      assert.ok(e instanceof StatesealError, `${e}`);
      assert.equal(e.code, 'ERR_STATESEAL_CONFIG');
      assert.match(e.message, message);
      return true;
    });
  }
  await assert.rejects(KeysetCodec.start(42), { code: 'ERR_STATESEAL_CONFIG', message: /store/ });
  // A local KEK is refused unless asked for; the error names the switch, never the key.
  await assert.rejects(KeysetCodec.start(k.store, { ...pinned(k), allowLocalKek: false, readyTimeout: 0.5 }), (e) => {
    assert.equal(e.code, 'ERR_STATESEAL_START');
    assert.match(e.message, /allow_local_kek|local/);
    return true;
  });
  assert.throws(() => new KeysetCodec({}), { code: 'ERR_STATESEAL_CONFIG' });
});

test('start waits off the event loop: timers fire while the first ring is awaited', async () => {
  const k = localKeyset();
  let ticks = 0;
  const timer = setInterval(() => (ticks += 1), 20);
  // No keyset at this path: start waits its whole readyTimeout for a ring, then fails.
  const started = Date.now();
  await assert.rejects(
    KeysetCodec.start(`file://${k.dir}/missing.json`, { ...pinned(k), readyTimeout: 1 }),
    (e) => e.code === 'ERR_STATESEAL_START',
  );
  clearInterval(timer);
  const waited = Date.now() - started;
  assert.ok(waited >= 900, `start gave up after ${waited} ms`);
  assert.ok(ticks >= waited / 20 / 2, `${ticks} timer ticks in ${waited} ms: the event loop was blocked`);
});

test('static keys: too short or missing keys refused', () => {
  assert.throws(() => KeysetCodec.fromKeys([]), { code: 'ERR_STATESEAL_CONFIG' });
  assert.throws(() => KeysetCodec.fromKeys(['short']), (e) => e.code === 'ERR_STATESEAL_CONFIG' && !e.message.includes('short'));
  const codec = KeysetCodec.fromKeys(['k'.repeat(32)]);
  assert.match(codec.seal('x'), /^v1\./);
  assert.equal(codec.ttl, null);
  assert.equal(codec.status(), null);
});

test('follows a rotation: states sealed before it still open, the new key seals after phase 1', async () => {
  const k = localKeyset();
  const codec = await KeysetCodec.start(k.store, pinned(k));
  try {
    const before = codec.seal('before');
    const first = codec.status().primary;
    cli(k, 'rotate', '--store', k.store);
    const deadline = Date.now() + 20_000;
    while (codec.status().primary === first) {
      assert.ok(Date.now() < deadline, 'the new key never became primary');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(codec.unseal(before).toString(), 'before');
    assert.equal(codec.unseal(codec.seal('after')).toString(), 'after');
    assert.equal(codec.status().ring.length, 2);
  } finally {
    codec.close();
  }
});

test('a process exits while a codec is open (its threads never hold the event loop)', () => {
  const k = localKeyset();
  const script = `import { KeysetCodec } from 'stateseal';
    const c = await KeysetCodec.start(${JSON.stringify(k.store)}, ${JSON.stringify(pinned(k))});
    console.log(c.unseal(c.seal('x')).toString());`;
  const started = Date.now();
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: import.meta.dirname, timeout: 30_000, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), 'x');
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
});

test('a bad STATESEAL_AEAD is refused when the first codec is made, and a good one is used', () => {
  const made = (aead) =>
    spawnSync(
      process.execPath,
      ['-e', "const { KeysetCodec } = require('stateseal'); try { const c = KeysetCodec.fromKeys(['k'.repeat(32)]); console.log('made', c.unseal(c.seal('x')).toString()); } catch (e) { console.log(e.code, e.message); }"],
      { cwd: new URL('.', import.meta.url).pathname, env: { ...process.env, STATESEAL_AEAD: aead }, encoding: 'utf8' },
    ).stdout.trim();
  assert.equal(made('openssl'), 'ERR_STATESEAL_CONFIG invalid configuration: STATESEAL_AEAD: unknown AEAD backend (expected auto, aws-lc, ring or split)');
  for (const aead of ['auto', 'aws-lc', 'ring', 'split']) assert.equal(made(aead), 'made x', aead);
});

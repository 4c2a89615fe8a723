// How `createStatesealCodec` finds a round's request and caller, and refuses
// what it cannot bind: batches, bodies past the limit, non-JSON states,
// contexts without a client id or a subject, misspelt options. The SDK's handler is
// stood in for by one that calls mint/verify inside `handler()`, as the SDK does.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidRequestStateError, KeysetCodec, StatesealError, createStatesealCodec } from 'stateseal';

const codec = KeysetCodec.fromKeys(['k'.repeat(32)]);
const call = (id, env) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'deploy', arguments: { env } } });
// The request being served, as the SDK gives it to the codec (`ctx.http.req`).
let current;
const ctx = (id, authInfo) => ({ mcpReq: { id, method: 'tools/call' }, http: { req: current, ...(authInfo && { authInfo }) } });

/** `f(states)` inside the handler, for a POST of `body` (text or a stream). */
function serve(states, body, f) {
  const init = { method: 'POST', body };
  if (body instanceof ReadableStream) init.duplex = 'half';
  return states.handler({
    fetch: (request) => {
      current = request;
      return f(states);
    },
  }).fetch(new Request('http://127.0.0.1/mcp', init));
}

const refusal = (reason, sdkReason) => (e) => {
  assert.ok(e instanceof InvalidRequestStateError, `${e}`);
  assert.equal(e.reason, reason);
  assert.equal(e.message, sdkReason);
  return true;
};

test('a batch repeating a request id binds none of its requests', async () => {
  const states = createStatesealCodec({ codec, audience: 'svc' });
  const token = await serve(states, JSON.stringify(call(1, 'staging')), (s) => s.mint({ env: 'staging' }, ctx(1)));
  assert.deepEqual(await serve(states, JSON.stringify(call(1, 'staging')), (s) => s.verify(token, ctx(1))), { env: 'staging' });
  // The state minted for staging, echoed in a batch whose second request with the same id deploys prod.
  const batch = JSON.stringify([call(1, 'staging'), call(1, 'prod')]);
  await assert.rejects(serve(states, batch, (s) => s.verify(token, ctx(1))), refusal('malformed', 'malformed'));
  // Distinct ids in a batch bind each to its own request.
  const fine = JSON.stringify([call(2, 'prod'), call(1, 'staging')]);
  assert.deepEqual(await serve(states, fine, (s) => s.verify(token, ctx(1))), { env: 'staging' });
  await assert.rejects(serve(states, fine, (s) => s.verify(token, ctx(2))), refusal('request binding', 'bind'));
});

test('ids JavaScript reads as one (1 and 1.0, 1E0, past 2^53) bind none of their requests', async () => {
  const states = createStatesealCodec({ codec, audience: 'svc' });
  // A request whose id is spelt as given (JSON.stringify spells every number its own way).
  const spelt = (id, env) => JSON.stringify(call(0, env)).replace('"id":0', `"id":${id}`);
  for (const [first, second, id] of [
    ['1', '1.0', 1],
    ['1', '1E0', 1],
    ['9007199254740992', '9007199254740993', 2 ** 53],
  ]) {
    const alone = spelt(first, 'staging');
    const token = await serve(states, alone, (s) => s.mint({ env: 'staging' }, ctx(id)));
    assert.deepEqual(await serve(states, alone, (s) => s.verify(token, ctx(id))), { env: 'staging' });
    // The SDK hands both rounds of this batch the same req.id: the staging state must not
    // verify for the round that deploys prod, so neither round binds.
    const batch = `[${alone},${spelt(second, 'prod')}]`;
    const [a, b] = JSON.parse(batch);
    assert.equal(a.id, b.id);
    await assert.rejects(serve(states, batch, (s) => s.verify(token, ctx(id))), refusal('malformed', 'malformed'), `${first} and ${second}`);
    await assert.rejects(serve(states, batch, (s) => s.mint({ env: 'prod' }, ctx(id))), refusal('malformed', 'malformed'), `${first} and ${second}`);
    // Alone, the request spelt the other way is found by the id JavaScript reads.
    const other = spelt(second, 'prod');
    const minted = await serve(states, other, (s) => s.mint({ env: 'prod' }, ctx(id)));
    assert.deepEqual(await serve(states, other, (s) => s.verify(minted, ctx(id))), { env: 'prod' });
  }
});

test('string and number ids are told apart; an id of another type binds nothing', async () => {
  const states = createStatesealCodec({ codec, audience: 'svc' });
  for (const [id, other] of [['1', 1], [1, '1'], ['a"\\b\u00e9', 'a"\\b'], [-0, '0']]) {
    const body = JSON.stringify(call(id, 'prod'));
    const token = await serve(states, body, (s) => s.mint({ env: 'prod' }, ctx(id)));
    assert.deepEqual(await serve(states, body, (s) => s.verify(token, ctx(id))), { env: 'prod' }, JSON.stringify(id));
    await assert.rejects(serve(states, body, (s) => s.verify(token, ctx(other))), refusal('malformed', 'malformed'), JSON.stringify(id));
  }
  // -0 and 0 are one id to `===`, as they are here.
  const zero = JSON.stringify(call(0, 'prod'));
  const minted = await serve(states, zero, (s) => s.mint('z', ctx(-0)));
  assert.equal(await serve(states, zero, (s) => s.verify(minted, ctx(0))), 'z');
  for (const odd of [null, Number.NaN, true, { a: 1 }]) {
    const body = JSON.stringify(call(odd, 'prod'));
    await assert.rejects(serve(states, body, (s) => s.mint('x', ctx(odd))), refusal('malformed', 'malformed'), String(odd));
  }
});

test('without a clock of its own, the codec stamps and checks states by the system clock', async () => {
  const body = JSON.stringify(call(1, 'prod'));
  const system = createStatesealCodec({ codec, audience: 'svc', ttlSeconds: 60 });
  const at = (offset) => createStatesealCodec({ codec, audience: 'svc', ttlSeconds: 60, clock: () => Date.now() / 1000 + offset });
  // Minted by the system clock: valid now by an application's clock, expired past its lifetime.
  const token = await serve(system, body, (s) => s.mint('x', ctx(1)));
  assert.equal(await serve(at(0), body, (s) => s.verify(token, ctx(1))), 'x');
  await assert.rejects(serve(at(61), body, (s) => s.verify(token, ctx(1))), refusal('expired', 'expired'));
  // Minted by an application's clock: checked by the system clock.
  const old = await serve(at(-61), body, (s) => s.mint('x', ctx(1)));
  await assert.rejects(serve(system, body, (s) => s.verify(old, ctx(1))), refusal('expired', 'expired'));
  const fresh = await serve(at(-1), body, (s) => s.mint('x', ctx(1)));
  assert.equal(await serve(system, body, (s) => s.verify(fresh, ctx(1))), 'x');
});

test('a body past maxBodyBytes is not kept, with or without a Content-Length', async () => {
  const states = createStatesealCodec({ codec, maxBodyBytes: 1024 });
  const small = JSON.stringify(call(1, 'prod'));
  const token = await serve(states, small, (s) => s.mint('x', ctx(1)));
  const padded = JSON.stringify({ ...call(1, 'prod'), pad: 'p'.repeat(2048) });
  const chunks = (text) =>
    new ReadableStream({
      start(c) {
        for (let i = 0; i < text.length; i += 512) c.enqueue(new TextEncoder().encode(text.slice(i, i + 512)));
        c.close();
      },
    });
  await assert.rejects(serve(states, padded, (s) => s.verify(token, ctx(1))), refusal('malformed', 'malformed'));
  await assert.rejects(serve(states, chunks(padded), (s) => s.verify(token, ctx(1))), refusal('malformed', 'malformed'));
  assert.equal(await serve(states, chunks(small), (s) => s.verify(token, ctx(1))), 'x');
});

test('an authentic state that is not JSON is refused without being quoted', async () => {
  const text = createStatesealCodec({ codec, format: 'text' });
  const json = createStatesealCodec({ codec });
  const body = JSON.stringify(call(1, 'prod'));
  const token = await serve(text, body, (s) => s.mint('confirm-deploy:prod', ctx(1)));
  await assert.rejects(serve(json, body, (s) => s.verify(token, ctx(1))), (e) => {
    refusal('malformed', 'malformed')(e);
    assert.ok(!e.stack.includes('confirm-deploy'));
    return true;
  });
});

test('the caller: parts from authInfo, and an authInfo without a client id is an error', async () => {
  const states = createStatesealCodec({ codec });
  const body = JSON.stringify(call(1, 'prod'));
  const alice = { token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://as.test', sub: 'alice' } };
  const token = await serve(states, body, (s) => s.mint('x', ctx(1, alice)));
  assert.equal(await serve(states, body, (s) => s.verify(token, ctx(1, alice))), 'x');
  await assert.rejects(serve(states, body, (s) => s.verify(token, ctx(1, { ...alice, extra: { sub: 'bob' } }))), refusal('principal', 'bind'));
  await assert.rejects(serve(states, body, (s) => s.verify(token, ctx(1))), refusal('principal drift', 'bind'));
  await assert.rejects(serve(states, body, (s) => s.mint('x', ctx(1, { token: 't', scopes: [] }))), {
    code: 'ERR_STATESEAL_CONFIG',
    message: 'authInfo.clientId: expected a string',
  });
  // Outside handler(): a configuration error, never an unbound state. So for a request
  // handler() never saw, and for a context without the HTTP request.
  const unseen = new Request('http://127.0.0.1/mcp', { method: 'POST', body: JSON.stringify(call(1, 'prod')) });
  for (const outside of [{ mcpReq: { id: 1, method: 'tools/call' }, http: { req: unseen } }, { mcpReq: { id: 1, method: 'tools/call' } }]) {
    await assert.rejects(states.mint('x', outside), { code: 'ERR_STATESEAL_CONFIG', message: /handler/ });
    await assert.rejects(states.verify('v2.x', outside), { code: 'ERR_STATESEAL_CONFIG', message: /handler/ });
  }
});

test('an authInfo without a subject is an error, unless bind binds the client alone on purpose', async () => {
  const states = createStatesealCodec({ codec });
  const body = JSON.stringify(call(1, 'prod'));
  const client = { token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://as.test' } };
  const noSubject = {
    code: 'ERR_STATESEAL_CONFIG',
    message:
      "authInfo.extra.sub: expected a non-empty string (the caller's subject); to bind states to the OAuth client alone, pass bind to createStatesealCodec",
  };
  for (const [without, auth] of [
    ['no sub', client],
    ['no extra', { ...client, extra: undefined }],
    ['an empty sub', { ...client, extra: { sub: '' } }],
    ['a sub that is not a string', { ...client, extra: { sub: 7 } }],
  ]) {
    await assert.rejects(serve(states, body, (s) => s.mint('x', ctx(1, auth))), noSubject, `an authInfo with ${without}`);
  }
  // A state minted for alice, presented by a caller of the same client without a subject.
  const alice = { ...client, extra: { iss: 'https://as.test', sub: 'alice' } };
  const token = await serve(states, body, (s) => s.mint('x', ctx(1, alice)));
  await assert.rejects(serve(states, body, (s) => s.verify(token, ctx(1, client))), noSubject);
  // `extra.subject` is a subject too.
  const named = { ...client, extra: { subject: 'alice' } };
  const byName = await serve(states, body, (s) => s.mint('x', ctx(1, named)));
  assert.equal(await serve(states, body, (s) => s.verify(byName, ctx(1, named))), 'x');
  // The application's own bind may bind the client alone: then it is bound to that client.
  const byClient = createStatesealCodec({ codec, bind: (c) => ({ clientId: c.http.authInfo.clientId }) });
  const forClient = await serve(byClient, body, (s) => s.mint('x', ctx(1, client)));
  assert.equal(await serve(byClient, body, (s) => s.verify(forClient, ctx(1, client))), 'x');
  await assert.rejects(serve(byClient, body, (s) => s.verify(forClient, ctx(1, { ...client, clientId: 'd' }))), refusal('principal', 'bind'));
});

test('bad options are refused by name', async () => {
  const cases = [
    [{ codec, audiance: 'svc' }, 'unknown option "audiance"'],
    [{ codec, audience: '' }, 'audience: expected a non-empty string'],
    [{ codec, ttlSeconds: -1 }, 'ttlSeconds: expected a positive number of seconds'],
    [{ codec, format: 'xml' }, "format: expected 'json' or 'text'"],
    [{ codec, maxBodyBytes: 1.5 }, 'maxBodyBytes: expected a positive whole number of bytes'],
    [{ codec, bind: 'alice' }, 'bind: expected a function of the request context'],
    [{ codec, clock: 5 }, 'clock: expected a function returning seconds since 1970'],
    [{ codec, clock: null }, 'clock: expected a function returning seconds since 1970'],
    [{ codec: {} }, 'codec: expected a KeysetCodec'],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => createStatesealCodec(options), (e) => e instanceof StatesealError && e.code === 'ERR_STATESEAL_CONFIG' && e.message === message);
  }
  for (const [options, message] of [
    [{ ttl: Number.NaN }, 'ttl: expected a finite number'],
    [{ ttl: 10n }, 'ttl: expected a number, a string, a boolean or a list of strings'],
  ]) {
    await assert.rejects(KeysetCodec.start('file:///nonexistent.invalid/keyset.json', options), { code: 'ERR_STATESEAL_CONFIG', message });
  }
});

test('a request outlived by hundreds of others still verifies and mints for its own round', async () => {
  // The native envelope keeps the latest 256 parsed bodies and rounds; a request whose
  // entries were taken meanwhile is parsed and named again, and binds exactly as before.
  const states = createStatesealCodec({ codec, audience: 'svc' });
  const token = await serve(states, JSON.stringify(call(7, 'prod')), (s) => s.mint({ env: 'prod' }, ctx(7)));
  let release;
  const held = new Promise((r) => {
    release = r;
  });
  const slow = serve(states, JSON.stringify(call(7, 'prod')), async (s) => {
    const c = ctx(7);
    const first = await s.verify(token, c);
    await held; // 300 other requests run their rounds meanwhile
    const next = await s.mint({ env: 'prod', step: 2 }, c);
    return [first, next, await s.verify(next, c)];
  });
  const others = [];
  for (let i = 0; i < 300; i++) {
    others.push(serve(states, JSON.stringify(call(i, `env-${i}`)), (s) => s.mint({ i }, ctx(i))));
  }
  const minted = await Promise.all(others);
  release();
  const [first, next, again] = await slow;
  assert.deepEqual(first, { env: 'prod' });
  assert.deepEqual(again, { env: 'prod', step: 2 });
  // The state minted after the others is bound to its own request, not to one of theirs.
  await assert.rejects(serve(states, JSON.stringify(call(7, 'staging')), (s) => s.verify(next, ctx(7))), refusal('request binding', 'bind'));
  assert.deepEqual(await serve(states, JSON.stringify(call(5, 'env-5')), (s) => s.verify(minted[5], ctx(5))), { i: 5 });
});

test('states of any text cross the boundary unchanged; a token with a character outside ASCII is malformed', async () => {
  const text = createStatesealCodec({ codec, audience: 'svc', format: 'text' });
  const json = createStatesealCodec({ codec, audience: 'svc' });
  const body = JSON.stringify(call(3, 'prod'));
  // 'é' x 40000 is 80 KB of UTF-8, its token about 107 KB: each past the 64 KiB buffer texts are
  // encoded into, and past what the native side keeps for the next token and state. Shorter
  // states follow longer ones, so a kept buffer's old bytes would show.
  for (const state of ['', 'plain', 'été', '日本語', '😀 x', 'x'.repeat(20000) + 'é', '\u007f\u0080\u00ff\u0100', 'é'.repeat(40000), 'ab', 'x'.repeat(3000), 'c']) {
    const token = await serve(text, body, (s) => s.mint(state, ctx(3)));
    assert.equal(await serve(text, body, (s) => s.verify(token, ctx(3))), state);
    const value = { state, n: [1, 'ü'] };
    const sealed = await serve(json, body, (s) => s.mint(value, ctx(3)));
    assert.deepEqual(await serve(json, body, (s) => s.verify(sealed, ctx(3))), value);
  }
  // A lone surrogate has no UTF-8: it is sealed as U+FFFD, as Node's own UTF-8 writes it.
  const lone = await serve(text, body, (s) => s.mint('a\ud800b', ctx(3)));
  assert.equal(await serve(text, body, (s) => s.verify(lone, ctx(3))), 'a\ufffdb');
  // A token whose character is replaced by one with the same low byte (what a Latin-1
  // reading would take for the original) is refused, not read as the token it mimics.
  const token = await serve(text, body, (s) => s.mint('state', ctx(3)));
  assert.match(token, /^[\x21-\x7e]+$/);
  // In the prefix's dot, the key id and the ciphertext: the codec's own parsing refuses each.
  for (const at of [2, 4, token.length - 5]) {
    for (const c of [token.charCodeAt(at) + 0x100, token.charCodeAt(at) + 0xff00]) {
      const mimic = token.slice(0, at) + String.fromCharCode(c) + token.slice(at + 1);
      await assert.rejects(serve(text, body, (s) => s.verify(mimic, ctx(3))), refusal('malformed', 'malformed'), `at ${at}`);
    }
  }
  assert.equal(await serve(text, body, (s) => s.verify(token, ctx(3))), 'state');
});

test('once its codec is closed, every call refuses: rounds named before the close and after', async () => {
  const own = KeysetCodec.fromKeys(['c'.repeat(32)]);
  const states = createStatesealCodec({ codec: own, audience: 'svc', format: 'text' });
  const body = JSON.stringify(call(4, 'prod'));
  const closed = (e) => e instanceof StatesealError && e.code === 'ERR_STATESEAL_CLOSED' && e.message === 'the codec is closed';
  const token = await serve(states, body, async (s) => {
    const t = await s.mint('state', ctx(4));
    assert.equal(await s.verify(t, ctx(4)), 'state');
    own.close();
    // The same round again (already named), then a round of its own.
    await assert.rejects(s.verify(t, ctx(4)), closed);
    await assert.rejects(s.mint('state', ctx(4)), closed);
    return t;
  });
  await assert.rejects(serve(states, body, (s) => s.verify(token, ctx(4))), closed);
  await assert.rejects(serve(states, body, (s) => s.mint('state', ctx(4))), closed);
  assert.throws(() => own.seal('x'), closed);
});

// The frame the envelope's per-round calls read their arguments from (frame.cjs, src/frame.rs):
// each copy of the module reads its own frame, on its own thread only, never past its end.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';

import { KeysetCodec, createStatesealCodec } from 'stateseal';

const root = path.dirname(createRequire(import.meta.url).resolve('stateseal'));
const internal = (name) => createRequire(import.meta.url)(path.join(root, name));
const native = internal('native.cjs');
const { Frame, SLOT } = internal('frame.cjs');

const codec = KeysetCodec.fromKeys(['k'.repeat(32)]);
const envelope = codec._envelope('svc', 600);
const number = native.envelopeNumber(envelope);
const body = native.envelopeParse(
  envelope,
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy', arguments: { env: 'prod' } } }),
);
let rounds = 1000;

/** Mints `state` through `frame` for a new round of the request above. */
function mint(frame, state) {
  frame.text(state);
  frame.name(body, 'tools/call', 1);
  return frame.call(number, ++rounds, undefined, native.envelopeMintNamed);
}

/** Opens `token` through `frame` for a new round of the request above. */
function open(frame, token) {
  frame.text(token);
  frame.name(body, 'tools/call', 1);
  return frame.call(number, ++rounds, undefined, native.envelopeOpenNamed);
}

test('two copies of the module on one thread each read their own frame, whichever attached last', () => {
  const a = new Frame();
  const first = mint(a, 'state of a');
  // A second copy attaches its frame: a's next call must not read it.
  const b = new Frame();
  const second = mint(b, 'state of b');
  const third = mint(a, 'a again');
  assert.equal(open(b, first), 'state of a');
  assert.equal(open(a, second), 'state of b');
  assert.equal(open(b, third), 'a again');
  // Called without counting the call (as through a frame that is not the attached one): refused.
  b.text('never sealed');
  b.name(body, 'tools/call', 1);
  b.numbers[SLOT.round] = ++rounds;
  assert.throws(() => native.envelopeMintNamed(), { code: 'ERR_STATESEAL_FRAME', message: 'another frame is attached' });
  // Nothing was named by the refused call: its round number names no round.
  b.text(first);
  assert.throws(() => b.call(number, rounds, undefined, native.envelopeOpen), { code: 'ERR_STATESEAL_ROUND' });
});

test('a frame names only envelopes of its own thread', async () => {
  const frame = new Frame();
  frame.text('x');
  frame.name(body, 'tools/call', 1);
  assert.throws(() => frame.call(number + 1e6, ++rounds, undefined, native.envelopeMintNamed), {
    code: 'ERR_STATESEAL_CONFIG',
    message: 'frame: no such envelope on this thread',
  });
  // The same number from a worker thread: not that thread's envelope.
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const path = require('node:path');
     const native = require(path.join(workerData.root, 'native.cjs'));
     const { Frame } = require(path.join(workerData.root, 'frame.cjs'));
     const frame = new Frame();
     frame.text('x');
     frame.name(workerData.body, 'tools/call', 1);
     try {
       parentPort.postMessage({ token: frame.call(workerData.number, 1, undefined, native.envelopeMintNamed) });
     } catch (e) {
       parentPort.postMessage({ code: e.code, message: e.message });
     }`,
    { eval: true, workerData: { root, number, body } },
  );
  const answer = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.deepEqual(answer, { code: 'ERR_STATESEAL_CONFIG', message: 'frame: no such envelope on this thread' });
  // This thread's envelope still works.
  assert.equal(open(frame, mint(frame, 'still here')), 'still here');
});

test('bad frames and bad numbers in a frame are refused, and the attached frame stays', () => {
  const frame = new Frame();
  assert.throws(() => native.frameAttach(new Uint8Array(64)), {
    code: 'ERR_STATESEAL_CONFIG',
    message: 'frame: expected at least 128 bytes',
  });
  const token = mint(frame, 'kept');
  /** Opens `token` in a new round, the frame's numbers changed by `change` after they are written. */
  const openChanged = (method, id, change) => {
    frame.text(token);
    frame.name(body, method, id);
    const n = frame.numbers;
    [n[SLOT.envelope], n[SLOT.round], n[SLOT.now]] = [number, ++rounds, NaN];
    change(n);
    n[SLOT.seq] += 1;
    return native.envelopeOpenNamed();
  };
  assert.equal(openChanged('tools/call', 1, () => {}), 'kept');
  for (const [slot, value] of [
    [SLOT.round, NaN],
    [SLOT.round, 1.5],
    // A fraction a double still holds near the top of the range, and one below 1.
    [SLOT.round, 2 ** 52 - 0.5],
    [SLOT.body, 0.25],
    [SLOT.envelope, -1],
    [SLOT.body, 2 ** 60],
    [SLOT.text, Infinity],
  ]) {
    assert.throws(
      () => openChanged('tools/call', 1, (n) => (n[slot] = value)),
      { code: 'ERR_STATESEAL_CONFIG', message: 'frame: expected a whole number where it holds one' },
      `${slot} ${value}`,
    );
  }
  assert.throws(() => openChanged('tools/call', 1, (n) => (n[SLOT.principal] = 3)), {
    code: 'ERR_STATESEAL_CONFIG',
    message: 'frame: no such kind of principal',
  });
  // Texts past the frame's end: the call's, and a naming text.
  for (const slot of [SLOT.text, SLOT.idJson]) {
    assert.throws(() => openChanged('custom/method', '"id"', (n) => (n[slot] = 1 << 30)), {
      code: 'ERR_STATESEAL_CONFIG',
      message: "frame: a text runs past the frame's end",
    });
  }
  assert.equal(open(frame, token), 'kept');
});

test('texts of any size and any method, id and principal cross the frame whole', async () => {
  const frame = new Frame(16);
  const big = 'é'.repeat(50_000);
  assert.equal(open(frame, mint(frame, big)), big);
  // A method without a code, a JSON id, a principal's parts with a lone surrogate (as U+FFFD).
  const other = native.envelopeParse(envelope, JSON.stringify({ jsonrpc: '2.0', id: 'r-1', method: 'x/y', params: {} }));
  const named = (text, call) => {
    frame.text(text);
    frame.name(other, 'x/y', '"r-1"', undefined, 'client', undefined, 'sub\ud800');
    return frame.call(number, ++rounds, undefined, call);
  };
  assert.equal(named(named('s', native.envelopeMintNamed), native.envelopeOpenNamed), 's');
  // Another subject: bound to the principal, refused.
  const token = named('s', native.envelopeMintNamed);
  frame.text(token);
  frame.name(other, 'x/y', '"r-1"', undefined, 'client', undefined, 'someone else');
  assert.throws(() => frame.call(number, ++rounds, undefined, native.envelopeOpenNamed), { code: 'ERR_STATESEAL_REJECTED', message: 'principal' });
});

test('a clock that returns anything but a number of seconds is refused', async () => {
  for (const clock of [() => '1700000000', () => NaN, () => undefined]) {
    const states = createStatesealCodec({ codec, audience: 'svc', clock });
    const req = new Request('http://127.0.0.1/mcp', { method: 'POST', body: '{}' });
    const answer = await states
      .handler({ fetch: () => states.mint('x', { mcpReq: { id: 1, method: 'tools/call' }, http: { req } }) })
      .fetch(req)
      .catch((e) => e);
    assert.equal(answer.code, 'ERR_STATESEAL_CONFIG');
    assert.equal(answer.message, 'clock: expected a function returning seconds since 1970');
  }
});

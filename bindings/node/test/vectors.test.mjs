// The Python SDK's own verify vectors (tests/data/python-mcp-2.3.0.json, made by
// driving mcp==2.3.0) through `createStatesealCodec` on static keys: a Node
// server accepts and refuses exactly what a Python server does.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { InvalidRequestStateError, KeysetCodec, createStatesealCodec } from 'stateseal';

import { ROOT } from './harness.mjs';

const data = (name) => JSON.parse(readFileSync(path.join(ROOT, 'tests/data', name), 'utf8'));
const vectors = data('python-mcp-2.3.0.json');
// Where stateseal refuses what the Python SDK accepts, on purpose (the Rust vector test reads the same list).
const stricter = new Map(data('stricter-than-python-mcp-2.3.0.json').stricter.map((e) => [e.label, e.reason]));
const secret = (label) => Buffer.from(vectors.keys.find((k) => k.label === label).secret_hex, 'hex');
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

test("the Python SDK's keys: the same key ids from bytes and from strings (UTF-8)", () => {
  for (const k of vectors.keys) {
    const key = k.secret_type === 'str' ? k.secret_text : Buffer.from(k.secret_hex, 'hex');
    const token = KeysetCodec.fromKeys([key]).seal('x');
    assert.equal(Buffer.from(token.slice(3), 'base64url').subarray(0, 4).toString('hex'), k.kid_hex, k.label);
  }
});

test("the Python SDK's key errors, with its messages", () => {
  const aaaa = 'a'.repeat(32);
  const cases = [
    ['31_bytes', [Buffer.from('k'.repeat(31))]],
    ['31_byte_str', ['k'.repeat(31)]],
    ['15_chars_2byte_utf8_is_30_bytes', ['é'.repeat(15)]],
    ['duplicate', [Buffer.from(aaaa), Buffer.from(aaaa)]],
    ['duplicate_str_and_bytes_spelling', [aaaa, Buffer.from(aaaa)]],
  ];
  for (const [label, keys] of cases) {
    const expected = vectors.key_errors.find((e) => e.label === label).message;
    assert.throws(() => KeysetCodec.fromKeys(keys), (e) => {
      assert.equal(e.code, 'ERR_STATESEAL_CONFIG', label);
      // The SDK's message, without its advice to run Python.
      assert.equal(e.message, expected.split('. Generate one with')[0], label);
      return true;
    });
  }
  assert.throws(() => KeysetCodec.fromKeys([aaaa, 32]), { code: 'ERR_STATESEAL_CONFIG', message: 'keys[1]: expected a string or bytes' });
  assert.throws(() => KeysetCodec.fromKeys([]), { code: 'ERR_STATESEAL_CONFIG' });
});

/** What the Node codec cannot be asked, and why. */
function outOfScope(v) {
  const state = JSON.parse(v.request_state_json);
  const principal = JSON.parse(v.principal_json);
  if (!['tools/call', 'prompts/get', 'resources/read'].includes(v.method)) return 'not a carrier: the SDK never calls verify';
  if (typeof state !== 'string') return 'a non-string requestState: the SDK refuses it before verify';
  if (principal !== null && typeof principal !== 'string') return 'a non-string principal: bind returns a string or parts';
  if (loneSurrogate.test(principal ?? '') || loneSurrogate.test(JSON.parse(v.expected.plaintext_json ?? '""'))) {
    return 'a lone surrogate: JavaScript hands Rust UTF-8 only';
  }
  return null;
}

/** Verifies one vector's echo as a Node server would see its request. */
async function verify(v) {
  const codec = KeysetCodec.fromKeys(v.ring.map(secret));
  const principal = JSON.parse(v.principal_json) ?? undefined;
  const states = createStatesealCodec({
    codec,
    ttlSeconds: 600,
    audience: v.audience ?? undefined,
    format: 'text',
    bind: () => principal,
    clock: () => v.now,
  });
  // The request as it arrived: the vector's exact params bytes inside a JSON-RPC message.
  const body = `{"jsonrpc":"2.0","id":7,"method":${JSON.stringify(v.method)},"params":${v.params_json}}`;
  const ctx = { mcpReq: { id: 7, method: v.method } };
  const inner = { fetch: async (req) => states.verify(JSON.parse(v.request_state_json), { ...ctx, http: { req } }) };
  return states.handler(inner).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body }));
}

test("the Python SDK's verify vectors", async () => {
  let ran = 0;
  const skipped = new Map();
  for (const v of vectors.verify) {
    const why = outOfScope(v);
    if (why) {
      skipped.set(why, (skipped.get(why) ?? 0) + 1);
      continue;
    }
    ran += 1;
    const got = await verify(v).then(
      (plaintext) => ({ plaintext }),
      (e) => {
        assert.ok(e instanceof InvalidRequestStateError, `${v.label}: ${e}`);
        return { refused: e.reason };
      },
    );
    if (stricter.has(v.label)) {
      assert.deepEqual(got, { refused: stricter.get(v.label) }, v.label);
    } else if (v.expected.outcome === 'accept') {
      assert.deepEqual(got, { plaintext: JSON.parse(v.expected.plaintext_json) }, v.label);
    } else {
      assert.ok(got.refused, `${v.label}: accepted`);
    }
  }
  console.log(`python-mcp-2.3.0 verify vectors: ${ran} run, not applicable: ${JSON.stringify(Object.fromEntries(skipped))}`);
  assert.ok(ran >= 60, `only ${ran} vectors ran`);
});

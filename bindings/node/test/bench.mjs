// A boundary round in Node: the round's identity once, verify the echoed state, mint the
// next (a fresh request context per round, so nothing is reused that a real round could
// not reuse), through stateseal's codec (the Rust envelope's claims, AES-GCM or
// XAES-256-GCM in Rust) against the SDK's own `createRequestStateCodec` (HMAC-SHA256 over
// readable JSON) in the same process. With STATESEAL_BENCH_CLI (a release `stateseal`
// binary), the Rust round of `stateseal bench` is measured just before and just after each
// Node measurement, and Node's round put against their mean measured alike: whole rounds
// in one loop (each token kept a round) against `round_v2_loop`, and the sum of the
// round's parts, each timed in a loop of its own (verify with the round's identity, then
// mint), against `round_v2`, the Rust round's parts summed the same way. The last ratio,
// Node's loop against Rust's parts, mixes the two and is printed for comparison with
// earlier runs. Medians; reported, not gated.
import { execFileSync } from 'node:child_process';

import { createRequestStateCodec } from '@modelcontextprotocol/server';
import { KeysetCodec, createStatesealCodec } from 'stateseal';

import { TIMING, localKeyset } from './harness.mjs';

const SIZES = [64, 1024, 16384];
const BATCH = 200;
const BATCHES = Number(process.env.STATESEAL_BENCH_BATCHES ?? 41);
const RUNS = Number(process.env.STATESEAL_BENCH_RUNS ?? 1);
const CLI = process.env.STATESEAL_BENCH_CLI;

const k = localKeyset();
const codec = await KeysetCodec.start(k.store, { allowLocalKek: true, ...TIMING, keysetId: k.keysetId, keysetKeks: k.keysetKeks });
// The workload of `stateseal bench`: a text state, not bound to a caller (as the Rust round there).
const ours = createStatesealCodec({ codec, audience: 'bench', format: 'text', bind: () => undefined });
const sdk = createRequestStateCodec({ key: 'k'.repeat(32), ttlSeconds: 600, bind: (ctx) => `${ctx.mcpReq.method}\0${ctx.http?.authInfo?.clientId ?? ''}` });
const mcpReq = { id: 1, method: 'tools/call' };
const authInfo = { token: 't', clientId: 'c', scopes: [], extra: { sub: 'alice' } };
// A new context per round, as the SDK makes one per request. Written as a literal: spread
// from a template (`{ ...http, req }`), V8 built a new hidden class every round, which the
// profile showed as about a tenth of the round, none of it the codec's.
const contextOf = (req) => ({ mcpReq, http: { authInfo, req } });
// The workload of `stateseal bench` and scripts/bench-python.py: a tools/call with five arguments.
const body = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'deploy', arguments: { env: 'prod', region: 'eu-west-1', replicas: 3, dry_run: false, ratio: 0.25 } },
});

/** The median of `times` (sorted in place). */
const mid = (times) => times.sort((a, b) => a - b)[times.length >> 1];

/** Median µs per round: each round a new context (as each request has), verify the echo, mint the next. */
async function median(c, payload, req) {
  let token = await c.mint(payload, contextOf(req));
  const times = [];
  for (let b = 0; b < BATCHES; b++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) {
      const ctx = contextOf(req);
      await c.verify(token, ctx);
      token = await c.mint(payload, ctx);
    }
    times.push(Number(process.hrtime.bigint() - t0) / BATCH / 1000);
  }
  return mid(times);
}

/**
 * Median µs of the round's parts, each in batches of its own: `verify` of the same echo,
 * each call in a new context (so each names its round: the request's identity, as
 * `stateseal bench`'s `identity` op), and `mint` in one named round.
 */
async function medianParts(c, payload, req) {
  const echo = await c.mint(payload, contextOf(req));
  const ctx = contextOf(req);
  await c.verify(echo, ctx);
  const verify = [];
  const mint = [];
  for (let b = 0; b < BATCHES; b++) {
    let t0 = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) await c.verify(echo, contextOf(req));
    verify.push(Number(process.hrtime.bigint() - t0) / BATCH / 1000);
    t0 = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) await c.mint(payload, ctx);
    mint.push(Number(process.hrtime.bigint() - t0) / BATCH / 1000);
  }
  return { verify: mid(verify), mint: mid(mint) };
}

/**
 * The Rust round of `stateseal bench` with a v2 key, as a keyset seals, at `size` bytes (µs):
 * `{ loop, parts }` (`round_v2_loop`, `round_v2`), or `undefined` without a CLI. Measured
 * next to each Node measurement (before and after it), so that the ratio compares the two
 * at the same moment of a machine whose speed drifts.
 */
function rustRound(size) {
  if (!CLI) return undefined;
  const out = execFileSync(CLI, ['bench', '--json', '--sizes', String(size), '--millis', '100'], { encoding: 'utf8' });
  const ops = new Map(out.split('\n').filter(Boolean).map((line) => {
    const r = JSON.parse(line);
    return [r.op, r.ns_per_op / 1000];
  }));
  if (!ops.has('round_v2_loop') || !ops.has('round_v2')) throw new Error('stateseal bench printed no round_v2_loop or round_v2 line');
  return { loop: ops.get('round_v2_loop'), parts: ops.get('round_v2') };
}

// Our codec binds the round's request: run inside the handler that keeps it.
const run = (f) => ours.handler({ fetch: f }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body }));
await run(async (req) => {
  console.log('round: verify + mint, µs (medians of batches); Node/Rust measured alike: loop against loop, parts against parts');
  // One pass over every size first, not reported: the first size measured otherwise ran
  // while V8 was still optimising the round (its first run 10-25% slower than the rest).
  for (const size of SIZES) {
    await median(ours, 'x'.repeat(size), req);
    await medianParts(ours, 'x'.repeat(size), req);
    await median(sdk, 'x'.repeat(size), req);
  }
  for (let r = 0; r < RUNS; r++) {
    for (const size of SIZES) {
      const payload = 'x'.repeat(size);
      await median(ours, payload, req); // warm-up
      await median(sdk, payload, req);
      const before = rustRound(size);
      const a = await median(ours, payload, req);
      const parts = await medianParts(ours, payload, req);
      const after = rustRound(size);
      const b = await median(sdk, payload, req);
      const p = parts.verify + parts.mint;
      let line = `  ${String(size).padStart(5)} B  Node loop ${a.toFixed(2)}, parts ${p.toFixed(2)} (verify ${parts.verify.toFixed(2)} + mint ${parts.mint.toFixed(2)})`;
      line += ` | SDK HMAC ${b.toFixed(1)} (ours/SDK ${(a / b).toFixed(3)})`;
      if (before !== undefined) {
        const loop = (before.loop + after.loop) / 2;
        const rustParts = (before.parts + after.parts) / 2;
        line += ` | Rust loop ${before.loop.toFixed(2)}, ${after.loop.toFixed(2)}; parts ${before.parts.toFixed(2)}, ${after.parts.toFixed(2)}`;
        line += ` | Node/Rust: loops ${(a / loop).toFixed(2)}x, parts ${(p / rustParts).toFixed(2)}x (loop/parts ${(a / rustParts).toFixed(2)}x)`;
      }
      console.log(line);
    }
  }
});
codec.close();

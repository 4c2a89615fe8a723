// A boundary round in Node: the round's identity once, verify the echoed state, mint the
// next (a fresh request context per round, so nothing is reused that a real round could
// not reuse), through stateseal's codec (the Rust envelope's claims, AES-GCM or
// XAES-256-GCM in Rust) against the SDK's own `createRequestStateCodec` (HMAC-SHA256 over
// readable JSON) in the same process. With STATESEAL_BENCH_CLI (a release `stateseal`
// binary), the Rust round of `stateseal bench` is measured just before and just after each
// Node measurement, and the ratio of Node to their mean printed. Medians; reported, not gated.
import { execFileSync } from 'node:child_process';

import { createRequestStateCodec } from '@modelcontextprotocol/server';
import { KeysetCodec, createStatesealCodec } from 'stateseal';

import { TIMING, localKeyset } from './harness.mjs';

const SIZES = [64, 1024, 16384];
const BATCH = 200;
const BATCHES = Number(process.env.STATESEAL_BENCH_BATCHES ?? 15);
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
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

/**
 * The Rust round of `stateseal bench` with a v2 key, as a keyset seals, at `size` bytes (µs);
 * `undefined` without a CLI. Measured next to each Node measurement (before and after it),
 * so that the ratio compares the two at the same moment of a machine whose speed drifts.
 */
function rustRound(size) {
  if (!CLI) return undefined;
  const out = execFileSync(CLI, ['bench', '--json', '--sizes', String(size), '--millis', '100'], { encoding: 'utf8' });
  for (const line of out.split('\n').filter(Boolean)) {
    const r = JSON.parse(line);
    if (r.op === 'round_v2') return r.ns_per_op / 1000;
  }
  throw new Error('stateseal bench printed no round_v2 line');
}

// Our codec binds the round's request: run inside the handler that keeps it.
const run = (f) => ours.handler({ fetch: f }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body }));
await run(async (req) => {
  console.log('round: verify + mint (µs, median of batches)   stateseal   SDK HMAC   ours/SDK  Rust before, after  Node/Rust');
  // One pass over every size first, not reported: the first size measured otherwise ran
  // while V8 was still optimising the round (its first run 10-25% slower than the rest).
  for (const size of SIZES) {
    await median(ours, 'x'.repeat(size), req);
    await median(sdk, 'x'.repeat(size), req);
  }
  for (let r = 0; r < RUNS; r++) {
    for (const size of SIZES) {
      const payload = 'x'.repeat(size);
      await median(ours, payload, req); // warm-up
      await median(sdk, payload, req);
      const before = rustRound(size);
      const a = await median(ours, payload, req);
      const after = rustRound(size);
      const b = await median(sdk, payload, req);
      const cols = [a.toFixed(2).padStart(34), b.toFixed(1).padStart(10), (a / b).toFixed(2).padStart(10)];
      if (before !== undefined) {
        const rust = (before + after) / 2;
        cols.push(`${before.toFixed(2)}, ${after.toFixed(2)}`.padStart(16), (a / rust).toFixed(2).padStart(11));
      }
      console.log(`  ${String(size).padStart(5)} B ${cols.join(' ')}`);
    }
  }
});
codec.close();

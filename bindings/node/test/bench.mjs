// mint + verify per round: stateseal's codec (AES-256-GCM / XAES-256-GCM in Rust,
// claims of the Rust envelope, bound to method, target, arguments and caller) against
// the SDK's own `createRequestStateCodec` (HMAC-SHA256 over readable JSON, bound to
// what `bind` returns), same process, same payloads. Medians of batches; reported,
// not gated.
import { createRequestStateCodec } from '@modelcontextprotocol/server';
import { KeysetCodec, createStatesealCodec } from 'stateseal';

import { TIMING, localKeyset } from './harness.mjs';

const SIZES = [64, 1024, 16384];
const BATCH = 200;
const BATCHES = Number(process.env.STATESEAL_BENCH_BATCHES ?? 15);

const k = localKeyset();
const codec = await KeysetCodec.start(k.store, { allowLocalKek: true, ...TIMING, keysetId: k.keysetId, keysetKeks: k.keysetKeks });
const ours = createStatesealCodec({ codec, audience: 'bench' });
const sdk = createRequestStateCodec({ key: 'k'.repeat(32), ttlSeconds: 600, bind: (ctx) => `${ctx.mcpReq.method}\0${ctx.http?.authInfo?.clientId ?? ''}` });
const ctx = { mcpReq: { id: 1, method: 'tools/call' }, http: { authInfo: { token: 't', clientId: 'c', scopes: [], extra: { sub: 'alice' } } } };
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy', arguments: { env: 'prod' } } });

async function median(c, payload) {
  const times = [];
  for (let b = 0; b < BATCHES; b++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) await c.verify(await c.mint(payload, ctx), ctx);
    times.push(Number(process.hrtime.bigint() - t0) / BATCH / 1000);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

// Our codec binds the round's request: run inside the handler that keeps it.
const run = (f) => ours.handler({ fetch: f }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body }));
await run(async () => {
  console.log('mint+verify per round (µs, median of batches)   stateseal   SDK HMAC   ratio');
  for (const size of SIZES) {
    const payload = { step: 'confirm', data: 'x'.repeat(size - 30) };
    await median(ours, payload); // warm-up
    await median(sdk, payload);
    const [a, b] = [await median(ours, payload), await median(sdk, payload)];
    console.log(`  ${String(size).padStart(5)} B ${a.toFixed(1).padStart(34)} ${b.toFixed(1).padStart(10)} ${(a / b).toFixed(2).padStart(7)}`);
  }
});
codec.close();

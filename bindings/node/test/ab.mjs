// An A/B of package builds in one process: `PKGS=dir1,dir2 node ab.mjs`, each dir a copy of
// bindings/node with its own stateseal.node. Loops of N rounds (a new request context each,
// verify then mint, a text state of SIZE bytes) alternate between the builds ROUNDS times,
// after two unreported loops each; prints each build's median and the median of the paired
// ratios to the first build. One process, so the machine's drift falls on all builds alike.
import path from 'node:path';

import { TIMING, localKeyset } from './harness.mjs';

if (!process.env.PKGS) {
  console.error('usage: PKGS=dir1,dir2[,…] [SIZE=1024] [ROUNDS=10] [N=100000] node ab.mjs');
  process.exit(2);
}
const PKGS = process.env.PKGS.split(',');
const SIZE = Number(process.env.SIZE ?? 1024);
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const N = Number(process.env.N ?? 100000);
const k = localKeyset();
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy', arguments: { env: 'prod', region: 'eu-west-1', replicas: 3, dry_run: false, ratio: 0.25 } } });
const mcpReq = { id: 1, method: 'tools/call' };
const authInfo = { token: 't', clientId: 'c', scopes: [], extra: { sub: 'alice' } };
const contextOf = (req) => ({ mcpReq, http: { authInfo, req } });
const payload = 'x'.repeat(SIZE);
const sets = [];
for (const p of PKGS) {
  const m = await import(path.resolve(p, 'index.mjs'));
  const codec = await m.KeysetCodec.start(k.store, { allowLocalKek: true, ...TIMING, keysetId: k.keysetId, keysetKeks: k.keysetKeks });
  const ours = m.createStatesealCodec({ codec, audience: 'bench', format: 'text', bind: () => undefined });
  sets.push({ p, codec, ours, times: [] });
}
async function loop(s, req, n) {
  let token = await s.ours.mint(payload, contextOf(req));
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const ctx = contextOf(req);
    await s.ours.verify(token, ctx);
    token = await s.ours.mint(payload, ctx);
  }
  return Number(process.hrtime.bigint() - t0) / n / 1000;
}
for (const s of sets) {
  await s.ours.handler({ fetch: async (req) => { await loop(s, req, N); await loop(s, req, N); return new Response(''); } }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body }));
}
for (let r = 0; r < ROUNDS; r++) {
  for (const s of (r % 2 ? [...sets].reverse() : sets)) {
    await s.ours.handler({ fetch: async (req) => { s.times.push(await loop(s, req, N)); return new Response(''); } }).fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', body }));
  }
}
const med = (a) => { const b = [...a].sort((x, y) => x - y); return b[b.length >> 1]; };
const out = sets.map((s) => `${path.basename(s.p)} ${med(s.times).toFixed(3)}`);
for (let i = 1; i < sets.length; i++) out.push(`${path.basename(sets[i].p)}/${path.basename(sets[0].p)} ${med(sets[i].times.map((t, j) => t / sets[0].times[j])).toFixed(3)}`);
console.log(`size ${SIZE}: ${out.join('  ')}`);
for (const s of sets) s.codec.close();

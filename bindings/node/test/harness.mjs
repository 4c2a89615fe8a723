// What the Node package's tests share: the `stateseal` CLI the test script
// built, keysets with a short timing profile, and an MCP server of the real
// TypeScript SDK whose request states go through the package.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const CLI = process.env.STATESEAL_CLI ?? path.join(ROOT, 'target/debug/stateseal');
/** R = 1 s, S = 1 s, T = 6 s: rotations complete in seconds. */
export const TIMING = { refreshInterval: 1, maxSkew: 1, ttl: 6 };
const TIMING_FLAGS = ['--refresh-interval', '1', '--max-skew', '1', '--state-ttl', '6'];

/** `stateseal init` of a file keyset under a local KEK; its store, pins and directory. */
export function localKeyset() {
  const dir = mkdtempSync(path.join(tmpdir(), 'stateseal-node-'));
  const store = `file://${dir}/keyset.json`;
  const out = execFileSync(CLI, ['init', '--kek', `local://${dir}/kek.bin`, '--store', store, ...TIMING_FLAGS, '--json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const created = JSON.parse(out);
  return { dir, store, keysetId: created.keyset, keysetKeks: created.keyset_keks };
}

/** `stateseal <args>` against a keyset's store, pinned as init said. */
export function cli(keyset, ...args) {
  const env = { ...process.env, STATESEAL_KEYSET_ID: keyset.keysetId, STATESEAL_KEYSET_KEKS: keyset.keysetKeks.join(',') };
  return execFileSync(CLI, args, { env, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

const CONFIRM = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };

/**
 * An MCP server of the TypeScript SDK on a loopback port with the `deploy` tool of the
 * Rust and Python example servers: a confirmation round whose state goes through
 * `statesealCodec`. The caller is the `x-user` header (a test's stand-in for an auth layer).
 */
export async function sdkServer(statesealCodec, { errors = [], reasons } = {}) {
  // With `reasons`, verify also records stateseal's own reason of each refusal.
  const verify = reasons
    ? async (state, ctx) =>
        statesealCodec.verify(state, ctx).catch((e) => {
          reasons.push(e.reason);
          throw e;
        })
    : statesealCodec.verify;
  const handler = statesealCodec.handler(
    createMcpHandler(() => {
      const server = new McpServer(
        { name: 'stateseal-node-test', version: '1.0.0' },
        { capabilities: { tools: {} }, requestState: { verify } },
      );
      server.server.onerror = (e) => errors.push(e.message);
      server.registerTool('deploy', { inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
        const state = ctx.mcpReq.requestState();
        const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
        if (state?.step === 'confirm' && state.env === env && answer?.ok === true) {
          return { content: [{ type: 'text', text: `deployed to ${env}` }] };
        }
        return inputRequired({
          inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: CONFIRM }) },
          requestState: await statesealCodec.mint({ step: 'confirm', env }, ctx),
        });
      });
      return server;
    }),
  );
  const node = toNodeHandler(handler);
  const http = createServer((req, res) => {
    const user = req.headers['x-user'];
    if (typeof user === 'string') {
      req.auth = { token: 'opaque', clientId: 'example-client', scopes: [], extra: { iss: 'https://issuer.test', sub: user } };
    }
    void node(req, res);
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${http.address().port}/mcp`);
  return {
    url,
    async close() {
      await handler.close?.();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** A client of the same SDK speaking 2026-07-28 as `user`, answering rounds itself. */
export async function sdkClient(url, user) {
  const client = new Client(
    { name: 'stateseal-node-test-client', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { 'x-user': user } } }));
  return client;
}

/** `tools/call deploy` with `env`, optionally answering a round with `state`. */
export function deploy(client, env, state) {
  const params = { name: 'deploy', arguments: { env } };
  if (state !== undefined) {
    params.inputResponses = { confirm: { action: 'accept', content: { ok: true } } };
    params.requestState = state;
  }
  return client.request({ method: 'tools/call', params }, { allowInputRequired: true });
}

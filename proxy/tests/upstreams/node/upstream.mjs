// A test upstream for `stateseal proxy`: an MCP server (protocol 2026-07-28,
// streamable HTTP) built only from the TypeScript SDK, with nothing from
// stateseal and no request-state codec. It hands out and reads PLAINTEXT
// request states (the proxy in front of it does all the protection), and logs
// every tools/call, prompts/get and resources/read it receives, with the raw
// requestState as it arrived on the wire, so a test can see what got through.
//
//   node upstream.mjs PORT LOGFILE MODE      (MODE: json | sse)
//
// Serves http://127.0.0.1:PORT/mcp without auth or sessions (the SDK's
// per-request modern handler) and prints `ready` on stdout once listening.
// MODE=json answers each request with one application/json body, MODE=sse
// with a text/event-stream carrying the one JSON-RPC response.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

const [port, logfile, mode] = process.argv.slice(2);
if (!port || !logfile || (mode !== 'json' && mode !== 'sse')) {
  console.error('usage: node upstream.mjs PORT LOGFILE json|sse');
  process.exit(2);
}

const OK = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
const TITLE = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] };
const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** Round 1 (or a wrong echo): ask for `key` with an elicitation, handing out `state` in plaintext. */
const ask = (key, message, requestedSchema, state) =>
  inputRequired({ inputRequests: { [key]: inputRequired.elicit({ message, requestedSchema }) }, requestState: state });

/** True when the echo is exactly `state` and `confirm` was accepted with {ok: true}. */
const confirmed = (ctx, state) =>
  ctx.mcpReq.requestState() === state && acceptedContent(ctx.mcpReq.inputResponses, 'confirm')?.ok === true;

function build() {
  // No `requestState: { verify }` option: the SDK then hands the echoed
  // string to ctx.mcpReq.requestState() untouched.
  const server = new McpServer(
    { name: 'stateseal-proxy-test-upstream', version: '1.0.0' },
    { capabilities: { tools: {}, prompts: {}, resources: {} } },
  );
  server.server.onerror = (e) => console.error(`upstream: ${e.message}`);

  server.registerTool('deploy', { description: 'Deploy after a confirmation round', inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
    const state = `confirm-deploy:${env}`;
    return confirmed(ctx, state) ? text(`deployed to ${env}`) : ask('confirm', `Deploy to ${env}?`, OK, state);
  });

  server.registerTool('transfer', { description: 'Transfer after a confirmation round', inputSchema: z.object({ amount: z.number().int() }) }, async ({ amount }, ctx) => {
    const state = `confirm-transfer:${amount}`;
    return confirmed(ctx, state) ? text(`transferred ${amount}`) : ask('confirm', `Transfer ${amount}?`, OK, state);
  });

  server.registerPrompt('greeting', { description: 'Greets after asking for a title', argsSchema: z.object({ name: z.string() }) }, async ({ name }, ctx) => {
    const state = `greet:${name}`;
    const title = acceptedContent(ctx.mcpReq.inputResponses, 'title')?.title;
    if (ctx.mcpReq.requestState() !== state || typeof title !== 'string') {
      return ask('title', `How should ${name} be addressed?`, TITLE, state);
    }
    return { messages: [{ role: 'user', content: { type: 'text', text: `Hello ${title} ${name}` } }] };
  });

  server.registerResource('doc', 'stateful://doc', { description: 'A document behind a confirmation round', mimeType: 'text/plain' }, async (uri, ctx) => {
    const state = 'doc:open';
    if (!confirmed(ctx, state)) return ask('confirm', 'Open the document?', OK, state);
    return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'the document' }] };
  });
  return server;
}

const mcp = createMcpHandler(build, { responseMode: mode, onerror: (e) => console.error(`upstream: ${e.message}`) });

/** Appends one line per multi-round-trip request, from the raw body (before the SDK lifts anything). */
function logBody(raw) {
  let body;
  try {
    body = JSON.parse(raw);
  } catch {
    return;
  }
  for (const msg of Array.isArray(body) ? body : [body]) {
    const p = msg?.params ?? {};
    const target = { 'tools/call': p.name, 'prompts/get': p.name, 'resources/read': p.uri }[msg?.method];
    if (target === undefined && !['tools/call', 'prompts/get', 'resources/read'].includes(msg?.method)) continue;
    const requestState = p.requestState === undefined ? null : p.requestState;
    appendFileSync(logfile, `${JSON.stringify({ method: msg.method, target: target ?? null, requestState })}\n`);
  }
}

const node = toNodeHandler({
  async fetch(request, options) {
    if (request.method === 'POST') logBody(await request.clone().text());
    return mcp.fetch(request, options);
  },
});

createServer((req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  void node(req, res);
}).listen(Number(port), '127.0.0.1', () => console.log('ready'));

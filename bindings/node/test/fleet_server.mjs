// A Node MCP server of the mixed fleet: the Rust example server's `deploy` tool,
// written with the TypeScript SDK, its request states sealed by the package on
// the fleet's keyset (`format: 'text'`, the states Rust and Python servers seal).
// Callers present OAuth access tokens (RS256 JWTs for `stateseal-example`),
// checked against the issuer's JWKS with jose, and become the same principal
// (issuer, client id, subject) as on the Rust and Python servers.
//
//   node fleet_server.mjs PORT STORE oauth_issuer=URL oauth_jwks_uri=URL [setting=value ...]
import { createServer } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { KeysetCodec, createStatesealCodec } from 'stateseal';
import * as z from 'zod/v4';

const AUDIENCE = 'stateseal-example';
const [port, store, ...args] = process.argv.slice(2);
const named = Object.fromEntries(args.map((a) => a.split(/=(.*)/s).slice(0, 2)));
const options = {};
for (const [name, value] of Object.entries(named)) {
  if (name.startsWith('oauth_')) continue;
  const camel = name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  options[camel] =
    value === 'true' || value === 'false' ? value === 'true'
    : name === 'keyset_keks' ? value.split(',')
    : name === 'keyset_id' ? value
    : Number(value);
}

const codec = await KeysetCodec.start(store, options);
const states = createStatesealCodec({ codec, audience: AUDIENCE, format: 'text' });
const keys = createRemoteJWKSet(new URL(named.oauth_jwks_uri));

async function authenticate(header) {
  const token = /^Bearer (.+)$/.exec(header ?? '')?.[1];
  if (!token) return undefined;
  try {
    const { payload } = await jwtVerify(token, keys, {
      algorithms: ['RS256'],
      issuer: named.oauth_issuer,
      audience: AUDIENCE,
      requiredClaims: ['exp', 'sub', 'client_id'],
    });
    return { token, clientId: payload.client_id, scopes: [], extra: { iss: payload.iss, sub: payload.sub } };
  } catch {
    return undefined;
  }
}

const CONFIRM = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
const handler = states.handler(
  createMcpHandler(() => {
    const server = new McpServer(
      { name: AUDIENCE, version: '1.0.0' },
      { capabilities: { tools: {} }, requestState: { verify: states.verify } },
    );
    server.server.onerror = (e) => console.error(e.message);
    server.registerTool('deploy', { description: 'Deploy after a confirmation round', inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
      if (ctx.mcpReq.requestState() === `confirm-deploy:${env}` && answer?.ok === true) {
        return { content: [{ type: 'text', text: `deployed to ${env}` }] };
      }
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: CONFIRM }) },
        requestState: await states.mint(`confirm-deploy:${env}`, ctx),
      });
    });
    return server;
  }),
);
const node = toNodeHandler(handler);
createServer(async (req, res) => {
  const auth = await authenticate(req.headers.authorization);
  if (!auth) {
    res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
    return;
  }
  req.auth = auth;
  await node(req, res);
}).listen(Number(port), '127.0.0.1', () => console.log('ready'));

// The server of docs/node.md, type-checked by `tsc` against the package's
// types and the SDK's (scripts/node-package.sh): a TypeScript MCP server
// whose request states are sealed under the fleet's keyset.
import { createServer, type IncomingMessage } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, acceptedContent, createMcpHandler, inputRequired, type AuthInfo } from '@modelcontextprotocol/server';
import { KeysetCodec, createStatesealCodec } from 'stateseal';
import * as z from 'zod/v4';

/** Your auth layer: an OAuth access token's claims, checked (see docs/authentication.md). */
declare function authenticate(req: IncomingMessage): Promise<AuthInfo | undefined>;

const codec = await KeysetCodec.start('vault-kv://secret/stateseal/keyset', {
  keysetId: 'ks_4f3c2a1b0e9d8c7b6a5f4e3d',
  keysetKeks: ['hcvault://transit/keys/stateseal'],
});
const states = createStatesealCodec<{ step: string; env: string }>({ codec, audience: 'stateseal-example' });

const handler = states.handler(
  createMcpHandler(() => {
    const server = new McpServer(
      { name: 'deployer', version: '1.0.0' },
      { capabilities: { tools: {} }, requestState: { verify: states.verify } }, // the one line
    );
    server.registerTool('deploy', { inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
      const state = ctx.mcpReq.requestState<{ step: string; env: string }>();
      const answer = acceptedContent<{ ok: boolean }>(ctx.mcpReq.inputResponses, 'confirm');
      if (state?.step === 'confirm' && answer?.ok) {
        return { content: [{ type: 'text', text: `deployed to ${state.env}` }] };
      }
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: `Deploy to ${env}?`,
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          }),
        },
        requestState: await states.mint({ step: 'confirm', env }, ctx),
      });
    });
    return server;
  }),
);

const node = toNodeHandler(handler);
const http = createServer(async (req, res) => {
  const auth = await authenticate(req);
  if (!auth) {
    res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
    return;
  }
  (req as IncomingMessage & { auth?: AuthInfo }).auth = auth;
  await node(req, res);
});
http.listen(8080, '127.0.0.1');

process.once('SIGTERM', () => {
  http.close();
  http.closeAllConnections();
  codec.close(); // the process then exits once the last request is answered
});

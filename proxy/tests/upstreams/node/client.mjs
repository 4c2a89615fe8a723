// A test client for `stateseal proxy`: the TypeScript SDK's own Client and
// streamable HTTP transport (protocol 2026-07-28), nothing from stateseal.
// For each KIND it runs a two-round multi-round-trip conversation by the SDK's
// manual path (`allowInputRequired`): round 1 must come back input_required,
// round 2 repeats the request with the requestState it got and the answers.
//
//   node client.mjs URL [KIND ...]            KIND: tool transfer prompt resource
//   node client.mjs URL --echo STATE KIND     skip round 1, send round 2 with STATE
//
// Env PROXY_BEARER, if set, goes out as `Authorization: Bearer ...`; PROXY_HEADERS,
// a JSON object, adds those headers to every request.
// Prints one JSON object: {"rounds": [{kind, state, final, again, error}],
// "bodies": [every HTTP response body, in order]}; exits 0 if it ran.
//   state  the requestState round 1 handed out (the echoed STATE with --echo)
//   final  the final text, or null
//   again  the requestState of a round 2 that came back input_required again
//   error  null or {code, message, status}: the JSON-RPC error a round got
//          (status null), or an HTTP failure (code null, status = HTTP status)
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const KINDS = {
  tool: {
    method: 'tools/call',
    params: { name: 'deploy', arguments: { env: 'prod' } },
    answers: { confirm: { action: 'accept', content: { ok: true } } },
    final: (r) => r.content?.[0]?.text,
  },
  transfer: {
    method: 'tools/call',
    params: { name: 'transfer', arguments: { amount: 42 } },
    answers: { confirm: { action: 'accept', content: { ok: true } } },
    final: (r) => r.content?.[0]?.text,
  },
  prompt: {
    method: 'prompts/get',
    params: { name: 'greeting', arguments: { name: 'Ada' } },
    answers: { title: { action: 'accept', content: { title: 'Dr' } } },
    final: (r) => r.messages?.[0]?.content?.text,
  },
  resource: {
    method: 'resources/read',
    params: { uri: 'stateful://doc' },
    answers: { confirm: { action: 'accept', content: { ok: true } } },
    final: (r) => r.contents?.[0]?.text,
  },
};

const args = process.argv.slice(2);
const url = args.shift();
let echo;
if (args[0] === '--echo') {
  echo = args[1];
  args.splice(0, 2);
}
const kinds = args.length > 0 ? args : ['tool', 'prompt', 'resource'];
if (!url || kinds.some((k) => !(k in KINDS)) || (echo !== undefined && kinds.length !== 1)) {
  console.error('usage: node client.mjs URL [KIND ...] | node client.mjs URL --echo STATE KIND');
  process.exit(2);
}

// Every response body, in request order; clones are read in the background so
// a streaming (SSE) response is not held up by the recording.
const bodies = [];
// Records every byte the SDK reads as it passes (a clone's text() would wait
// forever on a stream the SDK stops reading once it has its answer).
async function recordingFetch(input, init) {
  const response = await fetch(input, init);
  if (!response.body) return response;
  const decoder = new TextDecoder();
  const seen = { text: '' };
  bodies.push(seen);
  const recorder = new TransformStream({
    transform(chunk, controller) {
      seen.text += decoder.decode(chunk, { stream: true });
      controller.enqueue(chunk);
    },
  });
  const { status, statusText, headers } = response;
  return new Response(response.body.pipeThrough(recorder), { status, statusText, headers });
}

const headers = {
  ...(process.env.PROXY_BEARER ? { Authorization: `Bearer ${process.env.PROXY_BEARER}` } : {}),
  // Headers a gateway in front would set (the tests play a trusted gateway with them).
  ...JSON.parse(process.env.PROXY_HEADERS ?? '{}'),
};
const client = new Client(
  { name: 'stateseal-proxy-test-client', version: '1.0.0' },
  {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    inputRequired: { autoFulfill: false },
  },
);
const send = (method, params) => client.request({ method, params }, { allowInputRequired: true });
// A JSON-RPC error (HTTP 200, or 400 with a JSON-RPC body) keeps its numeric
// code; any other non-2xx answer is an SDK HTTP error: code null, status set.
const errorOf = (e) => ({
  code: typeof e?.code === 'number' ? e.code : null,
  message: String(e?.message ?? e),
  status: typeof e?.data?.status === 'number' ? e.data.status : null,
});

/** One conversation; never throws, every failure lands in the round's `error`. */
async function converse(kind) {
  const spec = KINDS[kind];
  const round = { kind, state: null, final: null, again: null, error: null };
  try {
    if (echo === undefined) {
      const first = await send(spec.method, spec.params);
      if (first.resultType !== 'input_required') {
        round.error = { code: null, message: `round 1 was not input_required: ${JSON.stringify(first)}` };
        return round;
      }
      round.state = first.requestState ?? null;
    } else {
      round.state = echo;
    }
    const retry = { ...spec.params, inputResponses: spec.answers };
    if (round.state !== null) retry.requestState = round.state;
    const second = await send(spec.method, retry);
    if (second.resultType === 'input_required') round.again = second.requestState ?? null;
    else round.final = spec.final(second) ?? null;
  } catch (e) {
    round.error = errorOf(e);
  }
  return round;
}

const rounds = [];
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch, requestInit: { headers } }));
  for (const kind of kinds) rounds.push(await converse(kind));
} catch (e) {
  rounds.push({ kind: 'connect', state: null, final: null, again: null, error: errorOf(e) });
}
await client.close().catch(() => {});
console.log(JSON.stringify({ rounds, bodies: bodies.map((b) => b.text) }));

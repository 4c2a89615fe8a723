'use strict';
// `createStatesealCodec`: the TypeScript MCP SDK's `RequestStateCodec` on a
// `KeysetCodec`, each round bound to its request and caller.
const native = require('./native.cjs');
const { InvalidRequestStateError, ours, configError } = require('./errors.cjs');
const { KeysetCodec } = require('./codec.cjs');
const { Frame } = require('./frame.cjs');

/**
 * Each call's arguments go to the native envelope through this frame (`frame.cjs`): one
 * serves every codec of this module on this thread, since calls are synchronous.
 */
const frame = new Frame();

/*
 * The four envelope calls, each behind a function of its own: the frame's one call site
 * then calls plain functions, and each native function is called from a site that only
 * ever calls it, which V8's optimising compiler turns into a direct native call (a site
 * calling several native functions goes through the generic call path, about 45 ns a
 * round more).
 */
const mintCall = () => native.envelopeMint();
const mintNamedCall = () => native.envelopeMintNamed();
const openCall = () => native.envelopeOpen();
const openNamedCall = () => native.envelopeOpenNamed();

/** Request bodies up to this many bytes are kept for binding (the SDK's own default limit). */
const MAX_BODY_BYTES = 4 << 20;

/**
 * The principal a state is bound to by default, from the SDK's `AuthInfo` (issuer and
 * subject from `extra`). Only an explicit `bind` binds a state to the OAuth client alone.
 */
function principalOf(ctx) {
  const auth = ctx && ctx.http && ctx.http.authInfo;
  if (!auth) return undefined;
  // Authenticated but without a client id: refuse rather than leave the state unbound.
  if (typeof auth.clientId !== 'string') throw configError('authInfo.clientId: expected a string');
  const extra = auth.extra || {};
  const text = (v) => (typeof v === 'string' ? v : undefined);
  const subject = text(extra.sub) ?? text(extra.subject);
  // Without a subject every user of the client would share its states: refuse rather than
  // bind the client alone, unless the application says so with its own `bind`.
  if (subject === undefined || subject === '') {
    throw configError(
      "authInfo.extra.sub: expected a non-empty string (the caller's subject); to bind states to the OAuth client alone, pass bind to createStatesealCodec",
    );
  }
  return { clientId: auth.clientId, issuer: text(extra.iss) ?? text(extra.issuer), subject };
}

/** A request's body as text, read from a clone and at most `max` bytes (`null` past it). */
async function bodyOf(request, max) {
  if (request.body === null) return '';
  if (request.bodyUsed) return null;
  const reader = request.clone().body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      // Not awaited: a tee branch's cancel settles only once the other branch (the SDK's) is done.
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const CODEC_OPTIONS = new Set(['codec', 'ttlSeconds', 'audience', 'bind', 'clock', 'format', 'maxBodyBytes']);

/**
 * The TypeScript SDK's `RequestStateCodec` on a stateseal codec: `mint` seals the
 * payload with the Rust envelope's claims (expiry, the round's method, target and
 * arguments, audience, principal), `verify` checks them and throws
 * `InvalidRequestStateError` with the SDK codec's reason. Serve the MCP handler
 * through `handler(...)` so that each round's request is at hand.
 */
function createStatesealCodec(options = {}) {
  const unknown = Object.keys(options).find((k) => !CODEC_OPTIONS.has(k));
  if (unknown !== undefined) throw configError(`unknown option ${JSON.stringify(unknown)}`);
  const {
    codec,
    ttlSeconds,
    audience,
    bind = principalOf,
    clock,
    format = 'json',
    maxBodyBytes = MAX_BODY_BYTES,
  } = options;
  if (!(codec instanceof KeysetCodec)) throw configError('codec: expected a KeysetCodec');
  if (audience !== undefined && (typeof audience !== 'string' || audience === '')) {
    throw configError('audience: expected a non-empty string');
  }
  if (typeof bind !== 'function') throw configError('bind: expected a function of the request context');
  if (clock !== undefined && typeof clock !== 'function') {
    throw configError('clock: expected a function returning seconds since 1970');
  }
  // Without a clock of the application's, the envelope reads the system clock itself (the
  // Rust servers' clock, and no call back into JavaScript): `now` is left out.
  const now =
    clock === undefined
      ? () => undefined
      : () => {
          const at = clock();
          if (typeof at !== 'number' || Number.isNaN(at)) throw configError('clock: expected a function returning seconds since 1970');
          return at;
        };
  if (format !== 'json' && format !== 'text') throw configError("format: expected 'json' or 'text'");
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0) {
    throw configError('maxBodyBytes: expected a positive whole number of bytes');
  }
  // 'json': any JSON value, as the SDK's own codec; 'text': a string sealed as it is (what
  // Rust and Python servers put in their states, for fleets that share them).
  const encode = format === 'json' ? (p) => JSON.stringify(p) : (p) => (typeof p === 'string' ? p : undefined);
  const decode =
    format === 'json'
      ? (s) => {
          try {
            return JSON.parse(s);
          } catch {
            // Authentic but not JSON (a text state of another member): never quote it.
            throw new InvalidRequestStateError('malformed', { sdk: true });
          }
        }
      : (s) => s;
  const ttl = ttlSeconds ?? codec.ttl ?? 600;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) {
    throw configError('ttlSeconds: expected a positive number of seconds');
  }
  const envelope = codec._envelope(audience ?? null, ttl);
  const envelopeNumber = native.envelopeNumber(envelope);
  // Per HTTP request (the SDK's `ctx.http.req`, the object handler() received): its body,
  // the handle of its parse (once per request), and its latest round (its principal worked
  // out once for its verify and its mint). Keyed by the request object rather than an
  // AsyncLocalStorage, whose promise hooks, once on, slow every promise in the process on
  // Node 20.
  const requests = new WeakMap();
  // Rounds are named to the envelope by numbers of this codec's own, with each round's
  // first call: a call of its own to name them cost as much as sealing a small state.
  let rounds = 0;

  /** The request entry of `ctx`, holding the round `ctx` is (not yet named if `round` is 0). */
  function roundOf(ctx) {
    const http = ctx && ctx.http && ctx.http.req;
    const store = http ? requests.get(http) : undefined;
    const req = ctx && ctx.mcpReq;
    if (store === undefined || !req) {
      throw configError('the request is not at hand: serve the MCP handler through statesealCodec.handler(handler)');
    }
    if (store.ctx === ctx && store.method === req.method && store.id === req.id) return store;
    const principal = bind(ctx) ?? null;
    let text, clientId, issuer, subject;
    if (typeof principal === 'string') {
      text = principal;
    } else if (principal !== null) {
      if (typeof principal.clientId !== 'string') {
        throw configError('bind: expected a principal ({ clientId, issuer?, subject? } or a string) or undefined');
      }
      ({ clientId, issuer, subject } = principal);
    }
    store.ctx = ctx;
    store.method = req.method;
    store.id = req.id;
    // A number as it is (compared as a double, as `===` compares), any other id as JSON.
    store.idArg = typeof req.id === 'number' ? req.id : JSON.stringify(req.id);
    store.text = text;
    store.clientId = clientId;
    store.issuer = issuer ?? undefined;
    store.subject = subject ?? undefined;
    store.round = 0;
    return store;
  }

  /** `named()` for the round in `s`, the body parsed first unless a parse of it is kept. */
  function naming(s, named, at) {
    if (s.parsed === undefined) s.parsed = native.envelopeParse(envelope, s.body ?? '');
    frame.name(s.parsed, s.method, s.idArg, s.text, s.clientId, s.issuer, s.subject);
    return frame.call(envelopeNumber, s.round, at, named);
  }

  /**
   * `call()` (`envelopeMint` or `envelopeOpen`) for the round in `s`, `text` written to the
   * frame; its first call, or one after later rounds took its slot, is `named()` instead
   * (`envelopeMintNamed` or `envelopeOpenNamed`), which names the round under a new number
   * as well: parsing the body again if later requests took its parse's slot
   * (ERR_STATESEAL_ROUND).
   */
  function inRound(s, call, named, text) {
    // The time first: nothing of the application's runs between the writing and the calls that read it.
    const at = now();
    frame.text(text);
    if (s.round > 0) {
      try {
        return frame.call(envelopeNumber, s.round, at, call);
      } catch (e) {
        if (!e || e.code !== 'ERR_STATESEAL_ROUND') throw e;
      }
    }
    s.round = ++rounds;
    try {
      return naming(s, named, at);
    } catch (e) {
      if (!e || e.code !== 'ERR_STATESEAL_ROUND') throw e;
      s.parsed = undefined;
      return naming(s, named, at);
    }
  }

  return {
    async mint(payload, ctx) {
      const state = encode(payload);
      if (state === undefined) throw configError(format === 'json' ? 'payload: expected a JSON value' : 'payload: expected a string');
      try {
        return inRound(roundOf(ctx), mintCall, mintNamedCall, state);
      } catch (e) {
        throw ours(e);
      }
    },
    async verify(state, ctx) {
      if (typeof state !== 'string') throw new InvalidRequestStateError('malformed', { sdk: true });
      let text;
      try {
        // A multi-use state's text, synchronously and without the network; a single-use
        // state's pending record, which alone releases its text.
        text = inRound(roundOf(ctx), openCall, openNamedCall, state);
      } catch (e) {
        const err = ours(e);
        throw err instanceof InvalidRequestStateError ? new InvalidRequestStateError(err.reason, { sdk: true }) : err;
      }
      if (typeof text !== 'string') {
        // Recorded on a pool thread (at most the store's deadline); refused unless this call recorded it.
        const recorded = await text.record();
        if (typeof recorded.state !== 'string') throw new InvalidRequestStateError(recorded.reason, { sdk: true });
        text = recorded.state;
      }
      return decode(text);
    },
    /** The SDK's handler (`createMcpHandler(...)`), each request's body kept for binding. */
    handler(inner) {
      if (!inner || typeof inner.fetch !== 'function') throw configError('handler: expected an MCP handler with fetch()');
      const fetch = async (request, fetchOptions = {}) => {
        let body = '';
        if (fetchOptions.parsedBody !== undefined) {
          body = JSON.stringify(fetchOptions.parsedBody);
        } else if (request.method === 'POST') {
          // Past the limit the body is not kept: its rounds cannot bind, so they fail closed.
          body = await bodyOf(request, maxBodyBytes);
        }
        requests.set(request, { body, parsed: undefined, round: 0 });
        return inner.fetch(request, fetchOptions);
      };
      // Everything else is the handler's own, called on the handler itself (not the proxy).
      return new Proxy(inner, {
        get(target, key) {
          if (key === 'fetch') return fetch;
          const value = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    },
  };
}

module.exports = { createStatesealCodec };

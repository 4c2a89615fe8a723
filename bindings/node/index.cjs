'use strict';
// stateseal for Node: request states sealed with AES-GCM / XAES-256-GCM under
// keys from a keyset that rotates without downtime (KMS-held, shared with Rust
// and Python servers), for the TypeScript MCP SDK's `RequestStateCodec`.
const native = require('./native.cjs');

/** Any stateseal failure: `code` says what kind, the message never holds a secret. */
class StatesealError extends Error {
  constructor(message, code) {
    super(message);
    this.name = 'StatesealError';
    this.code = code;
  }
}

/**
 * stateseal's refusal reasons as the four of the SDK's own codec, which is what
 * `verify` throws (the SDK logs the message): `malformed`, `mac`, `expired`, `bind`.
 */
const SDK_REASONS = {
  seal: 'mac',
  'unknown key': 'mac',
  expired: 'expired',
  'minted in the future': 'expired',
  'request binding': 'bind',
  audience: 'bind',
  principal: 'bind',
  'principal drift': 'bind',
  'principal binding error': 'bind',
  // A spent single-use state is as unusable as an expired one: the client starts the flow again.
  replayed: 'expired',
  // So is a revoked one.
  revoked: 'expired',
  // Fail closed: the record did not land, so the state cannot be used now (nor was it spent).
  'replay store unavailable': 'expired',
};

/**
 * Refusals the SDK's codec has no reason for: their message stays stateseal's
 * reason, so the server's log (the SDK's `onerror`) names them as a Rust server's does.
 */
const OWN_MESSAGE = new Set(['replayed', 'replay store unavailable']);

/**
 * A request state refused. `reason` is stateseal's log-only reason (`seal`, `unknown key`,
 * `expired`, `principal`, `request binding`, `audience`, `malformed`, `replayed`,
 * `replay store unavailable`, …), `sdkReason` the SDK codec's (`malformed`, `mac`, `expired`,
 * `bind`; `expired` for the two single-use reasons); the message is the SDK's from `verify`
 * (stateseal's for the single-use reasons), stateseal's from `unseal`.
 */
class InvalidRequestStateError extends StatesealError {
  constructor(reason, { sdk = false } = {}) {
    const sdkReason = SDK_REASONS[reason] ?? 'malformed';
    super(sdk && !OWN_MESSAGE.has(reason) ? sdkReason : reason, 'ERR_STATESEAL_REJECTED');
    this.name = 'InvalidRequestStateError';
    this.reason = reason;
    this.sdkReason = sdkReason;
  }
}

const NATIVE_CODES = { InvalidArg: 'ERR_STATESEAL_CONFIG', GenericFailure: 'ERR_STATESEAL_START' };

/** The native error as one of ours (its message is already secret-free). */
function ours(e) {
  if (e instanceof StatesealError) return e;
  const code = (e && e.code) || '';
  if (code === 'ERR_STATESEAL_REJECTED') return new InvalidRequestStateError(e.message);
  if (code.startsWith('ERR_STATESEAL_')) return new StatesealError(e.message, code);
  if (NATIVE_CODES[code]) return new StatesealError(e.message, NATIVE_CODES[code]);
  return e;
}

function call(f) {
  try {
    return f();
  } catch (e) {
    throw ours(e);
  }
}

function configError(message) {
  return new StatesealError(message, 'ERR_STATESEAL_CONFIG');
}

/** A codec over a keyset-backed key ring (or static keys): `seal` and `unseal` bytes. */
class KeysetCodec {
  #native;

  /** @private use `KeysetCodec.start`, `KeysetCodec.fromEnv` or `KeysetCodec.fromKeys`. */
  constructor(handle) {
    if (!(handle instanceof native.NativeCodec)) {
      throw configError('use KeysetCodec.start(store, options), KeysetCodec.fromEnv() or KeysetCodec.fromKeys(keys)');
    }
    this.#native = handle;
  }

  /**
   * Starts a codec on the keyset in `store` (`file://`, `vault-kv://`, `s3://`, `gs://`)
   * and resolves once its key ring is ready; the ring refreshes on background threads.
   */
  static async start(store, options = {}) {
    if (typeof store !== 'string' || store === '') throw configError('store: expected a store URI (a string)');
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw configError('options: expected an object');
    }
    for (const [name, value] of Object.entries(options)) {
      // JSON would turn these into null ("not set") or throw: refuse them by name instead.
      if (typeof value === 'number' && !Number.isFinite(value)) throw configError(`${name}: expected a finite number`);
      if (!['number', 'string', 'boolean', 'undefined'].includes(typeof value) && !Array.isArray(value) && value !== null) {
        throw configError(`${name}: expected a number, a string, a boolean or a list of strings`);
      }
    }
    const handle = await call(() => native.NativeCodec.start(store, JSON.stringify(options))).catch((e) => {
      throw ours(e);
    });
    return new KeysetCodec(handle);
  }

  /** Starts a codec from the `STATESEAL_*` variables, as the Rust servers read them. */
  static async fromEnv() {
    const handle = await call(() => native.NativeCodec.fromEnv()).catch((e) => {
      throw ours(e);
    });
    return new KeysetCodec(handle);
  }

  /**
   * A codec over static keys (strings or bytes, each at least 32 bytes; the first seals):
   * byte for byte the Python SDK's codec, for fleets that share one.
   */
  static fromKeys(keys) {
    if (!Array.isArray(keys) || keys.length === 0) throw configError('keys: expected a non-empty array');
    const bytes = keys.map((k, i) => {
      if (typeof k === 'string') return Buffer.from(k, 'utf8');
      if (k instanceof Uint8Array) return Buffer.from(k);
      throw configError(`keys[${i}]: expected a string or bytes`);
    });
    return new KeysetCodec(call(() => native.NativeCodec.fromKeys(bytes)));
  }

  /** Seals bytes (or a string, as UTF-8) under the primary key: a URL-safe token. */
  seal(payload) {
    const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
    if (!(bytes instanceof Uint8Array)) throw configError('payload: expected bytes or a string');
    return call(() => this.#native.seal(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
  }

  /** Opens a token sealed under any key of the ring; throws `InvalidRequestStateError`. */
  unseal(token) {
    if (typeof token !== 'string') throw new InvalidRequestStateError('malformed');
    return call(() => this.#native.unseal(token));
  }

  /** The keyset's state lifetime T in seconds (`null` for static keys). */
  get ttl() {
    return call(() => this.#native.ttl);
  }

  /** The scheduler's view (`ready`, `generation`, `phase`, `primary`, `ring`, …); `null` for static keys. */
  status() {
    const json = call(() => this.#native.status());
    return json === null ? null : JSON.parse(json);
  }

  /** Stops the background refresh; later calls throw `StatesealError` (`ERR_STATESEAL_CLOSED`). */
  close() {
    this.#native.close();
  }

  /** @internal the envelope `createStatesealCodec` seals through. */
  _envelope(audience, ttl) {
    return call(() => this.#native.envelope(audience, ttl));
  }
}

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
    clock = () => Date.now() / 1000,
    format = 'json',
    maxBodyBytes = MAX_BODY_BYTES,
  } = options;
  if (!(codec instanceof KeysetCodec)) throw configError('codec: expected a KeysetCodec');
  if (audience !== undefined && (typeof audience !== 'string' || audience === '')) {
    throw configError('audience: expected a non-empty string');
  }
  if (typeof bind !== 'function') throw configError('bind: expected a function of the request context');
  if (typeof clock !== 'function') throw configError('clock: expected a function returning seconds since 1970');
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
  // Per HTTP request (the SDK's `ctx.http.req`, the object handler() received): its body,
  // the handle of its parse (once per request), and its latest round's handle (the round's
  // identity worked out once, for its verify and its mint). Keyed by the request object
  // rather than an AsyncLocalStorage, whose promise hooks, once on, slow every promise in
  // the process on Node 20.
  const requests = new WeakMap();

  /** The handle of the round `ctx` is: named to the native envelope on first use. */
  function round(ctx, again = false) {
    const http = ctx && ctx.http && ctx.http.req;
    const store = http ? requests.get(http) : undefined;
    const req = ctx && ctx.mcpReq;
    if (store === undefined || !req) {
      throw configError('the request is not at hand: serve the MCP handler through statesealCodec.handler(handler)');
    }
    const id = JSON.stringify(req.id);
    if (!again && store.ctx === ctx && store.method === req.method && store.id === id) return store.round;
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
    // Parsed again only if a later request's parse took its slot (ERR_STATESEAL_ROUND).
    if (again || store.parsed === undefined) store.parsed = native.envelopeParse(envelope, store.body ?? '');
    const handle = native.envelopeRound(envelope, store.parsed, req.method, id, text, clientId, issuer ?? undefined, subject ?? undefined);
    Object.assign(store, { ctx, method: req.method, id, round: handle });
    return handle;
  }

  /** `f(handle)` for the round `ctx` is, naming the round again if its slot was taken meanwhile. */
  function inRound(ctx, f) {
    try {
      return f(round(ctx));
    } catch (e) {
      if (!e || e.code !== 'ERR_STATESEAL_ROUND') throw e;
      return f(round(ctx, true));
    }
  }

  return {
    async mint(payload, ctx) {
      const state = encode(payload);
      if (state === undefined) throw configError(format === 'json' ? 'payload: expected a JSON value' : 'payload: expected a string');
      return call(() => inRound(ctx, (r) => native.envelopeMint(envelope, r, state, clock())));
    },
    async verify(state, ctx) {
      if (typeof state !== 'string') throw new InvalidRequestStateError('malformed', { sdk: true });
      let text;
      try {
        // A multi-use state's text, synchronously and without the network; a single-use
        // state's pending record, which alone releases its text.
        text = inRound(ctx, (r) => native.envelopeOpen(envelope, r, state, clock()));
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
        requests.set(request, { body, parsed: undefined });
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

module.exports = { KeysetCodec, createStatesealCodec, StatesealError, InvalidRequestStateError };

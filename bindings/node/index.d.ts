// Types of the `stateseal` package (CommonJS and ESM entries alike). The SDK's
// types are not imported: what the codec reads of a request context is spelled
// out here, and the SDK's `ServerContext` and `RequestStateCodec` fit it.

/** What the codec reads of the SDK's `ServerContext`. */
export interface RequestContext {
  mcpReq: { id: string | number; method: string };
  http?: { authInfo?: { clientId: string; extra?: Record<string, unknown> } };
}

/** Options of `KeysetCodec.start`: the Rust `setup::Config` settings, camelCase. */
export interface KeysetOptions {
  /** The keyset id `stateseal init` printed (required for every store but `file://`). */
  keysetId?: string;
  /** The KEK URIs or whole-segment prefixes the keyset may use (required with `keysetId`). */
  keysetKeks?: string[];
  /** Accept `local://` KEKs (development only). */
  allowLocalKek?: boolean;
  /** Seconds between store refreshes (R); default: the keyset's profile. */
  refreshInterval?: number;
  /** Seconds of clock skew tolerated between instances (S). */
  maxSkew?: number;
  /** State lifetime in seconds (T). */
  ttl?: number;
  /** Propagation delay before a new key seals (P). */
  propagation?: number;
  maxKeyAge?: number;
  outageGrace?: number;
  maxStoreStaleness?: number;
  rotationPeriod?: number;
  /** Seconds `start` waits for the first key ring. */
  readyTimeout?: number;
  minGeneration?: number;
  acceptUnauthenticatedKeyset?: boolean;
  renewKeyset?: boolean;
  createIfMissing?: boolean;
  kek?: string;
  maxSealsPerKey?: number;
  sealReservationBlock?: number;
  /**
   * Where single-use states are recorded: `memory://` (one instance), `redis://host:6379/0`
   * or `rediss://…` (a fleet). Required with any `singleUse*` option (else `start` fails).
   */
  replayStore?: string;
  /** Tools whose states are single-use: `verify` accepts each state once, fleet-wide. */
  singleUseTools?: string[];
  /** Prompts whose states are single-use. */
  singleUsePrompts?: string[];
  /** Resources (by URI) whose states are single-use. */
  singleUseResources?: string[];
}

/** The scheduler's view of a keyset codec. */
export interface KeysetStatus {
  ready: boolean;
  generation: number | null;
  phase: 1 | 2 | 3 | null;
  primary: string | null;
  ring: string[];
  lastRefresh: number | null;
  lastStoreRead: number | null;
  lastError: string | null;
  kmsCalls: number;
  unauthenticated: boolean;
  expiresAt: number | null;
  ttl: number | null;
}

/** Any stateseal failure; the message never holds a key, token, state or principal. */
export declare class StatesealError extends Error {
  readonly code:
    | 'ERR_STATESEAL_CONFIG'
    | 'ERR_STATESEAL_START'
    | 'ERR_STATESEAL_CLOSED'
    | 'ERR_STATESEAL_UNAVAILABLE'
    | 'ERR_STATESEAL_REJECTED';
}

/**
 * A request state refused. `reason`: stateseal's log-only reason (`seal`, `unknown key`,
 * `expired`, `principal`, `request binding`, `audience`, `malformed`, `replayed`,
 * `replay store unavailable`, …); `sdkReason`: the SDK codec's (`expired` for the
 * single-use reasons). The message is `sdkReason` when thrown by `verify` (the SDK logs it),
 * except for the single-use reasons, and `reason` when thrown by `unseal`.
 */
export declare class InvalidRequestStateError extends StatesealError {
  readonly code: 'ERR_STATESEAL_REJECTED';
  readonly reason: string;
  readonly sdkReason: 'malformed' | 'mac' | 'expired' | 'bind';
}

/** A codec over a keyset-backed key ring, or over static keys. */
export declare class KeysetCodec {
  private constructor();
  static start(store: string, options?: KeysetOptions): Promise<KeysetCodec>;
  static fromEnv(): Promise<KeysetCodec>;
  /** Static keys (each >= 32 bytes; the first seals), byte-compatible with the Python SDK's codec. */
  static fromKeys(keys: Array<string | Uint8Array>): KeysetCodec;
  seal(payload: Uint8Array | string): string;
  unseal(token: string): Buffer;
  readonly ttl: number | null;
  status(): KeysetStatus | null;
  close(): void;
}

/** The caller a state is bound to. */
export interface Principal {
  clientId: string;
  issuer?: string;
  subject?: string;
}

export interface StatesealCodecOptions {
  codec: KeysetCodec;
  /** State lifetime; default and maximum: the keyset's T. */
  ttlSeconds?: number;
  /** The audience states are sealed for (your server's name). */
  audience?: string;
  /**
   * The principal of a request; default: `ctx.http.authInfo` (`clientId`, `extra.iss`,
   * `extra.sub`; an `authInfo` without a string `clientId` or a non-empty `extra.sub` is an
   * error, never unbound nor bound to the OAuth client alone: a `bind` of your own does that).
   */
  bind?: (ctx: RequestContext) => Principal | string | undefined;
  /** `'json'` (default): payloads are JSON values; `'text'`: strings sealed as they are, as Rust and Python servers seal theirs. */
  format?: 'json' | 'text';
  /** Seconds since 1970 (tests move it); default: the system clock. */
  clock?: () => number;
  /** Request bodies up to this many bytes are kept for binding (default 4 MiB); a larger one's rounds are refused. */
  maxBodyBytes?: number;
}

/** The SDK's handler shape (`createMcpHandler(...)`). */
export interface FetchHandler {
  fetch(request: Request, options?: { authInfo?: unknown; parsedBody?: unknown }): Promise<Response>;
}

/** The SDK's `RequestStateCodec<T>`; `verify` is what `ServerOptions.requestState.verify` takes. */
export interface StatesealCodec<T = unknown> {
  mint(payload: T, ctx: RequestContext): Promise<string>;
  verify(state: string, ctx: RequestContext): Promise<T>;
  /** `handler` with each request kept at hand for binding: serve this one. */
  handler<H extends FetchHandler>(handler: H): H;
}

export declare function createStatesealCodec<T = unknown>(options: StatesealCodecOptions): StatesealCodec<T>;

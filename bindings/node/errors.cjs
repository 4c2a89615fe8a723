'use strict';
// stateseal's errors for Node, and the native module's errors as them.

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
  // The store may have lost a record of it (restarted empty, flushed, failed over).
  "issued before the replay store's epoch": 'expired',
  // A state of a single-use round minted without the claim (before the rollout).
  'single-use claim missing': 'expired',
};

/**
 * Refusals the SDK's codec has no reason for: their message stays stateseal's
 * reason, so the server's log (the SDK's `onerror`) names them as a Rust server's does.
 */
const OWN_MESSAGE = new Set([
  'replayed',
  'replay store unavailable',
  "issued before the replay store's epoch",
  'single-use claim missing',
]);

/**
 * A request state refused. `reason` is stateseal's log-only reason (`seal`, `unknown key`,
 * `expired`, `principal`, `request binding`, `audience`, `malformed`, `replayed`,
 * `replay store unavailable`, …), `sdkReason` the SDK codec's (`malformed`, `mac`, `expired`,
 * `bind`; `expired` for the single-use reasons); the message is the SDK's from `verify`
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

module.exports = { StatesealError, InvalidRequestStateError, ours, call, configError };

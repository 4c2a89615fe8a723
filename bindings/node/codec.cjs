'use strict';
// `KeysetCodec`: seal and unseal bytes under a keyset-backed key ring (or static keys).
const native = require('./native.cjs');
const { InvalidRequestStateError, ours, call, configError } = require('./errors.cjs');

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

module.exports = { KeysetCodec };

'use strict';
// A round's arguments through a frame: the envelope's per-round calls take no arguments
// (napi-rs opens a borrow scope and converts each argument of any call that has some,
// which cost a quarter of a 64 B round); they read the numbers and texts written here
// into a buffer attached to the native module once per thread. See src/frame.rs.
const native = require('./native.cjs');

/** Bytes of numbers before the texts: the slots below, as `Float64Array` entries. */
const HEADER = 128;
/** The header's numbers (src/frame.rs's `Slot`, in the same order). */
const SLOT = {
  seq: 0,
  envelope: 1,
  round: 2,
  body: 3,
  text: 4,
  now: 5,
  idNumber: 6,
  idJson: 7,
  method: 8,
  methodText: 9,
  principal: 10,
  principalText: 11,
  issuer: 12,
  subject: 13,
};
/** The number a method is named by, or 0 when it is written out (a switch: no map lookup per round). */
function methodCode(method) {
  switch (method) {
    case 'tools/call':
      return 1;
    case 'prompts/get':
      return 2;
    case 'resources/read':
      return 3;
    default:
      return 0;
  }
}

const encoder = new TextEncoder();

/**
 * A frame: its texts' bytes (a Buffer, for writing at an offset), its numbers, and a view
 * past the header for the call's text. Calls are synchronous, so one frame serves every
 * codec of this module on this thread; it grows when a text does not fit.
 */
class Frame {
  #bytes;
  #numbers;
  #text;
  /** Where the next naming text goes (the end of the call's text). */
  #at = HEADER;

  constructor(capacity = 64 << 10) {
    this.#grow(capacity);
  }

  /** A frame of `capacity` bytes of texts, what was written so far copied over, attached. */
  #grow(capacity) {
    const buffer = new ArrayBuffer(HEADER + capacity);
    const bytes = Buffer.from(buffer);
    if (this.#bytes !== undefined) this.#bytes.copy(bytes);
    this.#bytes = bytes;
    this.#numbers = new Float64Array(buffer, 0, HEADER / 8);
    this.#text = new Uint8Array(buffer, HEADER);
    this.#attach();
  }

  /** Makes this frame the one the native module reads on this thread. */
  #attach() {
    native.frameAttach(new Uint8Array(this.#bytes.buffer));
  }

  /** Room for `bytes` more bytes at `at`, growing the frame if need be. */
  #room(at, bytes) {
    if (at + bytes > this.#bytes.length) this.#grow(Math.max(2 * this.#bytes.length, at + bytes) - HEADER);
  }

  /** Writes the call's text (a state or a token) as UTF-8. */
  text(text) {
    let { read, written } = encoder.encodeInto(text, this.#text);
    if (read < text.length) {
      this.#room(HEADER, Buffer.byteLength(text));
      written = encoder.encodeInto(text, this.#text).written;
    }
    this.#numbers[SLOT.text] = written;
    this.#at = HEADER + written;
  }

  /** Writes `value` as UTF-8 after what is written, its length in `slot` (−1 when undefined). */
  #string(slot, value) {
    if (value === undefined) {
      this.#numbers[slot] = -1;
      return;
    }
    this.#room(this.#at, 3 * value.length);
    const written = this.#bytes.write(value, this.#at);
    this.#numbers[slot] = written;
    this.#at += written;
  }

  /**
   * Writes what names a round, after the call's text: the parsed body's handle, the method,
   * the JSON-RPC id (a number, or JSON text) and the principal (a text, or client id, issuer
   * and subject, or none).
   */
  name(body, method, id, text, clientId, issuer, subject) {
    const n = this.#numbers;
    n[SLOT.body] = body;
    const code = methodCode(method);
    n[SLOT.method] = code;
    if (code === 0) this.#string(SLOT.methodText, method);
    if (typeof id === 'number') {
      n[SLOT.idNumber] = id;
      n[SLOT.idJson] = -1;
    } else {
      this.#string(SLOT.idJson, id);
    }
    if (text !== undefined) {
      n[SLOT.principal] = 1;
      this.#string(SLOT.principalText, text);
    } else if (clientId !== undefined) {
      n[SLOT.principal] = 2;
      this.#string(SLOT.principalText, clientId);
      this.#string(SLOT.issuer, issuer);
      this.#string(SLOT.subject, subject);
    } else {
      n[SLOT.principal] = 0;
    }
  }

  /**
   * `call()` (an envelope function) on what is written, for `envelope`'s round `round` at
   * `now` (seconds; `undefined` for the system clock). If another copy of this module
   * attached its frame on this thread since, this one is attached again first.
   */
  call(envelope, round, now, call) {
    const n = this.#numbers;
    n[SLOT.envelope] = envelope;
    n[SLOT.round] = round;
    n[SLOT.now] = now === undefined ? NaN : now;
    n[SLOT.seq] += 1;
    try {
      return call();
    } catch (e) {
      if (!e || e.code !== 'ERR_STATESEAL_FRAME') throw e;
    }
    this.#attach();
    n[SLOT.seq] += 1;
    return call();
  }

  /** @internal for tests: the header's numbers. */
  get numbers() {
    return this.#numbers;
  }
}

module.exports = { Frame, SLOT, HEADER };

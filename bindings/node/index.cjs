'use strict';
// stateseal for Node: request states sealed with AES-GCM / XAES-256-GCM under
// keys from a keyset that rotates without downtime (KMS-held, shared with Rust
// and Python servers), for the TypeScript MCP SDK's `RequestStateCodec`.
const { StatesealError, InvalidRequestStateError } = require('./errors.cjs');

require('./sdk-range.cjs').checkSdk();

const { KeysetCodec } = require('./codec.cjs');
const { createStatesealCodec } = require('./sdk.cjs');

module.exports = { KeysetCodec, createStatesealCodec, StatesealError, InvalidRequestStateError };

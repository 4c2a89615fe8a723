'use strict';
// The native module, built by `scripts/build-native.cjs` when the package is installed.
const path = require('node:path');

const file = path.join(__dirname, 'stateseal.node');
try {
  module.exports = require(file);
} catch (e) {
  if (e && e.code === 'MODULE_NOT_FOUND') {
    const err = new Error(
      'stateseal: the native module is not built (was the package installed with --ignore-scripts?): ' +
        'run `npm rebuild stateseal`, which needs a Rust toolchain (cargo)',
    );
    err.code = 'ERR_STATESEAL_NOT_BUILT';
    throw err;
  }
  throw e;
}

'use strict';
// The TypeScript MCP SDK releases this package supports: package.json's
// peerDependencies says the same, and CI runs the SDK tests beside the oldest
// (bindings/node/test/oldest-sdk) and the newest (bindings/node/test). The
// package never loads the SDK itself; it adapts to its `RequestStateCodec`,
// whose contract another release may change, so a release outside the range,
// where the application would load it, is refused when stateseal is loaded.
const fs = require('node:fs');
const path = require('node:path');
const { StatesealError } = require('./errors.cjs');

const SDK = '@modelcontextprotocol/server';
const OLDEST = [2, 0, 0];
const FIRST_UNSUPPORTED = [2, 5, 0];
const SUPPORTED = '>=2.0.0 <2.5.0';

/** The SDK's version as `from` would load it, or undefined when it is not installed there. */
function installedFrom(from) {
  let entry;
  try {
    entry = require.resolve(SDK, { paths: [from] });
  } catch {
    return undefined;
  }
  // The package does not export its package.json: find it above the entry point.
  for (let dir = path.dirname(entry); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (!fs.existsSync(file)) continue;
    const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (manifest.name === SDK) return String(manifest.version);
  }
  return undefined;
}

/** `X.Y.Z` as numbers; undefined for anything else (pre-releases included). */
function release(version) {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

function below(a, b) {
  for (let i = 0; i < 3; i += 1) if (a[i] !== b[i]) return a[i] < b[i];
  return false;
}

function supported(version) {
  const r = release(version);
  return r !== undefined && !below(r, OLDEST) && below(r, FIRST_UNSUPPORTED);
}

/**
 * Throws when the SDK the application would load (from its working directory, or from
 * where this package is installed) is outside the supported range.
 */
function checkSdk(froms = [process.cwd(), __dirname]) {
  for (const from of froms) {
    const version = installedFrom(from);
    if (version !== undefined && !supported(version)) {
      throw new StatesealError(
        `stateseal supports the TypeScript MCP SDK ${SDK} ${SUPPORTED}, and ${version} is installed: ` +
          `install a supported release (npm install '${SDK}@${SUPPORTED}') or a stateseal release that supports this one`,
        'ERR_STATESEAL_SDK_VERSION',
      );
    }
  }
}

module.exports = { checkSdk, supported, SUPPORTED };

// The TypeScript MCP SDK releases the package supports: stated in its
// package.json, checked when it is loaded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const range = require('../sdk-range.cjs');

test('package.json states the range the load checks', () => {
  const manifest = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8'));
  assert.equal(manifest.peerDependencies['@modelcontextprotocol/server'], range.SUPPORTED);
});

test('the releases in range pass and the others do not', () => {
  for (const v of ['2.0.0', '2.3.1', '2.4.0', '2.4.9']) assert.equal(range.supported(v), true, v);
  for (const v of ['1.9.0', '2.0.0-beta.5', '2.5.0', '3.0.0', '2.4', 'latest']) assert.equal(range.supported(v), false, v);
});

test('the SDK this project installed is in range, so loading stateseal passed its check', () => {
  const installed = JSON.parse(
    readFileSync(fileURLToPath(new URL('./node_modules/@modelcontextprotocol/server/package.json', import.meta.url)), 'utf8'),
  ).version;
  assert.equal(range.supported(installed), true, installed);
  assert.doesNotThrow(() => range.checkSdk([fileURLToPath(new URL('.', import.meta.url))]));
});

// Where the native module comes from, and what a user without one is told.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
// The installed package's own loader (a file path: the package exports only its entry point).
const packageDir = dirname(require.resolve('stateseal'));
const { PLATFORMS, current, load } = require(join(packageDir, 'platforms.cjs'));

const empty = () => mkdtempSync(join(tmpdir(), 'stateseal-loader-'));

test('this machine is one of the platforms the release builds', () => {
  assert.ok(Object.hasOwn(PLATFORMS, current()), current());
});

test('a platform without a binary is told which exist and how to build from source', () => {
  assert.throws(() => load(empty(), 'freebsd-x64'), (e) => {
    assert.equal(e.code, 'ERR_STATESEAL_NOT_BUILT');
    assert.match(e.message, /no binary package for freebsd-x64; the release builds them for linux-x64-gnu, linux-x64-musl, linux-arm64-gnu, darwin-x64, darwin-arm64, win32-x64-msvc/);
    assert.match(e.message, /npm install \.\/bindings\/node/);
    return true;
  });
});

test('a missing binary package is named, with the optional-dependencies hint', () => {
  assert.throws(() => load(empty(), 'darwin-arm64'), (e) => {
    assert.equal(e.code, 'ERR_STATESEAL_NOT_BUILT');
    assert.match(e.message, /the binary package stateseal-darwin-arm64 is not installed/);
    assert.match(e.message, /--omit=optional/);
    return true;
  });
});

test('a repository build wins over a binary package', () => {
  const loaded = [];
  load(packageDir, 'linux-x64-gnu', (what) => loaded.push(what));
  assert.deepEqual(loaded, [join(packageDir, 'stateseal.node')]);
});

test('the packaging script refuses an unknown platform or a missing binary by name, writing nothing for it', async () => {
  const { spawnSync } = await import('node:child_process');
  const { existsSync } = await import('node:fs');
  const stage = join(packageDir, 'scripts', 'stage.cjs');
  for (const [spec, message] of [
    ['freebsd-x64=/dev/null', /stage: unknown platform "freebsd-x64"; known: linux-x64-gnu/],
    ['linux-x64-gnu=/nonexistent/stateseal.node', /stage: linux-x64-gnu: no binary at "\/nonexistent\/stateseal.node"/],
  ]) {
    const out = empty();
    const run = spawnSync(process.execPath, [stage, out, spec], { encoding: 'utf8' });
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, message);
    assert.ok(!existsSync(join(out, `stateseal-${spec.split('=')[0]}`)), 'no platform package written');
  }
});

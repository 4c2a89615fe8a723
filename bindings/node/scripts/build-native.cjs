#!/usr/bin/env node
'use strict';
// Builds the native module from source with cargo (the package's install
// script) and copies it next to the loader as `stateseal.node`. Needs only
// Node and a Rust toolchain. STATESEAL_NODE_PROFILE=debug builds unoptimised.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.resolve(__dirname, '..');
const manifest = path.join(here, 'Cargo.toml');
const profile = process.env.STATESEAL_NODE_PROFILE === 'debug' ? [] : ['--release'];
const cargo = process.env.CARGO || 'cargo';

const built = spawnSync(
  cargo,
  ['build', ...profile, '--manifest-path', manifest, '--lib', '--message-format=json-render-diagnostics'],
  { cwd: here, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28, encoding: 'utf8' },
);
if (built.error) {
  console.error(`stateseal: cannot run ${cargo} (${built.error.code}): building the native module needs a Rust toolchain`);
  process.exit(1);
}
if (built.status !== 0) {
  console.error(`stateseal: cargo build failed (exit ${built.status})`);
  process.exit(built.status || 1);
}
let library;
for (const line of built.stdout.split('\n')) {
  if (!line.startsWith('{')) continue;
  const m = JSON.parse(line);
  if (m.reason === 'compiler-artifact' && m.target.name === 'stateseal_node' && m.target.kind.includes('cdylib')) {
    library = m.filenames.find((f) => /\.(so|dylib|dll)$/.test(f));
  }
}
if (!library) {
  console.error('stateseal: cargo built no cdylib for stateseal-node');
  process.exit(1);
}
// Copied to a temporary name and renamed, so a running process never loads a half-written file.
const target = path.join(here, 'stateseal.node');
fs.copyFileSync(library, `${target}.tmp`);
fs.renameSync(`${target}.tmp`, target);

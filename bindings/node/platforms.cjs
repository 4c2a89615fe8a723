'use strict';
// The platforms the release workflow builds binaries for, napi-rs style: one npm package
// per platform (`stateseal-<platform>`), an optional dependency of the main
// package, whose `main` is the binary. One home for the list: the loader
// (native.cjs) and the packaging script (scripts/stage.cjs) read it here.
const fs = require('node:fs');

/** Platform name → [os, cpu, libc (Linux only)], as npm's `os`/`cpu`/`libc` fields spell them. */
const PLATFORMS = {
  'linux-x64-gnu': ['linux', 'x64', 'glibc'],
  'linux-x64-musl': ['linux', 'x64', 'musl'],
  'linux-arm64-gnu': ['linux', 'arm64', 'glibc'],
  'darwin-x64': ['darwin', 'x64'],
  'darwin-arm64': ['darwin', 'arm64'],
  'win32-x64-msvc': ['win32', 'x64'],
};

function isMusl() {
  // Node reports the glibc it runs on; musl builds report none.
  try {
    const header = process.report.getReport().header;
    return !header.glibcVersionRuntime;
  } catch {
    try {
      return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl');
    } catch {
      return false;
    }
  }
}

/** This process's platform name (one of PLATFORMS' keys when a binary exists for it). */
function current() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function notBuilt(message) {
  const err = new Error(message);
  err.code = 'ERR_STATESEAL_NOT_BUILT';
  return err;
}

const FROM_SOURCE =
  'build from source: clone the repository and `npm install ./bindings/node` (needs a Rust toolchain)';

/**
 * The native module for `platform`: a repository build in `dir` (`stateseal.node`) wins,
 * else the platform's binary package; otherwise an ERR_STATESEAL_NOT_BUILT that says
 * which platforms exist and how to build from source.
 */
function load(dir, platform = current(), req = require) {
  const local = require('node:path').join(dir, 'stateseal.node');
  if (fs.existsSync(local)) return req(local);
  const pkg = `stateseal-${platform}`;
  if (!Object.hasOwn(PLATFORMS, platform)) {
    throw notBuilt(
      `stateseal: no binary package for ${platform}; the release builds them for ${Object.keys(PLATFORMS).join(', ')}. Or ${FROM_SOURCE}`,
    );
  }
  try {
    return req(pkg);
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(pkg)) {
      throw notBuilt(
        `stateseal: the binary package ${pkg} is not installed (installed with --omit=optional or --no-optional, ` +
          `or on another machine and copied here?): reinstall with optional dependencies on this machine, or ${FROM_SOURCE}`,
      );
    }
    throw e;
  }
}

module.exports = { PLATFORMS, current, load };

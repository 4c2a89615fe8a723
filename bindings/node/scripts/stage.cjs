#!/usr/bin/env node
'use strict';
// Lays out the npm packages as they are published, napi-rs style, for `npm
// pack` or `npm publish`:
//
//   node scripts/stage.cjs OUT [PLATFORM=BINARY ...]
//
// OUT/stateseal: the main package (the JavaScript, the types, the loader; no
// install script and no sources, so installing it never runs cargo), with
// every platform package as an optional dependency; OUT/stateseal-PLATFORM for
// each binary given (its `main` is the binary; npm installs only the one whose
// os/cpu/libc match). The version is the package's, which must be the
// workspace's (checked by scripts/package.sh).
const fs = require('node:fs');
const path = require('node:path');
const { PLATFORMS } = require('../platforms.cjs');

const here = path.resolve(__dirname, '..');
const source = JSON.parse(fs.readFileSync(path.join(here, 'package.json'), 'utf8'));

function fail(message) {
  console.error(`stage: ${message}`);
  process.exit(2);
}

function write(dir, manifest, files) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, from] of Object.entries(files)) fs.copyFileSync(from, path.join(dir, name));
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

const [out, ...binaries] = process.argv.slice(2);
if (!out) fail('usage: stage.cjs OUT [PLATFORM=BINARY ...]');
const common = {
  version: source.version,
  license: source.license,
  repository: source.repository,
  engines: source.engines,
};

const mainFiles = ['index.cjs', 'index.mjs', 'errors.cjs', 'codec.cjs', 'sdk.cjs', 'frame.cjs', 'index.d.ts', 'native.cjs', 'platforms.cjs', 'sdk-range.cjs', 'README.md'];
const main = {
  name: source.name,
  description: source.description,
  keywords: source.keywords,
  ...common,
  main: source.main,
  types: source.types,
  exports: source.exports,
  files: mainFiles,
  optionalDependencies: Object.fromEntries(
    Object.keys(PLATFORMS).map((p) => [`${source.name}-${p}`, source.version]),
  ),
  peerDependencies: source.peerDependencies,
  peerDependenciesMeta: source.peerDependenciesMeta,
};
write(
  path.join(out, source.name),
  main,
  Object.fromEntries(mainFiles.map((f) => [f, path.join(here, f)])),
);

for (const spec of binaries) {
  const [platform, binary] = spec.split('=');
  if (!(platform in PLATFORMS)) fail(`unknown platform ${JSON.stringify(platform)}; known: ${Object.keys(PLATFORMS).join(', ')}`);
  if (!binary || !fs.existsSync(binary)) fail(`${platform}: no binary at ${JSON.stringify(binary)}`);
  const [os, cpu, libc] = PLATFORMS[platform];
  const file = `stateseal.${platform}.node`;
  const name = `${source.name}-${platform}`;
  const readme = path.join(out, `${name}.README.md`);
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(
    readme,
    `# ${name}\n\nThe ${platform} binary of [${source.name}](https://www.npmjs.com/package/${source.name}). ` +
      `Install \`${source.name}\`, not this package: npm picks the binary for your platform.\n`,
  );
  write(
    path.join(out, name),
    {
      name,
      description: `The ${platform} binary of ${source.name}`,
      ...common,
      os: [os],
      cpu: [cpu],
      ...(libc ? { libc: [libc] } : {}),
      main: file,
      files: [file, 'README.md'],
    },
    { [file]: binary, 'README.md': readme },
  );
  fs.rmSync(readme);
}

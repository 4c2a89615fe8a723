#!/usr/bin/env bash
# CI job "bindings": the wheel and the Node binary built (scripts/package.sh
# python node, unless STATESEAL_BINARIES_BUILT says scripts/test.sh built them
# alongside), then the Node and Python packages tested beside the real MCP
# SDKs, installed as users install them, and the nonce path checked.
source "$(dirname "$0")/lib.sh"
step "the test tools in place (scripts/tools-prefetch.sh)"
tools_env
if [ -z "${STATESEAL_BINARIES_BUILT:-}" ]; then
  step "packages: the sdist, the wheel pip builds from it, the npm tarballs (scripts/package.sh python node)"
  scripts/package.sh python node
fi
scripts/build-cli.sh
export STATESEAL_CLI_BUILT=1
step "the Node package (bindings/node installed beside the TypeScript MCP SDK from npm, built from source, then dist/'s binary: node --test, tsc, benchmark)"
scripts/node-package.sh
step "the Python package (dist/'s wheel; pytest: codec contract, fork, OpenBao faults, three-language fleet)"
pypkg_python="$(scripts/py-package.sh | tail -1)"
step "the packages as users install them, with no cargo or rustc on PATH (scripts/install-check.sh)"
scripts/install-check.sh
step "nonce path (strace): a system call per seal on the host C library, the vDSO on glibc 2.41, fork test on it"
python3 scripts/test_strace_window.py
scripts/nonce-path-check.sh "$pypkg_python"

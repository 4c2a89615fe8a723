#!/usr/bin/env bash
# CI job "packages": the packaging scripts' own tests, the glibc and tool
# environments they rely on, and every published crate packaged and checked
# from its .crate.
source "$(dirname "$0")/lib.sh"
step "the test tools in place (scripts/tools-prefetch.sh)"
tools_env
step "the packaging scripts' own tests"
python3 scripts/test_versions.py
python3 scripts/test_crates.py
python3 scripts/test_artifacts.py
python3 scripts/test_package_parts.py
step "glibc 2.41 for the nonce check: scripts/glibc-env.sh refuses an unsigned release, a tampered index, a tampered package"
scripts/glibc-env-check.sh
step "test tools moved: the Redis launcher still runs (one that cannot is unpacked again), a moved venv is made again (scripts/tools-env-check.sh)"
scripts/tools-env-check.sh
step "packages: every published crate packaged and checked from its .crate (scripts/package.sh crates: cargo publish --dry-run, scripts/crates.py check-packaged)"
scripts/package.sh crates

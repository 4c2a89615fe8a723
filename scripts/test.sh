#!/usr/bin/env bash
# The test command: every CI job (scripts/ci/JOB.sh, each of which also runs
# alone, as .github/workflows/ci.yml runs it) on this machine, then a table
# of each job's time. What CI runs; what a newcomer runs.
#
# Jobs run one after the other, but for two builds that would leave cores idle
# otherwise: the wheel and the Node binary (release builds of 13 minutes or
# more on two cores, which only the bindings job needs) build in the
# background from the services job on, at the lowest priority (they take the
# cores the steps leave idle and never slow a timed one), and the crates'
# packaging (the packages job) runs beside the bindings job, whose steps
# mostly wait on their servers. Every background job is stopped by PID, with
# all it started, when the run fails.
source "$(dirname "$0")/ci/lib.sh"
declare -a job_times=()
table() {
  echo "== job times"
  echo "| job | seconds | |"
  echo "|---|---:|---|"
  local row
  for row in "${job_times[@]}"; do
    echo "| ${row// / | } |"
  done
  echo "| total | ${SECONDS} | |"
}
finish() {
  local rc=$?
  ci_stop_all
  table
  exit "$rc"
}
trap finish EXIT
# job NAME [NOTE]: runs scripts/ci/NAME.sh, timed.
job() {
  local t=$SECONDS
  echo "==== [${SECONDS}s] job $1 (scripts/ci/$1.sh)"
  scripts/ci/"$1".sh
  job_times+=("$1 $((SECONDS - t)) ${2:-}")
}
background target/tools-prefetch.log scripts/tools-prefetch.sh
prefetch=$started
# cargo-semver-checks builds once (minutes of two cores) at the lowest priority
# beside the jobs before the semver job, which runs after the infrastructure job.
semver_tool_started=$SECONDS
background target/semver-tool.log "${lowest[@]}" scripts/semver-check.sh --install-only
semver_tool=$started
job lint
step "the test tools in place (scripts/tools-prefetch.sh, started at the beginning)"
join "$prefetch" target/tools-prefetch.log
export STATESEAL_TOOLS_READY=1
job unit
binaries_started=$SECONDS
background target/package-binaries.log "${lowest[@]}" scripts/package.sh python node
binaries=$started
job services
job simulation
job infrastructure
# On a new machine the semver tool's build outlasts the lint and unit jobs by
# minutes; the jobs between use that time instead of waiting on it.
step "cargo-semver-checks in place (scripts/semver-check.sh --install-only, in the background since ${semver_tool_started}s)"
join "$semver_tool" target/semver-tool.log
job semver-check
step "packages: the sdist, the wheel pip builds from it, the npm tarballs (scripts/package.sh python node, in the background since ${binaries_started}s)"
join "$binaries" target/package-binaries.log
cat target/package-binaries.log
job_times+=("wheel-and-node-binary $((SECONDS - binaries_started)) background")
export STATESEAL_BINARIES_BUILT=1
# What the bindings job runs is built before the crates' packaging takes
# cargo's lock on target/ in the background.
scripts/build-cli.sh
export STATESEAL_CLI_BUILT=1
packages_started=$SECONDS
background target/packages-job.log "${lowest[@]}" scripts/ci/packages.sh
packages=$started
job bindings
step "the packages job (in the background since ${packages_started}s)"
join "$packages" target/packages-job.log
cat target/packages-job.log
job_times+=("packages $((SECONDS - packages_started)) background")
step "target/ holds $(du -sh target | cut -f1) ($(df -h --output=avail . | tail -1 | tr -d " ") left on the disk)"
step "all checks passed"

# Sourced by scripts/ci/*.sh and scripts/test.sh: stage headers, background
# jobs stopped by PID (with everything they started) when the run fails, and
# the test tools' environment.
# shellcheck shell=bash
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mkdir -p target

# Every background job's session; all are stopped on exit unless joined.
ci_jobs=()
ci_stop_all() {
  local pid
  for pid in "${ci_jobs[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
  done
}
trap ci_stop_all EXIT

# background LOG COMMAND...: COMMAND in a session of its own, its output in
# LOG, its PID in $started (stopped with all it started if the run fails).
background() {
  local log="$1"
  shift
  setsid "$@" >"$log" 2>&1 &
  started=$!
  ci_jobs+=("$started")
}

# join PID LOG: waits for it; if it failed, shows LOG and fails the run.
join() {
  local pid="$1" log="$2" rest=() p
  if ! wait "$pid"; then
    cat "$log" >&2
    exit 1
  fi
  for p in "${ci_jobs[@]}"; do
    [ "$p" = "$pid" ] || rest+=("$p")
  done
  ci_jobs=("${rest[@]}")
}

# A step's header, with the seconds since the script started.
step() {
  echo "== [${SECONDS}s] $*"
}

# Lowest priority, also across sessions (autogroup): for builds that must
# never slow a timed step.
lowest=(sh -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' lowest)

# The test tools in place (each installs once) and their variables exported.
tools_env() {
  if [ -z "${STATESEAL_TOOLS_READY:-}" ]; then
    scripts/tools-prefetch.sh
  fi
  STATESEAL_PYTHON="$(scripts/py-env.sh)"
  SVC_BIN="$(scripts/svc-env.sh)"
  STATESEAL_BAO="$SVC_BIN/bao"
  STATESEAL_SVC_PYTHON="$SVC_BIN/python"
  STATESEAL_FAKE_GCS="$SVC_BIN/fake-gcs-server"
  STATESEAL_REDIS_SERVER="$(scripts/redis-env.sh)"
  STATESEAL_AZURITE="$(scripts/azurite-env.sh)"
  export STATESEAL_PYTHON SVC_BIN STATESEAL_BAO STATESEAL_SVC_PYTHON STATESEAL_FAKE_GCS \
    STATESEAL_REDIS_SERVER STATESEAL_AZURITE
}

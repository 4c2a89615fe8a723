#!/usr/bin/env bash
# Where nonces come from, checked on the real binaries with strace:
#  1. the same stateseal binary makes one getrandom(2) system call per seal
#     under the host's C library, and (almost) none under glibc 2.41, whose
#     getrandom() uses the kernel's vDSO generator: the run-time detection and
#     the fall-back are glibc's, and nothing in stateseal changes;
#  2. under glibc 2.41 a process that forks keeps unique nonces: the Python
#     package's fork test (2000 seals in the parent and 2000 in the child,
#     no nonce shared) passes with the vDSO path in use.
# Usage: scripts/nonce-path-check.sh PYTHON   (a venv with the stateseal package)
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:?usage: scripts/nonce-path-check.sh PYTHON}"
under="$(scripts/glibc-env.sh)"
# The debug build: the check counts system calls, it does not time anything.
scripts/build-cli.sh
bin=target/debug/stateseal
if ! command -v strace >/dev/null; then
  # Debian's strace, unpacked into target/ like the other tools, never installed system-wide.
  if [ ! -x target/strace/usr/bin/strace ]; then
    mkdir -p target/debs && (cd target/debs && apt-get download strace >/dev/null 2>&1)
    dpkg-deb -x target/debs/strace_*.deb target/strace
  fi
  PATH="$PWD/target/strace/usr/bin:$PATH"
fi
# getrandom system calls of one command, all threads and children; the command's
# own output goes to stderr and its failure fails the check (strace returns its status).
count_strace() {
  local counts
  counts="$(mktemp)"
  strace -f -qq -c -e trace=getrandom -o "$counts" "$@" >&2 || { rm -f "$counts"; return 1; }
  awk '$NF=="getrandom" {n=$4} END {print n+0}' "$counts"
  rm -f "$counts"
}
host="$(count_strace "$bin" bench --sizes 64 --millis 60)"
vdso="$(count_strace $under "$bin" bench --sizes 64 --millis 60)"
echo "getrandom(2) calls during 'stateseal bench --sizes 64': host C library $host, glibc 2.41 $vdso"
if [ "$host" -lt 200 ]; then
  echo "nonce-path-check: expected a system call per seal under the host C library, saw $host" >&2
  exit 1
fi
if [ "$vdso" -gt 32 ]; then
  echo "nonce-path-check: expected the vDSO under glibc 2.41, saw $vdso system calls" >&2
  exit 1
fi
# The fork test with the vDSO in use: the whole test makes a handful of calls, not 4000.
forked="$(count_strace $under "$py" -m pytest bindings/python/tests/test_fork.py -q -p no:cacheprovider)"
echo "fork test under glibc 2.41: passed, $forked getrandom(2) calls for 4000 seals"
if [ "$forked" -gt 100 ]; then
  echo "nonce-path-check: the fork test did not run on the vDSO path ($forked system calls)" >&2
  exit 1
fi
# Fork safety: a child that drops the codec it inherited (never using it) makes no
# system call doing so but getpid (how it tells the instance is not its own): the
# instance's epoll set and eventfd are the parent's too (unfixed, it wrote the eventfd).
probe_dir="$(mktemp -d)"
trace="$probe_dir/trace"
# -ff: the child's calls in a file of its own (trace.PID), whole; scripts/strace_window.py
# also joins the halves `strace -f` splits a call into when another process interrupts it.
child="$(STATESEAL_CLI="$PWD/$bin" strace -ff -qq -o "$trace" "$py" bindings/python/tests/fork_drop_probe.py "$probe_dir" | tail -1)"
between="$(python3 scripts/strace_window.py "$trace.$child" "$child" /stateseal-probe/drop-begin \
  /stateseal-probe/drop-end --allow getpid 2>&1)" || between="${between:-(no trace of the child)}"
rm -rf "$probe_dir"
if [ -z "$child" ] || [ -n "$between" ]; then
  echo "nonce-path-check: a forked child dropping an inherited codec made system calls:" >&2
  echo "${between:-(no child pid)}" >&2
  exit 1
fi
echo "fork safety: a child dropping its inherited codec made no system call on the parent's descriptors"

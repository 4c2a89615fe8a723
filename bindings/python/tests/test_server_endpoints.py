"""The operator endpoints of the Rust example server the fleet runs: `/healthz`
(the process answers), `/readyz` (a ring is loaded and the keyset fresh
enough to seal) and `/metrics` (Prometheus text), before and after its
keyset store goes bad."""

from __future__ import annotations

import urllib.error
import urllib.request

from conftest import TIMING, Keyset, free_port, start_service, wait_for, HTTP_SERVER
from issuer import Issuer


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_health_readiness_and_metrics(local_keyset: Keyset, issuer: Issuer) -> None:
    port = free_port()
    config = local_keyset.dir / "server.toml"
    config.write_text(
        f'store = "{local_keyset.store}"\naudience = "stateseal-example"\nmax_store_staleness = 3\n'
        + "".join(f"{k} = {v}\n" for k, v in TIMING.items())
    )
    server = start_service(
        [HTTP_SERVER, "--addr", f"127.0.0.1:{port}", "--config", str(config), "--allow-local-kek"]
        + ["--oauth-issuer", issuer.url, "--oauth-jwks-uri", issuer.jwks_uri],
        port,
        local_keyset.dir / "server.log",
    )
    url = server.url
    try:
        assert get(f"{url}/healthz") == (200, "ok")
        assert get(f"{url}/readyz") == (200, "ready")
        status, text = get(f"{url}/metrics")
        assert status == 200
        assert metric(text, "stateseal_ready") == 1.0
        assert metric(text, "stateseal_rotation_phase") == 3.0
        assert metric(text, "stateseal_ring_generation") >= 1.0
        assert metric(text, "stateseal_max_seals_per_key") == 2.0**31
        assert "stateseal_kms_calls_total" in text
        # The keyset becomes unreadable (garbage): past max_store_staleness the
        # instance stops sealing and says so; the process itself stays healthy.
        (local_keyset.dir / "keyset.json").write_text("not a keyset")
        wait_for("/readyz to turn 503", lambda: get(f"{url}/readyz")[0] == 503, timeout=20)
        assert get(f"{url}/healthz") == (200, "ok")
        status, text = get(f"{url}/metrics")
        assert metric(text, "stateseal_ready") == 0.0
        assert 'stateseal_keyset_rejected_total{reason="invalid"}' in text
    finally:
        server.stop()

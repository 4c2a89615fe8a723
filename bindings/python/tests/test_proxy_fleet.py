"""A fleet where two members do no sealing of their own, each behind
`stateseal proxy` (issue 71): the Python SDK's lowlevel `Server` and a
TypeScript SDK server with no codec (proxy/tests/upstreams), beside the Rust
example server, on one keyset. The proxies validate the same OAuth access
tokens the Rust server does (their `[oauth]` table) and bind states to the
same caller. The conversations, rotations and attacks are test_mixed_fleet's:
round 1 on one member, round 2 on another, three rotations, no round
rejected, every attack refused."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from dataclasses import dataclass

import anyio
from conftest import CLI, ROOT, TIMING, Keyset, Service, free_port, rust_server, start_service
from issuer import Issuer
from test_mixed_fleet import check, run_fleet

UPSTREAMS = ROOT / "proxy/tests/upstreams"


@dataclass
class Proxied:
    """An upstream with no protection and the proxy in front of it, stopped together."""

    upstream: Service
    proxy: Service

    @property
    def url(self) -> str:
        return self.proxy.url

    def stop(self) -> None:
        self.proxy.stop()
        self.upstream.stop()


def node_upstreams() -> pathlib.Path:
    out = subprocess.run([str(ROOT / "scripts/proxy-upstreams-env.sh")], capture_output=True, text=True, check=True)
    return pathlib.Path(out.stdout.strip())


def proxied(command: list[str], mode: str, keyset: Keyset, tmp_path: pathlib.Path, issuer: Issuer, name: str) -> Proxied:
    up_port = free_port()
    upstream = start_service(
        [*command, str(up_port), str(tmp_path / f"{name}-received.jsonl"), mode], up_port, tmp_path / f"{name}.log"
    )
    config = tmp_path / f"{name}-proxy.toml"
    config.write_text(
        f'store = "{keyset.store}"\naudience = "stateseal-example"\n'
        + f"keyset_id = {json.dumps(keyset.keyset_id)}\nkeyset_keks = {json.dumps(keyset.keks)}\n"
        + "".join(f"{k} = {v}\n" for k, v in TIMING.items())
        + f'\n[oauth]\nissuer = "{issuer.url}"\naudience = "stateseal-example"\njwks_uri = "{issuer.jwks_uri}"\n'
    )
    port = free_port()
    try:
        proxy = start_service(
            [CLI, "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", f"http://127.0.0.1:{up_port}/mcp",
             "--config", str(config)],
            port,
            tmp_path / f"{name}-proxy.log",
            keyset.env,
        )
    except BaseException:
        upstream.stop()
        raise
    return Proxied(upstream, proxy)


def test_servers_behind_the_proxy_are_fleet_members_through_three_rotations(
    local_keyset: Keyset, tmp_path: pathlib.Path, issuer: Issuer
) -> None:
    python = [sys.executable, str(UPSTREAMS / "py_upstream.py")]
    node = ["node", str(node_upstreams() / "upstream.mjs")]
    tally = anyio.run(
        run_fleet,
        local_keyset,
        tmp_path,
        issuer,
        (
            lambda: rust_server(local_keyset, tmp_path / "rust.log", issuer),
            lambda: proxied(python, "json", local_keyset, tmp_path, issuer, "python-proxied"),
            lambda: proxied(node, "sse", local_keyset, tmp_path, issuer, "node-proxied"),
        ),
        ["rust", "python-proxied", "node-proxied"],
    )
    check(tally)
    # No plaintext state or caller in either proxy's log.
    for name in ("python-proxied", "node-proxied"):
        log = (tmp_path / f"{name}-proxy.log").read_text(errors="replace")
        assert "confirm-deploy" not in log and "alice" not in log, log

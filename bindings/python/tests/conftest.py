"""What the package's tests share: the `stateseal` CLI and example server the
test script built, keysets with a short timing profile, loopback services
started as subprocesses and stopped by PID."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from issuer import Issuer

ROOT = pathlib.Path(__file__).resolve().parents[3]
CLI = os.environ.get("STATESEAL_CLI", str(ROOT / "target/debug/stateseal"))
HTTP_SERVER = os.environ.get("STATESEAL_HTTP_SERVER", str(ROOT / "target/debug/examples/http_server"))
BAO = os.environ.get("STATESEAL_BAO", str(ROOT / "target/svcenv/bin/bao"))
# The Node fleet member (scripts/node-package.sh installs its packages beside it).
NODE_SERVER = ROOT / "bindings/node/test/fleet_server.mjs"
HERE = pathlib.Path(__file__).resolve().parent

# A short timing profile so rotations complete in seconds: R = 1 s, S = 1 s,
# T = 6 s, P = 2R + S = 3 s. Servers and codecs use the same.
TIMING = {"refresh_interval": 1, "max_skew": 1, "ttl": 6}
TIMING_FLAGS = ["--refresh-interval", "1", "--max-skew", "1", "--state-ttl", "6"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([CLI, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and out.returncode != 0:
        raise AssertionError(f"stateseal {' '.join(args)}: {out.returncode}\n{out.stdout}{out.stderr}")
    return out


def wait_for(what: str, ok, timeout: float = 30.0, every: float = 0.1):
    """Polls `ok()` until it returns a truthy value (an event, not time, is awaited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = ok()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


@dataclass
class Service:
    """A subprocess on a loopback port, killed by PID."""

    proc: subprocess.Popen[bytes]
    port: int
    log: pathlib.Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_service(args: list[str], port: int, log: pathlib.Path, env: dict[str, str] | None = None) -> Service:
    handle = log.open("wb")
    proc = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    service = Service(proc, port, log)

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"{args[0]} exited: {log.read_text(errors='replace')}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(f"{args[0]} on port {port}", listening)
    except BaseException:
        service.stop()
        raise
    return service


def start_all(*starters) -> list[Service]:
    """Starts each service in turn; when one fails to start, stops those already started."""
    started: list[Service] = []
    try:
        for start in starters:
            started.append(start())
    except BaseException:
        for service in started:
            service.stop()
        raise
    return started


@dataclass
class Keyset:
    store: str
    kek: str
    env: dict[str, str]
    dir: pathlib.Path
    keyset_id: str
    keks: list[str]

    def pins(self) -> dict[str, object]:
        """The pins `stateseal init` printed, as `KeysetCodec.start` settings."""
        return {"keyset_id": self.keyset_id, "keyset_keks": self.keks}


def init(kek: str, store: str, tmp_path: pathlib.Path, env: dict[str, str] | None = None) -> Keyset:
    """`stateseal init` with the short timing profile; the keyset, pinned as init says
    (its CLI environment carries the pins too)."""
    created = json.loads(cli("init", "--kek", kek, "--store", store, *TIMING_FLAGS, "--json", env=env).stdout)
    keyset_id, keks = created["keyset"], created["keyset_keks"]
    pinned = {**(env or {}), "STATESEAL_KEYSET_ID": keyset_id, "STATESEAL_KEYSET_KEKS": ",".join(keks)}
    return Keyset(store, kek, pinned, tmp_path, keyset_id, keks)


@pytest.fixture
def local_keyset(tmp_path: pathlib.Path) -> Keyset:
    """A keyset in a file under a local KEK, with the short timing profile."""
    return init(f"local://{tmp_path / 'kek.bin'}", f"file://{tmp_path / 'keyset.json'}", tmp_path)


@pytest.fixture
def openbao(tmp_path: pathlib.Path) -> Iterator[Service]:
    """A real OpenBao dev server with transit (derived key `stateseal`) and KV v2 at `secret/`."""
    port = free_port()
    service = start_service(
        [BAO, "server", "-dev", "-dev-root-token-id=root", f"-dev-listen-address=127.0.0.1:{port}"],
        port,
        tmp_path / "bao.log",
    )
    env = {"VAULT_ADDR": service.url, "VAULT_TOKEN": "root", "BAO_ADDR": service.url, "BAO_TOKEN": "root"}

    def bao(*args: str) -> None:
        subprocess.run([BAO, *args], check=True, capture_output=True, env={**os.environ, **env})

    wait_for("OpenBao unsealed", lambda: subprocess.run(
        [BAO, "status"], capture_output=True, env={**os.environ, **env}).returncode == 0)
    bao("secrets", "enable", "transit")
    bao("write", "-f", "transit/keys/stateseal", "derived=true")
    service.bao = bao  # type: ignore[attr-defined]
    service.env = env  # type: ignore[attr-defined]
    yield service
    service.stop()


@pytest.fixture
def vault_keyset(openbao: Service, tmp_path: pathlib.Path) -> Keyset:
    """A keyset in OpenBao KV under a transit KEK, with the short timing profile."""
    env = openbao.env  # type: ignore[attr-defined]
    return init("hcvault://transit/keys/stateseal", "vault-kv://secret/stateseal/keyset", tmp_path, env)


@pytest.fixture(scope="session")
def issuer() -> Iterator[Issuer]:
    """The OAuth issuer whose access tokens every fleet server accepts."""
    it = Issuer()
    yield it
    it.close()


def python_server(keyset: Keyset, log: pathlib.Path, issuer: Issuer, **settings: object) -> Service:
    port = free_port()
    flags = [f"{k}={v}" for k, v in {**TIMING, **settings}.items()]
    flags += [f"oauth_issuer={issuer.url}", f"oauth_jwks_uri={issuer.jwks_uri}"]
    flags += [f"keyset_id={keyset.keyset_id}", f"keyset_keks={','.join(keyset.keks)}"]
    if keyset.kek.startswith("local://"):
        flags.append("allow_local_kek=true")
    return start_service(
        [sys.executable, str(HERE / "fleet_server.py"), str(port), keyset.store, *flags], port, log, keyset.env
    )


def node_server(keyset: Keyset, log: pathlib.Path, issuer: Issuer) -> Service:
    port = free_port()
    flags = [f"{k}={v}" for k, v in TIMING.items()]
    flags += [f"oauth_issuer={issuer.url}", f"oauth_jwks_uri={issuer.jwks_uri}"]
    flags += [f"keyset_id={keyset.keyset_id}", f"keyset_keks={','.join(keyset.keks)}"]
    if keyset.kek.startswith("local://"):
        flags.append("allow_local_kek=true")
    return start_service(["node", str(NODE_SERVER), str(port), keyset.store, *flags], port, log, keyset.env)


def rust_server(keyset: Keyset, log: pathlib.Path, issuer: Issuer) -> Service:
    port = free_port()
    config = keyset.dir / f"rust-{port}.toml"
    config.write_text(
        f'store = "{keyset.store}"\naudience = "stateseal-example"\n'
        + f"keyset_id = {json.dumps(keyset.keyset_id)}\nkeyset_keks = {json.dumps(keyset.keks)}\n"
        + "".join(f"{k} = {v}\n" for k, v in TIMING.items())
    )
    args = [HTTP_SERVER, "--addr", f"127.0.0.1:{port}", "--config", str(config)]
    args += ["--oauth-issuer", issuer.url, "--oauth-jwks-uri", issuer.jwks_uri]
    if keyset.kek.startswith("local://"):
        args.append("--allow-local-kek")
    return start_service(args, port, log, keyset.env)

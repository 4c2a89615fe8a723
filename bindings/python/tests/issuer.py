"""A local OAuth authorization server for the fleet tests: it serves its JWKS
at `/jwks.json` on a free loopback port and mints RS256 access tokens (PyJWT
with `cryptography`), which the Rust example server (`stateseal-oauth`) and
the Python fleet server (`fleet_server.py`) both validate against it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

AUDIENCE = "stateseal-example"
CLIENT_ID = "example-client"
KID = "fleet-key-1"


class Issuer:
    """Started on construction; `close()` stops it."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key()))
        jwk.update(kid=KID, use="sig", alg="RS256")
        body = json.dumps({"keys": [jwk]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                found = self.path == "/jwks.json"
                self.send_response(200 if found else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body) if found else 0))
                self.end_headers()
                if found:
                    self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.jwks_uri = f"{self.url}/jwks.json"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def token(self, subject: str, ttl: int = 3600) -> str:
        """An access token for `subject` naming the example servers' audience."""
        now = int(time.time())
        claims = {"iss": self.url, "aud": AUDIENCE, "sub": subject, "client_id": CLIENT_ID, "iat": now, "exp": now + ttl}
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KID})

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

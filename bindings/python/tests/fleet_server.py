"""A Python MCP server of the mixed fleet: the Rust example server's `deploy`
tool, written with the SDK's `MCPServer`, its `requestState` protected by the
SDK's own boundary over a `KeysetCodec` on the fleet's keyset.

    python fleet_server.py PORT STORE oauth_issuer=URL oauth_jwks_uri=URL [setting=value ...]

Callers present OAuth access tokens (RS256 JWTs for the audience
`stateseal-example`), validated against the issuer's JWKS as the Rust example
server's `stateseal-oauth` layer does, and become the same principal (issuer,
client id, subject), so a state minted by either server binds the same caller.
Prints `ready` once listening.
"""

from __future__ import annotations

import sys

import anyio.to_thread
import jwt
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

from stateseal import KeysetCodec

AUDIENCE = "stateseal-example"


class JwtVerifier:
    """Access tokens checked against the issuer's JWKS: RS256 only, issuer,
    audience, expiry, subject and client id required."""

    def __init__(self, issuer: str, jwks_uri: str) -> None:
        self.issuer = issuer
        self.keys = jwt.PyJWKClient(jwks_uri, cache_keys=True)

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = await anyio.to_thread.run_sync(self.keys.get_signing_key_from_jwt, token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=["RS256"],
                audience=AUDIENCE,
                issuer=self.issuer,
                options={"require": ["exp", "iss", "aud", "sub", "client_id"]},
            )
        except jwt.PyJWTError:
            return None
        return AccessToken(
            token=token,
            client_id=claims["client_id"],
            scopes=[],
            subject=claims["sub"],
            claims={"iss": claims["iss"]},
        )


def settings(args: list[str]) -> dict[str, object]:
    """`name=value` arguments: booleans, whole numbers and seconds."""
    out: dict[str, object] = {}
    for arg in args:
        name, value = arg.split("=", 1)
        if value in ("true", "false"):
            out[name] = value == "true"
        elif name == "keyset_id":
            out[name] = value
        elif name == "keyset_keks":
            out[name] = value.split(",")
        elif name in ("max_seals_per_key", "seal_reservation_block"):
            out[name] = int(value)
        else:
            out[name] = float(value)
    return out


def main() -> None:
    port, store = int(sys.argv[1]), sys.argv[2]
    oauth = dict(a.split("=", 1) for a in sys.argv[3:] if a.startswith("oauth_"))
    options = settings([a for a in sys.argv[3:] if not a.startswith("oauth_")])
    codec = KeysetCodec.start(store, **options)  # type: ignore[arg-type]
    security = RequestStateSecurity(codec=codec, ttl=codec.ttl, audience=AUDIENCE)
    url = f"http://127.0.0.1:{port}"
    server = MCPServer(
        AUDIENCE,
        token_verifier=JwtVerifier(oauth["oauth_issuer"], oauth["oauth_jwks_uri"]),
        auth=AuthSettings(issuer_url=oauth["oauth_issuer"], resource_server_url=url),
        request_state_security=security,
    )

    @server.tool(description="Deploy after a confirmation round")
    async def deploy(env: str, ctx: Context) -> str | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("confirm")
        content = getattr(answer, "content", None) or {}
        if ctx.request_state == f"confirm-deploy:{env}" and content.get("ok") is True:
            return f"deployed to {env}"
        question = ElicitRequest(
            params=ElicitRequestFormParams(
                message=f"Deploy to {env}?",
                requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            )
        )
        return InputRequiredResult(input_requests={"confirm": question}, request_state=f"confirm-deploy:{env}")

    app = server.streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    print("ready", flush=True)
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()

"""A test client for `stateseal proxy`: the real Python MCP SDK client, driving
multi-round-trip (`input_required`) conversations explicitly.

    python py_client.py URL [KIND ...]          # KIND: tool transfer prompt resource
    python py_client.py URL --echo STATE KIND   # round 2 only, with a forged state

Connects with `streamable_http_client` + `ClientSession` (protocol 2026-07-28,
`server/discover`, no session). For each KIND, round 1 (no state) must come
back `input_required`; round 2 repeats the request with that `requestState`
echoed and `inputResponses` accepting every input request. `PROXY_HEADERS`, a
JSON object, adds those headers to every request. `PROXY_BEARER`, if
set, is sent as `Authorization: Bearer ...` on every request. Every HTTP
response body received is recorded, in order, by a transport wrapper.

Prints one JSON object: {"rounds": [{"kind", "state", "final", "error",
"result_type", ...}], "bodies": [...], "statuses": [...]} ("statuses": the
HTTP status of each body). With --echo, "state" is null, "echoed" is the
state sent and, if the reply was input_required again, "reply_state" its
state. Exits 0 whenever it ran; a failed round is reported in its "error"
({"code", "message", "data"} for a JSON-RPC error, else a text); non-zero
only on a crash (e.g. nothing listening at URL).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import httpx2
import mcp_types as t
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

BODIES: list[str] = []
STATUSES: list[int] = []
KEY = {"tool": "confirm", "transfer": "confirm", "prompt": "title", "resource": "open"}
"""The inputRequests key py_upstream.py uses per KIND (for --echo, which has no round 1 to learn it from)."""


class RecordingStream(httpx2.AsyncByteStream):
    """Passes a response body through and records all of it, in arrival order of completion:
    on close, whatever the SDK left unread is drained too, so the record is what the wire carried."""

    def __init__(self, inner: httpx2.AsyncByteStream, status: int) -> None:
        self.inner, self.status, self.chunks, self.done = inner, status, [], False
        self.reader = self.read()

    async def read(self):  # type: ignore[no-untyped-def]
        async for chunk in self.inner:
            self.chunks.append(chunk)
            yield chunk
        self.record()

    async def __aiter__(self):  # type: ignore[override]
        async for chunk in self.reader:
            yield chunk

    def record(self) -> None:
        if not self.done:
            self.done = True
            BODIES.append(b"".join(self.chunks).decode("utf-8", "replace"))
            STATUSES.append(self.status)

    async def aclose(self) -> None:
        try:
            with anyio.move_on_after(5):
                async for _ in self.reader:
                    pass
        except Exception:  # a broken stream: record what arrived
            pass
        self.record()
        await self.inner.aclose()


class RecordingTransport(httpx2.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        response.stream = RecordingStream(response.stream, response.status_code)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def accept(key: str) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"title": "Dr"} if key == "title" else {"ok": True})


async def send(session: ClientSession, kind: str, state: str | None, responses: dict[str, Any] | None) -> Any:
    extra: dict[str, Any] = {"request_state": state, "input_responses": responses, "allow_input_required": True}
    if kind == "tool":
        return await session.call_tool("deploy", {"env": "prod"}, **extra)
    if kind == "transfer":
        return await session.call_tool("transfer", {"amount": 100}, **extra)
    if kind == "prompt":
        return await session.get_prompt("greeting", {"name": "Ada"}, **extra)
    if kind == "resource":
        return await session.read_resource("stateful://doc", **extra)
    raise ValueError(f"unknown kind {kind}")


def final_text(result: Any) -> str | None:
    if isinstance(result, t.CallToolResult):
        return "".join(getattr(c, "text", "") for c in result.content)
    if isinstance(result, t.GetPromptResult):
        return "".join(getattr(m.content, "text", "") for m in result.messages)
    if isinstance(result, t.ReadResourceResult):
        return "".join(getattr(c, "text", "") for c in result.contents)
    return None


async def conversation(session: ClientSession, kind: str, echo: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"kind": kind, "state": None, "final": None, "error": None, "result_type": None}
    try:
        if echo is None:
            first = await send(session, kind, None, None)
            if not isinstance(first, t.InputRequiredResult):
                row.update(error="round 1 was not input_required", final=final_text(first), result_type="complete")
                return row
            row["state"] = first.request_state
            responses = {key: accept(key) for key in first.input_requests or {}}
        else:
            row["echoed"] = echo
            responses = {KEY[kind]: accept(KEY[kind])}
        last = await send(session, kind, echo if echo is not None else row["state"], responses)
        if isinstance(last, t.InputRequiredResult):
            row.update(result_type="input_required", reply_state=last.request_state)
            if echo is None:
                row["error"] = "round 2 was input_required again"
        else:
            row.update(result_type="complete", final=final_text(last))
    except Exception as exc:
        row["error"] = describe(exc)
    return row


def describe(exc: Exception) -> dict[str, Any] | str:
    """A JSON-RPC error as {"code", "message", "data"}; anything else (transport, validation) as text."""
    if isinstance(exc, MCPError):
        return {"code": exc.code, "message": exc.message, "data": exc.data}
    return f"{type(exc).__name__}: {exc}"


async def never_called(context: Any, params: Any) -> t.ElicitResult:
    """Only there so the client declares the elicitation capability: on 2026-07-28 input
    requests arrive in `input_required` results, which this script answers itself."""
    return t.ElicitResult(action="decline")


async def main(argv: list[str]) -> None:
    url, rest, echo = argv[0], argv[1:], None
    if "--echo" in rest:
        i = rest.index("--echo")
        echo, rest = rest[i + 1], rest[:i] + rest[i + 2 :]
        if len(rest) != 1:
            sys.exit("--echo STATE takes exactly one KIND")
    kinds = rest or ["tool", "prompt", "resource"]
    bearer = os.environ.get("PROXY_BEARER")
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    # Headers a gateway in front would set (the tests play a trusted gateway with them).
    headers.update(json.loads(os.environ.get("PROXY_HEADERS", "{}")))
    timeout = httpx2.Timeout(30.0, read=60.0)
    rounds = []
    async with httpx2.AsyncClient(transport=RecordingTransport(), headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, elicitation_callback=never_called) as session:
                try:
                    await session.discover()
                except Exception as exc:  # e.g. the proxy refused the caller: every round fails alike
                    error = describe(exc)
                    rounds = [{"kind": k, "state": None, "final": None, "error": error} for k in kinds]
                else:
                    for kind in kinds:
                        rounds.append(await conversation(session, kind, echo))
    print(json.dumps({"rounds": rounds, "bodies": BODIES, "statuses": STATUSES}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])

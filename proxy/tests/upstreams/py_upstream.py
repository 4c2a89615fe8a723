"""A test upstream for `stateseal proxy`: an MCP server "nobody here wrote".

    python py_upstream.py PORT LOGFILE MODE      # MODE: json | sse

Built only from the Python MCP SDK's lowlevel `Server` (no stateseal, no
`RequestStateSecurity`): it hands out and reads PLAINTEXT `requestState`
values, as a careless server would, so the proxy in front of it must do all
the protection. Streamable HTTP on 127.0.0.1:PORT/mcp, no auth, no sessions
(2026-07-28 requests are self-contained POSTs; `stateless_http=True` keeps the
legacy path session-free too). MODE=json answers `application/json`; MODE=sse
sends one request-scoped `notifications/message` before each answer, which is
what makes the SDK commit the response to `text/event-stream` (a silent
handler gets a JSON answer even in SSE mode).

Every tools/call, prompts/get and resources/read appends one JSON line to
LOGFILE with the raw wire `requestState` (logged by a middleware that runs
before params validation). Prints `ready` once listening.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import mcp_types as t
import uvicorn
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.lowlevel import Server

PORT, LOGFILE, MODE = int(sys.argv[1]), sys.argv[2], sys.argv[3]
assert MODE in ("json", "sse"), "MODE must be json or sse"
DOC = "stateful://doc"
TARGET_KEY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


async def log_and_announce(ctx: ServerRequestContext[Any], call_next: CallNext) -> Any:
    """Logs the raw params of the multi-round-trip methods; in SSE mode, emits a notification first."""
    if ctx.method in TARGET_KEY:
        params = ctx.params or {}
        target, state = params.get(TARGET_KEY[ctx.method]), params.get("requestState")
        line = {"method": ctx.method, "target": target, "requestState": state}
        with open(LOGFILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
            f.flush()
    if MODE == "sse" and ctx.request_id is not None:
        data = t.LoggingMessageNotificationParams(level="info", data=f"handling {ctx.method}")
        note = t.LoggingMessageNotification(params=data)
        await ctx.session.send_notification(note, related_request_id=ctx.request_id)
    return await call_next(ctx)


def schema(field: str, kind: str) -> dict[str, Any]:
    return {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}


def ask(key: str, message: str, field: str, kind: str, state: str) -> t.InputRequiredResult:
    form = t.ElicitRequestFormParams(message=message, requested_schema=schema(field, kind))
    question = t.ElicitRequest(params=form)
    return t.InputRequiredResult(input_requests={key: question}, request_state=state)


def accepted(params: t.InputResponseRequestParams, key: str) -> dict[str, Any] | None:
    """The content of an accepted elicitation answer under `key`, else None."""
    answer = (params.input_responses or {}).get(key)
    if getattr(answer, "action", None) != "accept":
        return None
    return getattr(answer, "content", None) or {}


def text(s: str, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=s)], is_error=error)


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> t.ListToolsResult:
    deploy = t.Tool(name="deploy", description="Deploy after a confirmation", input_schema=schema("env", "string"))
    amount = schema("amount", "integer")
    transfer = t.Tool(name="transfer", description="Transfer after a confirmation", input_schema=amount)
    return t.ListToolsResult(tools=[deploy, transfer])


async def call_tool(ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> Any:
    args = params.arguments or {}
    if params.name == "deploy":
        env = args.get("env")
        state, question, done = f"confirm-deploy:{env}", f"Deploy to {env}?", f"deployed to {env}"
    elif params.name == "transfer":
        amount = args.get("amount")
        state, question, done = f"confirm-transfer:{amount}", f"Transfer {amount}?", f"transferred {amount}"
    else:
        return text(f"no tool {params.name}", error=True)
    if params.request_state == state and (accepted(params, "confirm") or {}).get("ok") is True:
        return text(done)
    return ask("confirm", question, "ok", "boolean", state)


async def list_prompts(ctx: ServerRequestContext[Any], params: Any) -> t.ListPromptsResult:
    arg = t.PromptArgument(name="name", required=True)
    prompt = t.Prompt(name="greeting", description="Greets, asking for a title", arguments=[arg])
    return t.ListPromptsResult(prompts=[prompt])


async def get_prompt(ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> Any:
    name = (params.arguments or {}).get("name")
    answer = accepted(params, "title")
    if params.request_state == f"greet:{name}" and answer is not None:
        hello = t.TextContent(type="text", text=f"Hello {answer.get('title')} {name}")
        return t.GetPromptResult(messages=[t.PromptMessage(role="user", content=hello)])
    return ask("title", f"How should {name} be addressed?", "title", "string", f"greet:{name}")


async def list_resources(ctx: ServerRequestContext[Any], params: Any) -> t.ListResourcesResult:
    return t.ListResourcesResult(resources=[t.Resource(uri=DOC, name="doc", mime_type="text/plain")])


async def read_resource(ctx: ServerRequestContext[Any], params: t.ReadResourceRequestParams) -> Any:
    if str(params.uri) != DOC:
        return t.ReadResourceResult(contents=[])
    if params.request_state == "doc:open":
        doc = t.TextResourceContents(uri=DOC, text="the document", mime_type="text/plain")
        return t.ReadResourceResult(contents=[doc])
    return ask("open", "Open the document?", "ok", "boolean", "doc:open")


async def main() -> None:
    server = Server(
        "py-upstream",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    server.middleware.append(log_and_announce)
    app = server.streamable_http_app(json_response=(MODE == "json"), stateless_http=True)
    config = uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
    web = uvicorn.Server(config)
    serving = asyncio.create_task(web.serve())
    while not web.started:
        if serving.done():
            sys.exit(f"could not serve on 127.0.0.1:{PORT}")
        await asyncio.sleep(0.02)
    print("ready", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main())

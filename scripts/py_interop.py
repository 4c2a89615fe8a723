#!/usr/bin/env python3
"""Drives the real Python MCP SDK's requestState boundary for stateseal's interop test.

Reads one JSON request per line on stdin, answers one JSON line on stdout:
  {"op":"mint","key_hex":..,"audience":..|null,"principal":..|null,"method":..,"params":{..},"state":..}
      -> {"token": ..}
  {"op":"verify", same fields but "token" instead of "state"}
      -> {"ok": true, "state": ..} | {"ok": false, "reason": <the SDK's log-only reason>}
Only the SDK's own code seals and verifies (RequestStateBoundary._seal/_unseal).
"""
import json
import logging
import sys
from types import SimpleNamespace

from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError


class LastReason(logging.Handler):
    def __init__(self):
        super().__init__()
        self.reason = None

    def emit(self, record):
        msg = record.getMessage()
        if ": " in msg:
            self.reason = msg.split(": ", 1)[1]


reasons = LastReason()
logging.getLogger("mcp.server.request_state").addHandler(reasons)
logging.getLogger("mcp.server.request_state").propagate = False


def boundary(req):
    principal = req.get("principal")
    security = RequestStateSecurity(keys=[bytes.fromhex(req["key_hex"])], bind_principal=lambda ctx: principal)
    return RequestStateBoundary(security, default_audience=req.get("audience"))


def handle(req):
    b = boundary(req)
    if req["op"] == "mint":
        ctx = SimpleNamespace(method=req["method"], params=req["params"])
        return {"token": b._seal(ctx, req["state"])}
    ctx = SimpleNamespace(method=req["method"], params={**req["params"], "requestState": req["token"]})
    reasons.reason = None
    try:
        state, _ = b._unseal(ctx)
        return {"ok": True, "state": state}
    except MCPError as e:
        assert e.error.code == -32602 and e.error.message == "Invalid or expired requestState"
        return {"ok": False, "reason": reasons.reason}


for line in sys.stdin:
    if line.strip():
        print(json.dumps(handle(json.loads(line))), flush=True)

"""Keyset-backed ``requestState`` protection for Python MCP servers.

``KeysetCodec`` implements the MCP SDK's ``RequestStateCodec`` protocol over a
stateseal keyset: the same document, KMS and rotation timeline as the Rust
servers of the fleet, so both mint and accept each other's tokens through every
rotation. Keys are unwrapped by the Rust core (local, Vault / OpenBao transit,
AWS KMS, Google Cloud KMS) and kept in memory; ``seal`` and ``unseal`` release
the GIL and never touch the network.

    from mcp.server.request_state import RequestStateSecurity
    from stateseal import KeysetCodec

    codec = KeysetCodec.start("vault-kv://secret/stateseal/keyset")
    security = RequestStateSecurity(codec=codec, ttl=codec.ttl)
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from importlib import metadata
from typing import Any

from stateseal import _native

# The MCP SDK releases this package supports (pyproject.toml's `mcp` extra says
# the same; CI runs the tests on the oldest and the newest). RequestStateBoundary
# builds on the SDK boundary's internals (`_unseal`, `_reject`, `_security`,
# `_audience`), which another release may change without notice, so any other
# release is refused at import rather than trusted to fail closed.
MCP_OLDEST = (2, 0, 0)
MCP_FIRST_UNSUPPORTED = (2, 4, 0)
MCP_SUPPORTED = ">=2.0.0,<2.4"


def _mcp_release(version: str) -> tuple[int, int, int] | None:
    """``X.Y[.Z]`` (a ``.postN`` allowed) as a tuple; None for anything else (pre-releases)."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:\.post\d+)?", version)
    if match is None:
        return None
    return (int(match[1]), int(match[2]), int(match[3] or 0))


def _check_mcp() -> None:
    try:
        found = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return  # the codec is usable without the SDK
    release = _mcp_release(found)
    if release is None or not MCP_OLDEST <= release < MCP_FIRST_UNSUPPORTED:
        raise ImportError(
            f"stateseal supports the MCP Python SDK mcp{MCP_SUPPORTED}, and mcp {found} is installed: "
            f"install a supported release (pip install 'mcp{MCP_SUPPORTED}') or a stateseal release "
            "that supports this one (its RequestStateBoundary builds on the SDK boundary's internals)"
        )


_check_mcp()

try:  # the SDK's exception, so its boundary treats our failures as its own
    from mcp.server.request_state import InvalidRequestState
except ImportError:  # pragma: no cover - the codec is usable without the SDK

    class InvalidRequestState(Exception):  # type: ignore[no-redef]
        """A sealed ``requestState`` token failed verification (log-only reason)."""


_native.use_error_type(InvalidRequestState)

# The slot of the stateseal.RequestStateBoundary opening a state in this
# context: KeysetCodec.unseal hands a single-use state's record to it, and
# refuses the state when there is none (nothing else would record it).
_PENDING: ContextVar[_native.PendingUse | None] = ContextVar("stateseal_pending_single_use", default=None)
_native.use_pending_var(_PENDING)

__all__ = ["InvalidRequestState", "KeysetCodec", "RequestStateBoundary", "install_boundary"]

_SETTINGS = (
    "kek",
    "create_if_missing",
    "allow_local_kek",
    "ttl",
    "refresh_interval",
    "max_skew",
    "propagation",
    "max_key_age",
    "outage_grace",
    "max_store_staleness",
    "rotation_period",
    "max_seals_per_key",
    "seal_reservation_block",
    "ready_timeout",
    "keyset_id",
    "keyset_keks",
    "min_generation",
    "accept_unauthenticated_keyset",
    "renew_keyset",
    "replay_store",
    "single_use_tools",
    "single_use_prompts",
    "single_use_resources",
)


class KeysetCodec:
    """A ``RequestStateCodec`` whose keys come from a stateseal keyset.

    Start it with :meth:`start` (or :meth:`from_env`); it blocks until the key
    ring is loaded. Give it to ``RequestStateSecurity(codec=codec, ttl=codec.ttl)``:
    the state lifetime the fleet's keyset was created with. Use one codec per process; after ``os.fork()`` a child starts its own
    instance on its first seal or unseal.
    """

    __slots__ = ("_native", "seal", "unseal")

    def __init__(self, native: _native.NativeCodec) -> None:
        self._native = native
        # Bound straight to the native methods: no Python frame per token.
        self.seal = native.seal
        self.unseal = native.unseal

    @classmethod
    def start(
        cls,
        store: str,
        *,
        kek: str | None = None,
        create_if_missing: bool = False,
        allow_local_kek: bool = False,
        ttl: float | None = None,
        refresh_interval: float | None = None,
        max_skew: float | None = None,
        propagation: float | None = None,
        max_key_age: float | None = None,
        outage_grace: float | None = None,
        max_store_staleness: float | None = None,
        rotation_period: float | None = None,
        max_seals_per_key: int | None = None,
        seal_reservation_block: int | None = None,
        ready_timeout: float | None = None,
        keyset_id: str | None = None,
        keyset_keks: list[str] | None = None,
        min_generation: int | None = None,
        accept_unauthenticated_keyset: bool | None = None,
        renew_keyset: bool | None = None,
        replay_store: str | None = None,
        single_use_tools: list[str] | None = None,
        single_use_prompts: list[str] | None = None,
        single_use_resources: list[str] | None = None,
    ) -> KeysetCodec:
        """Start a codec on the keyset in ``store``.

        ``store`` is a keyset store URI (``file:///…``, ``vault-kv://…``,
        ``s3://…``, ``gs://…``). The settings are those of the Rust
        ``setup::Config`` (seconds for durations); ``None`` keeps the default,
        and the timing (``refresh_interval``, ``max_skew``, ``ttl``,
        ``propagation``) follows the keyset's profile unless given.
        ``create_if_missing`` with ``kek`` creates the keyset when the store is
        empty (development). ``keyset_id`` and ``keyset_keks`` pin the keyset
        and the KEKs it may use (what ``stateseal init`` printed; required for
        every store but ``file://``): a document anyone else wrote is refused
        before any KMS call. ``min_generation`` refuses older documents (a
        restored backup); ``accept_unauthenticated_keyset`` adopts
        ``stateseal.keyset/v1`` documents during a migration, with a warning.
        ``allow_local_kek`` permits ``local://`` KEKs,
        which are for development only. ``single_use_tools``,
        ``single_use_prompts`` and ``single_use_resources`` (resource URIs)
        name the rounds whose states are accepted once, fleet-wide: they need
        ``replay_store`` (``memory://`` for one process, ``redis://host:6379/0``
        or ``rediss://…`` for a fleet), a v2 key, and
        :class:`RequestStateBoundary` in place of the SDK's. Provider credentials come from the
        environment as in Rust (``VAULT_ADDR``/``VAULT_TOKEN``, the AWS chain,
        Application Default Credentials).

        Raises:
            ValueError: an invalid setting (the message names it).
            RuntimeError: the store, KMS or keyset gave no usable key within
                ``ready_timeout``.
        """
        given = locals()
        settings = {name: given[name] for name in _SETTINGS if given[name] is not None}
        return cls(_native.NativeCodec.start(store, settings))

    @classmethod
    def from_env(cls) -> KeysetCodec:
        """Start a codec from ``STATESEAL_*`` variables, as a Rust server reads them.

        ``STATESEAL_STORE`` is required; ``STATESEAL_CONFIG`` may name a TOML
        file; ``STATESEAL_ALLOW_LOCAL_KEK=true`` permits ``local://`` KEKs.
        """
        return cls(_native.NativeCodec.from_env())

    @property
    def ttl(self) -> float:
        """The state lifetime in force (seconds): pass it to ``RequestStateSecurity``."""
        return float(self._native.status()["ttl"])

    def status(self) -> dict[str, Any]:
        """Readiness, keyset generation, rotation phase, ring (primary first) and refreshes."""
        return self._native.status()

    def close(self) -> None:
        """Stop the background refresh. Later seals and unseals raise."""
        self._native.close()

    def __enter__(self) -> KeysetCodec:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "KeysetCodec(<keyset-backed>)"


try:
    from mcp.server import request_state as _sdk
except ImportError:  # pragma: no cover - the codec is usable without the SDK
    _sdk = None  # type: ignore[assignment]

if _sdk is not None:

    class RequestStateBoundary(_sdk.RequestStateBoundary):
        """The SDK's ``RequestStateBoundary`` (same constructor), recording single-use states.

        After the SDK's own checks of a state (expiry, request binding,
        audience, principal) pass, a single-use state is recorded in the
        codec's replay store, and refused with the SDK's frozen ``-32602``
        (logged reason ``replayed`` or ``replay store unavailable``, as a Rust
        server logs them) unless this presentation recorded it. Multi-use
        states never reach the store. The record runs with the GIL released
        but on the calling thread: it holds the event loop for at most the
        store's deadline (250 ms for Redis by default).

        Revocations (``stateseal revoke``) are looked up here too, with the
        principal the SDK bound, after its checks and before the record: a
        covered state is refused with the logged reason ``revoked``. Under the
        SDK's own boundary the codec cannot see the principal, so it refuses
        every state a live revocation may cover (issued before its ``before``).

        Install it where the SDK's boundary goes: in place of the one
        ``MCPServer`` appends (``server._lowlevel_server.middleware``), or
        appended to a lowlevel ``Server``'s ``middleware``. Without it,
        ``KeysetCodec.unseal`` refuses every single-use state.
        """

        def _unseal(self, ctx: Any) -> Any:
            slot = _native.PendingUse()
            token = _PENDING.set(slot)
            try:
                opened = super()._unseal(ctx)
            finally:
                _PENDING.reset(token)
            # Revocations first (they need the principal the SDK bound), then the record.
            if slot.revoked(opened[1][2]):
                _sdk._reject(ctx.method, "revoked")
            refused = slot.record()
            if refused is not None:
                _sdk._reject(ctx.method, refused)
            return opened

    def install_boundary(server: Any) -> RequestStateBoundary:
        """Put :class:`RequestStateBoundary` in place of the SDK's in ``server``.

        ``server`` is an ``MCPServer`` (whose constructor installed the SDK's
        boundary) or a lowlevel ``Server`` whose ``middleware`` holds one; the
        replacement keeps its policy and audience. Returns it.

        Raises:
            ValueError: ``server`` has no SDK boundary to replace.
        """
        lowlevel = getattr(server, "_lowlevel_server", server)
        middleware = lowlevel.middleware
        for i, m in enumerate(middleware):
            if type(m) is _sdk.RequestStateBoundary:
                ours = RequestStateBoundary(m._security, default_audience=m._audience)
                middleware[i] = ours
                return ours
        raise ValueError("no mcp.server.request_state.RequestStateBoundary in the server's middleware")

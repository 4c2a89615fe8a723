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

from typing import Any

from stateseal import _native

try:  # the SDK's exception, so its boundary treats our failures as its own
    from mcp.server.request_state import InvalidRequestState
except ImportError:  # pragma: no cover - the codec is usable without the SDK

    class InvalidRequestState(Exception):  # type: ignore[no-redef]
        """A sealed ``requestState`` token failed verification (log-only reason)."""


_native.use_error_type(InvalidRequestState)

__all__ = ["InvalidRequestState", "KeysetCodec"]

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
        which are for development only. Provider credentials come from the
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

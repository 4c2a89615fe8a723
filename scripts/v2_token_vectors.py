#!/usr/bin/env python3
"""Writes tests/data/stateseal-v2-tokens.json: `v2.` tokens computed from the
wire-format description alone, with the `cryptography` package (HKDF-SHA256,
AES-256 in ECB for the XAES-256-GCM key derivation, AES-256-GCM), not with
stateseal's code. tests/core/token_vectors.rs checks that stateseal seals
exactly these tokens from the same secret, nonce and payload, and opens them.

    python3 scripts/v2_token_vectors.py > tests/data/stateseal-v2-tokens.json
"""
import base64
import hashlib
import json

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

KDF_INFO = b"mcp/request-state/v2/xaes-256-gcm"
KID_INFO = b"mcp/request-state/v2/kid:"


def aes_block(key, block):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def xaes_seal(key, nonce, plaintext, aad):
    """C2SP XAES-256-GCM: K1 from L = AES_K(0), Kx by the CMAC-based counter KDF."""
    l = int.from_bytes(aes_block(key, bytes(16)), "big")
    k1 = (l << 1) & ((1 << 128) - 1)
    if l >> 127:
        k1 ^= 0x87
    k1 = k1.to_bytes(16, "big")
    kx = b"".join(
        aes_block(key, bytes(a ^ b for a, b in zip(bytes([0, i, 0x58, 0]) + nonce[:12], k1)))
        for i in (1, 2)
    )
    return AESGCM(kx).encrypt(nonce[12:], plaintext, aad)


def case(name, secret, nonce, payload):
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=KDF_INFO).derive(secret)
    kid = hashlib.sha256(KID_INFO + key).digest()[:4]
    sealed = xaes_seal(key, nonce, payload, b"v2." + kid)
    body = base64.urlsafe_b64encode(kid + nonce + sealed).rstrip(b"=").decode()
    return {
        "name": name,
        "secret_hex": secret.hex(),
        "kid_hex": kid.hex(),
        "nonce_hex": nonce.hex(),
        "payload": payload.decode(),
        "token": "v2." + body,
    }


CLAIMS = '{"v":1,"iat":1782345600.0,"exp":1782346200.0,"m":"tools/call","t":"t","a":"RBNvo1WzZ4oRRq0W9-hknA","s":"step-1"}'
cases = [
    case("empty_payload", bytes(range(32)), bytes(range(100, 124)), b""),
    case("claims", bytes([0x42] * 32), bytes(range(24)), CLAIMS.encode()),
    case("long_secret_kilobyte", bytes(range(64)), bytes([0xFF] * 24), ("x" * 1024).encode()),
    case("sixteen_kib", bytes([7] * 32), bytes(range(50, 74)), ("y" * 16384).encode()),
]
print(json.dumps({"generator": "scripts/v2_token_vectors.py (cryptography, independent of stateseal)", "cases": cases}, indent=2))

"""moto_server with KMS key state enforced the way AWS enforces it.

moto answers Encrypt, Decrypt and GenerateDataKey under a disabled key or a
key pending deletion; AWS refuses them (DisabledException,
KMSInvalidStateException). stateseal's revocation tests need AWS's behaviour,
so this launcher wraps moto's KMS backend and then runs the standard server:

    python scripts/moto_kms_state.py -H 127.0.0.1 -p PORT
"""

import sys

from moto.core.exceptions import JsonRESTError
from moto.kms import models
from moto.server import main


class DisabledException(JsonRESTError):
    code = 400

    def __init__(self, message):
        super().__init__("DisabledException", message)


class KMSInvalidStateException(JsonRESTError):
    code = 400

    def __init__(self, message):
        super().__init__("KMSInvalidStateException", message)


def check_state(backend, key_id):
    key = backend.keys[backend.any_id_to_key_id(key_id)]
    if key.key_state == "Disabled":
        raise DisabledException(f"{key.arn} is disabled.")
    if key.key_state == "PendingDeletion":
        raise KMSInvalidStateException(f"{key.arn} is pending deletion.")


_encrypt = models.KmsBackend.encrypt
_decrypt = models.KmsBackend.decrypt


def encrypt(self, *args, **kwargs):
    # GenerateDataKey goes through encrypt too.
    check_state(self, kwargs["key_id"] if "key_id" in kwargs else args[0])
    return _encrypt(self, *args, **kwargs)


def decrypt(self, *args, **kwargs):
    plaintext, arn = _decrypt(self, *args, **kwargs)
    check_state(self, arn)
    return plaintext, arn


models.KmsBackend.encrypt = encrypt
models.KmsBackend.decrypt = decrypt

if __name__ == "__main__":
    main(sys.argv[1:])

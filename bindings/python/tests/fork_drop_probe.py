"""A child drops the codec it inherited across `os.fork()` without using it,
between two marker calls; `scripts/nonce-path-check.sh` runs this under
`strace -f` and requires that the child made no system call between the
markers but getpid. The inherited instance's runtime shares its epoll set and eventfd
with the parent's: dropping it in the child would act on the parent's.

    python fork_drop_probe.py DIR    (prints the child's pid)
"""

from __future__ import annotations

import gc
import os
import pathlib
import sys

from conftest import TIMING, init

from stateseal import KeysetCodec

BEGIN, END = "/stateseal-probe/drop-begin", "/stateseal-probe/drop-end"


def main() -> None:
    tmp = pathlib.Path(sys.argv[1])
    keyset = init(f"local://{tmp / 'kek.bin'}", f"file://{tmp / 'keyset.json'}", tmp)
    codec = KeysetCodec.start(keyset.store, allow_local_kek=True, **TIMING, **keyset.pins())  # type: ignore[arg-type]
    token = codec.seal(b"before the fork")
    child = os.fork()
    if child == 0:
        os.access(BEGIN, os.F_OK)
        del codec
        gc.collect()
        os.access(END, os.F_OK)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's instance still works.
    assert codec.unseal(token) == b"before the fork"
    assert codec.unseal(codec.seal(b"after")) == b"after"
    codec.close()
    print(child)


if __name__ == "__main__":
    main()

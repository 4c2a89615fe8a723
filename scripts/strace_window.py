#!/usr/bin/env python3
"""The system calls one process made between two marker calls, read from strace's output.

    strace_window.py TRACE PID BEGIN END [--allow NAME]...

TRACE is what `strace -o TRACE` wrote: with `-f` one file whose lines start with the pid,
with `-ff` the process's own file (`TRACE.PID`, lines without it). Prints each call of
PID after the call whose line holds BEGIN and before the one holding END, other than the
allowed ones, one per line; exits 1 when BEGIN never occurs (nothing was checked).

With `-f`, strace splits a call another process interrupts into `NAME(args <unfinished
...>` and, later, `<... NAME resumed>) = result`: the two halves are joined here, so
neither half is read as a call of its own (scripts/nonce-path-check.sh once failed on
`<... access resumed>`, the second half of the BEGIN marker itself).
"""

from __future__ import annotations

import argparse
import re
import sys

_RESUMED = re.compile(r"<\.\.\. ([A-Za-z0-9_]+) resumed>")
_UNFINISHED = " <unfinished ...>"


def calls(lines: list[str], pid: str) -> list[str]:
    """PID's calls, whole: each `<unfinished ...>` half joined with its `resumed` half."""
    out: list[str] = []
    pending: str | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        head, _, rest = line.partition(" ")
        if head.isdigit():
            if head != pid:
                continue
            line = rest.lstrip()
        # Signals delivered (`--- SIGCHLD ...`) and exits (`+++ exited ...`) are not calls.
        if not line or line.startswith(("---", "+++")):
            continue
        resumed = _RESUMED.match(line)
        if resumed:
            if pending is not None and pending.startswith(resumed.group(1) + "("):
                out.append(pending + line[resumed.end() :])
            else:
                out.append(line)
            pending = None
        elif line.endswith(_UNFINISHED):
            pending = line[: -len(_UNFINISHED)]
        else:
            out.append(line)
    if pending is not None:
        out.append(pending)
    return out


def name_of(call: str) -> str:
    return call.split("(", 1)[0]


def between(lines: list[str], pid: str, begin: str, end: str, allow: set[str]) -> list[str] | None:
    """PID's calls after BEGIN's and before END's, but the allowed; None if BEGIN never occurs."""
    found = False
    inside = False
    seen: list[str] = []
    for call in calls(lines, pid):
        if begin in call:
            found = inside = True
        elif end in call:
            inside = False
        elif inside and name_of(call) not in allow:
            seen.append(call)
    return seen if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("pid")
    parser.add_argument("begin")
    parser.add_argument("end")
    parser.add_argument("--allow", action="append", default=[], metavar="NAME")
    args = parser.parse_args()
    try:
        with open(args.trace, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        print(f"strace_window: cannot read the trace {args.trace}: {e.strerror}", file=sys.stderr)
        return 1
    seen = between(lines, args.pid, args.begin, args.end, set(args.allow))
    if seen is None:
        print(f"strace_window: process {args.pid} never made the call marked {args.begin!r}", file=sys.stderr)
        return 1
    for call in seen:
        print(call)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The library's layers, checked: the modules under src/ import each other
without a cycle, nothing imports the crate root, and no data-plane module
imports the key plane.

A room is a top-level module of src/ (a file or a folder); an arrow is a
`crate::ROOM` path in its code (comments are not code). docs/architecture.md
draws the same picture. The compiler holds the planes apart one way already
(`cargo clippy -p stateseal --no-default-features` builds the data plane with
the key plane's modules compiled out); this holds the order inside each plane.

    python3 scripts/layers.py [SRC]      # SRC defaults to src/
"""

import re
import sys
from pathlib import Path

# The key plane: compiled only with the `keys` feature (`uri` is its URI
# schemes, below keyset and provider). Everything else is the data plane,
# which must build and make sense without it.
KEY_PLANE = {"keyset", "provider", "rotation", "setup", "uri"}

PATH = re.compile(r"\bcrate::(\{[^}]*\}|[a-z_][a-z0-9_]*)")


def code_of(text):
    """The source without comments (line comments, doc comments, block comments)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def rooms_of(src):
    rooms = {}
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        room = rel.parts[0].removesuffix(".rs")
        rooms.setdefault(room, []).append(path)
    return rooms


def arrows_of(rooms):
    arrows = {room: {} for room in rooms}
    for room, files in rooms.items():
        for path in files:
            for n, line in enumerate(code_of(path.read_text()).splitlines(), 1):
                for m in PATH.finditer(line):
                    group = m.group(1)
                    names = (
                        [p.strip().split("::")[0] for p in group[1:-1].split(",")]
                        if group.startswith("{")
                        else [group]
                    )
                    for name in names:
                        target = name if name in rooms else "lib"
                        if not name or target == room:
                            continue
                        arrows[room].setdefault(target, f"{path}:{n}")
    return arrows


def cycle_in(arrows):
    """One cycle of rooms, or None."""
    state = {}
    stack = []

    def visit(room):
        state[room] = "open"
        stack.append(room)
        for target in sorted(arrows.get(room, {})):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[room] = "done"
        return None

    for room in sorted(arrows):
        if room not in state:
            found = visit(room)
            if found:
                return found
    return None


def main():
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    rooms = rooms_of(src)
    arrows = arrows_of(rooms)
    problems = []
    for room, targets in sorted(arrows.items()):
        if room == "lib":
            continue
        if "lib" in targets:
            problems.append(
                f"{targets['lib']}: {room} imports the crate root; import the module that defines the item"
            )
        if room not in KEY_PLANE:
            for target in sorted(KEY_PLANE & targets.keys()):
                problems.append(
                    f"{targets[target]}: the data plane's {room} imports the key plane's {target}"
                )
    cycle = cycle_in({r: t for r, t in arrows.items() if r != "lib"})
    if cycle:
        steps = [f"{a} -> {b} ({arrows[a][b]})" for a, b in zip(cycle, cycle[1:])]
        problems.append("a cycle of modules: " + "; ".join(steps))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"layers: {len(rooms)} modules of {src}, {sum(map(len, arrows.values()))} arrows, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())

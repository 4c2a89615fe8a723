"""scripts/strace_window.py: the calls a process made between two marker calls, from
strace's output with `-f` (one file, split calls) and `-ff` (a file per process), and its
refusals (message, exit code 1)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parent / "strace_window.py"
BEGIN, END = "/stateseal-probe/drop-begin", "/stateseal-probe/drop-end"

#: `strace -f` as a CI run wrote it: the parent's waitpid interleaved with the child's
#: calls, so the child's BEGIN marker and its getpid each came in two halves. The check
#: read `<... access resumed>` and `<... getpid resumed>` as calls of their own and failed.
SPLIT = f"""\
9967  wait4(9968,  <unfinished ...>
9968  access("{BEGIN}", F_OK <unfinished ...>
9967  <... wait4 resumed>0x7ffc, 0, NULL) = ? ERESTARTSYS
9968  <... access resumed>)             = -1 ENOENT (No such file or directory)
9968  getpid( <unfinished ...>
9967  wait4(9968,  <unfinished ...>
9968  <... getpid resumed>)             = 9968
9968  access("{END}", F_OK) = -1 ENOENT (No such file or directory)
9968  exit_group(0)                     = ?
9968  +++ exited with 0 +++
"""

#: The same child's own file (`strace -ff`): no pid column, no split calls.
OWN_FILE = f"""\
getpid()                                = 9968
access("{BEGIN}", F_OK) = -1 ENOENT (No such file or directory)
getpid()                                = 9968
--- SIGCHLD {{si_signo=SIGCHLD}} ---
access("{END}", F_OK) = -1 ENOENT (No such file or directory)
exit_group(0)                           = ?
"""

#: A child that wrote the parent's eventfd while dropping its codec, the call split in two.
WROTE = f"""\
9968  access("{BEGIN}", F_OK) = -1 ENOENT (No such file or directory)
9968  write(7, "\\1\\0\\0\\0\\0\\0\\0\\0", 8 <unfinished ...>
9967  <... wait4 resumed>0x7ffc, 0, NULL) = ? ERESTARTSYS
9968  <... write resumed>)              = 8
9968  access("{END}", F_OK) = -1 ENOENT (No such file or directory)
"""


def run(trace: str, pid: str = "9968", begin: str = BEGIN) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "trace"
        path.write_text(trace)
        return subprocess.run(
            [sys.executable, str(SCRIPT), str(path), pid, begin, END, "--allow", "getpid"],
            capture_output=True,
            text=True,
            check=False,
        )


class StraceWindow(unittest.TestCase):
    def test_split_calls_are_joined_not_read_as_calls(self) -> None:
        r = run(SPLIT)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))

    def test_a_file_of_its_own_without_a_pid_column(self) -> None:
        r = run(OWN_FILE)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))

    def test_a_call_between_the_markers_is_printed_whole(self) -> None:
        r = run(WROTE)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, 'write(7, "\\1\\0\\0\\0\\0\\0\\0\\0", 8)              = 8\n')

    def test_another_process_calls_are_not_its_own(self) -> None:
        r = run(WROTE, pid="9967")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr, f"strace_window: process 9967 never made the call marked {BEGIN!r}\n")

    def test_no_begin_marker_is_refused(self) -> None:
        r = run(OWN_FILE, begin="/stateseal-probe/never")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("never made the call marked '/stateseal-probe/never'", r.stderr)

    def test_an_unreadable_trace_is_refused(self) -> None:
        r = subprocess.run(
            [sys.executable, str(SCRIPT), "/nonexistent/trace", "1", BEGIN, END],
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        self.assertEqual(r.stderr, "strace_window: cannot read the trace /nonexistent/trace: No such file or directory\n")


if __name__ == "__main__":
    unittest.main()

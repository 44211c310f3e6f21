"""Ctrl-C for the commands the tests interrupt.

A process started in the background by a shell without job control (`cmd &` in a script,
`nohup`) ignores SIGINT, and so does everything it starts, Python included: a test that
sends SIGINT would then see it ignored. The tests' children get the default disposition back,
so Python installs its KeyboardInterrupt handler as under a terminal.
"""

from __future__ import annotations

import signal


def restore_ctrl_c() -> None:
    """`preexec_fn` for subprocess.Popen: SIGINT back to its default in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

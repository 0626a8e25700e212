"""A background job's pseudo-terminal: its size, making it the job's controlling terminal, and
the control sequences terminal programs print that are not for the model."""

from __future__ import annotations

import contextlib

#: The pseudo-terminal's size (some programs format for it).
TTY_ROWS, TTY_COLUMNS = 24, 120


def take_terminal() -> None:
    """In the child, after setsid: make the pseudo-terminal (stdin) its controlling terminal,
    so Ctrl-C (``\\u0003``) reaches it as SIGINT — with SIGINT and SIGQUIT at their defaults: a
    process started in the background of a non-interactive shell (``toolsmith-mcp &``) runs with
    both ignored, children inherit that, and Ctrl-C would then reach nothing."""
    import fcntl
    import signal
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)


def set_window_size(fd: int) -> None:
    import fcntl
    import struct
    import termios

    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", TTY_ROWS, TTY_COLUMNS, 0, 0))

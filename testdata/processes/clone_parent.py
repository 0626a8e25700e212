"""Start a process the way a program hiding its children would: ``clone(CLONE_PARENT)`` (the new
process is a child of *our* parent, not of us), then in it ``setsid``, its standard streams on
``/dev/null`` (it holds none of ours), and ``exec`` of ``sleep SECONDS`` with an empty
environment. Prints the new process's pid once it runs ``sleep`` (so it has left the session),
and exits.

Usage: python3 clone_parent.py SECONDS
"""

import ctypes
import os
import platform
import shutil
import sys

CLONE_PARENT = 0x00008000
#: The clone system call's number per architecture (asm/unistd.h).
SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "ppc64le": 120, "s390x": 120, "i686": 120}


def main() -> None:
    seconds = sys.argv[1]
    sleep = shutil.which("sleep") or "/bin/sleep"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    zero = ctypes.c_long(0)
    # Close-on-exec: the read below ends when the child's copy closes, at its exec.
    started_read, started_write = os.pipe()
    # No stack given: the child runs on a copy of ours, like fork (no CLONE_VM).
    pid = libc.syscall(
        ctypes.c_long(SYS_CLONE[platform.machine()]), ctypes.c_long(CLONE_PARENT), zero, zero, zero, zero
    )
    if pid == 0:
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execve(sleep, ["sleep", seconds], {})
        finally:
            os._exit(127)
    if pid < 0:
        sys.exit(f"clone failed: {os.strerror(ctypes.get_errno())}")
    os.close(started_write)
    os.read(started_read, 1)
    print(pid, flush=True)


if __name__ == "__main__":
    main()

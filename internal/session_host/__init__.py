"""The per-session host process behind CLI ``--session ID`` calls (docs/cli-session-host.md).

One long-lived process per session id holds one :class:`~agent_toolsmith.session.Session`, so its
language servers stay warm and whatever it runs (background jobs) outlives the CLI call that
started it. The CLI side (:func:`run_call`, :func:`end_host`) uses the standard library only:
a ``--session`` call must not pay for the tool modules the host has already imported.

The modules: ``protocol`` (what both sides share: the session's host files, the wire messages,
the errors, a process's identity), ``client`` (the CLI side: start a host, send a call, end
it) and ``host`` (the host process: its socket, its calls, its idle clock).

Where it lives: ``<state dir>/sessions/<ID>/`` (0700) holds ``host.sock`` (0600, the unix
socket), ``host.secret`` (0600, what a client must send first), ``host.pid`` (pid and process
start time, so a reused pid is never signalled) and ``host.lock`` (flock'd while a host starts,
so concurrent first calls start exactly one). The host binds its socket only in a directory that
is its own and private (not a symbolic link), so no other user can ever connect; the CLI talks
only to a socket in such a directory whose listening process is this user's.

The wire protocol (one JSON line at a time) is described in ``protocol``.
"""

from .client import HOST_ENV, end_host, host_enabled, run_call, running_hosts
from .protocol import HostLost, HostMismatch, HostPaths, HostUnavailable, UnsafeStateDirectory, host_paths

__all__ = [
    "HOST_ENV",
    "HostLost",
    "HostMismatch",
    "HostPaths",
    "HostUnavailable",
    "UnsafeStateDirectory",
    "end_host",
    "host_enabled",
    "host_paths",
    "run_call",
    "running_hosts",
]
